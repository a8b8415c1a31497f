// cpu-power validate's rules (module `validate`) and the artifacts pieces it added: the strict
// CPU samples reader and the bracketing samples the GPU coverage and the CPU series share.
// Every run directory here is written by the test: a small GPU package made with the GPU leg's
// own writers and audits, a CPU v2 package and a clock check, then broken one rule at a time.

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "artifacts/cpu_manifest.hpp"
#include "artifacts/cpu_samples.hpp"
#include "artifacts/cpu_samples_check.hpp"
#include "artifacts/gpu_manifest.hpp"
#include "artifacts/gpu_samples_check.hpp"
#include "artifacts/gpu_samples_out.hpp"
#include "artifacts/gpu_windows.hpp"
#include "artifacts/host_manifest.hpp"
#include "artifacts/host_samples.hpp"
#include "temp_dir.hpp"
#include "validate/validate.hpp"

namespace cpupower {
namespace {

namespace fs = std::filesystem;
namespace ar = artifacts;
using testing::slurp;
using testing::spit;
using testing::TempDir;
using Json = nlohmann::json;

constexpr double kT0 = 1800000000.0;
constexpr std::string_view kCpuV2 =
    "schema_version,timestamp_unix,hostname,source,sensor,socket_id,power_w,cpu_rail_w,soc_w,"
    "dram_w,total_power_w\r\n";

std::string num(double v) {
  return ar::format_double(v);
}

// ---- the strict CPU samples reader ----------------------------------------------------

ar::CpuSamplesCheck check_text(const TempDir& dir, const std::string& text) {
  spit(dir.file("samples.csv"), text);
  return ar::check_cpu_samples(dir.file("samples.csv"));
}

const ar::CpuSamplesIssue* issue(const ar::CpuSamplesCheck& c, std::string_view code) {
  for (const auto& i : c.issues) {
    if (i.code == code) return &i;
  }
  return nullptr;
}

// The manifests' typed readers, as validate uses them: what a writer wrote reads back, and a
// key the file lacks is told apart from one it has.
TEST(ManifestReaders, CpuManifestReadsBackWhatTheWriterWrote) {
  ar::CpuManifest m;
  m.producer = "someone";
  m.nodes["n1"].resolved_mode = "acpi";
  m.samples_schema_version = 2;
  const auto back = ar::parse_cpu_manifest(ar::render_cpu_manifest(m));
  ASSERT_TRUE(back) << back.error();
  EXPECT_EQ(back->producer, "someone");
  EXPECT_EQ(back->nodes.at("n1").resolved_mode, "acpi");
  EXPECT_EQ(back->samples_schema_version, 2);
  const auto old = ar::parse_cpu_manifest(R"({"producer": "p", "nodes": {"a": 1}})");
  ASSERT_TRUE(old) << old.error();
  EXPECT_FALSE(old->samples_schema_version);  // none in the file
  EXPECT_EQ(old->nodes.count("a"), 1u);
  EXPECT_EQ(ar::parse_cpu_manifest("{").error(), "not JSON");
  EXPECT_EQ(ar::parse_cpu_manifest(R"({"producer": 1, "nodes": {}})").error(),
            R"(not an object with "producer" and "nodes")");
  EXPECT_FALSE(ar::parse_cpu_manifest(R"([{"producer": "p", "nodes": {}}])"));
}

TEST(ManifestReaders, HostManifestSaysWhichKeysItLacks) {
  const auto none = ar::host::parse_host_manifest(R"({"job_id": "7"})");
  ASSERT_TRUE(none) << none.error();
  EXPECT_EQ(none->job_id, "7");
  EXPECT_EQ(none->status, "");
  EXPECT_FALSE(none->sample_row_count);
  const auto some =
      ar::host::parse_host_manifest(R"({"status": "complete", "sample_row_count": 0})");
  ASSERT_TRUE(some) << some.error();
  EXPECT_EQ(some->status, "complete");
  EXPECT_EQ(some->sample_row_count, 0);
  EXPECT_EQ(ar::host::parse_host_manifest(R"({"sample_row_count": -5})")->sample_row_count,
            -5);  // as the file says, so that a check can refuse it
  EXPECT_EQ(ar::host::parse_host_manifest("[]").error(), "not a JSON object");
}

TEST(CpuSamplesCheck, NamesTheHeaderVersionOfEachLeg) {
  TempDir dir("cpuchk");
  auto c = check_text(dir, std::string(kCpuV2));
  EXPECT_TRUE(c.found);
  EXPECT_EQ(c.exporter_version, 2);
  EXPECT_EQ(c.host_version, 0);
  EXPECT_TRUE(c.wide);
  c = check_text(dir, std::string(ar::cpu_header(3)) + "\r\n");
  EXPECT_EQ(c.exporter_version, 3);
  c = check_text(dir, std::string(ar::cpu_header(1)) + "\r\n");
  EXPECT_EQ(c.exporter_version, 1);  // the v1 headers of both legs are the same line
  EXPECT_EQ(c.host_version, 1);
  EXPECT_FALSE(c.wide);
  c = check_text(dir, std::string(ar::kHostHeaderV5) + "\r\n");
  EXPECT_EQ(c.exporter_version, 0);
  EXPECT_EQ(c.host_version, 5);
  EXPECT_TRUE(c.wide);
  c = check_text(dir, "a,b,c\r\n1,2,3\r\n");
  EXPECT_EQ(ar::cpu_samples_version(c), 0);
  EXPECT_EQ(c.rows, 0u);  // an unknown header: no row is read
  c = check_text(dir, "a,a\r\n");
  EXPECT_NE(c.header_problem.find("appears twice"), std::string::npos) << c.header_problem;
  EXPECT_FALSE(ar::check_cpu_samples(dir.file("nothing.csv")).found);
}

TEST(CpuSamplesCheck, CountsEachRowUnderItsFirstFailingRule) {
  TempDir dir("cpuchk");
  std::string text(kCpuV2);
  text += "2,100.0,n1,acpi,CPU0:cpuSidePowerUsageW,0,90,,,,180\r\n";   // good
  text += "2,100.0,n1,acpi,CPU1:cpuSidePowerUsageW,1,90,,,,180\r\n";   // good
  text += "2,100.5,n1,acpi,CPU0:cpuSidePowerUsageW,0,90,,,\r\n";       // 10 cells
  text += "2,nan,n1,acpi,CPU0:cpuSidePowerUsageW,0,90,,,,180\r\n";     // time
  text += "2,101.0,,acpi,CPU0:cpuSidePowerUsageW,0,90,,,,180\r\n";     // hostname
  text += "2,101.5,n1,acpi,CPU0:cpuSidePowerUsageW,-1,90,,,,180\r\n";  // socket
  text += "3,102.0,n1,acpi,CPU0:cpuSidePowerUsageW,0,90,,,,180\r\n";   // version
  text += "2,102.5,n1,acpi,CPU0:cpuSidePowerUsageW,0,-3,,,,180\r\n";   // power
  text += "2,103.0,n1,acpi,CPU0:cpuSidePowerUsageW,0,inf,,,,180\r\n";  // power
  text += "2,100.0,n1,acpi,CPU0:cpuSidePowerUsageW,0,91,,,,180\r\n";   // duplicate
  text += "2,104.0,n1,acpi,CPU0:cpuSidePowerUsageW,0,90,,,,180";       // torn
  const auto c = check_text(dir, text);
  EXPECT_EQ(c.rows, 11u);
  EXPECT_EQ(c.rows_kept, 2u);
  ASSERT_NE(issue(c, ar::cpu_reason::kMalformed), nullptr);
  EXPECT_EQ(issue(c, ar::cpu_reason::kMalformed)->count, 5u);
  EXPECT_EQ(issue(c, ar::cpu_reason::kMalformed)->first_line, 4u);
  ASSERT_NE(issue(c, ar::cpu_reason::kSchemaVersionMismatch), nullptr);
  EXPECT_EQ(issue(c, ar::cpu_reason::kSchemaVersionMismatch)->first_line, 8u);
  ASSERT_NE(issue(c, ar::cpu_reason::kInvalidPowerValue), nullptr);
  EXPECT_EQ(issue(c, ar::cpu_reason::kInvalidPowerValue)->count, 2u);
  ASSERT_NE(issue(c, ar::cpu_reason::kDuplicateTimestamp), nullptr);
  EXPECT_EQ(issue(c, ar::cpu_reason::kDuplicateTimestamp)->first_line, 11u);
  EXPECT_EQ(issue(c, ar::cpu_reason::kSourceConflict), nullptr);
  EXPECT_EQ(c.sockets.at("n1"), (std::vector<long long>{0, 1}));
}

TEST(CpuSamplesCheck, OneRowPerRailKeysTimestampsBySensorAndSourcesByKind) {
  TempDir dir("cpuchk");
  std::string text = std::string(ar::cpu_header(1)) + "\r\n";
  // Two rails of one socket at one time are two series, not a duplicate.
  text += "1,100.0,n1,acpi,Grace Power Socket 0,0,90,180\r\n";
  text += "1,100.0,n1,acpi,CPU Power Socket 0,0,60,180\r\n";
  text += "1,100.0,n1,acpi,Grace Power Socket 1,1,90,180\r\n";
  text += "1,100.5,n1,dcgm,Grace Power Socket 1,1,90,180\r\n";  // another source, same kind
  text += "1,100.5,n2,acpi,Grace Power Socket 0,0,90,180\r\n";
  const auto c = check_text(dir, text);
  EXPECT_EQ(issue(c, ar::cpu_reason::kDuplicateTimestamp), nullptr);
  EXPECT_EQ(c.series.size(), 4u);
  ASSERT_NE(issue(c, ar::cpu_reason::kSourceConflict), nullptr);
  EXPECT_EQ(issue(c, ar::cpu_reason::kSourceConflict)->count, 1u);
  EXPECT_NE(issue(c, ar::cpu_reason::kSourceConflict)->first.find("'Grace Power Socket '"),
            std::string::npos)
      << issue(c, ar::cpu_reason::kSourceConflict)->first;
  EXPECT_EQ((ar::CpuSeriesKey{"n1", 0, "CPU Power Socket 0"}.label()),
            "cpu/n1/socket0/CPU Power Socket 0");
}

TEST(Bracketing, TakesTheSamplesAroundAndInsideTheWindow) {
  const std::vector<double> t{1, 2, 3, 4, 5};
  EXPECT_EQ(ar::bracketing_samples(t, 2.5, 3.5), (std::vector<double>{2, 3, 4}));
  EXPECT_EQ(ar::bracketing_samples(t, 2, 4), (std::vector<double>{2, 3, 4}));  // on the edges
  EXPECT_EQ(ar::bracketing_samples(t, 0.5, 3), std::nullopt);
  EXPECT_EQ(ar::bracketing_samples(t, 2, 5.5), std::nullopt);
  EXPECT_EQ(ar::largest_sample_gap_s(std::vector<double>{1, 2, 5, 5.5}), 3.0);
  EXPECT_EQ(ar::largest_sample_gap_s(std::vector<double>{1}), 0.0);
}

// ---- a run directory written by the test ----------------------------------------------

struct Fixture {
  TempDir dir{"validate"};
  std::string run() const { return dir.path(); }
  std::string p(const std::string& rel) const { return dir.file(rel); }

  // GPU samples v2 every 0.5 s from kT0 to kT0 + 10 for n1/gpu0 and n2/gpu0, a completed
  // window [kT0 + 2.25, kT0 + 7.75]; CPU v2 rows for sockets 0 and 1 of both nodes at the same
  // cadence; a clock check with both nodes synchronised. Then the manifest the GPU leg would
  // write for it.
  Fixture() {
    fs::create_directories(p("power/windows"));
    fs::create_directories(p("power/cpu"));
    fs::create_directories(p("bench"));
    std::string gpu = std::string(*ar::gpu_samples_header(2)) + "\r\n";
    std::string cpu(kCpuV2);
    for (int seq = 0; seq <= 20; ++seq) {
      const double t = kT0 + 0.5 * seq;
      for (const char* host : {"n1", "n2"}) {
        gpu += "2," + num(t) + "," + std::to_string(seq) + "," + host + ",0,GPU-" + host +
               ",400.5,50,0.5\r\n";
        for (int s = 0; s < 2; ++s) {
          cpu += "2," + num(t + 0.01) + "," + host + ",acpi,CPU" + std::to_string(s) +
                 ":cpuSidePowerUsageW," + std::to_string(s) + ",90,60,6,,180\r\n";
        }
      }
    }
    spit(p("power/samples.csv"), gpu);
    spit(p("power/cpu/samples.csv"), cpu);
    spit(p("power/cpu/cpu_manifest.json"),
         R"({"producer": "srt-slurm.cpu-power", "nodes": {}, "samples_schema_version": 2})");
    ar::GpuWindowFile w;
    w.benchmark_type = "sa-bench";
    w.result_path = "bench/results_x.json";
    w.concurrency = 4;
    w.benchmark_start_time_unix = kT0 + 2.25;
    w.benchmark_end_time_unix = kT0 + 7.75;
    w.duration_s = 5.5;
    w.status = ar::GpuWindowStatus::completed;
    spit(p("power/windows/results_x.json"), ar::gpu_window_json(w));
    spit(p("bench/results_x.json"), Json{{"benchmark_start_time_unix", kT0 + 2.25},
                                         {"benchmark_end_time_unix", kT0 + 7.75},
                                         {"duration", 5.5}}
                                        .dump());
    clock = Json{{"schema_version", 1},
                 {"max_offset_seconds", 0.05},
                 {"nodes",
                  {{{"hostname", "n1"},
                    {"synchronized", "yes"},
                    {"offset_seconds", 0.001},
                    {"tool", "chronyc"},
                    {"output_file", "clock_sync_n1.out"}},
                   {{"hostname", "n2"},
                    {"synchronized", "yes"},
                    {"offset_seconds", -0.002},
                    {"tool", "chronyc"},
                    {"output_file", "clock_sync_n2.out"}}}}};
    write_clock();
    m.job_id = "job-1";
    m.run_name = "run";
    m.samples_schema_version = 2;
    m.utilization_metrics = ar::gpu_utilization_metrics(2);
    m.sample_interval_seconds = 0.5;
    m.request_timeout_seconds = 2;
    m.started_at_unix = kT0 - 1;
    m.stopped_at_unix = kT0 + 11;
    m.status = ar::GpuRunStatus::complete;
    m.dcgm_exporter.container_image_resolved = "dcgm-exporter";
    m.dcgm_exporter.port = 9400;
    m.expected_devices = {{"n1", 0, {{"prefill", 0, 0, 0}}}, {"n2", 0, {{"decode", 0, 0, 1}}}};
    m.expected_windows = {{"sa-bench", 4}};
    finalize();
  }

  void write_clock() const { spit(p("clock_sync.json"), clock.dump(2)); }

  // What the GPU leg does at the end: the strict check, the window audit, the verdict.
  void finalize() {
    const auto check = ar::check_gpu_samples(p("power/samples.csv"), std::nullopt);
    m.observed_devices = check.devices;
    m.sample_row_count = check.row_count;
    m.scrape_count = check.max_scrape_seq ? *check.max_scrape_seq + 1 : 0;
    m.samples_sha256 = check.sha256_hex;
    m.artifact_errors.clear();
    ar::GpuCoverageInputs coverage{m.expected_devices, check.devices, m.sample_interval_seconds};
    m.window_validations = ar::validate_gpu_windows(p("power"), run(), m.expected_windows, coverage,
                                                    m.artifact_errors);
    m.publication_valid = ar::gpu_manifest_publication(m, &check.reason_codes).valid;
    write_manifest();
  }
  void write_manifest() const { spit(p("power/manifest.json"), ar::gpu_manifest_json(m)); }

  // Rewrites GPU samples rows (not the header) through `keep`, then finalizes as the leg would.
  template <typename Keep>
  void filter_gpu_rows(Keep keep) {
    const std::string text = slurp(p("power/samples.csv"));
    std::string out;
    std::size_t pos = 0;
    bool header = true;
    while (pos < text.size()) {
      const std::size_t end = text.find("\r\n", pos);
      const std::string line = text.substr(pos, end - pos);
      if (header || keep(line)) out += line + "\r\n";
      header = false;
      pos = end + 2;
    }
    spit(p("power/samples.csv"), out);
    finalize();
  }

  validate::Report check(validate::Options o = {}) const {
    o.run_dir = run();
    auto r = validate::validate_run(o);
    EXPECT_TRUE(r) << r.error();
    return r ? *r : validate::Report{};
  }

  ar::GpuManifest m;
  Json clock;
};

std::vector<std::string> codes(const validate::Report& r, validate::Package p) {
  std::vector<std::string> out;
  for (const auto& f : r.findings) {
    if (f.package == p) out.push_back(f.code);
  }
  return out;
}

bool has(const validate::Report& r, std::string_view code, std::string_view detail_part = "") {
  return std::any_of(r.findings.begin(), r.findings.end(), [&](const validate::Finding& f) {
    return f.code == code && f.detail.find(detail_part) != std::string::npos;
  });
}

std::string text(const validate::Report& r) {
  return validate::render_text(r);
}

TEST(ValidateRun, AFixtureTheConsumersAcceptIsPublishable) {
  Fixture f;
  const auto r = f.check();
  EXPECT_TRUE(r.publishable) << text(r);
  EXPECT_TRUE(r.findings.empty()) << text(r);
  ASSERT_EQ(r.packages.size(), 3u);
  EXPECT_TRUE(r.packages[0].present && r.packages[0].publishable);
  EXPECT_TRUE(r.packages[1].present && r.packages[1].publishable);
  EXPECT_FALSE(r.packages[2].present);  // no host leg: absent, not a failure
  EXPECT_NE(text(r).find("package host cpu_power: absent\n"), std::string::npos) << text(r);
  EXPECT_NE(text(r).find("\nverdict: publishable\n"), std::string::npos) << text(r);
}

TEST(ValidateRun, TheV3HeadersAreRefusedWithTheOptionsThatFixThem) {
  Fixture f;
  std::string gpu = std::string(*ar::gpu_samples_header(3)) + "\r\n";
  gpu += "3," + num(kT0) + ",0,n1,0,GPU-n1,400,50,0.5,30\r\n";
  spit(f.p("power/samples.csv"), gpu);
  std::string cpu = std::string(ar::cpu_header(3)) + "\r\n";
  cpu += "3," + num(kT0) + ",n1,acpi,CPU0:cpuSidePowerUsageW,0,90,60,6,,,180\r\n";
  spit(f.p("power/cpu/samples.csv"), cpu);
  const auto r = f.check();
  EXPECT_FALSE(r.publishable);
  const auto gpu_v3 = std::find_if(r.findings.begin(), r.findings.end(), [](const auto& x) {
    return x.code == "samples_csv_header_mismatch" && x.file == "power/samples.csv";
  });
  ASSERT_NE(gpu_v3, r.findings.end()) << text(r);
  EXPECT_NE(gpu_v3->fix.find("--consumer-profile compat"), std::string::npos);
  EXPECT_NE(gpu_v3->fix.find("--gpu-samples-schema 2"), std::string::npos);
  const auto cpu_v3 = std::find_if(r.findings.begin(), r.findings.end(), [](const auto& x) {
    return x.code == "cpu_samples_header_mismatch" && x.file == "power/cpu/samples.csv";
  });
  ASSERT_NE(cpu_v3, r.findings.end()) << text(r);
  EXPECT_NE(cpu_v3->fix.find("--cpu-samples-schema 2"), std::string::npos);
  // The manifest's schema version no longer matches the file's either.
  EXPECT_TRUE(has(r, "samples_schema_version_mismatch")) << text(r);
}

TEST(ValidateRun, JobIdDigestAndStoredVerdict) {
  Fixture f;
  f.m.job_id = "";
  f.write_manifest();
  EXPECT_EQ(codes(f.check(), validate::Package::gpu), std::vector<std::string>{"job_id_missing"});
  f.m.job_id = "j";
  f.m.samples_sha256 = std::string(64, 'a');
  f.write_manifest();
  EXPECT_EQ(codes(f.check(), validate::Package::gpu),
            std::vector<std::string>{"samples_sha256_mismatch"});
  f.m.samples_sha256 = std::nullopt;
  f.write_manifest();
  EXPECT_EQ(codes(f.check(), validate::Package::gpu),
            std::vector<std::string>{"samples_digest_unavailable"});
  f.finalize();
  f.m.publication_valid = false;
  f.write_manifest();
  EXPECT_EQ(codes(f.check(), validate::Package::gpu),
            std::vector<std::string>{"publication_verdict_mismatch"});
}

TEST(ValidateRun, EveryExpectedDeviceAndEveryCpuSocketOfItsHost) {
  Fixture f;
  f.m.expected_devices.push_back({"n2", 1, {{"decode", 0, 0, 1}}});
  f.finalize();
  auto r = f.check();
  EXPECT_TRUE(has(r, "expected_device_missing", "n2/gpu1")) << text(r);
  // The CPU package must cover the GPU package's hosts, sockets 0..N-1 each.
  Fixture g;
  std::string cpu = slurp(g.p("power/cpu/samples.csv"));
  std::string kept(kCpuV2);
  for (std::size_t pos = kCpuV2.size(); pos < cpu.size();) {
    const std::size_t end = cpu.find("\r\n", pos);
    const std::string line = cpu.substr(pos, end - pos);
    if (line.find(",n2,acpi,CPU1:") == std::string::npos) kept += line + "\r\n";
    pos = end + 2;
  }
  spit(g.p("power/cpu/samples.csv"), kept);
  r = g.check();
  EXPECT_EQ(codes(r, validate::Package::cpu), std::vector<std::string>{"cpu_sockets_incomplete"})
      << text(r);
  EXPECT_TRUE(has(r, "cpu_sockets_incomplete", "host n2: no rows for socket 1 (want 0..1)"));
  EXPECT_TRUE(r.packages[0].publishable);  // the GPU package is not the one at fault
}

TEST(ValidateRun, AGapOverThreeSecondsInsideTheWindow) {
  Fixture f;
  // n1's samples from kT0 + 3 to kT0 + 6.5 dropped: 2.5 to 7.0, a 4.5 s gap in the window.
  f.filter_gpu_rows([](const std::string& line) {
    if (line.find(",n1,") == std::string::npos) return true;
    const double t = std::stod(line.substr(2, line.find(',', 2) - 2));
    return t < kT0 + 2.9 || t > kT0 + 6.6;
  });
  const auto r = f.check();
  EXPECT_TRUE(has(r, "sample_gap_exceeded", "n1/GPU-n1 4.500 s")) << text(r);
  EXPECT_FALSE(r.packages[0].publishable);
}

TEST(ValidateRun, TheSampleLossRuleAsTheContractDefinesIt) {
  // Window [kT0 + 2.25, kT0 + 7.75]: bracketing samples kT0 + 2 .. kT0 + 8, 12 intervals at
  // 0.5 s. Dropping one inside sample leaves 11 of 12 (8.3 % missing): refused, though the
  // largest gap is 1 s. Over twenty intervals one missing is 5 %, which passes.
  Fixture f;
  f.filter_gpu_rows([](const std::string& line) {
    return !(line.find(",n1,") != std::string::npos &&
             line.find("," + std::to_string(10) + ",n1,") != std::string::npos);
  });
  auto r = f.check();
  EXPECT_TRUE(has(r, "sample_loss_exceeded")) << text(r);
  EXPECT_FALSE(has(r, "sample_gap_exceeded")) << text(r);

  Fixture g;  // a window of 20 intervals with one missing: exactly 5 %, not over it
  ar::GpuWindowFile w;
  w.benchmark_type = "sa-bench";
  w.result_path = "bench/results_x.json";
  w.concurrency = 4;
  w.benchmark_start_time_unix = kT0 + 0.25;  // bracketed by kT0 and kT0 + 10: 20 intervals
  w.benchmark_end_time_unix = kT0 + 9.75;
  w.duration_s = 9.5;
  w.status = ar::GpuWindowStatus::completed;
  spit(g.p("power/windows/results_x.json"), ar::gpu_window_json(w));
  spit(g.p("bench/results_x.json"), Json{{"benchmark_start_time_unix", kT0 + 0.25},
                                         {"benchmark_end_time_unix", kT0 + 9.75},
                                         {"duration", 9.5}}
                                        .dump());
  g.filter_gpu_rows(
      [](const std::string& line) { return line.find(",10,n1,") == std::string::npos; });
  r = g.check();
  EXPECT_FALSE(has(r, "sample_loss_exceeded")) << text(r);
  EXPECT_TRUE(r.publishable) << text(r);
}

TEST(ValidateRun, TheClockRule) {
  Fixture f;
  fs::remove(f.p("clock_sync.json"));
  auto r = f.check();
  EXPECT_TRUE(has(r, "clock_sync_unverified", "no clock check ran")) << text(r);
  EXPECT_EQ(codes(r, validate::Package::gpu), std::vector<std::string>{"clock_sync_unverified"});

  // The same check recorded in the GPU manifest only is enough.
  Json manifest = Json::parse(slurp(f.p("power/manifest.json")));
  manifest["clock_sync_check"] = f.clock;
  spit(f.p("power/manifest.json"), manifest.dump(2));
  r = f.check();
  EXPECT_TRUE(r.publishable) << text(r);

  for (auto& n : f.clock["nodes"]) n["synchronized"] = "unknown";
  f.write_clock();
  EXPECT_TRUE(has(f.check(), "clock_sync_unverified", "every node unknown"));
  f.clock["nodes"][0]["synchronized"] = "yes";  // one node checked: verified
  f.write_clock();
  EXPECT_TRUE(f.check().publishable);
  f.clock["nodes"][1]["synchronized"] = "no";
  f.write_clock();
  EXPECT_TRUE(has(f.check(), "clock_sync_unverified", "not synchronised: n2"));
  f.clock["nodes"][1]["synchronized"] = "yes";
  f.clock["nodes"][1]["offset_seconds"] = 0.051;
  f.write_clock();
  EXPECT_TRUE(has(f.check(), "clock_sync_unverified", "n2 (+0.051000 s)"));
  f.clock["nodes"][1]["offset_seconds"] = -0.05;  // at the bound passes
  f.write_clock();
  EXPECT_TRUE(f.check().publishable);
  spit(f.p("clock_sync.json"), "{");
  EXPECT_TRUE(has(f.check(), "clock_sync_unverified", "not JSON"));
  f.write_clock();
  f.m.clock_sync_failures = {"n1"};
  f.write_manifest();
  EXPECT_TRUE(has(f.check(), "clock_sync_unverified", "clock_sync_failures names n1"));
}

TEST(ValidateRun, RolesAndHetGroupsAsTheReferenceValidatorChecksThem) {
  Fixture f;
  using validate::RoleExpectation;
  validate::Options o;
  o.expect_roles = {{"prefill", 1}, {"decode", 1}};
  o.require_distinct_het_groups = true;
  EXPECT_TRUE(f.check(o).publishable) << text(f.check(o));
  o.expect_roles = {{"prefill", 2}, {"decode", 1}};
  EXPECT_TRUE(has(f.check(o), "expected_role_mismatch", "expected 2 prefill GPUs, found 1"));
  o.expect_roles = {{"prefill", std::nullopt}};
  EXPECT_TRUE(has(f.check(o), "expected_role_mismatch",
                  "expected roles prefill, the manifest "
                  "has decode,prefill"));
  o.expect_roles.clear();
  f.m.expected_devices[1].assignments[0].het_group = 0;  // both roles in group 0
  f.finalize();
  EXPECT_TRUE(has(f.check(o), "het_groups_not_distinct", "roles decode,prefill share het group 0"));
  f.m.expected_devices[0].assignments[0].het_group = std::nullopt;
  f.m.expected_devices[1].assignments[0].het_group = std::nullopt;
  f.finalize();
  EXPECT_TRUE(has(f.check(o), "het_groups_not_distinct", "role decode has no het group"));
  EXPECT_TRUE(f.check().publishable);  // without the option, null groups are fine

  EXPECT_EQ(validate::parse_role_expectation("decode=4")->count, 4);
  EXPECT_FALSE(validate::parse_role_expectation("decode")->count.has_value());
  EXPECT_FALSE(validate::parse_role_expectation("chef=1"));
  EXPECT_FALSE(validate::parse_role_expectation("decode=-1"));
  EXPECT_FALSE(validate::parse_role_expectation("decode=4x"));
}

TEST(ValidateRun, TheHostLegPackage) {
  Fixture f;
  fs::create_directories(f.p("cpu_power"));
  std::string host = std::string(ar::kHostHeaderV5) + "\r\n";
  for (int i = 0; i <= 20; ++i) {
    for (int s = 0; s < 2; ++s) {
      host += "5," + num(kT0 + 0.5 * i) + ",2027-01-15T08:00:00+00:00,n1,acpi,CPU" +
              std::to_string(s) + ":cpuSidePowerUsageW," + std::to_string(s) +
              ",90,60,6,,,180,,,,,\r\n";
    }
  }
  spit(f.p("cpu_power/samples.csv"), host);
  Json m{{"schema_version", 1},      {"job_id", "job-1"},      {"status", "complete"},
         {"expected_nodes", {"n1"}}, {"sample_row_count", 42}, {"reason_codes", Json::array()}};
  spit(f.p("cpu_power/manifest.json"), m.dump());
  auto r = f.check();
  // n2 of the GPU package has no host-leg rows: the consumers' host rule, in this package.
  EXPECT_EQ(codes(r, validate::Package::host), std::vector<std::string>{"cpu_host_missing"})
      << text(r);
  m["expected_nodes"] = {"n1", "n2"};
  m["status"] = "incomplete";
  m["reason_codes"] = {"cpu_node_samples_missing"};
  m["job_id"] = "";
  spit(f.p("cpu_power/manifest.json"), m.dump());
  r = f.check();
  EXPECT_EQ(codes(r, validate::Package::host),
            (std::vector<std::string>{"job_id_missing", "status_not_complete",
                                      "cpu_node_samples_missing", "cpu_host_missing"}))
      << text(r);
  EXPECT_TRUE(r.packages[0].publishable && r.packages[1].publishable);
  EXPECT_FALSE(r.publishable);
}

TEST(ValidateRun, NotARunDirectory) {
  TempDir dir("validate");
  validate::Options o;
  o.run_dir = dir.file("missing");
  auto r = validate::validate_run(o);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().find("not a directory"), std::string::npos);
  o.run_dir = dir.path();
  r = validate::validate_run(o);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().find("no power package"), std::string::npos);
  // power/ with only the CPU leg's cpu/ in it: the CPU package alone, no GPU one.
  fs::create_directories(dir.file("power/cpu"));
  r = validate::validate_run(o);
  ASSERT_TRUE(r) << r.error();
  EXPECT_FALSE(r->packages[0].present);
  EXPECT_TRUE(r->packages[1].present);
  EXPECT_TRUE(has(*r, "cpu_samples_missing"));
  // With no GPU package, the clock rule is the run's.
  const auto clock = std::find_if(r->findings.begin(), r->findings.end(),
                                  [](const auto& x) { return x.code == "clock_sync_unverified"; });
  ASSERT_NE(clock, r->findings.end());
  EXPECT_EQ(clock->package, validate::Package::run);
}

TEST(ValidateRun, AbsolutePackageDirectoriesAreNamedRelativeToTheRun) {
  Fixture f;
  fs::remove(f.p("clock_sync.json"));
  validate::Options o;
  o.gpu_dir = f.p("power");
  o.cpu_dir = f.p("power/cpu");
  o.host_dir = f.p("cpu_power");
  const auto r = f.check(o);
  ASSERT_FALSE(r.findings.empty());
  EXPECT_EQ(r.packages[0].dir, "power");
  EXPECT_EQ(r.packages[1].dir, "power/cpu");
}

TEST(ValidateRender, TextAndJsonCarryTheSameFindings) {
  Fixture f;
  f.m.job_id = "";
  f.write_manifest();
  const auto r = f.check();
  const std::string t = validate::render_text(r);
  EXPECT_NE(t.find("job_id_missing power/manifest.json: job_id is not a non-empty string (fix: "),
            std::string::npos)
      << t;
  EXPECT_NE(t.find("package gpu power: not publishable (1 finding)\n"), std::string::npos) << t;
  EXPECT_NE(t.find("package cpu power/cpu: publishable (0 findings)\n"), std::string::npos) << t;
  EXPECT_TRUE(t.ends_with("verdict: not publishable\n")) << t;
  const Json j = Json::parse(validate::render_json(r));
  EXPECT_EQ(j["schema_version"], 1);
  EXPECT_EQ(j["publishable"], false);
  ASSERT_EQ(j["findings"].size(), 1u);
  EXPECT_EQ(j["findings"][0]["package"], "gpu");
  EXPECT_EQ(j["findings"][0]["code"], "job_id_missing");
  EXPECT_EQ(j["findings"][0]["file"], "power/manifest.json");
  EXPECT_EQ(j["packages"][2]["present"], false);
}

TEST(ValidateRender, AFindingIsOneLineWhateverTheFileHolds) {
  Fixture f;
  spit(f.p("power/cpu/samples.csv"), "\"power\nw\",b\r\n1,2\r\n");
  const auto r = f.check();
  ASSERT_TRUE(has(r, "cpu_samples_header_mismatch", "power\\x0aw")) << text(r);
  for (const auto& x : r.findings) {
    EXPECT_EQ(x.detail.find('\n'), std::string::npos) << x.detail;
  }
}

}  // namespace
}  // namespace cpupower
