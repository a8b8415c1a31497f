#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "artifacts/host_samples.hpp"
#include "hostleg/manifest.hpp"
#include "hostleg/markers.hpp"
#include "hostleg/merge.hpp"
#include "report/cpu_data.hpp"
#include "temp_dir.hpp"

namespace cpupower::hostleg {
namespace {

namespace fs = std::filesystem;
using artifacts::HostSampleRow;
using Json = nlohmann::ordered_json;

// Every TempDir of this file: its own prefix, with a nodes/ directory inside.
class TempDir : public cpupower::testing::TempDir {
 public:
  TempDir() : cpupower::testing::TempDir("hostleg_merge_test") {
    fs::create_directories(fs::path(path()) / "nodes");
  }
};
using cpupower::testing::slurp;
using cpupower::testing::spit;

std::string crlf(std::string_view header) {
  return std::string(header) + "\r\n";
}

HostSampleRow v5_row(double t, const std::string& host, std::uint32_t socket, double power) {
  HostSampleRow r;
  r.timestamp_unix = t;
  r.timestamp_local = "2026-01-01T00:00:00+00:00";
  r.hostname = host;
  r.source = "acpi";
  r.sensor = "CPU" + std::to_string(socket) + ":cpuSidePowerUsageW";
  r.socket_id = socket;
  r.power_w = power;
  r.cpu_rail_w = power / 2;
  r.soc_w = 10;
  r.dram_w = 5;
  r.module_w = 400;
  r.total_power_w = power * 2;
  return r;
}

// A v5 node file holding `rows`, written as the host collector writes it.
void write_v5(const TempDir& dir, const std::string& host, const std::vector<HostSampleRow>& rows,
              const std::string& tail = "") {
  std::string text = crlf(artifacts::kHostHeaderV5);
  for (const auto& r : rows) text += artifacts::format_host_row(r);
  spit(dir.file("nodes/" + host + ".csv"), text + tail);
}

std::string expected_samples(const std::vector<HostSampleRow>& rows) {
  std::string text = crlf(artifacts::kHostHeaderV5);
  for (const auto& r : rows) text += artifacts::format_host_row(r);
  return text;
}

MergeSettings settings_for(const TempDir& dir, std::vector<std::string> expected) {
  MergeSettings s;
  s.cpu_dir = dir.path();
  s.expected_nodes = std::move(expected);
  s.job_id = "4242";
  s.run_name = "bench";
  return s;
}

Json manifest_of(const TempDir& dir) {
  return Json::parse(slurp(dir.file("manifest.json")));
}

// ---- ordering -------------------------------------------------------------------------

TEST(HostMerge, RowsOfTwoNodesSortByTimeThenHostThenSensor) {
  TempDir dir;
  // Each node's file is in its own order; socket 1 before socket 0 at the same time.
  write_v5(
      dir, "node-a",
      {v5_row(2.0, "node-a", 1, 91), v5_row(2.0, "node-a", 0, 90), v5_row(3.0, "node-a", 0, 92)});
  write_v5(dir, "node-b", {v5_row(1.0, "node-b", 0, 80), v5_row(2.0, "node-b", 0, 81)});
  const auto out = merge_host_samples(settings_for(dir, {"node-a", "node-b"}));
  EXPECT_EQ(out.status, "complete");
  EXPECT_TRUE(out.publication_valid);
  EXPECT_TRUE(out.reason_codes.empty());
  EXPECT_EQ(out.sample_row_count, 5u);
  EXPECT_EQ(out.observed_nodes, (std::vector<std::string>{"node-a", "node-b"}));
  EXPECT_TRUE(out.missing_nodes.empty());
  EXPECT_EQ(slurp(dir.file("samples.csv")),
            expected_samples({v5_row(1.0, "node-b", 0, 80), v5_row(2.0, "node-a", 0, 90),
                              v5_row(2.0, "node-a", 1, 91), v5_row(2.0, "node-b", 0, 81),
                              v5_row(3.0, "node-a", 0, 92)}));
}

TEST(HostMerge, TimesCompareAsNumbersNotText) {
  TempDir dir;
  write_v5(dir, "n1", {v5_row(10.0, "n1", 0, 1), v5_row(9.5, "n1", 0, 2)});
  merge_host_samples(settings_for(dir, {"n1"}));
  EXPECT_EQ(slurp(dir.file("samples.csv")),
            expected_samples({v5_row(9.5, "n1", 0, 2), v5_row(10.0, "n1", 0, 1)}));
}

// ---- every schema version -------------------------------------------------------------

TEST(HostMerge, EveryVersionIsConvertedToV5) {
  TempDir dir;
  // v1: DCGM primary, one row per socket, no local time.
  spit(dir.file("nodes/n1.csv"), crlf(artifacts::kHostHeaderV1) +
                                     "1,1.5,n1,dcgm,CPU0:cpuPowerUsageW,0,50.5,101\r\n"
                                     "1,1.5,n1,dcgm,CPU1:cpuPowerUsageW,1,50.5,101\r\n");
  // v2: ACPI, one row per rail; the socket total is the primary.
  spit(dir.file("nodes/n2.csv"),
       crlf(artifacts::kHostHeaderV2) +
           "2,2.5,2026-01-01T00:00:02+01:00,n2,acpi,CPU0:cpuRailPowerUsageW,0,40,90\r\n"
           "2,2.5,2026-01-01T00:00:02+01:00,n2,acpi,CPU0:cpuSidePowerUsageW,0,90,90\r\n"
           "2,2.5,2026-01-01T00:00:02+01:00,n2,acpi,CPU0:socPowerUsageW,0,10,90\r\n"
           "2,2.5,2026-01-01T00:00:02+01:00,n2,acpi,CPU0:dramPowerUsageW,0,5,90\r\n"
           "2,2.5,2026-01-01T00:00:02+01:00,n2,acpi,CPU0:modulePowerUsageW,0,300,90\r\n");
  // v3: DCGM with utilization; a SysIO row alone at 4.0 has no primary and gives no row.
  spit(dir.file("nodes/n3.csv"),
       crlf(artifacts::kHostHeaderV3) +
           "3,3.5,2026-01-01T00:00:03Z,n3,dcgm,CPU0:cpuPowerUsageW,0,45,45,0.5,0.3,0,0.1,0.1\r\n"
           "3,3.5,2026-01-01T00:00:03Z,n3,dcgm,CPU0:socPowerUsageW,0,8,45,0.5,0.3,0,0.1,0.1\r\n"
           "3,4,2026-01-01T00:00:04Z,n3,dcgm,CPU0:socPowerUsageW,0,8,45,,,,,\r\n");
  // v4: wide, no module_w.
  spit(dir.file("nodes/n4.csv"),
       crlf(artifacts::kHostHeaderV4) +
           "4,4.5,2026-01-01T00:00:04Z,n4,acpi,CPU0:cpuSidePowerUsageW,0,95,45,12,6,95,0.25,0.2,"
           "0,0.05,0\r\n");
  // v5 as written today.
  HostSampleRow five = v5_row(5.5, "n5", 0, 99);
  five.cpu_util = {0.5, 0.4, 0.0, 0.1, 0.0};
  write_v5(dir, "n5", {five});

  const auto out = merge_host_samples(settings_for(dir, {"n1", "n2", "n3", "n4", "n5"}));
  EXPECT_TRUE(out.publication_valid) << summary_line(out);
  EXPECT_EQ(out.malformed_rows, 0u);
  EXPECT_EQ(out.dropped_groups, 1u);
  EXPECT_EQ(out.observed_nodes, (std::vector<std::string>{"n1", "n2", "n3", "n4", "n5"}));

  std::vector<HostSampleRow> want;
  for (std::uint32_t s : {0u, 1u}) {
    HostSampleRow r;
    r.timestamp_unix = 1.5;
    r.hostname = "n1";
    r.source = "dcgm";
    r.sensor = "CPU" + std::to_string(s) + ":cpuPowerUsageW";
    r.socket_id = s;
    r.power_w = 50.5;
    r.cpu_rail_w = 50.5;  // DCGM 1130 is the CPU rail
    r.total_power_w = 101;
    want.push_back(r);
  }
  HostSampleRow two;
  two.timestamp_unix = 2.5;
  two.timestamp_local = "2026-01-01T00:00:02+01:00";
  two.hostname = "n2";
  two.source = "acpi";
  two.sensor = "CPU0:cpuSidePowerUsageW";
  two.power_w = 90;
  two.cpu_rail_w = 40;
  two.soc_w = 10;
  two.dram_w = 5;
  two.module_w = 300;
  two.total_power_w = 90;
  want.push_back(two);
  HostSampleRow three;
  three.timestamp_unix = 3.5;
  three.timestamp_local = "2026-01-01T00:00:03Z";
  three.hostname = "n3";
  three.source = "dcgm";
  three.sensor = "CPU0:cpuPowerUsageW";
  three.power_w = 45;
  three.cpu_rail_w = 45;
  three.soc_w = 8;
  three.total_power_w = 45;
  three.cpu_util = {0.5, 0.3, 0.0, 0.1, 0.1};
  want.push_back(three);
  HostSampleRow four;
  four.timestamp_unix = 4.5;
  four.timestamp_local = "2026-01-01T00:00:04Z";
  four.hostname = "n4";
  four.source = "acpi";
  four.sensor = "CPU0:cpuSidePowerUsageW";
  four.power_w = 95;
  four.cpu_rail_w = 45;
  four.soc_w = 12;
  four.dram_w = 6;
  four.total_power_w = 95;
  four.cpu_util = {0.25, 0.2, 0.0, 0.05, 0.0};
  want.push_back(four);
  want.push_back(five);
  EXPECT_EQ(slurp(dir.file("samples.csv")), expected_samples(want));
}

TEST(HostMerge, ColumnsAreFoundByNameAndQuotedCellsRead) {
  TempDir dir;
  HostSampleRow r = v5_row(1.0, "n1", 0, 90);
  r.timestamp_local = "local, with a comma";
  write_v5(dir, "n1", {r, v5_row(2.0, "n1", 0, 91)});
  const auto out = merge_host_samples(settings_for(dir, {"n1"}));
  EXPECT_TRUE(out.publication_valid);
  EXPECT_EQ(slurp(dir.file("samples.csv")), expected_samples({r, v5_row(2.0, "n1", 0, 91)}));
}

// ---- reason codes and the required outcome ---------------------------------------------

struct ReasonCase {
  std::string name;
  std::function<void(const TempDir&)> setup;  // beyond two good nodes n1, n2
  std::function<void(MergeSettings&)> adjust;
  std::vector<std::string> reasons;
};

std::vector<ReasonCase> reason_cases() {
  const auto none = [](const TempDir&) {};
  const auto keep = [](MergeSettings&) {};
  return {
      {"all_good", none, keep, {}},
      {"interrupted", none, [](MergeSettings& s) { s.interrupted = true; }, {"interrupted"}},
      {"readiness_reason_carried",
       none,
       [](MergeSettings& s) { s.readiness_reasons = {"cpu_power_startup_timeout"}; },
       {"cpu_power_startup_timeout"}},
      {"malformed_row",
       [](const TempDir& d) {
         write_v5(d, "n3", {v5_row(1.0, "n3", 0, 1)}, "5,1.5,n3,acpi,CPU0:x,0\r\n");
       },
       keep,
       {"cpu_samples_malformed"}},
      {"malformed_header",
       [](const TempDir& d) { spit(d.file("nodes/junk.csv"), "a,b,c\r\n1,2,3\r\n"); },
       keep,
       {"cpu_samples_malformed"}},
      {"missing_node",
       none,
       [](MergeSettings& s) { s.expected_nodes.push_back("n9"); },
       {"cpu_node_samples_missing"}},
      {"empty",
       [](const TempDir& d) {
         fs::remove(d.file("nodes/n1.csv"));
         fs::remove(d.file("nodes/n2.csv"));
       },
       [](MergeSettings& s) { s.expected_nodes.clear(); },
       {"cpu_samples_empty"}},
      {"empty_and_missing",
       [](const TempDir& d) {
         fs::remove(d.file("nodes/n1.csv"));
         fs::remove(d.file("nodes/n2.csv"));
       },
       keep,
       {"cpu_node_samples_missing", "cpu_samples_empty"}},
      {"collector_failed",
       none,
       [](MergeSettings& s) { s.failed_processes = {"host-collect@n2"}; },
       {"cpu_collector_failed"}},
      {"write_failed",
       [](const TempDir& d) { fs::create_directory(d.file("samples.csv")); },
       keep,
       {"cpu_samples_write_failed"}},
      {"all_in_order",
       [](const TempDir& d) {
         write_v5(d, "n3", {v5_row(1.0, "n3", 0, 1)}, "5,nan,n3,acpi,CPU0:x,0,1,,,,,2,,,,,\r\n");
       },
       [](MergeSettings& s) {
         s.interrupted = true;
         s.readiness_reasons = {"cpu_power_source_unavailable", "cpu_power_source_unavailable"};
         s.failed_processes = {"host-collect@n2"};
         s.expected_nodes.push_back("n9");
       },
       {"interrupted", "cpu_power_source_unavailable", "cpu_samples_malformed",
        "cpu_node_samples_missing", "cpu_collector_failed"}},
  };
}

TEST(HostMerge, EveryReasonCodeAndRequiredOutcome) {
  for (const auto& c : reason_cases()) {
    for (const bool required : {false, true}) {
      SCOPED_TRACE(c.name + (required ? " required" : " best-effort"));
      TempDir dir;
      write_v5(dir, "n1", {v5_row(1.0, "n1", 0, 90)});
      write_v5(dir, "n2", {v5_row(1.0, "n2", 0, 80)});
      c.setup(dir);
      MergeSettings s = settings_for(dir, {"n1", "n2"});
      s.required = required;
      c.adjust(s);
      const auto out = merge_host_samples(s);
      EXPECT_EQ(out.reason_codes, c.reasons);
      const bool valid = c.reasons.empty();
      EXPECT_EQ(out.publication_valid, valid);
      EXPECT_EQ(out.status, valid ? "complete" : "incomplete");
      EXPECT_EQ(out.exit_nonzero, required && !valid);
      EXPECT_EQ(out.error.empty(), c.name != "write_failed") << out.error;
      const Json m = manifest_of(dir);
      EXPECT_EQ(m["status"], out.status);
      EXPECT_EQ(m["required"], required);
      EXPECT_EQ(m["reason_codes"].get<std::vector<std::string>>(), c.reasons);
      EXPECT_EQ(summary_line(out), "CPU power telemetry: status=" + out.status +
                                       " publication_valid=" + (valid ? "true" : "false") +
                                       " reasons=" + (valid ? std::string("none") : [&] {
                                         std::string j;
                                         for (const auto& r : c.reasons)
                                           j += (j.empty() ? "" : ",") + r;
                                         return j;
                                       }()));
    }
  }
}

TEST(HostMerge, MalformedHeaderNamesTheFileAndSkipsEveryRow) {
  TempDir dir;
  write_v5(dir, "n1", {v5_row(1.0, "n1", 0, 90)});
  spit(dir.file("nodes/n2.csv"),
       "schema_version,timestamp_unix,hostname\r\n5,1.0,n2\r\n5,2.0,n2\r\n");
  const auto out = merge_host_samples(settings_for(dir, {"n1", "n2"}));
  EXPECT_EQ(out.reason_codes,
            (std::vector<std::string>{"cpu_samples_malformed", "cpu_node_samples_missing"}));
  EXPECT_EQ(out.malformed_files, std::vector<std::string>{"nodes/n2.csv"});
  EXPECT_EQ(out.malformed_rows, 0u);
  EXPECT_EQ(out.sample_row_count, 1u);
  ASSERT_FALSE(out.problems.empty());
  EXPECT_NE(out.problems[0].find("nodes/n2.csv:1: header"), std::string::npos) << out.problems[0];
}

// ---- torn and malformed rows ----------------------------------------------------------

TEST(HostMerge, TornLastLineIsDroppedAndNotMalformed) {
  TempDir dir;
  write_v5(dir, "n1", {v5_row(1.0, "n1", 0, 90), v5_row(2.0, "n1", 0, 91)}, "5,3.0,n1,ac");
  // A whole row without its line break is torn too: its last cell may be cut short.
  const std::string whole = artifacts::format_host_row(v5_row(3.0, "n2", 0, 80));
  write_v5(dir, "n2", {v5_row(1.0, "n2", 0, 79)}, whole.substr(0, whole.size() - 2));
  const auto out = merge_host_samples(settings_for(dir, {"n1", "n2"}));
  EXPECT_TRUE(out.publication_valid) << summary_line(out);
  EXPECT_EQ(out.torn_rows, 2u);
  EXPECT_EQ(out.malformed_rows, 0u);
  EXPECT_EQ(out.sample_row_count, 3u);
  ASSERT_FALSE(out.problems.empty());
  EXPECT_NE(out.problems[0].find("nodes/n1.csv:4: torn"), std::string::npos) << out.problems[0];
  const Json m = manifest_of(dir);
  EXPECT_EQ(m["torn_rows"], 2);
  EXPECT_EQ(m["malformed_rows"], 0);
}

TEST(HostMerge, NonNumericTimestampIsMalformedNotAnException) {
  TempDir dir;
  write_v5(dir, "n1", {v5_row(1.0, "n1", 0, 90)});
  std::string text = slurp(dir.file("nodes/n1.csv"));
  text += "5,not-a-time,x,n1,acpi,CPU0:cpuSidePowerUsageW,0,90,,,,,180,,,,,\r\n";
  text += "5,inf,x,n1,acpi,CPU0:cpuSidePowerUsageW,0,90,,,,,180,,,,,\r\n";
  text += "5,2.0,x,n1,acpi,CPU0:cpuSidePowerUsageW,zero,90,,,,,180,,,,,\r\n";
  text += "5,2.0,x,n1,acpi,CPU0:cpuSidePowerUsageW,-1,90,,,,,180,,,,,\r\n";
  text += "5,2.0,x,n1,acpi,CPU0:cpuSidePowerUsageW,0,nan,,,,,180,,,,,\r\n";
  text += "5,2.0,x,n1,acpi,CPU0:cpuSidePowerUsageW,0,90\r\n";
  text += "5,2.0,x,n1,acpi,CPU0:cpuSidePowerUsageW,0,90,,,,,180,,,,,\r\n";
  spit(dir.file("nodes/n1.csv"), text);
  MergeOutcome out;
  ASSERT_NO_THROW(out = merge_host_samples(settings_for(dir, {"n1"})));
  // The nan power_w is a missing reading (its row kept, as the report keeps it); the other
  // five rows are skipped, one problem per reason, with the first line.
  EXPECT_EQ(out.malformed_rows, 5u);
  EXPECT_EQ(out.torn_rows, 0u);
  EXPECT_EQ(out.sample_row_count, 3u);
  EXPECT_EQ(out.reason_codes, std::vector<std::string>{"cpu_samples_malformed"});
  EXPECT_FALSE(out.exit_nonzero);
  EXPECT_EQ(out.problems,
            (std::vector<std::string>{
                "nodes/n1.csv: 2 of 8 rows skipped: timestamp_unix is not a finite number (first "
                "at line 3: timestamp_unix 'not-a-time' is not a finite number)",
                "nodes/n1.csv: 2 of 8 rows skipped: socket_id is not an integer in 0..4294967295 "
                "(first at line 5: socket_id 'zero' is not an integer in 0..4294967295)",
                "nodes/n1.csv: 1 reading read as missing: power_w is not a positive finite number "
                "(first at line 7: power_w 'nan' is not a positive finite number)",
                "nodes/n1.csv: 1 of 8 rows skipped: wrong number of cells (first at line 8: 8 "
                "cells where the header has 18)"}));
}

// Readings are held to the report's rules (artifacts/row_issues.hpp), so that whatever the
// merge writes the report reads whole: any reading above its physical bound makes the row
// malformed; a reading that is zero or negative is missing (an empty cell), as a writer would
// have left it.
TEST(HostMerge, ReadingsOutsideTheirBoundsAreMalformedOrMissing) {
  TempDir dir;
  write_v5(dir, "n1", {v5_row(1.0, "n1", 0, 90)});
  std::string text = slurp(dir.file("nodes/n1.csv"));
  text += "5,2.0,x,n1,acpi,CPU0:cpuSidePowerUsageW,0,0,,,,,180,,,,,\r\n";
  text += "5,2.0,x,n1,acpi,CPU0:cpuSidePowerUsageW,0,-90,,,,,180,,,,,\r\n";
  text += "5,2.0,x,n1,acpi,CPU0:cpuSidePowerUsageW,0,10001,,,,,180,,,,,\r\n";
  text += "5,2.0,x,n1,acpi,CPU0:cpuSidePowerUsageW,0,90,45,10,5,40008,180,,,,,\r\n";
  text += "5,2.0,x,n1,acpi,CPU0:cpuSidePowerUsageW,0,90,,,,,100001,,,,,\r\n";
  text += "5,3.0,x,n1,acpi,CPU0:cpuSidePowerUsageW,0,90,-45,0,5,-1,-180,,,,,\r\n";
  spit(dir.file("nodes/n1.csv"), text);
  // A long (v2) file: a rail above its bound takes its own row, and the group keeps the rest.
  spit(dir.file("nodes/n2.csv"),
       crlf(artifacts::kHostHeaderV2) +
           "2,2.5,2026-01-01T00:00:02Z,n2,acpi,CPU0:cpuSidePowerUsageW,0,90,90\r\n"
           "2,2.5,2026-01-01T00:00:02Z,n2,acpi,CPU0:dramPowerUsageW,0,20000,90\r\n"
           "2,2.5,2026-01-01T00:00:02Z,n2,acpi,CPU0:socPowerUsageW,0,-10,90\r\n");

  const auto out = merge_host_samples(settings_for(dir, {"n1", "n2"}));
  EXPECT_EQ(out.malformed_rows, 4u);
  EXPECT_EQ(out.sample_row_count, 5u);
  ASSERT_EQ(out.problems.size(), 10u);
  EXPECT_EQ(out.problems[0],
            "nodes/n1.csv: 2 readings read as missing: power_w is not a positive finite number "
            "(first at line 3: power_w '0' is not a positive finite number)");
  EXPECT_EQ(out.problems[1],
            "nodes/n1.csv: 1 of 7 rows skipped: power_w is above the physical bound (first at "
            "line 5: power_w 10001 W above 10000 W)");
  EXPECT_EQ(out.problems[2],
            "nodes/n1.csv: 1 of 7 rows skipped: module_w is above the physical bound (first at "
            "line 6: module_w 40008 W above 10000 W)");
  EXPECT_EQ(out.problems[3],
            "nodes/n1.csv: 1 of 7 rows skipped: total_power_w is above the physical bound (first "
            "at line 7: total_power_w 100001 W above 100000 W)");
  EXPECT_EQ(out.problems[8],
            "nodes/n2.csv: 1 of 3 rows skipped: power_w is above the physical bound (first at "
            "line 3: power_w 20000 W above 10000 W)");
  EXPECT_EQ(out.problems[9],
            "nodes/n2.csv: 1 reading read as missing: power_w is not a positive finite number "
            "(first at line 4: power_w '-10' is not a positive finite number)");

  HostSampleRow missing = v5_row(2.0, "n1", 0, std::numeric_limits<double>::quiet_NaN());
  missing.timestamp_local = "x";
  missing.cpu_rail_w = missing.soc_w = missing.dram_w = missing.module_w = std::nullopt;
  missing.total_power_w = 180;
  HostSampleRow blanks = v5_row(3.0, "n1", 0, 90);
  blanks.timestamp_local = "x";
  blanks.cpu_rail_w = blanks.soc_w = blanks.module_w = blanks.total_power_w = std::nullopt;
  HostSampleRow two = v5_row(2.5, "n2", 0, 90);
  two.timestamp_local = "2026-01-01T00:00:02Z";
  two.cpu_rail_w = two.soc_w = two.dram_w = two.module_w = std::nullopt;
  two.total_power_w = 90;
  EXPECT_EQ(slurp(dir.file("samples.csv")),
            expected_samples({v5_row(1.0, "n1", 0, 90), missing, missing, two, blanks}));
}

// A power_w of 0 or -1 is a missing reading to the report, which keeps the row's total; the
// merge keeps the row too, its power_w an empty cell, so that the merged file and the node file
// read alike.
TEST(HostMerge, NonPositivePowerIsMissingAsTheReportReadsIt) {
  TempDir dir;
  write_v5(dir, "n1", {v5_row(1.0, "n1", 0, 90)});
  std::string text = slurp(dir.file("nodes/n1.csv"));
  text += "5,2.0,x,n1,acpi,CPU0:cpuSidePowerUsageW,0,0,45,10,5,,180,,,,,\r\n";
  text += "5,3.0,x,n1,acpi,CPU0:cpuSidePowerUsageW,0,-1,45,10,5,,190,,,,,\r\n";
  spit(dir.file("nodes/n1.csv"), text);
  const auto out = merge_host_samples(settings_for(dir, {"n1"}));
  EXPECT_EQ(out.malformed_rows, 0u);
  EXPECT_EQ(out.sample_row_count, 3u);
  EXPECT_TRUE(out.publication_valid) << summary_line(out);

  const auto node = report::parse_cpu_samples_text(text);
  const auto merged = report::parse_cpu_samples_text(slurp(dir.file("samples.csv")));
  ASSERT_TRUE(node && merged);
  ASSERT_EQ(node->sockets.size(), 1u);
  ASSERT_EQ(merged->sockets.size(), 1u);
  ASSERT_EQ(node->nodes.size(), 1u);
  ASSERT_EQ(merged->nodes.size(), 1u);
  const auto values = [](const report::Track& t) {
    std::vector<std::pair<double, double>> out;
    for (std::size_t i = 0; i < t.size(); ++i) out.emplace_back(t.time(i), t.has(i) ? t.v[i] : -1);
    return out;
  };
  EXPECT_EQ(values(merged->sockets[0].power), values(node->sockets[0].power));
  EXPECT_EQ(values(merged->nodes[0].total), values(node->nodes[0].total));
  EXPECT_EQ(values(merged->nodes[0].total),
            (std::vector<std::pair<double, double>>{{1, 180}, {2, 180}, {3, 190}}));
  EXPECT_EQ(merged->issues.skipped_rows(), 0u);
  EXPECT_TRUE(merged->issues.items().empty());  // an empty cell is no reading, and no warning
}

TEST(HostMerge, EmptyRunGetsAHeaderOnlySamplesFile) {
  TempDir dir;
  const auto out = merge_host_samples(settings_for(dir, {}));
  EXPECT_EQ(out.reason_codes, std::vector<std::string>{"cpu_samples_empty"});
  EXPECT_EQ(slurp(dir.file("samples.csv")), crlf(artifacts::kHostHeaderV5));
}

TEST(HostMerge, MissingDirectoryIsAWriteFailureNotACrash) {
  MergeSettings s;
  s.cpu_dir = (fs::temp_directory_path() / "hostleg_merge_test.does-not-exist").string();
  s.required = true;
  const auto out = merge_host_samples(s);
  EXPECT_EQ(out.status, "incomplete");
  EXPECT_TRUE(out.exit_nonzero);
  EXPECT_FALSE(out.error.empty());
}

// ---- manifest -------------------------------------------------------------------------

TEST(HostManifest, KeysInOrderAndNodeMetadataEmbedded) {
  TempDir dir;
  write_v5(dir, "n1", {v5_row(1.0, "n1", 0, 90)});
  write_v5(dir, "n2", {v5_row(1.0, "n2", 0, 80)});
  spit(dir.file("nodes/n1.metadata.json"),
       R"({"zeta": 1, "alpha": {"gpus": [0, 1]}, "source": "acpi"})");
  spit(dir.file("nodes/n2.metadata.json"), "{not json");
  MergeSettings s = settings_for(dir, {"n1", "n2"});
  s.producer_git_commit = "abc123";
  s.sample_interval_seconds = 0.25;
  const auto out = merge_host_samples(s);
  EXPECT_TRUE(out.publication_valid) << summary_line(out);  // metadata is not a reason
  const Json m = manifest_of(dir);
  std::vector<std::string> keys;
  for (const auto& [k, v] : m.items()) keys.push_back(k);
  EXPECT_EQ(keys, (std::vector<std::string>{"schema_version",
                                            "job_id",
                                            "run_name",
                                            "status",
                                            "required",
                                            "requested_source",
                                            "sample_interval_seconds",
                                            "expected_nodes",
                                            "observed_nodes",
                                            "missing_nodes",
                                            "sample_row_count",
                                            "reason_codes",
                                            "failed_processes",
                                            "producer_git_commit",
                                            "node_metadata",
                                            "updated_at_unix",
                                            "malformed_rows",
                                            "torn_rows",
                                            "dropped_groups",
                                            "malformed_files",
                                            "ready_errors",
                                            "problems"}));
  EXPECT_EQ(m["schema_version"], 1);
  EXPECT_EQ(m["job_id"], "4242");
  EXPECT_EQ(m["run_name"], "bench");
  EXPECT_EQ(m["requested_source"], "auto");
  EXPECT_EQ(m["sample_interval_seconds"], 0.25);
  EXPECT_EQ(m["sample_row_count"], 2);
  EXPECT_EQ(m["producer_git_commit"], "abc123");
  EXPECT_GT(m["updated_at_unix"].get<double>(), 1.7e9);
  // The node's own object, key order included.
  EXPECT_EQ(m["node_metadata"]["n1"].dump(),
            R"({"zeta":1,"alpha":{"gpus":[0,1]},"source":"acpi"})");
  const std::string err = m["node_metadata"]["n2"]["error"];
  EXPECT_EQ(err.rfind("nodes/n2.metadata.json: malformed JSON", 0), 0u) << err;
  ASSERT_EQ(out.problems.size(), 1u);
  EXPECT_EQ(out.problems[0], err);
  const std::string text = slurp(dir.file("manifest.json"));
  EXPECT_EQ(text.substr(0, 24), "{\n  \"schema_version\": 1,");
  EXPECT_EQ(text.back(), '\n');
}

TEST(HostManifest, RenderAndReadBack) {
  HostManifest m;
  m.job_id = "7";
  m.run_name = "r";
  m.status = "running";
  m.required = true;
  m.requested_source = "dcgm";
  m.sample_interval_seconds = 0.5;
  m.expected_nodes = {"a", "b"};
  m.reason_codes = {"cpu_power_startup_timeout"};
  m.failed_processes = {"host-collect@b"};
  m.producer_git_commit = "deadbeef";
  m.node_metadata["a"] = Json{{"k", "v"}};
  m.ready_errors["b"] = "no source";
  m.torn_rows = 3;
  const auto back = parse_host_manifest(render_host_manifest(m));
  ASSERT_TRUE(back) << back.error();
  m.updated_at_unix = back->updated_at_unix;
  EXPECT_EQ(render_host_manifest(*back), render_host_manifest(m));
  EXPECT_FALSE(parse_host_manifest("[1]"));
  EXPECT_FALSE(parse_host_manifest("{"));
  // Another writer's types do not throw: the key keeps its default.
  const auto odd = parse_host_manifest(R"({"required": "yes", "expected_nodes": "a"})");
  ASSERT_TRUE(odd) << odd.error();
  EXPECT_FALSE(odd->required);
  EXPECT_TRUE(odd->expected_nodes.empty());
}

TEST(HostManifest, ReadyErrorsAreRecordedButNotAReason) {
  TempDir dir;
  write_v5(dir, "n1", {v5_row(1.0, "n1", 0, 90)});
  ASSERT_EQ(write_error_marker(dir.file("ready"), "n2", "no CPU power source").error(), "");
  const auto out = merge_host_samples(settings_for(dir, {"n1"}));
  EXPECT_TRUE(out.publication_valid);
  EXPECT_EQ(manifest_of(dir)["ready_errors"]["n2"], "no CPU power source");
}

TEST(HostMerge, HostsWithFiles) {
  TempDir dir;
  write_v5(dir, "n2", {});
  spit(dir.file("nodes/n1.metadata.json"), "{}");
  spit(dir.file("nodes/n3.csv.tmp.99"), "");
  EXPECT_EQ(hosts_with_files(dir.path()), (std::vector<std::string>{"n1", "n2"}));
}

// ---- markers --------------------------------------------------------------------------

TEST(Markers, WriteAndScanRoundTrip) {
  TempDir dir;
  const std::string ready = dir.file("ready");
  ASSERT_EQ(write_ready_marker(ready, "n1", "acpi", 1700000000.5).error(), "");
  ASSERT_EQ(write_ready_marker(ready, "n2", "dcgm", 1700000001.0).error(), "");
  ASSERT_EQ(write_error_marker(ready, "n3", "no CPU power source").error(), "");
  EXPECT_EQ(slurp(ready + "/n1.ready.json"),
            "{\n  \"hostname\": \"n1\",\n  \"ready_at_unix\": 1700000000.5,\n  \"source\": "
            "\"acpi\"\n}\n");
  EXPECT_EQ(slurp(ready + "/n3.error.json"),
            "{\n  \"error\": \"no CPU power source\",\n  \"hostname\": \"n3\"\n}\n");
  // Temporary files of an atomic write in progress, and strays, are not markers.
  spit(ready + "/n4.ready.json.tmp.1234", "{");
  spit(ready + "/n5.error.json.tmp.1234", "{");
  spit(ready + "/.ready.json", "{}");
  spit(ready + "/notes.txt", "");
  const auto scan = scan_markers(ready);
  EXPECT_EQ(scan.ready, (std::set<std::string>{"n1", "n2"}));
  EXPECT_EQ(scan.errors, (std::map<std::string, std::string>{{"n3", "no CPU power source"}}));
}

TEST(Markers, UnreadableErrorMarkerStillCountsAsAnError) {
  TempDir dir;
  const std::string ready = dir.file("ready");
  fs::create_directories(ready);
  spit(ready + "/n1.error.json", "garbage");
  spit(ready + "/n2.error.json", R"({"hostname": "n2"})");
  const auto scan = scan_markers(ready);
  ASSERT_EQ(scan.errors.size(), 2u);
  EXPECT_NE(scan.errors.at("n1").find("not a JSON object"), std::string::npos);
  EXPECT_NE(scan.errors.at("n2").find("no \"error\""), std::string::npos);
  EXPECT_TRUE(scan_markers(dir.file("absent")).ready.empty());
}

TEST(Markers, HostNameMustBeAFileName) {
  TempDir dir;
  const auto written = write_ready_marker(dir.file("ready"), "../x", "acpi", 1);
  EXPECT_FALSE(written);
  EXPECT_FALSE(written.error().empty());
}

}  // namespace
}  // namespace cpupower::hostleg
