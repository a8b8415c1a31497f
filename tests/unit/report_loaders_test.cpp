// Sample loading for the energy report: every CPU layout by header name, GPU devices, node
// and role sums, utilization columns, and the streaming CSV reader underneath.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <charconv>
#include <mutex>
#include <random>

#include <filesystem>
#include <fstream>

#include "../support/csv_table.hpp"
#include "artifacts/cpu_samples.hpp"
#include "artifacts/csv.hpp"
#include "artifacts/gpu_samples.hpp"
#include "artifacts/host_samples.hpp"
#include "report/cpu_data.hpp"
#include "report/gpu_data.hpp"

namespace cpupower::report {
namespace {

const std::string kV1 =
    "schema_version,timestamp_unix,hostname,source,sensor,socket_id,power_w,total_power_w\n";
const std::string kV2 =
    "schema_version,timestamp_unix,hostname,source,sensor,socket_id,power_w,cpu_rail_w,soc_w,"
    "dram_w,total_power_w\n";
const std::string kV3 =
    "schema_version,timestamp_unix,hostname,source,sensor,socket_id,power_w,cpu_rail_w,soc_w,"
    "dram_w,module_w,total_power_w\n";

CpuData load(const std::string& text) {
  auto l = parse_cpu_samples_text(text);
  EXPECT_TRUE(l) << l.error();
  return l ? std::move(l.value()) : CpuData{};
}

std::vector<double> values(const Track& t) {
  return t.v;
}
std::vector<double> times(const Track& t) {
  return *t.t;
}
// The samples a computation rests on: (time, value) where the track has a value.
std::vector<std::pair<double, double>> valued(const Track& t) {
  std::vector<std::pair<double, double>> out;
  for (std::size_t i = 0; i < t.size(); ++i) {
    if (t.has(i)) out.emplace_back(t.time(i), t.v[i]);
  }
  return out;
}

TEST(ReportCpuLoad, LongRowsGroupPerSocketAndDedupeTheNodeTotal) {
  const CpuData d = load(kV1 +
                         "1,10,node-a,dcgm,CPU0:cpuPowerUsageW,0,40,90\n"
                         "1,10,node-a,dcgm,CPU1:cpuPowerUsageW,1,50,90\n"
                         "1,11,node-a,dcgm,CPU0:cpuPowerUsageW,0,42,92\n"
                         "1,11,node-a,dcgm,CPU1:cpuPowerUsageW,1,50,92\n");
  ASSERT_EQ(d.sockets.size(), 2u);
  EXPECT_EQ(values(d.sockets[0].power), (std::vector<double>{40, 42}));
  ASSERT_EQ(d.nodes.size(), 1u);
  EXPECT_EQ(values(d.nodes[0].total), (std::vector<double>{90, 92}));  // deduped, not summed
  EXPECT_TRUE(d.sockets[0].dcgm);
}

// Past 16 hosts the loader looks hosts up in a map instead of scanning them; rows of 40
// interleaved hosts (two sockets each, the node total repeated on both rows of a scrape, and
// changed on the second row once) must still land on their own host and socket.
TEST(ReportCpuLoad, ManyInterleavedHosts) {
  std::string text = kV1;
  for (int t = 10; t <= 12; ++t) {
    for (int h = 0; h < 40; ++h) {
      const std::string ts = std::to_string(t) + ".5", host = "n" + std::to_string(h);
      const std::string total = std::to_string(1000 + h * 10 + t);
      text += "1," + ts + "," + host + ",acpi,s,0," + std::to_string(h + 1) + "," + total + "\n";
      text += "1," + ts + "," + host + ",acpi,s,1," + std::to_string(100 + h) + "," +
              (t == 11 ? std::to_string(2000 + h) : total) + "\n";
    }
  }
  const CpuData d = load(text);
  ASSERT_EQ(d.sockets.size(), 80u);
  ASSERT_EQ(d.nodes.size(), 40u);
  for (const auto& s : d.sockets) {
    const int h = std::stoi(s.host.substr(1));
    const double w = s.socket == 0 ? h + 1 : 100 + h;
    EXPECT_EQ(values(s.power), (std::vector<double>{w, w, w})) << s.label();
    EXPECT_EQ(times(s.power), (std::vector<double>{10.5, 11.5, 12.5})) << s.label();
  }
  for (const auto& n : d.nodes) {
    const int h = std::stoi(n.host.substr(1));
    EXPECT_EQ(values(n.total),
              (std::vector<double>{1000.0 + h * 10 + 10, 2000.0 + h, 1000.0 + h * 10 + 12}))
        << n.host;  // the last row of a scrape wins
  }
}

TEST(ReportCpuLoad, OneSensorPerSocketForAcpiMultiRailRows) {
  std::string text = kV1;
  for (int t = 10; t <= 12; ++t) {
    for (const char* row : {"CPU0:cpuSidePowerUsageW,0,100", "CPU0:cpuRailPowerUsageW,0,40",
                            "CPU0:socPowerUsageW,0,15", "CPU0:dramPowerUsageW,0,10"}) {
      text += "1," + std::to_string(t) + ",node-a,acpi," + row + ",100\n";
    }
  }
  const CpuData d = load(text);
  ASSERT_EQ(d.sockets.size(), 1u);
  EXPECT_EQ(values(d.sockets[0].power), (std::vector<double>{100, 100, 100}));
  EXPECT_EQ(d.sockets[0].sensor, "CPU0:cpuSidePowerUsageW");
  EXPECT_EQ(d.sockets[0].other_sensors,
            (std::vector<std::string>{"CPU0:cpuRailPowerUsageW", "CPU0:dramPowerUsageW",
                                      "CPU0:socPowerUsageW"}));
  ASSERT_TRUE(d.sockets[0].rails[0]);
  EXPECT_EQ(values(*d.sockets[0].rails[1]), (std::vector<double>{15, 15, 15}));
}

TEST(ReportCpuLoad, WideLayoutIsReadDirectly) {
  std::string text = kV2;
  for (int t = 10; t <= 12; ++t) {
    const std::string ts = std::to_string(t);
    text += "2," + ts + ",node-a,acpi,CPU0:cpuSidePowerUsageW,0,100,40,15,10,210\n";
    text += "2," + ts + ",node-a,acpi,CPU1:cpuSidePowerUsageW,1,110,45,16,,210\n";
    if (t != 11) text += "2," + ts + ",node-b,dcgm,CPU0:cpuPowerUsageW,0,50,,,,50\n";
  }
  const CpuData d = load(text);
  ASSERT_EQ(d.sockets.size(), 3u);
  EXPECT_TRUE(d.wide);
  EXPECT_EQ(values(d.sockets[0].power), (std::vector<double>{100, 100, 100}));
  EXPECT_EQ(values(d.sockets[1].power), (std::vector<double>{110, 110, 110}));
  EXPECT_EQ(values(d.sockets[2].power), (std::vector<double>{50, 50}));
  EXPECT_EQ(values(d.nodes[0].total), (std::vector<double>{210, 210, 210}));
  EXPECT_FALSE(d.sockets[0].dcgm);
  EXPECT_TRUE(d.sockets[2].dcgm);
}

TEST(ReportCpuLoad, FallsBackToComponentRailsWithoutATotal) {
  const CpuData d = load(kV1 +
                         "1,10,node-a,acpi,CPU Power Socket 0,0,40,\n"
                         "1,10,node-a,acpi,SysIO Power Socket 0,0,15,\n"
                         "1,11,node-a,acpi,CPU Power Socket 0,0,42,\n"
                         "1,11,node-a,acpi,SysIO Power Socket 0,0,16,\n");
  EXPECT_EQ(values(d.sockets[0].power), (std::vector<double>{40, 42}));  // cpu_rail beats soc
  EXPECT_TRUE(d.nodes.empty());
}

TEST(ReportCpuLoad, BlankTotalIsSkippedNotZero) {
  const CpuData d = load(kV1 +
                         "1,10,node-a,acpi,Grace Power Socket 0,0,40,\n"
                         "1,11,node-a,acpi,Grace Power Socket 0,0,42,92\n");
  // The blank cell is no sample (the node total's times are its host's: 10 has no value).
  EXPECT_EQ(valued(d.nodes[0].total), (std::vector<std::pair<double, double>>{{11, 92}}));
  for (std::size_t i = 0; i < d.nodes[0].total.size(); ++i) {
    EXPECT_NE(d.nodes[0].total.v[i], 0.0) << i;
  }
  EXPECT_EQ(values(d.sockets[0].power), (std::vector<double>{40, 42}));
}

TEST(ReportCpuLoad, UtilizationColumnsByName) {
  const std::string header =
      "schema_version,timestamp_unix,timestamp_local,hostname,source,sensor,socket_id,power_w,"
      "total_power_w,cpu_util_total,cpu_util_user,cpu_util_nice,cpu_util_sys,cpu_util_irq\n";
  const CpuData d = load(header +
                         "3,10,x,node-a,dcgm,CPU0:cpuPowerUsageW,0,40,80,0.5,0.4,,0.1,\n"
                         "3,10,x,node-a,dcgm,CPU1:cpuPowerUsageW,1,40,80,,,,,\n"
                         "3,11,x,node-a,dcgm,CPU0:cpuPowerUsageW,0,42,82,0.7,0.6,,0.1,\n"
                         "3,11,x,node-a,dcgm,CPU1:cpuPowerUsageW,1,40,82,0.2,,,,\n");
  ASSERT_TRUE(d.sockets[0].util[0]);
  EXPECT_EQ(values(*d.sockets[0].util[0]), (std::vector<double>{.5, .7}));
  EXPECT_FALSE(d.sockets[0].util[2]);  // nice: never populated
  EXPECT_EQ(values(*d.sockets[1].util[0]), (std::vector<double>{.2}));
  EXPECT_FALSE(load(kV1 + "1,10,a,acpi,Grace Power Socket 0,0,1,1\n").sockets[0].util[0]);
}

TEST(ReportCpuLoad, WideFileSwitchingSourceKeepsBothAndSaysSo) {  // loader test, wide v2/v3
  const CpuData d = load(kV2 +
                         "2,1000.0,node-a,acpi,CPU0:cpuSidePowerUsageW,0,94.0,40.0,5.0,,94.0\n"
                         "2,1001.0,node-a,dcgm,CPU0:cpuPowerUsageW,0,50.0,,,,50.0\n");
  EXPECT_EQ(values(d.sockets[0].power), (std::vector<double>{94, 50}));
  EXPECT_EQ(d.sockets[0].sources, (std::vector<std::string>{"acpi", "dcgm"}));
  EXPECT_EQ(d.sockets[0].sensor, "CPU0:cpuSidePowerUsageW");  // the first row's
}

TEST(ReportCpuLoad, ModuleColumnBecomesItsOwnTrack) {
  const std::string v3 = std::string(artifacts::kCpuHeaderV3) + "\r\n";
  const CpuData d = load(v3 +
                         "3,1,n,acpi,CPU0:cpuSidePowerUsageW,0,94.29,49.023,5.1,,,189.002\r\n"
                         "3,2,n,acpi,CPU0:cpuSidePowerUsageW,0,94.29,,,,498.72,96.228\r\n");
  ASSERT_TRUE(d.sockets[0].module);
  EXPECT_TRUE(std::isnan(d.sockets[0].module->v[0]));
  EXPECT_DOUBLE_EQ(d.sockets[0].module->v[1], 498.72);
  EXPECT_EQ(d.layout, "exporter v3");
}

// NVML is the only source of module power: a long file's row named by the firmware's
// "Module Power Socket N" label is an unclassified sensor, never the socket's module track;
// CPU<n>:modulePowerUsageW (NVML's canonical name) still is.
TEST(ReportCpuLoad, FirmwareModuleLabelIsNoModuleTrack) {
  EXPECT_EQ(classify_sensor("Module Power Socket 0"), SensorKind::other);
  EXPECT_EQ(classify_sensor("CPU0:modulePowerUsageW"), SensorKind::module);
  const CpuData d = load(kV1 +
                         "1,10,n,acpi,Grace Power Socket 0,0,94,94\n"
                         "1,10,n,acpi,Module Power Socket 0,0,512,94\n"
                         "1,11,n,acpi,Grace Power Socket 0,0,96,96\n"
                         "1,11,n,acpi,Module Power Socket 0,0,515,96\n");
  ASSERT_EQ(d.sockets.size(), 1u);
  EXPECT_FALSE(d.sockets[0].module);
  EXPECT_EQ(values(d.sockets[0].power), (std::vector<double>{94, 96}));
}

TEST(ReportCpuLoad, UnsortedRowsAreStableSortedAndLastRowWins) {
  const CpuData d = load(kV1 +
                         "1,12,n,acpi,Grace Power Socket 0,0,3,3\n"
                         "1,10,n,acpi,Grace Power Socket 0,0,1,1\n"
                         "1,10,n,acpi,Grace Power Socket 0,0,2,2\n");
  EXPECT_EQ(times(d.sockets[0].power), (std::vector<double>{10, 12}));
  EXPECT_EQ(values(d.sockets[0].power), (std::vector<double>{2, 3}));
  EXPECT_EQ(values(d.nodes[0].total), (std::vector<double>{2, 3}));
}

TEST(ReportCpuLoad, MissingRequiredColumnIsAnError) {
  const auto l = parse_cpu_samples_text("timestamp_unix,hostname\n1,a\n");
  ASSERT_FALSE(l);
  EXPECT_EQ(l.error(), "no 'socket_id' column");
}

// NaN-aware equality of two tracks (times and values, bit for bit).
void expect_same_track(const Track& a, const Track& b, const std::string& what) {
  EXPECT_EQ(times(a), times(b)) << what;
  const auto va = values(a), vb = values(b);
  ASSERT_EQ(va.size(), vb.size()) << what;
  for (std::size_t i = 0; i < va.size(); ++i) {
    if (std::isnan(va[i]) || std::isnan(vb[i])) {
      EXPECT_TRUE(std::isnan(va[i]) && std::isnan(vb[i])) << what << " row " << i;
    } else {
      EXPECT_EQ(va[i], vb[i]) << what << " row " << i;
    }
  }
}

void expect_same_data(const CpuData& serial, const CpuData& parallel) {
  EXPECT_EQ(serial.rows, parallel.rows);
  EXPECT_EQ(serial.issues.warnings("f", serial.rows), parallel.issues.warnings("f", parallel.rows));
  EXPECT_EQ(serial.hosts, parallel.hosts);
  ASSERT_EQ(serial.sockets.size(), parallel.sockets.size());
  for (std::size_t i = 0; i < serial.sockets.size(); ++i) {
    const CpuSocket& a = serial.sockets[i];
    const CpuSocket& b = parallel.sockets[i];
    const std::string label = a.label();
    EXPECT_EQ(label, b.label());
    EXPECT_EQ(a.sensor, b.sensor) << label;
    EXPECT_EQ(a.other_sensors, b.other_sensors) << label;
    EXPECT_EQ(a.sources, b.sources) << label;
    expect_same_track(a.power, b.power, label + " power");
    for (std::size_t k = 0; k < 3; ++k) {
      ASSERT_EQ(a.rails[k].has_value(), b.rails[k].has_value()) << label << " rail " << k;
      if (a.rails[k]) expect_same_track(*a.rails[k], *b.rails[k], label + " rail");
    }
    ASSERT_EQ(a.module.has_value(), b.module.has_value()) << label;
    if (a.module) expect_same_track(*a.module, *b.module, label + " module");
  }
  ASSERT_EQ(serial.nodes.size(), parallel.nodes.size());
  for (std::size_t i = 0; i < serial.nodes.size(); ++i) {
    expect_same_track(serial.nodes[i].total, parallel.nodes[i].total, serial.nodes[i].host);
  }
}

// Large files are read in 4 MiB blocks on every thread and joined in file order: the result
// must be the serial scan's, also when optional columns appear, vanish and reappear across
// blocks, a node total is blank now and then, sources switch, and a quote forces a rescan.
TEST(ReportCpuLoad, ParallelScanEqualsSerialScanEvenWithQuotes) {
  namespace fs = std::filesystem;
  const std::string path =
      ::testing::TempDir() + "/" + std::to_string(::getpid()) + "_report_parallel_samples.csv";
  for (const bool quoted : {false, true}) {
    {
      std::ofstream out(path, std::ios::binary);
      out << artifacts::kCpuHeaderV3 << "\r\n";
      for (int i = 0; i < 200000; ++i) {
        const std::string host =
            quoted && i == 150000 ? "\"node,a\"" : "node-" + std::to_string(i % 3);
        const std::string dram = i > 50000 && i < 60000 ? std::to_string(7 + i % 3) : "";
        const std::string module = i > 120000 && i % 7 != 0 ? std::to_string(700 + i % 11) : "";
        const std::string total = i % 13 == 0 ? "" : std::to_string(180 + i % 5);
        out << "3," << std::to_string(1000 + i * 0.25) << "," << host << ","
            << (i > 180000 ? "dcgm" : "acpi") << ",CPU0:cpuSidePowerUsageW," << i % 2 << ","
            << 90 + i % 17 << ",40,5," << dram << "," << module << "," << total << "\r\n";
      }
    }
    const auto serial = load_cpu_samples(path, 1);
    for (const unsigned threads : {2u, 4u}) {
      const auto parallel = load_cpu_samples(path, threads);
      ASSERT_TRUE(serial && parallel);
      EXPECT_GT(fs::file_size(path), 8u << 20);  // large enough to be read in parts
      EXPECT_EQ(serial->sockets.size(), quoted ? 7u : 6u);
      EXPECT_EQ(parallel->rows, 200000u);
      expect_same_data(*serial, *parallel);
      const CpuSocket* s = parallel->find_socket("node-0", 0);
      ASSERT_TRUE(s && s->module && s->rails[2]);
      EXPECT_TRUE(std::isnan(s->module->v[0]));
      EXPECT_EQ(s->sources, (std::vector<std::string>{"acpi", "dcgm"}));
    }
  }
  fs::remove(path);
}

// Rows the loader cannot use are counted per reason, and the first of each reason in file
// order (not the first a thread met) is described with its line, whatever the parts.
TEST(ReportCpuLoad, SkippedRowsAreCountedPerReasonWithTheirFirstLine) {
  namespace fs = std::filesystem;
  const std::string path =
      ::testing::TempDir() + "/" + std::to_string(::getpid()) + "_report_skipped_samples.csv";
  {
    std::ofstream out(path, std::ios::binary);
    out << artifacts::kCpuHeaderV3 << "\n";
    for (int i = 0; i < 400000; ++i) {
      const std::string t = i == 120000 ? "oops" : std::to_string(1000 + i * 0.25);
      const std::string socket = i == 190000 ? "x" : std::to_string(i % 2);
      if (i == 70000) out << "garbage\n";
      out << "3," << t << ",node-" << i % 3 << ",acpi,CPU0:cpuSidePowerUsageW," << socket << ","
          << 90 + i % 17 << ",40,5,,," << 180 + i % 5 << "\n";
    }
  }
  ASSERT_GT(fs::file_size(path), 16u << 20);  // read in parts, the bad rows in several
  const std::vector<std::string> want = {
      "f: 1 of 400001 rows skipped: wrong number of cells (first at line 70002: 1 cells where "
      "the header has 12)",
      "f: 1 of 400001 rows skipped: timestamp_unix is not a finite number (first at line "
      "120003: timestamp_unix 'oops' is not a finite number)",
      "f: 1 of 400001 rows skipped: socket_id is not an integer in 0..4294967295 (first at line "
      "190003: socket_id 'x' is not an integer in 0..4294967295)"};
  for (const unsigned threads : {1u, 2u, 4u}) {
    const auto load = load_cpu_samples(path, threads);
    ASSERT_TRUE(load) << load.error();
    EXPECT_EQ(load->rows, 400001u) << threads;
    EXPECT_EQ(load->issues.skipped_rows(), 3u) << threads;
    EXPECT_EQ(load->issues.warnings("f", load->rows), want) << threads;
  }
  fs::remove(path);
  const auto first = [](const CpuData& d) {
    return d.issues.items().empty() ? std::string() : d.issues.items().front().first;
  };
  EXPECT_EQ(
      first(load(kV1 + "1,10,a,acpi,s,0,1,1\n1,1e400x,a,acpi,s,0,1,1\n1,11,a,acpi,s,-,1,1\n")),
      "timestamp_unix '1e400x' is not a finite number");
  EXPECT_EQ(first(load(kV1 + "1,10,a,acpi,s,z,1,1\n1,,a,acpi,s,0,1,1\n")),
            "socket_id 'z' is not an integer in 0..4294967295");
  EXPECT_EQ(first(load(kV1 + "1, ,a,acpi,s,0,1,1\n")), "timestamp_unix is blank");
  EXPECT_EQ(first(load(kV1 + "1,10,a,acpi,s,0,1,1\n")), "");
}

// The rows of one scrape share their host's time entry: scrapes that straddle two blocks,
// a socket's second row at the same time (its non-blank cells win), a node total that is
// blank on one row of a scrape and changed on the next, a socket missing from some scrapes,
// and a stretch out of time order must all come out of the blocks as out of the serial scan,
// and as the rows say.
TEST(ReportCpuLoad, ScrapesStraddlingBlocksShareTheirTimeEntry) {
  namespace fs = std::filesystem;
  const std::string path =
      ::testing::TempDir() + "/" + std::to_string(::getpid()) + "_report_straddle_samples.csv";
  {
    std::ofstream out(path, std::ios::binary);
    out << artifacts::kCpuHeaderV3 << "\n";
    for (int k = 0; k < 70000; ++k) {
      // scrapes 30000..30099 are written in reverse order
      const int scrape = k >= 30000 && k < 30100 ? 60099 - k : k;
      const std::string t = std::to_string(5000 + scrape * 0.5);
      for (int h = 0; h < 2; ++h) {
        for (int socket = 0; socket < 2; ++socket) {
          if (socket == 1 && scrape % 11 == 0) continue;  // socket 1 has no row
          // socket 1's row changes the node total (so that a scrape straddling two blocks
          // must take the later block's value)
          const std::string total =
              socket == 0 && scrape % 5 == 0 ? "" : std::to_string(200 + socket + scrape % 9);
          out << "3," << t << ",node-" << h << ",acpi,CPU" << socket << ":cpuSidePowerUsageW,"
              << socket << "," << 90 + scrape % 17 + socket << ",40.5,5.25,," << 700 + scrape % 3
              << "," << total << "\n";
          if (scrape % 7 == 0 && socket == 0) {  // the same socket again: power and total change
            out << "3," << t << ",node-" << h << ",acpi,CPU0:cpuSidePowerUsageW,0,"
                << 300 + scrape % 4 << ",,,,," << 400 + scrape % 3 << "\n";
          }
        }
      }
    }
  }
  ASSERT_GT(fs::file_size(path), 8u << 20);
  const auto serial = load_cpu_samples(path, 1);
  ASSERT_TRUE(serial) << serial.error();
  for (const unsigned threads : {2u, 3u}) {
    const auto parallel = load_cpu_samples(path, threads);
    ASSERT_TRUE(parallel) << parallel.error();
    expect_same_data(*serial, *parallel);
  }
  const CpuData& d = *serial;
  ASSERT_EQ(d.sockets.size(), 4u);
  ASSERT_EQ(d.nodes.size(), 2u);
  for (int scrape : {0, 7, 11, 14, 30000, 30050, 30099, 69999}) {
    const double t = 5000 + scrape * 0.5;
    for (const auto& s : d.sockets) {
      const auto valued_at = [&](const Track& track) {
        std::vector<double> out;
        for (const auto& [time, v] : valued(track)) {
          if (time == t) out.push_back(v);
        }
        return out;
      };
      const std::string where = s.label() + " scrape " + std::to_string(scrape);
      if (s.socket == 1 && scrape % 11 == 0) {
        EXPECT_TRUE(valued_at(s.power).empty()) << where;
        continue;
      }
      const double power =
          s.socket == 0 && scrape % 7 == 0 ? 300 + scrape % 4 : 90 + scrape % 17 + s.socket;
      EXPECT_EQ(valued_at(s.power), std::vector<double>{power}) << where;
      EXPECT_EQ(valued_at(*s.rails[0]), std::vector<double>{40.5}) << where;  // blank kept it
      EXPECT_EQ(valued_at(*s.module), std::vector<double>{700.0 + scrape % 3}) << where;
    }
    for (const auto& n : d.nodes) {
      std::vector<double> totals;
      for (const auto& [time, v] : valued(n.total)) {
        if (time == t) totals.push_back(v);
      }
      // Socket 1's row comes last unless it is missing; the repeated socket 0 row before it.
      const double expected = scrape % 11 != 0  ? 201 + scrape % 9
                              : scrape % 7 == 0 ? 400 + scrape % 3
                              : scrape % 5 == 0 ? -1
                                                : 200 + scrape % 9;
      if (expected < 0) {
        EXPECT_TRUE(totals.empty()) << n.host << " scrape " << scrape;
      } else {
        EXPECT_EQ(totals, std::vector<double>{expected}) << n.host << " scrape " << scrape;
      }
    }
  }
  for (const auto& s : d.sockets) {
    EXPECT_TRUE(std::is_sorted(s.power.t->begin(), s.power.t->end())) << s.label();
    EXPECT_EQ(std::adjacent_find(s.power.t->begin(), s.power.t->end()), s.power.t->end());
  }
  fs::remove(path);
}

// The long layout (one row per sensor) through the same blocks.
TEST(ReportCpuLoad, ParallelScanEqualsSerialScanInTheLongLayout) {
  const std::string path =
      ::testing::TempDir() + "/" + std::to_string(::getpid()) + "_report_parallel_long.csv";
  {
    std::ofstream out(path, std::ios::binary);
    out << kV1;
    const char* sensors[] = {"CPU0:cpuSidePowerUsageW", "CPU0:cpuRailPowerUsageW",
                             "CPU0:socPowerUsageW", "CPU0:modulePowerUsageW"};
    for (int i = 0; i < 240000; ++i) {
      out << "1," << std::to_string(1000 + (i / 4) * 0.5) << ",node-" << i % 2 << ",acpi,"
          << sensors[i % 4] << ",0," << 50 + i % 23 << ","
          << (i % 4 == 0 ? std::to_string(200 + i % 7) : "") << "\n";
    }
  }
  const auto serial = load_cpu_samples(path, 1);
  const auto parallel = load_cpu_samples(path, 3);
  ASSERT_TRUE(serial && parallel);
  EXPECT_GT(std::filesystem::file_size(path), 8u << 20);
  EXPECT_EQ(parallel->sockets[0].sensor, "CPU0:cpuSidePowerUsageW");
  expect_same_data(*serial, *parallel);
  std::filesystem::remove(path);
}

std::vector<std::vector<std::string>> cells_of(const artifacts::CsvTable& t) {
  std::vector<std::vector<std::string>> out;
  for (const auto& r : t.rows) out.push_back(r.cells);
  return out;
}

TEST(ReportCsv, QuotesCrLfBlankLinesAndShortRows) {
  const auto t =
      artifacts::parse_csv("a,b,c\r\n\"x,\"\"y\"\"\",2,3\r\n\r\n1,\"multi\nline\"\nshort\n");
  EXPECT_EQ(t.header, (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(cells_of(t), (std::vector<std::vector<std::string>>{
                             {"x,\"y\"", "2", "3"}, {"1", "multi\nline"}, {"short"}}));
  EXPECT_EQ(t.rows[1].line, 4u);
  EXPECT_EQ(t.rows[2].line, 6u);
}

// A quoted record's cells are copied while it is split; the copies growing must never move
// the cells already split (a reader once read freed memory here: run under valgrind/ASan).
TEST(ReportCsv, QuotedRecordWithManyCellsKeepsThem) {
  std::string text = "h\n\"q\"";
  std::vector<std::string> want = {"q"};
  for (int i = 0; i < 300; ++i) {
    const std::string cell = i % 3 == 0 ? "\"" + std::string(i, 'x') + ",\"" : std::to_string(i);
    text += "," + cell;
    want.push_back(i % 3 == 0 ? std::string(i, 'x') + "," : std::to_string(i));
  }
  const auto t = artifacts::parse_csv(text + "\n");
  ASSERT_EQ(t.rows.size(), 1u);
  EXPECT_EQ(t.rows[0].cells, want);
}

TEST(ReportCsv, LongRecordsSplitAtEveryOffset) {
  std::string text = "h\n";
  std::vector<std::vector<std::string>> expected;
  for (std::size_t width = 0; width < 40; ++width) {
    std::vector<std::string> row;
    for (std::size_t k = 0; k < 5; ++k) row.push_back(std::string(width + k, 'a' + k));
    expected.push_back(row);
    for (std::size_t k = 0; k < row.size(); ++k) text += (k ? "," : "") + row[k];
    text += width % 2 ? "\r\n" : "\n";
  }
  text += std::string(37, 'q') + ",\"quoted, \"\"cell\"\"\"," + std::string(20, 'z') + "\n";
  expected.push_back({std::string(37, 'q'), "quoted, \"cell\"", std::string(20, 'z')});
  text += std::string(18, 'e') + "," + std::string(3, 'f');  // no line end at the end
  expected.push_back({std::string(18, 'e'), std::string(3, 'f')});
  const auto t = artifacts::parse_csv(text);
  EXPECT_EQ(cells_of(t), expected);
  EXPECT_FALSE(t.rows.back().terminated);
  EXPECT_TRUE(t.rows[t.rows.size() - 2].terminated);
}

// A quote that is never closed costs only the line it starts on: the rows after it are read
// (a reader that followed the quote to the end of the file lost a whole node's rows).
TEST(ReportCsv, AnUnclosedQuoteLosesOnlyItsLine) {
  const auto t = artifacts::parse_csv("h,i\n1,\"oops\n2,b\n3,c\n");
  EXPECT_EQ(cells_of(t), (std::vector<std::vector<std::string>>{{"2", "b"}, {"3", "c"}}));
  ASSERT_EQ(t.damage.size(), 1u);
  EXPECT_EQ(t.damage[0].line, 2u);
  EXPECT_EQ(t.damage[0].what, "a quote is never closed");
  EXPECT_EQ(t.rows[0].line, 3u);
  // The same through the file reader, whose buffer ends inside the open quote many times.
  const std::string path =
      ::testing::TempDir() + "/" + std::to_string(::getpid()) + "_report_open_quote.csv";
  {
    std::ofstream out(path, std::ios::binary);
    out << "h,i\n1,\"oops\n";
    for (int i = 0; i < 300000; ++i) out << i << ",row\n";
  }
  const auto f = artifacts::read_csv(path);
  ASSERT_TRUE(f) << f.error();
  EXPECT_EQ(f->rows.size(), 300000u);
  ASSERT_EQ(f->damage.size(), 1u);
  EXPECT_EQ(f->damage[0].line, 2u);
  std::filesystem::remove(path);
}

TEST(ReportCsv, ARecordAboveTheLimitIsDamageNotMemory) {
  std::string text = "h\n\"" + std::string(artifacts::kMaxRecordBytes + 10, 'x') + "\n1\n";
  const auto t = artifacts::parse_csv(text);
  ASSERT_EQ(t.damage.size(), 1u);
  EXPECT_EQ(t.damage[0].line, 2u);
  EXPECT_EQ(cells_of(t), (std::vector<std::vector<std::string>>{{"1"}}));
}

// A line of several blocks without a line end is one damage, said once, and the rows after
// it are read.
TEST(ReportCsv, AGiantLineIsOneDamageInTheFileReader) {
  const std::string path =
      ::testing::TempDir() + "/" + std::to_string(::getpid()) + "_report_giant_line.csv";
  {
    std::ofstream out(path, std::ios::binary);
    out << "h,i\n" << std::string(9u << 20, 'x') << "\n1,a\n2,b\n";
  }
  const auto f = artifacts::read_csv(path);
  ASSERT_TRUE(f) << f.error();
  ASSERT_EQ(f->damage.size(), 1u);
  EXPECT_EQ(f->damage[0].line, 2u);
  EXPECT_EQ(cells_of(*f), (std::vector<std::vector<std::string>>{{"1", "a"}, {"2", "b"}}));
  std::filesystem::remove(path);
}

// The file reader's 4 MiB blocks: records of hundreds of KiB that run past a block's end
// grow the buffer and keep what it held, read whole and in byte ranges alike.
TEST(ReportCsv, RecordsAcrossBlocksAndRanges) {
  const std::string path =
      ::testing::TempDir() + "/" + std::to_string(::getpid()) + "_report_long_records.csv";
  std::vector<std::vector<std::string>> expected;
  {
    std::ofstream out(path, std::ios::binary);
    out << "a,b\n";
    std::size_t bytes = 0;
    for (int i = 0; bytes < (18u << 20); ++i) {
      const std::string first = std::to_string(i);
      const std::string second = i % 40 == 7 ? std::string(600u << 10, 'a' + i % 26) : "x";
      expected.push_back({first, second});
      out << first << "," << second << (i % 2 ? "\r\n" : "\n");
      bytes += first.size() + second.size() + 2;
    }
  }
  const auto size = std::filesystem::file_size(path);
  for (const std::size_t pieces : {1u, 2u, 5u}) {
    std::vector<std::vector<std::string>> rows;
    std::size_t stop = 0;
    for (std::size_t k = 0; k < pieces; ++k) {
      auto r = artifacts::CsvFileReader::open(path, size * k / pieces,
                                              k + 1 == pieces ? SIZE_MAX : size * (k + 1) / pieces);
      ASSERT_TRUE(r) << r.error();
      artifacts::CsvRecord rec;
      std::vector<artifacts::CsvDamage> damage;
      while (r->next(rec, damage)) rows.emplace_back(rec.cells.begin(), rec.cells.end());
      EXPECT_TRUE(damage.empty());
      if (k > 0) {
        EXPECT_EQ(r->first_offset(), stop) << pieces << " pieces, range " << k;
      }
      stop = r->stop_offset();
    }
    EXPECT_EQ(stop, size);
    rows.erase(rows.begin());  // the header
    EXPECT_EQ(rows, expected) << pieces << " pieces";
  }
  std::filesystem::remove(path);
}

TEST(ReportCsv, NumbersParseLikePythonFloat) {
  using artifacts::parse_double;
  EXPECT_EQ(parse_double("1788310143.461"), 1788310143.461);
  EXPECT_EQ(parse_double("1789416029.2655346"), 1789416029.2655346);
  EXPECT_EQ(parse_double(" 94.29 "), 94.29);
  EXPECT_EQ(parse_double("1e-05"), 1e-05);
  EXPECT_EQ(parse_double("+7"), 7.0);
  EXPECT_TRUE(std::isinf(*parse_double("inf")));
  EXPECT_TRUE(std::isinf(*parse_double("-Infinity")));
  EXPECT_TRUE(std::isnan(*parse_double("nan")));
  EXPECT_EQ(parse_double("1e999"), std::numeric_limits<double>::infinity());  // as float()
  EXPECT_EQ(parse_double("-1e999"), -std::numeric_limits<double>::infinity());
  EXPECT_EQ(parse_double("1e-999"), 0.0);
  EXPECT_FALSE(parse_double(""));
  EXPECT_FALSE(parse_double("12abc"));
  EXPECT_FALSE(parse_double("+-1"));
  EXPECT_FALSE(parse_double("nan(1)"));
  EXPECT_FALSE(parse_double("0x10"));
  EXPECT_EQ(artifacts::parse_int(" 3 "), 3);
  EXPECT_EQ(artifacts::parse_int("-1"), -1);
  EXPECT_FALSE(artifacts::parse_int("3.0"));
  EXPECT_FALSE(artifacts::parse_int("99999999999999999999"));
}

TEST(ReportHostSamples, HeaderVersions) {
  const auto split = [](std::string_view h) {
    std::vector<std::string> out;
    std::size_t p = 0;
    while (true) {
      const std::size_t q = h.find(',', p);
      out.emplace_back(h.substr(p, q - p));
      if (q == std::string_view::npos) break;
      p = q + 1;
    }
    return out;
  };
  EXPECT_EQ(artifacts::host_schema_version(split(artifacts::kHostHeaderV4)), 4);
  EXPECT_EQ(artifacts::host_schema_version(split(artifacts::kHostHeaderV5)), 5);
  EXPECT_EQ(artifacts::describe_cpu_header(split(artifacts::kHostHeaderV3)), "host v3");
  EXPECT_TRUE(artifacts::CpuCsvColumns::from_header(split(artifacts::kHostHeaderV4)).wide);
  EXPECT_FALSE(artifacts::CpuCsvColumns::from_header(split(artifacts::kHostHeaderV3)).wide);
  EXPECT_TRUE(artifacts::CpuCsvColumns::from_header(split(artifacts::kHostHeaderV5))
                  .at[artifacts::host_column::kModuleW]);
}

TEST(ReportGpuLoad, RolesAndPerRoleSums) {
  const auto file =
      artifacts::parse_gpu_samples(
          "schema_version,timestamp_unix,scrape_seq,hostname,gpu_index,gpu_uuid,power_w\n"
          "1,10,0,node-a,0,GPU-a,100\n1,10,0,node-a,1,GPU-b,50\n"
          "1,11,1,node-a,0,GPU-a,110\n1,11,1,node-a,1,GPU-b,55\n")
          .value();
  const auto roles = artifacts::parse_gpu_manifest_roles(
      R"({"expected_devices": [{"hostname": "node-a", "gpu_index": 0, "assignments": [{"worker_role": "prefill"}]},
                              {"hostname": "node-a", "gpu_index": 1, "assignments": [{"worker_role": "decode"}]}]})");
  ASSERT_TRUE(roles.ok);
  const GpuData d = build_gpu_data(file, roles.roles);
  ASSERT_EQ(d.nodes.size(), 1u);
  EXPECT_EQ(values(d.nodes[0].power), (std::vector<double>{150, 165}));
  ASSERT_EQ(d.roles.size(), 2u);
  EXPECT_EQ(d.roles[0].label(), "gpu/node-a/decode");
  EXPECT_EQ(d.roles[1].label(), "gpu/node-a/prefill");
  EXPECT_EQ(values(d.roles[1].power), (std::vector<double>{100, 110}));
}

TEST(ReportGpuLoad, SkippedRowsAreCountedAndTheFirstDescribed) {
  const std::string header =
      "schema_version,timestamp_unix,scrape_seq,hostname,gpu_index,gpu_uuid,power_w\n";
  auto file = artifacts::parse_gpu_samples(header + "1,10,0,n,0,G,1\n1,11,1,n,one,G,1\n" +
                                           "1,x,2,n,0,G,1\n")
                  .value();
  EXPECT_EQ(file.issues.skipped_rows(), 2u);
  ASSERT_EQ(file.issues.items().size(), 2u);
  EXPECT_EQ(file.issues.items()[0].first, "gpu_index 'one' is not a non-negative integer");
  EXPECT_EQ(file.issues.items()[0].first_line, 3u);
  file = artifacts::parse_gpu_samples(header + "1,,0,n,0,G,1\n").value();
  ASSERT_EQ(file.issues.items().size(), 1u);
  EXPECT_EQ(file.issues.items()[0].first, "timestamp_unix is blank");
}

TEST(ReportGpuLoad, UtilizationColumnsAndBlankPower) {
  const auto file =
      artifacts::parse_gpu_samples(
          "schema_version,timestamp_unix,scrape_seq,hostname,gpu_index,gpu_uuid,power_w,"
          "gpu_util_pct,sm_active\n"
          "2,10,0,n,0,G0,80,70,0.7\n2,10,0,n,1,G1,,20,\n2,11,1,n,0,G0,90,80,0.8\n2,11,1,n,1,G1,5,,"
          "\n")
          .value();
  const GpuData d = build_gpu_data(file, {});
  ASSERT_EQ(d.devices.size(), 2u);
  EXPECT_EQ(values(*d.devices[1].util[0]), (std::vector<double>{20}));
  EXPECT_FALSE(d.devices[1].util[1]);
  EXPECT_EQ(values(d.devices[1].power), (std::vector<double>{5}));  // blank power: no sample
  const auto v1 = artifacts::parse_gpu_samples(
                      "schema_version,timestamp_unix,scrape_seq,hostname,gpu_index,gpu_uuid,power_"
                      "w\n1,1,0,n,0,G,"
                      "1\n")
                      .value();
  EXPECT_FALSE(build_gpu_data(v1, {}).devices[0].util[0]);
}

// A row read twice (the whole file written twice) is one instant: the device, node and role
// sums are those of the file without the repeats, and the repeats are counted with a line.
TEST(ReportGpuLoad, RepeatedInstantsAddNothingAtAnyLevel) {
  const std::string header =
      "schema_version,timestamp_unix,scrape_seq,hostname,gpu_index,gpu_uuid,power_w\n";
  const std::string rows =
      "1,10,0,n,0,G0,100\n1,10,0,n,1,G1,50\n1,11,1,n,0,G0,110\n1,11,1,n,1,G1,55\n";
  const auto once = artifacts::parse_gpu_samples(header + rows).value();
  const auto twice = artifacts::parse_gpu_samples(header + rows + rows).value();
  EXPECT_EQ(twice.rows.size(), once.rows.size());
  EXPECT_EQ(twice.repeated_rows, 4u);
  ASSERT_EQ(twice.issues.items().size(), 1u);
  EXPECT_EQ(twice.issues.items()[0].reason, artifacts::kRepeatedInstantReason);
  EXPECT_EQ(twice.issues.items()[0].first_line, 6u);
  EXPECT_EQ(twice.issues.items()[0].first, "repeats line 2");
  const GpuData a = build_gpu_data(once, {}), b = build_gpu_data(twice, {});
  ASSERT_EQ(b.nodes.size(), 1u);
  EXPECT_EQ(values(b.nodes[0].power), values(a.nodes[0].power));
  EXPECT_EQ(values(b.nodes[0].power), (std::vector<double>{150, 165}));
  EXPECT_EQ(values(b.devices[0].power), (std::vector<double>{100, 110}));
}

// A file whose first line is no usable header is an error naming the line and the column,
// never a GPU leg of zero joules.
TEST(ReportGpuLoad, UnusableHeadersAreErrors) {
  const std::string header =
      "schema_version,timestamp_unix,scrape_seq,hostname,gpu_index,gpu_uuid,power_w";
  std::string upper = header;
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  const auto error = [](const std::string& text) {
    const auto r = artifacts::parse_gpu_samples(text);
    return r ? std::string("ok") : r.error();
  };
  EXPECT_THAT(error(upper + "\n1,1,0,n,0,G,1\n"),
              testing::StartsWith("line 1: the header has no 'timestamp_unix' column (7 cells: "
                                  "'SCHEMA_VERSION,"));
  EXPECT_EQ(error(" " + header + "\n"),
            "line 1: column 1 ' schema_version' has blanks around its name");
  EXPECT_THAT(error("schema_version,timestamp_unix,scrape_seq,hostname,gpu_index,gpu_uuid,watts\n"),
              testing::HasSubstr("no 'power_w' column"));
  EXPECT_EQ(error(header + ",power_w\n"),
            "line 1: column 'power_w' appears twice in the header (columns 7 and 8)");
  EXPECT_THAT(error(std::string(3, '\0') + header + "\n"),
              testing::StartsWith("line 1: a NUL byte in the header (column 1)"));
  EXPECT_EQ(error("\"" + header + "\n"), "line 1: a quote is never closed, no CSV header");
  EXPECT_EQ(error(""), "ok");  // no header at all: an empty leg, said by the report
  EXPECT_TRUE(artifacts::parse_gpu_samples("\n\n").value().empty);
}

}  // namespace
}  // namespace cpupower::report

namespace cpupower::report {
namespace {

// A node total taken while an expected socket had no reading is part of the node: dropped and
// said; expected sockets are the manifest's when it names them, else those the node has rows
// of anywhere in the file.
TEST(ReportCpuLoad, PartialNodeTotalsAreDroppedAndSaid) {
  const std::string text =
      "schema_version,timestamp_unix,hostname,source,sensor,socket_id,power_w,cpu_rail_w,soc_w,"
      "dram_w,module_w,total_power_w\n"
      "3,1,n,acpi,CPU0:cpuSidePowerUsageW,0,100,,,,,200\n"
      "3,1,n,acpi,CPU1:cpuSidePowerUsageW,1,100,,,,,200\n"
      "3,2,n,acpi,CPU0:cpuSidePowerUsageW,0,100,,,,,100\n"  // socket 1 gone: a partial total
      "3,3,n,acpi,CPU0:cpuSidePowerUsageW,0,100,,,,,200\n"
      "3,3,n,acpi,CPU1:cpuSidePowerUsageW,1,100,,,,,200\n";
  CpuData cpu = parse_cpu_samples_text(text).value();
  EXPECT_EQ(expected_sockets(cpu, "n", {}), (std::vector<long long>{0, 1}));
  const auto warnings = drop_partial_totals(cpu, {});
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_THAT(warnings[0], testing::StartsWith("cpu/n: 1 of 3 total_power_w readings not used"));
  EXPECT_THAT(warnings[0], testing::HasSubstr("socket 1"));
  ASSERT_EQ(cpu.nodes.size(), 1u);
  EXPECT_EQ(valued(cpu.nodes[0].total),
            (std::vector<std::pair<double, double>>{{1, 200}, {3, 200}}));

  // The manifest expects a socket the file never has: no total is the node's.
  CpuData again = parse_cpu_samples_text(text).value();
  RunExpectations expect;
  expect.cpu_node["n"].sockets_expected = std::vector<long long>{0, 1, 2};
  EXPECT_EQ(drop_partial_totals(again, expect).size(), 1u);
  EXPECT_TRUE(again.nodes.empty());
}

// A node whose exporter never found one of its meters has one socket fewer than the others,
// in its rows and in the manifest alike: nothing else says its total is short, so this does.
TEST(ReportCpuLoad, ANodeWithFewerSocketsThanAnotherIsSaid) {
  const std::string& header = kV3;
  const std::string a =
      "3,1,a,acpi,CPU0:cpuSidePowerUsageW,0,100,,,,,200\n"
      "3,1,a,acpi,CPU1:cpuSidePowerUsageW,1,100,,,,,200\n";
  const std::string b = "3,1,b,acpi,CPU0:cpuSidePowerUsageW,0,100,,,,,100\n";
  const std::string c =
      "3,1,c,acpi,CPU0:cpuSidePowerUsageW,0,100,,,,,200\n"
      "3,1,c,acpi,CPU1:cpuSidePowerUsageW,1,100,,,,,200\n";

  const CpuData cpu = parse_cpu_samples_text(header + a + b + c).value();
  const auto warnings = uneven_socket_counts(cpu, {});
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_THAT(warnings[0], testing::StartsWith("cpu/b: 1 socket (0) where cpu/a has 2 (0, 1); "));
  EXPECT_THAT(warnings[0], testing::HasSubstr("did not find when it started"));

  // Every node alike, or a single node: nothing to say.
  EXPECT_TRUE(uneven_socket_counts(parse_cpu_samples_text(header + a + c).value(), {}).empty());
  EXPECT_TRUE(uneven_socket_counts(parse_cpu_samples_text(header + b).value(), {}).empty());

  // The manifest's expectations count where it has them: here it expects a third socket of c.
  RunExpectations expect;
  expect.cpu_node["c"].sockets_expected = std::vector<long long>{0, 1, 2};
  const auto said = uneven_socket_counts(cpu, expect);
  ASSERT_EQ(said.size(), 2u);
  EXPECT_THAT(said[0], testing::StartsWith("cpu/a: 2 sockets (0, 1) where cpu/c has 3 (0, 1, 2)"));
  EXPECT_THAT(said[1], testing::StartsWith("cpu/b: 1 socket (0) where cpu/c has 3"));
}

// Rows written twice count once, and are counted.
TEST(ReportCpuLoad, RepeatedRowsCountOnce) {
  const std::string& header = kV3;
  const std::string rows =
      "3,1,n,acpi,CPU0:cpuSidePowerUsageW,0,100,,,,,100\n"
      "3,2,n,acpi,CPU0:cpuSidePowerUsageW,0,110,,,,,110\n";
  const CpuData once = parse_cpu_samples_text(header + rows).value();
  const CpuData twice = parse_cpu_samples_text(header + rows + rows).value();
  EXPECT_EQ(once.repeated_rows, 0u);
  EXPECT_EQ(twice.repeated_rows, 2u);
  EXPECT_EQ(values(twice.nodes[0].total), values(once.nodes[0].total));
  EXPECT_EQ(values(twice.sockets[0].power), values(once.sockets[0].power));
  const auto dup_column = parse_cpu_samples_text(
      "schema_version,timestamp_unix,hostname,socket_id,power_w,total_power_w,power_w\n");
  ASSERT_FALSE(dup_column);
  EXPECT_EQ(dup_column.error(),
            "line 1: column 'power_w' appears twice in the header (columns 5 and 7)");
}

}  // namespace
}  // namespace cpupower::report
