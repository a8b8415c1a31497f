// The report's defences against hostile or damaged input files: ISO 8601 stamps read as
// Python's datetime.fromisoformat reads them, and refused where it refuses them.

#include <gtest/gtest.h>

#include <charconv>
#include <cstring>
#include <string>

#include "report/iso_time.hpp"
#include "report/json_value.hpp"
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

}  // namespace
}  // namespace cpupower::report
