// The report's defences against hostile or damaged input files: ISO 8601 stamps read as
// Python's datetime.fromisoformat reads them (and refused where it refuses them), and JSON
// numbers beyond a double's range, which fail their window with the file, line and column.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <charconv>
#include <cstring>
#include <filesystem>
#include <string>

#include "report/iso_time.hpp"
#include "report/json_value.hpp"
#include "report/phase_log.hpp"
#include "report/render.hpp"
#include "report/run_report.hpp"
#include "report/window.hpp"
#include "temp_dir.hpp"

namespace cpupower::report {
namespace {

using testing::slurp;
using testing::spit;
using testing::TempDir;

double parse_repr(const std::string& text) {
  double v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  EXPECT_TRUE(ec == std::errc() && end == text.data() + text.size()) << text;
  return v;
}

std::string bits(double v) {
  std::uint64_t u = 0;
  std::memcpy(&u, &v, sizeof u);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g (0x%016llx)", v, static_cast<unsigned long long>(u));
  return buf;
}

// tests/fixtures/report/iso_time/cases.json, made by make_cases.py beside it from Python
// 3.11: every stamp Python reads gives exactly Python's timestamp() (a naive stamp in the
// case's offset), every stamp Python refuses is refused, and the few forms Python reads
// but we refuse on purpose (see iso_time.hpp) are refused.
TEST(IsoTime, EveryCaseAgreesWithPythonFromisoformat) {
  const std::string path = std::string(CPUPOWER_FIXTURES) + "/report/iso_time/cases.json";
  const Json cases = Json::parse(testing::slurp(path));
  ASSERT_GT(cases.size(), 150u);
  std::size_t accepted = 0, rejected = 0;
  for (const auto& c : cases) {
    const std::string stamp = c["stamp"].get<std::string>();
    const int offset = c["offset_min"].get<int>();
    const auto got = iso_to_unix(stamp, offset);
    if (c.contains("unix")) {
      ++accepted;
      const double want = parse_repr(c["unix"].get<std::string>());
      ASSERT_TRUE(got) << Json(stamp).dump() << " offset " << offset << ": refused, Python reads "
                       << bits(want);
      EXPECT_EQ(bits(*got), bits(want)) << Json(stamp).dump() << " offset " << offset;
    } else {
      ++rejected;
      EXPECT_FALSE(got) << Json(stamp).dump() << " offset " << offset << ": read as " << bits(*got)
                        << "; Python: "
                        << c.value("reject", std::string("(read, but outside our forms)"));
    }
  }
  EXPECT_GT(accepted, 50u);
  EXPECT_GT(rejected, 50u);
}

TEST(IsoTime, ImpossibleDatesAreRefusedNotCarriedIntoTheNextMonth) {
  EXPECT_FALSE(iso_to_unix("2026-02-31T00:00:00Z", std::nullopt));  // not 3 March
  EXPECT_FALSE(iso_to_unix("2026-02-29T12:00:00", 0));
  EXPECT_FALSE(iso_to_unix("0000-01-01T00:00:00Z", std::nullopt));  // Python has no year 0
  EXPECT_EQ(*iso_to_unix("2024-02-29T00:00:00Z", std::nullopt), 1709164800.0);
}

// The recorded offset of a run (agentic_power_timezone_offset.txt) follows the same rule as a
// stamp's: strictly inside a day.
TEST(IsoTime, UtcOffsetsStrictlyInsideADay) {
  EXPECT_EQ(*parse_utc_offset("+05:30"), 330);
  EXPECT_EQ(*parse_utc_offset("-0700"), -420);
  EXPECT_EQ(*parse_utc_offset("+23:59"), 1439);
  EXPECT_EQ(*parse_utc_offset("+05:60"), 360);  // Python carries the minutes, so do we
  EXPECT_FALSE(parse_utc_offset("+24:00"));
  EXPECT_FALSE(parse_utc_offset("-24:00"));
  EXPECT_FALSE(parse_utc_offset("+99:99"));
  EXPECT_FALSE(parse_utc_offset("+5:30"));
  EXPECT_FALSE(parse_utc_offset("05:30"));
}

// An aggregate-only aiperf window takes its span from start_time and end_time: an impossible
// date fails the window instead of rolling over into the next month.
TEST(IsoTime, AggregateWindowWithAnImpossibleDateFails) {
  TempDir dir("report_inputs_iso");
  const std::string agg = dir.file("profile_export_aiperf.json");
  spit(agg,
       R"({"start_time": "2026-02-31T10:00:00", "end_time": "2026-03-03T10:01:00",
           "total_osl": {"avg": 1}, "total_isl": {"avg": 1}})");
  spit(dir.file("agentic_power_timezone_offset.txt"), "+00:00\n");
  const Window w = load_aiperf_aggregate_window(agg, 1, dir.file("benchmark.out"));
  EXPECT_EQ(w.error, agg + ": start_time \"2026-02-31T10:00:00\": day is out of range for month");
}

// A recorded offset that is not one fails the window, instead of the stamps being read in this
// host's timezone without a word.
TEST(IsoTime, UnreadableRecordedOffsetFailsTheWindow) {
  TempDir dir("report_inputs_iso");
  const std::string agg = dir.file("profile_export_aiperf.json");
  spit(agg,
       R"({"start_time": "2026-02-27T10:00:00", "end_time": "2026-02-27T10:01:00",
           "total_osl": {"avg": 1}, "total_isl": {"avg": 1}})");
  const std::string offset = dir.file("agentic_power_timezone_offset.txt");
  spit(offset, "+25:00\n");
  EXPECT_EQ(load_aiperf_aggregate_window(agg, 1, dir.file("benchmark.out")).error,
            offset + ": UTC offset must be strictly inside a day (want +HH:MM or -HHMM)");
  spit(offset, "local\n");
  EXPECT_EQ(load_aiperf_aggregate_window(agg, 1, dir.file("benchmark.out")).error,
            offset + ": not a UTC offset (want +HH:MM or -HHMM)");
  spit(offset, "-07:00\n");
  const Window w = load_aiperf_aggregate_window(agg, 1, dir.file("benchmark.out"));
  EXPECT_EQ(w.error, "");
  EXPECT_EQ(w.start_unix, 1772211600.0);  // 10:00 at -07:00 is 17:00 UTC
}

// A run of two windows whose second one's artifact is damaged, with a flat 100 W CPU leg under
// both: the damaged window fails with its file, line and column; the other keeps its numbers.
class DamagedRun : public ::testing::Test {
 protected:
  std::string write(const std::string& rel, const std::string& text) {
    const std::filesystem::path p = std::filesystem::path(dir_.path()) / rel;
    std::filesystem::create_directories(p.parent_path());
    spit(p.string(), text);
    return p.string();
  }
  std::string dir() const { return dir_.path(); }

  void cpu_leg() {
    std::string csv =
        "schema_version,timestamp_unix,hostname,source,sensor,socket_id,power_w,total_power_w\n";
    for (int t = 95; t <= 125; ++t)
      csv += "1," + std::to_string(t) + ",node-a,acpi,Grace Power Socket 0,0,100,100\n";
    write("power/cpu/samples.csv", csv);
  }

  // sa-bench: concurrency 4 over [100, 110] is sound; concurrency 8 has `bad` for its input
  // tokens on line 3.
  std::string sa_bench_run(const std::string& bad) {
    cpu_leg();
    write("benchmark.out", "Successful requests: 40\n");
    write("sa-bench_x/results_concurrency_4_gpus_1.json",
          R"({"benchmark_start_time_unix": 100, "benchmark_end_time_unix": 110,
"total_output_tokens": 500,
"total_input_tokens": 1500})");
    return write("sa-bench_x/results_concurrency_8_gpus_1.json",
                 "{\"benchmark_start_time_unix\": 105, \"benchmark_end_time_unix\": 115,\n"
                 "\"total_output_tokens\": 500,\n"
                 "\"total_input_tokens\": " +
                     bad + "}\n");
  }

  // The sound window reports 1000 J, the damaged one fails with `error`, and the whole run
  // ends as any run with a failed window does: files written, status not ok.
  void expect_only_second_window_fails(const std::string& error) {
    const ReportRun run = build_reports(dir(), {});
    ASSERT_EQ(run.error, "");
    ASSERT_EQ(run.windows.size(), 2u);
    EXPECT_EQ(run.windows[0].error, "");
    EXPECT_EQ(run.windows[0].cpu_total_joules.get<double>(), 1000.0);
    EXPECT_EQ(run.windows[1].error, error);
    EXPECT_TRUE(run.any_window_failed());
    const std::string text = render_text(run.windows, Edges::interpolate);
    EXPECT_THAT(text, ::testing::HasSubstr("error: " + error + "\n"));
    EXPECT_THAT(text,
                ::testing::HasSubstr("total energy across all concurrency points: 1,000.00 J"));
    const RunReportStatus status = write_run_report(dir(), {});
    EXPECT_FALSE(status.ok);
    EXPECT_EQ(status.windows, 2u);
    EXPECT_EQ(status.failed_windows, 1u);
    EXPECT_EQ(status.written.size(), 3u) << status.message;
  }

  TempDir dir_{"report_inputs_run"};
};

TEST_F(DamagedRun, SaBenchNumberBeyondADoubleFailsOnlyItsWindow) {
  const std::string path = sa_bench_run("1e400");
  expect_only_second_window_fails(path + ":3:23: number out of a double's range: 1e400");
}

TEST_F(DamagedRun, SaBenchIntegerOf400DigitsFailsOnlyItsWindow) {
  const std::string digits(400, '7');
  const std::string path = sa_bench_run(digits);
  expect_only_second_window_fails(path + ":3:23: number out of a double's range: " +
                                  digits.substr(0, 24) + "... (400 characters)");
}

TEST_F(DamagedRun, SaBenchNegativeOverflowAndMalformedJsonSayWhere) {
  const std::string path = sa_bench_run("-1e999");
  expect_only_second_window_fails(path + ":3:23: number out of a double's range: -1e999");
  sa_bench_run("15OO");
  expect_only_second_window_fails(path +
                                  ":3:25: malformed JSON: syntax error while parsing object - "
                                  "invalid literal; last read: '15O'; expected '}'");
}

std::string record(long long start_ns, const std::string& end_ns, const std::string& error) {
  return "{\"metadata\": {\"session_num\": 0, \"request_start_ns\": " + std::to_string(start_ns) +
         ", \"request_end_ns\": " + end_ns +
         ", \"benchmark_phase\": \"profiling\"}, \"metrics\": {}, \"error\": " + error + "}\n";
}

// aiperf: conc_1's records span [100, 110] s, conc_2's records and aggregate are damaged.
class DamagedAiperfRun : public DamagedRun {
 protected:
  void SetUp() override {
    cpu_leg();
    write("benchmark.out", "Phase profiling (profiling) complete\n");
    write("conc_1/aiperf_artifacts/profile_export.jsonl",
          record(100000000000, "105000000000", "null") +
              record(101000000000, "110000000000", "null"));
    for (const char* n : {"conc_1", "conc_2"}) {
      write(std::string(n) + "/aiperf_artifacts/profile_export_aiperf.json",
            R"({"total_osl": {"avg": 5}, "total_isl": {"avg": 2}})");
    }
  }
  std::string jsonl(const std::string& second_record) {
    return write("conc_2/aiperf_artifacts/profile_export.jsonl",
                 record(105000000000, "107000000000", "null") + second_record);
  }
};

TEST_F(DamagedAiperfRun, RecordNumberBeyondADoubleFailsOnlyItsWindow) {
  const std::string line = record(106000000000, "1e400", "null");
  const std::string path = jsonl(line);
  const std::size_t column = line.find("1e400") + 1;
  expect_only_second_window_fails(path + ":2:" + std::to_string(column) +
                                  ": number out of a double's range: 1e400");
}

// An "error" member that overflows is not a zero (which would count the failed request).
TEST_F(DamagedAiperfRun, RecordErrorBeyondADoubleIsNotReadAsNoError) {
  const std::string line = record(106000000000, "120000000000", "1e400");
  const std::string path = jsonl(line);
  const std::size_t column = line.rfind("1e400") + 1;
  expect_only_second_window_fails(path + ":2:" + std::to_string(column) +
                                  ": number out of a double's range: 1e400");
}

// A request time beyond int64 is neither wrapped nor rounded into a window; one that is not
// a JSON number is no time either.
TEST_F(DamagedAiperfRun, RecordTimesMustBeIntegersInRange) {
  for (const std::string bad : {"18446744073709551615", "107000000000.5", "\"107000000000\""}) {
    const std::string line = record(106000000000, bad, "null");
    const std::string path = jsonl(line);
    expect_only_second_window_fails(path + ":2:" + std::to_string(line.find(bad) + 1) +
                                    ": metadata.request_end_ns is not an integer nanosecond "
                                    "time in range");
  }
  const std::string line = record(106000000000, "10700OOOOOO", "null");
  const std::string path = jsonl(line);
  expect_only_second_window_fails(path + ":2:" + std::to_string(line.find("107") + 1) +
                                  ": malformed number: 10700OOOOOO");
}

TEST_F(DamagedAiperfRun, AggregateNumberBeyondADoubleFailsOnlyItsWindow) {
  jsonl(record(106000000000, "109000000000", "null"));
  const std::string agg = write("conc_2/aiperf_artifacts/profile_export_aiperf.json",
                                "{\"total_osl\": {\"avg\": 5},\n \"total_isl\": {\"avg\": 2e308}}");
  expect_only_second_window_fails(agg + ":2:23: number out of a double's range: 2e308");
}

TEST(DamagedSession, SessionNumberBeyondADoubleSaysWhere) {
  TempDir dir("report_inputs_session");
  spit(dir.file("session.json"), "{\"start_unix\": 1,\n  \"end_unix\": 1e400}");
  const Window w = load_session_window(dir.file("session.json"));
  EXPECT_EQ(w.error, dir.file("session.json") + ":2:15: number out of a double's range: 1e400");
}

// benchmark.out is text, but its `elapsed=` numbers are read too: one beyond a double's range
// is no duration, and the phase's NOTICE stamps give it instead.
TEST(DamagedPhaseLog, ElapsedBeyondADoubleIsNotADuration) {
  TempDir dir("report_inputs_log");
  const std::string out = dir.file("benchmark.out");
  spit(out,
       "10:00:00.000 NOTICE   Phase profiling (profiling) started\n"
       "10:01:00.500 NOTICE   Phase profiling (profiling) complete | elapsed=" +
           std::string(400, '9') + "s\n");
  EXPECT_FALSE(elapsed_seconds("| elapsed=" + std::string(400, '9') + "s"));
  const ReportedTiming r = phase_log_timing(out);
  ASSERT_TRUE(r.duration_seconds);
  EXPECT_EQ(*r.duration_seconds, 60.5);
}

}  // namespace
}  // namespace cpupower::report
