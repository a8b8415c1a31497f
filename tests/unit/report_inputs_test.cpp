// The report's defences against hostile or damaged input files: ISO 8601 stamps read as
// Python's datetime.fromisoformat reads them (and refused where it refuses them), names
// with control characters or invalid UTF-8 in the text, SVG and JSON outputs, and JSON
// numbers beyond a double's range, which fail their window with the file, line and column.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <string>

#include "common/text.hpp"
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

// A host name as hostile as a CSV cell can make it: a terminal escape that clears the screen,
// CR/LF that would forge report lines, a C0 control, DEL, a C1 control (CSI, valid UTF-8),
// bytes that are not UTF-8, XML's specials and a valid non-ASCII letter.
const std::string kHostile = "evil\x1b[2J\r\nnode\x01\x7f\xc2\x9b\xff\xfe<&\"'>\xc3\xa9\\";
// What a reader must see instead: every control and invalid byte as a visible escape, the
// backslash doubled so that an escape is never ambiguous, valid UTF-8 as it is.
const std::string kShown = "evil\\x1b[2J\\r\\nnode\\x01\\x7f\\u009b\\xff\\xfe<&\"'>\xc3\xa9\\\\";

// Every byte below 0x20 other than the layout's line breaks, DEL, and every byte that is
// not part of valid UTF-8, with its offset.
std::vector<std::string> unsafe_bytes(const std::string& s) {
  std::vector<std::string> found;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if ((c < 0x20 && c != '\n') || c == 0x7f) found.push_back(std::to_string(i) + ": control");
    if (c < 0x80) continue;
    std::size_t n = c >= 0xf0 ? 3 : c >= 0xe0 ? 2 : c >= 0xc2 ? 1 : 0;
    if (n == 0 || c > 0xf4) {
      found.push_back(std::to_string(i) + ": not UTF-8");
      continue;
    }
    for (std::size_t k = 1; k <= n; ++k) {
      if (i + k >= s.size() || (static_cast<unsigned char>(s[i + k]) & 0xc0) != 0x80) {
        found.push_back(std::to_string(i) + ": not UTF-8");
        n = 0;
        break;
      }
    }
    if (n == 1 && c == 0xc2 && static_cast<unsigned char>(s[i + 1]) < 0xa0)
      found.push_back(std::to_string(i) + ": C1 control");
    i += n;
  }
  return found;
}

WindowReport hostile_window(const std::string& name = kHostile) {
  WindowReport r;
  r.window.benchmark_type = "sa-bench";
  r.window.source = "/runs/" + name + "/results_concurrency_4_gpus_1.json";
  r.window.concurrency = 4;
  r.window.start_json = 100;
  r.window.end_json = 110;
  r.window.start_unix = 100;
  r.window.end_unix = 110;
  r.window.reported.note = "command: " + name;
  r.window.reported.source = "unavailable";
  r.cpu_per_node.push_back({"cpu/" + name, {}});
  r.cpu_per_socket.push_back({"cpu/" + name + "/socket0", {}});
  r.cpu_utilization.push_back({"cpu/" + name, "cpu_util_total", 0.5, 0.5, 3});
  r.node_power.push_back({});
  r.node_power.back().host = name;
  r.warnings = {"cpu/" + name + ": a warning"};
  return r;
}

TEST(HostileNames, TextReportShowsEscapesNotRawBytes) {
  std::vector<WindowReport> reports = {hostile_window(), hostile_window()};
  reports[1].error = "/runs/" + kHostile + "/r.json: missing required field 'x'";
  const std::string text = render_text(reports, Edges::interpolate);
  EXPECT_THAT(unsafe_bytes(text), ::testing::IsEmpty()) << text;
  EXPECT_THAT(text, ::testing::HasSubstr("    cpu/" + kShown + "/socket0: 0.00 J ("));
  EXPECT_THAT(text, ::testing::HasSubstr("  warning: cpu/" + kShown + ": a warning\n"));
  EXPECT_THAT(text, ::testing::HasSubstr("    cpu/" + kShown + " utilization: cpu_util_total"));
  EXPECT_THAT(text, ::testing::HasSubstr("(command: " + kShown + ")"));
  EXPECT_THAT(text, ::testing::HasSubstr("[sa-bench concurrency=4] error: /runs/" + kShown +
                                         "/r.json: missing required field 'x'\n"));
  // No line was forged: as many lines as with a plain name.
  std::vector<WindowReport> plain = {hostile_window("plain"), hostile_window("plain")};
  plain[1].error = "/runs/plain/r.json: missing required field 'x'";
  const auto lines = [](const std::string& s) { return std::count(s.begin(), s.end(), '\n'); };
  EXPECT_EQ(lines(text), lines(render_text(plain, Edges::interpolate)));
}

// The SVG must stay well-formed XML whatever the host is called: parsed by Python's
// xml.etree, the panel title reads as the escaped name.
TEST(HostileNames, SvgPlotStaysWellFormedXml) {
  RunData run;
  run.cpu.emplace();
  run.cpu->nodes.push_back(
      {kHostile, make_track(std::vector<double>{100, 105, 110}, std::vector<double>{10, 20, 30})});
  run.cpu->nodes.push_back(
      {"plain", make_track(std::vector<double>{100, 110}, std::vector<double>{5, 5})});
  std::vector<WindowReport> reports = {hostile_window()};
  const std::string svg = render_svg(run, reports);
  EXPECT_THAT(unsafe_bytes(svg), ::testing::IsEmpty());
  if (::access("/usr/bin/python3", X_OK) != 0) GTEST_SKIP() << "no /usr/bin/python3";
  TempDir dir("report_inputs_svg");
  spit(dir.file("plot.svg"), svg);
  const std::string cmd =
      "/usr/bin/python3 -c 'import json, sys, xml.etree.ElementTree as ET\n"
      "ns = \"{http://www.w3.org/2000/svg}\"\n"
      "root = ET.parse(sys.argv[1]).getroot()\n"
      "titles = [t.text for t in root.iter(ns + \"text\") if t.get(\"class\") == \"title\"]\n"
      "print(json.dumps(titles))' " +
      dir.file("plot.svg") + " >" + dir.file("titles.json") + " 2>" + dir.file("err.txt");
  ASSERT_EQ(std::system(cmd.c_str()), 0) << slurp(dir.file("err.txt"));
  const Json titles = Json::parse(slurp(dir.file("titles.json")));
  ASSERT_EQ(titles.size(), 3u) << titles.dump();
  EXPECT_EQ(titles[1].get<std::string>(), kShown);
  EXPECT_EQ(titles[2].get<std::string>(), "plain");
}

// nlohmann's dump throws on invalid UTF-8 unless told otherwise: the JSON report replaces
// such bytes (U+FFFD) and keeps every other character, escaped as JSON requires.
TEST(HostileNames, JsonReportReplacesInvalidUtf8InsteadOfThrowing) {
  std::vector<WindowReport> reports = {hostile_window(), hostile_window()};
  reports[1].error = "/runs/" + kHostile + "/r.json: missing required field 'x'";
  std::string json;
  ASSERT_NO_THROW(json = render_json(reports));
  EXPECT_THAT(unsafe_bytes(json), ::testing::IsEmpty());
  const Json list = Json::parse(json);
  const std::string want =
      "evil\x1b[2J\r\nnode\x01\x7f\xc2\x9b\xef\xbf\xbd\xef\xbf\xbd<&\"'>\xc3\xa9\\";
  EXPECT_EQ(list[0]["node_power"][0]["hostname"], want);
  EXPECT_EQ(list[1]["error"], "/runs/" + want + "/r.json: missing required field 'x'");
}

// The escape itself, byte class by byte class.
TEST(HostileNames, EscapeUntrustedKeepsValidUtf8AndShowsEverythingElse) {
  using common::escape_untrusted;
  EXPECT_EQ(escape_untrusted("node-a.example_1"), "node-a.example_1");
  EXPECT_EQ(escape_untrusted("caf\xc3\xa9 \xe6\x97\xa5 \xf0\x9f\x94\x8b"),
            "caf\xc3\xa9 \xe6\x97\xa5 \xf0\x9f\x94\x8b");  // 2-, 3- and 4-byte UTF-8 stay
  EXPECT_EQ(escape_untrusted(std::string("a\0b", 3)), "a\\x00b");
  EXPECT_EQ(escape_untrusted("\t\r\n\x1b\x7f\\"), "\\t\\r\\n\\x1b\\x7f\\\\");
  EXPECT_EQ(escape_untrusted("\xc2\x80\xc2\x9f\xc2\xa0"), "\\u0080\\u009f\xc2\xa0");  // C1 only
  EXPECT_EQ(escape_untrusted("\xef\xbf\xbe\xef\xbf\xbf\xef\xbf\xbd"), "\\ufffe\\uffff\xef\xbf\xbd");
  // Not UTF-8: a stray continuation, overlong forms, a surrogate, past U+10FFFF, cut short.
  EXPECT_EQ(escape_untrusted("\x80"), "\\x80");
  EXPECT_EQ(escape_untrusted("\xc0\xaf"), "\\xc0\\xaf");
  EXPECT_EQ(escape_untrusted("\xe0\x80\xaf"), "\\xe0\\x80\\xaf");
  EXPECT_EQ(escape_untrusted("\xed\xa0\x80"), "\\xed\\xa0\\x80");
  EXPECT_EQ(escape_untrusted("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80");
  EXPECT_EQ(escape_untrusted("\xe6\x97"), "\\xe6\\x97");
  EXPECT_EQ(common::escape_untrusted_xml("<a href=\"x\">&'\x01</a>"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&apos;\\x01&lt;/a&gt;");
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
    EXPECT_EQ(status.written.size(), 4u) << status.message;  // the HTML report too
  }

  TempDir dir_{"report_inputs_run"};
};

// A real sa-bench result (benchmark_serving.py with --metric-percentiles 90,99) carries TPOT
// percentiles as scalars, p90_tpot_ms, and no percentiles_tpot_ms list: p90 is read from it,
// so the report shows it instead of n/a. The list, where a result has one, still comes first.
TEST_F(DamagedRun, SaBenchScalarP90TpotOfARealResult) {
  std::string csv =
      "schema_version,timestamp_unix,hostname,source,sensor,socket_id,power_w,total_power_w\n";
  for (long long t = 1770804890; t <= 1770804975; ++t)
    csv += "1," + std::to_string(t) + ",node-a,acpi,Grace Power Socket 0,0,100,100\n";
  write("power/cpu/samples.csv", csv);
  write("benchmark.out", "Successful requests: 4\n");
  const std::string real =
      std::string(CPUPOWER_FIXTURES) + "/report/sa_bench_real/results_concurrency_16_gpus_8.json";
  const std::string path = write("sa-bench_x/results_concurrency_16_gpus_8.json", slurp(real));
  const Window w = load_sa_bench_window(path, 16);
  ASSERT_EQ(w.error, "");
  ASSERT_TRUE(w.tpot_p50_ms && w.tpot_p90_ms);
  EXPECT_EQ(*w.tpot_p50_ms, 15.08);
  EXPECT_EQ(*w.tpot_p90_ms, 16.37);

  const ReportRun run = build_reports(dir(), {});
  ASSERT_EQ(run.error, "");
  ASSERT_EQ(run.windows.size(), 1u);
  EXPECT_THAT(render_text(run.windows, Edges::interpolate),
              ::testing::HasSubstr("  TPOT: p50=15.08 ms p90=16.37 ms\n"));

  // Both spellings: the list's 90th entry wins; neither, or a p90 that is no number: n/a.
  const auto p90 = [&](const std::string& extra) {
    return load_sa_bench_window(
               write("both.json", R"({"benchmark_start_time_unix": 1, "benchmark_end_time_unix": 2,
                 "total_input_tokens": 1, "total_output_tokens": 1)" +
                                      extra + "}"),
               1)
        .tpot_p90_ms;
  };
  EXPECT_EQ(p90(R"(, "p90_tpot_ms": 16.0, "percentiles_tpot_ms": [[90, 18.7]])"), 18.7);
  EXPECT_EQ(p90(R"(, "p90_tpot_ms": 16.0, "percentiles_tpot_ms": null)"), 16.0);
  EXPECT_EQ(p90(R"(, "p90_tpot_ms": 16.0, "percentiles_tpot_ms": [[99, 25.0]])"), 16.0);
  EXPECT_EQ(p90(R"(, "p90_tpot_ms": "fast")"), std::nullopt);
  EXPECT_EQ(p90(""), std::nullopt);
}

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
  void jsonl_2_sound() {
    write("conc_2/aiperf_artifacts/profile_export.jsonl",
          record(105000000000, "107000000000", "null") +
              record(106000000000, "108000000000", "null"));
  }
  std::string jsonl(const std::string& second_record) {
    return write("conc_2/aiperf_artifacts/profile_export.jsonl",
                 record(105000000000, "107000000000", "null") + second_record);
  }
};

// An aggregate whose run is not the records' run (its stamps more than 5 s from the first
// request and the last reply, or its request_count more than 1 % of the records, at least 1,
// away) is warned about, naming both files; within the tolerances it is not.
TEST_F(DamagedAiperfRun, AggregateOfAnotherRunIsWarnedAboutNamingBothFiles) {
  const std::string dir_1 = dir() + "/conc_1/aiperf_artifacts";
  write("conc_1/aiperf_artifacts/agentic_power_timezone_offset.txt", "+00:00\n");
  const std::string jsonl = dir_1 + "/profile_export.jsonl";
  const std::string agg = dir_1 + "/profile_export_aiperf.json";
  // The records of conc_1: two successful requests from 100 s to 110 s.
  const auto warnings = [&](const std::string& start, const std::string& end, int count) {
    write("conc_1/aiperf_artifacts/profile_export_aiperf.json",
          R"({"total_osl": {"avg": 5}, "total_isl": {"avg": 2}, "start_time": "1970-01-01T)" +
              start + R"(", "end_time": "1970-01-01T)" + end +
              R"(", "request_count": {"unit": "requests", "avg": )" + std::to_string(count) + "}}");
    const Window w = load_aiperf_records_window(jsonl, 1, dir() + "/benchmark.out");
    EXPECT_EQ(w.error, "");
    EXPECT_EQ(w.start_unix, 100.0);  // the window is the records' whatever the aggregate says
    return w.warnings;
  };
  EXPECT_TRUE(warnings("00:01:40", "00:01:50", 2).empty());
  // Within 5 s of both ends, one request apart: the same run.
  EXPECT_TRUE(warnings("00:01:36", "00:01:54.5", 3).empty());

  // Read an hour off (a UTC stamp taken for local time, or another run's file).
  auto w = warnings("01:01:40", "01:01:50", 2);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0], agg + " does not match the records of " + jsonl +
                      ": start_time is 3600.000 s from the first request's start (100.000); "
                      "end_time is 3600.000 s from the last reply (110.000) (tolerance 5 s on "
                      "the stamps, 1 % of the records, at least 1, on the count); the window "
                      "comes from the records, its tokens, TPOT and reported timing from the "
                      "aggregate, which may be another run's");
  w = warnings("00:01:40", "00:01:50", 200);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_THAT(w[0], ::testing::HasSubstr(agg + " does not match the records of " + jsonl +
                                         ": request_count 200 where the records hold 2 "
                                         "successful profiling requests (tolerance"));
  w = warnings("00:01:34", "00:01:50", 2);  // 6 s early
  ASSERT_EQ(w.size(), 1u);
  EXPECT_THAT(w[0], ::testing::HasSubstr("start_time is -6.000 s from the first request's start"));

  // The run's report carries it among the window's warnings.
  warnings("01:01:40", "01:01:50", 2);
  jsonl_2_sound();
  const ReportRun run = build_reports(dir(), {});
  ASSERT_EQ(run.error, "");
  ASSERT_EQ(run.windows.size(), 2u);
  EXPECT_THAT(run.windows[0].warnings,
              ::testing::Contains(::testing::StartsWith(agg + " does not match the records of " +
                                                        jsonl + ": start_time is 3600.000 s")));
  EXPECT_THAT(render_text(run.windows, Edges::interpolate),
              ::testing::HasSubstr("warning: " + agg + " does not match the records of "));
}

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
