// The HTML report's C++ side: the min/max downsampling of its charts (spikes kept, sample gaps
// kept as splits) and the data block it embeds (the JSON report's rows, unchanged).

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>

#include "report/render.hpp"
#include "report/run_report.hpp"
#include "temp_dir.hpp"

namespace cpupower::report {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Every bucket holds the smallest and largest of its samples: a one-sample spike survives a
// bucket of ten samples, and a missing value (NaN) is no sample.
TEST(HtmlDownsample, KeepsMinAndMaxPerBucket) {
  std::vector<double> t, v;
  for (int i = 0; i < 30; ++i) {
    t.push_back(100 + i * 0.1);
    v.push_back(i == 13 ? 900 : i == 25 ? kNaN : 100 + i % 3);
  }
  const Downsampled d = downsample(make_track(t, v), 100, 1.0, kMaxSampleGapS);
  ASSERT_EQ(d.segments.size(), 1u);
  const auto& s = d.segments[0];
  EXPECT_EQ(s.first, 0);
  ASSERT_EQ(s.lo.size(), 3u);
  EXPECT_EQ(s.lo[0], 100);
  EXPECT_EQ(s.hi[0], 102);
  EXPECT_EQ(s.lo[1], 100);
  EXPECT_EQ(s.hi[1], 900);  // the spike at 101.3 s
  EXPECT_EQ(s.lo[2], 100);
  EXPECT_EQ(s.hi[2], 102);
  EXPECT_TRUE(d.gaps.empty());
}

// Consecutive samples further apart than the gap rule split the series, and the gap is listed
// as (last sample before, first after) since the origin; exactly the rule's distance is none.
TEST(HtmlDownsample, SplitsAtGapsWiderThanTheRule) {
  const std::vector<double> t = {10, 11, 12, 15, 20.5, 21};
  const std::vector<double> v = {1, 2, 3, 4, 5, 6};
  const Downsampled d = downsample(make_track(t, v), 10, 0.5, 3.0);
  ASSERT_EQ(d.segments.size(), 2u);
  ASSERT_EQ(d.gaps.size(), 1u);
  EXPECT_DOUBLE_EQ(d.gaps[0].first, 5);
  EXPECT_DOUBLE_EQ(d.gaps[0].second, 10.5);
  EXPECT_EQ(d.segments[0].first, 0);
  EXPECT_EQ(d.segments[0].lo.size(), 11u);  // buckets 0..10 (15 s is bucket 10)
  EXPECT_EQ(d.segments[1].first, 21);
  ASSERT_EQ(d.segments[1].lo.size(), 2u);
  EXPECT_EQ(d.segments[1].lo[0], 5);
  EXPECT_EQ(d.segments[1].hi[1], 6);
}

// A bucket without a sample inside a segment is left empty, and is no gap: a 1 Hz series in
// 0.25 s buckets is one segment with three empty buckets between its samples.
TEST(HtmlDownsample, EmptyBucketsAreNoGaps) {
  const Downsampled d = downsample(make_track({0, 1, 2}, {5, 6, 7}), 0, 0.25, 3.0);
  ASSERT_EQ(d.segments.size(), 1u);
  EXPECT_TRUE(d.gaps.empty());
  const auto& s = d.segments[0];
  ASSERT_EQ(s.lo.size(), 9u);
  EXPECT_EQ(s.lo[0], 5);
  EXPECT_FALSE(s.lo[1].has_value());
  EXPECT_FALSE(s.hi[3].has_value());
  EXPECT_EQ(s.lo[4], 6);
  EXPECT_EQ(s.hi[8], 7);
}

TEST(HtmlDownsample, GapSplitInsideOneBucketStaysTwoSegments) {
  // A 10 s bucket holding both sides of a 4 s gap: each side keeps its own min/max.
  const Downsampled d = downsample(make_track({0, 1, 5, 6}, {1, 2, 30, 40}), 0, 10, 3.0);
  ASSERT_EQ(d.segments.size(), 2u);
  EXPECT_EQ(d.segments[0].first, 0);
  EXPECT_EQ(d.segments[1].first, 0);
  EXPECT_EQ(d.segments[0].hi[0], 2);
  EXPECT_EQ(d.segments[1].lo[0], 30);
}

std::string write(const std::string& dir, const std::string& rel, const std::string& text) {
  const std::filesystem::path p = std::filesystem::path(dir) / rel;
  std::filesystem::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << text;
  return p.string();
}

// The JSON between <script type="application/json" id="report-data"> and </script>.
Json embedded(const std::string& html) {
  const std::string open = "<script type=\"application/json\" id=\"report-data\">";
  const auto a = html.find(open);
  EXPECT_NE(a, std::string::npos);
  const auto b = html.find("</script>", a);
  return Json::parse(html.substr(a + open.size(), b - a - open.size()));
}

// A run with a CPU and a GPU leg, two windows, a host whose name would end the script
// element if it were written raw, and a 5 s hole in its CPU samples.
void make_run(const std::string& dir) {
  write(dir, "benchmark.out", "Successful requests: 40\n");
  for (const auto& [c, span] : {std::pair{1, "10, \"benchmark_end_time_unix\": 30"},
                                std::pair{4, "40, \"benchmark_end_time_unix\": 70"}}) {
    write(dir, "sa-bench_x/results_concurrency_" + std::to_string(c) + "_gpus_2.json",
          std::string("{\"benchmark_start_time_unix\": ") + span +
              ", \"total_input_tokens\": 1500, \"total_output_tokens\": 500}");
  }
  std::string cpu =
      "schema_version,timestamp_unix,hostname,source,sensor,socket_id,power_w,cpu_rail_w,soc_w,"
      "dram_w,module_w,total_power_w\n";
  std::string gpu =
      "schema_version,timestamp_unix,scrape_seq,hostname,gpu_index,gpu_uuid,power_w\n";
  for (int i = 0; i <= 160; ++i) {
    const double t = 5 + i * 0.5;
    const std::string ts = std::to_string(t);
    for (const std::string host : {"n1", "</script><b>x"}) {
      if (host == "n1" && t > 50 && t < 55) continue;  // the hole
      cpu += "3," + ts + "," + host + ",acpi,CPU0:cpuSidePowerUsageW,0," +
             std::to_string(100 + i % 7) + ",,,,800," + std::to_string(100 + i % 7) + "\n";
      gpu += "1," + ts + "," + std::to_string(i) + "," + host + ",0,G," +
             std::to_string(300 + i % 5) + "\n";
    }
  }
  write(dir, "power/cpu/samples.csv", cpu);
  write(dir, "power/samples.csv", gpu);
}

TEST(HtmlReport, EmbedsTheJsonReportRowsAndDownsampledSeries) {
  testing::TempDir tmp("report_html");
  make_run(tmp.path());
  const ReportRun run = build_reports(tmp.path(), {});
  ASSERT_EQ(run.error, "");
  ASSERT_EQ(run.windows.size(), 2u);
  const std::string html = render_html({{"the run", &run.data, &run.windows}});
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  // Self-contained: no reference to anything outside the file.
  EXPECT_EQ(html.find("src=\""), std::string::npos);
  EXPECT_EQ(html.find("href=\""), std::string::npos);
  EXPECT_NE(html.find("Content-Security-Policy"), std::string::npos);
  // The host name's "</script>" is escaped inside the data block: exactly the two script
  // elements close.
  std::size_t closes = 0;
  for (auto p = html.find("</script>"); p != std::string::npos; p = html.find("</script>", p + 1))
    ++closes;
  EXPECT_EQ(closes, 2u);

  const Json data = embedded(html);
  ASSERT_EQ(data["runs"].size(), 1u);
  const Json& r = data["runs"][0];
  EXPECT_EQ(r["name"], "the run");
  EXPECT_EQ(r["windows"], Json::parse(render_json(run.windows)));
  EXPECT_DOUBLE_EQ(data["gap_rule_s"].get<double>(), kMaxSampleGapS);

  // One series per CPU socket, GPU and module, by host.
  std::vector<std::string> labels;
  for (const auto& s : r["series"]) labels.push_back(s["label"]);
  EXPECT_EQ(labels, (std::vector<std::string>{"cpu/</script><b>x/socket0", "gpu/</script><b>x/gpu0",
                                              "module/</script><b>x", "cpu/n1/socket0",
                                              "gpu/n1/gpu0", "module/n1"}));
  const double origin = r["origin_unix"].get<double>();
  EXPECT_DOUBLE_EQ(origin, 5);
  // n1's CPU socket: two segments around the hole, whose ends are the samples beside it.
  const Json& n1 = r["series"][3];
  ASSERT_EQ(n1["segs"].size(), 2u);
  ASSERT_EQ(n1["gaps"].size(), 1u);
  EXPECT_DOUBLE_EQ(n1["gaps"][0][0].get<double>(), 50 - origin);
  EXPECT_DOUBLE_EQ(n1["gaps"][0][1].get<double>(), 55 - origin);
  EXPECT_EQ(r["series"][0]["segs"].size(), 1u);
  // Values in tenths of a watt; every bucket's lo + d is its max, and they match the track.
  const double bucket = r["bucket_s"].get<double>();
  const Downsampled d = downsample(run.data.cpu->sockets[1].power, origin, bucket, kMaxSampleGapS);
  ASSERT_EQ(run.data.cpu->sockets[1].host, "n1");
  for (std::size_t g = 0; g < 2; ++g) {
    const Json& seg = n1["segs"][g];
    EXPECT_EQ(seg["first"].get<long long>(), d.segments[g].first);
    ASSERT_EQ(seg["lo"].size(), d.segments[g].lo.size());
    for (std::size_t k = 0; k < seg["lo"].size(); ++k) {
      if (!d.segments[g].lo[k]) {
        EXPECT_TRUE(seg["lo"][k].is_null());
        continue;
      }
      EXPECT_EQ(seg["lo"][k].get<long long>(), std::llround(*d.segments[g].lo[k] * 10));
      EXPECT_EQ(seg["lo"][k].get<long long>() + seg["d"][k].get<long long>(),
                std::llround(*d.segments[g].hi[k] * 10));
    }
  }
}

TEST(HtmlReport, SeveralRunsInOrder) {
  testing::TempDir a("report_html_a"), b("report_html_b");
  make_run(a.path());
  make_run(b.path());
  const ReportRun ra = build_reports(a.path(), {}), rb = build_reports(b.path(), {});
  const Json data =
      embedded(render_html({{"a", &ra.data, &ra.windows}, {"b", &rb.data, &rb.windows}}));
  ASSERT_EQ(data["runs"].size(), 2u);
  EXPECT_EQ(data["runs"][0]["name"], "a");
  EXPECT_EQ(data["runs"][1]["name"], "b");
  EXPECT_EQ(data["runs"][1]["windows"], Json::parse(render_json(rb.windows)));
}

TEST(HtmlReport, WriteRunReportAddsTheHtmlReport) {
  testing::TempDir tmp("report_html_run");
  make_run(tmp.path());
  const RunReportStatus status = write_run_report(tmp.path(), {});
  EXPECT_TRUE(status.ok) << status.message;
  ASSERT_EQ(status.written.size(), 4u);
  EXPECT_EQ(status.written[3], tmp.file("power_report.html"));
  const ReportRun run = build_reports(tmp.path(), {});
  EXPECT_EQ(embedded(testing::slurp(tmp.file("power_report.html")))["runs"][0]["windows"],
            Json::parse(render_json(run.windows)));
}

}  // namespace
}  // namespace cpupower::report
