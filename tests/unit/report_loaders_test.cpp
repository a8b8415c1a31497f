// Sample loading for the energy report: every CPU layout by header name, GPU devices, node
// and role sums, utilization columns, and the streaming CSV reader underneath.

#include <gtest/gtest.h>

#include <charconv>
#include <mutex>
#include <random>

#include <filesystem>
#include <fstream>

#include "artifacts/cpu_samples.hpp"
#include "artifacts/csv_stream.hpp"
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

CpuData load(const std::string& text) {
  CpuLoad l = parse_cpu_samples_text(text);
  EXPECT_TRUE(l.data) << l.error;
  return l.data.value_or(CpuData{});
}

std::vector<double> values(const Track& t) {
  return t.v.to_vector();
}
std::vector<double> times(const Track& t) {
  return t.t->to_vector();
}
// The samples a computation rests on: (time, value) where the track has a value.
std::vector<std::pair<double, double>> valued(const Track& t) {
  std::vector<std::pair<double, double>> out;
  for (std::size_t i = 0; i < t.size(); ++i) {
    if (t.has(i)) out.emplace_back(t.time(i), t.v[i]);
  }
  return out;
}

TEST(ReportCpuLoad, LongRowsGroupPerSocketAndDedupeTheNodeTotal) {  // T3 #11
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
      text += "1," + ts + "," + host + ",acpi,s,0," + std::to_string(h) + "," + total + "\n";
      text += "1," + ts + "," + host + ",acpi,s,1," + std::to_string(100 + h) + "," +
              (t == 11 ? std::to_string(2000 + h) : total) + "\n";
    }
  }
  const CpuData d = load(text);
  ASSERT_EQ(d.sockets.size(), 80u);
  ASSERT_EQ(d.nodes.size(), 40u);
  for (const auto& s : d.sockets) {
    const int h = std::stoi(s.host.substr(1));
    const double w = s.socket == 0 ? h : 100 + h;
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

TEST(ReportCpuLoad, OneSensorPerSocketForAcpiMultiRailRows) {  // T3 #12, #58
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

TEST(ReportCpuLoad, WideLayoutIsReadDirectly) {  // T3 #13
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

TEST(ReportCpuLoad, FallsBackToComponentRailsWithoutATotal) {  // T3 #14
  const CpuData d = load(kV1 +
                         "1,10,node-a,acpi,CPU Power Socket 0,0,40,\n"
                         "1,10,node-a,acpi,SysIO Power Socket 0,0,15,\n"
                         "1,11,node-a,acpi,CPU Power Socket 0,0,42,\n"
                         "1,11,node-a,acpi,SysIO Power Socket 0,0,16,\n");
  EXPECT_EQ(values(d.sockets[0].power), (std::vector<double>{40, 42}));  // cpu_rail beats soc
  EXPECT_TRUE(d.nodes.empty());
}

TEST(ReportCpuLoad, BlankTotalIsSkippedNotZero) {  // T3 #15
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

TEST(ReportCpuLoad, UtilizationColumnsByName) {  // T3 #30, #31
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
  EXPECT_FALSE(parse_cpu_samples_text("timestamp_unix,hostname\n1,a\n").data);
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
  EXPECT_EQ(serial.skipped_rows, parallel.skipped_rows);
  EXPECT_EQ(serial.first_skipped, parallel.first_skipped);
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
  const std::string path = testing::TempDir() + "/report_parallel_samples.csv";
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
    const CpuLoad serial = load_cpu_samples(path, 1);
    for (const unsigned threads : {2u, 4u}) {
      const CpuLoad parallel = load_cpu_samples(path, threads);
      ASSERT_TRUE(serial.data && parallel.data);
      EXPECT_GT(fs::file_size(path), 8u << 20);  // large enough to be read in blocks
      EXPECT_EQ(serial.data->sockets.size(), quoted ? 7u : 6u);
      EXPECT_EQ(parallel.data->rows, 200000u);
      expect_same_data(*serial.data, *parallel.data);
      const CpuSocket* s = parallel.data->find_socket("node-0", 0);
      ASSERT_TRUE(s && s->module && s->rails[2]);
      EXPECT_TRUE(std::isnan(s->module->v[0]));
      EXPECT_EQ(s->sources, (std::vector<std::string>{"acpi", "dcgm"}));
    }
  }
  fs::remove(path);
}

// Rows the loader cannot use are counted, and the first of them in file order (not the
// first a thread met) is described, whatever the blocks and threads.
TEST(ReportCpuLoad, SkippedRowsAreCountedAndTheFirstDescribed) {
  namespace fs = std::filesystem;
  const std::string path = testing::TempDir() + "/report_skipped_samples.csv";
  {
    std::ofstream out(path, std::ios::binary);
    out << artifacts::kCpuHeaderV3 << "\n";
    for (int i = 0; i < 200000; ++i) {
      const std::string t = i == 120000 ? "oops" : std::to_string(1000 + i * 0.25);
      const std::string socket = i == 190000 ? "x" : std::to_string(i % 2);
      if (i == 70000) out << "garbage\n";
      out << "3," << t << ",node-" << i % 3 << ",acpi,CPU0:cpuSidePowerUsageW," << socket << ","
          << 90 + i % 17 << ",40,5,,," << 180 + i % 5 << "\n";
    }
  }
  ASSERT_GT(fs::file_size(path), 8u << 20);  // read in blocks, the bad rows in three of them
  for (const unsigned threads : {1u, 2u, 4u}) {
    const CpuLoad load = load_cpu_samples(path, threads);
    ASSERT_TRUE(load.data) << load.error;
    EXPECT_EQ(load.data->rows, 200001u) << threads;
    EXPECT_EQ(load.data->skipped_rows, 3u) << threads;
    EXPECT_EQ(load.data->first_skipped, "a row of 1 cell, without timestamp_unix") << threads;
  }
  fs::remove(path);
  EXPECT_EQ(load(kV1 + "1,10,a,acpi,s,0,1,1\n1,1e400x,a,acpi,s,0,1,1\n1,11,a,acpi,s,-,1,1\n")
                .first_skipped,
            "timestamp_unix '1e400x' is not a number");
  EXPECT_EQ(load(kV1 + "1,10,a,acpi,s,z,1,1\n1,,a,acpi,s,0,1,1\n").first_skipped,
            "socket_id 'z' is not an integer");
  EXPECT_EQ(load(kV1 + "1, ,a,acpi,s,0,1,1\n").first_skipped, "timestamp_unix is blank");
  EXPECT_EQ(load(kV1 + "1,10,a,acpi,s,0,1,1\n").first_skipped, "");
}

// The rows of one scrape share their host's time entry: scrapes that straddle two blocks,
// a socket's second row at the same time (its non-blank cells win), a node total that is
// blank on one row of a scrape and changed on the next, a socket missing from some scrapes,
// and a stretch out of time order must all come out of the blocks as out of the serial scan,
// and as the rows say.
TEST(ReportCpuLoad, ScrapesStraddlingBlocksShareTheirTimeEntry) {
  namespace fs = std::filesystem;
  const std::string path = testing::TempDir() + "/report_straddle_samples.csv";
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
  const CpuLoad serial = load_cpu_samples(path, 1);
  ASSERT_TRUE(serial.data) << serial.error;
  for (const unsigned threads : {2u, 3u}) {
    const CpuLoad parallel = load_cpu_samples(path, threads);
    ASSERT_TRUE(parallel.data) << parallel.error;
    expect_same_data(*serial.data, *parallel.data);
  }
  const CpuData& d = *serial.data;
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
  const std::string path = testing::TempDir() + "/report_parallel_long.csv";
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
  const CpuLoad serial = load_cpu_samples(path, 1);
  const CpuLoad parallel = load_cpu_samples(path, 3);
  ASSERT_TRUE(serial.data && parallel.data);
  EXPECT_GT(std::filesystem::file_size(path), 8u << 20);
  EXPECT_EQ(parallel.data->sockets[0].sensor, "CPU0:cpuSidePowerUsageW");
  expect_same_data(*serial.data, *parallel.data);
  std::filesystem::remove(path);
}

TEST(ReportCsv, QuotesCrLfBlankLinesAndShortRows) {
  std::vector<std::vector<std::string>> rows;
  artifacts::scan_csv_text(
      "a,b,c\r\n\"x,\"\"y\"\"\",2,3\r\n\r\n1,\"multi\nline\"\nshort\n",
      [](const std::vector<std::string>& h) { return h.size() == 3; },
      [&](std::size_t, const artifacts::CsvRecord& r) {
        rows.emplace_back(r.cells.begin(), r.cells.end());
      });
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0], (std::vector<std::string>{"x,\"y\"", "2", "3"}));
  EXPECT_EQ(rows[1], (std::vector<std::string>{"1", "multi\nline"}));
  EXPECT_EQ(rows[2], (std::vector<std::string>{"short"}));
}

// Records longer than one 16-byte block of the vector splitter: separators at every offset,
// a quote that first shows up deep in a record, CR LF, and a last line without a line end.
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
  std::vector<std::vector<std::string>> rows;
  artifacts::scan_csv_text(
      text, [](const std::vector<std::string>&) { return true; },
      [&](std::size_t, const artifacts::CsvRecord& r) {
        rows.emplace_back(r.cells.begin(), r.cells.end());
      });
  EXPECT_EQ(rows, expected);
}

// Read buffers start at the chunk's size (up to 4 MiB) plus 64 KiB: records of hundreds of
// KiB that run past a chunk's or block's end must grow the buffer and keep what it held, the
// same in one chunk, in one chunk per thread and in blocks.
TEST(ReportCsv, RecordsLongerThanTheReadBufferGrowIt) {
  const std::string path = testing::TempDir() + "/report_long_records.csv";
  std::vector<std::vector<std::string>> expected;
  {
    std::ofstream out(path, std::ios::binary);
    out << "a,b\n";
    std::size_t bytes = 0;
    for (int i = 0; bytes < (18u << 20); ++i) {
      // every 40th record carries a 600 KiB cell, so that many chunk and block ends fall
      // inside one, and 256 KiB blocks start with a buffer shorter than it
      const std::string first = std::to_string(i);
      const std::string second = i % 40 == 7 ? std::string(600u << 10, 'a' + i % 26) : "x";
      expected.push_back({first, second});
      out << first << "," << second << "\n";
      bytes += first.size() + second.size() + 2;
    }
  }
  const auto scan = [&](unsigned threads, std::size_t block_bytes) {
    std::vector<std::vector<std::vector<std::string>>> per_slot(threads);
    std::vector<std::pair<std::size_t, std::size_t>> blocks;  // (block, slot)
    std::vector<std::vector<std::vector<std::string>>> per_block;
    std::mutex m;
    artifacts::CsvScanOptions options;
    options.threads = threads;
    options.block_bytes = block_bytes;
    std::vector<std::vector<std::vector<std::string>>> current(threads);
    if (block_bytes > 0) {
      options.on_block = [&](std::size_t slot, std::size_t block) {
        std::lock_guard lock(m);
        if (per_block.size() <= block) per_block.resize(block + 1);
        per_block[block] = std::move(current[slot]);
        current[slot].clear();
      };
    }
    const auto result = artifacts::scan_csv_file(
        path, options, [](const std::vector<std::string>&) { return true; },
        [&](std::size_t slot, const artifacts::CsvRecord& r) {
          (block_bytes > 0 ? current : per_slot)[slot].emplace_back(r.cells.begin(), r.cells.end());
        },
        [] {});
    EXPECT_TRUE(result.ok) << result.error;
    std::vector<std::vector<std::string>> rows;
    for (auto& part : block_bytes > 0 ? per_block : per_slot) {
      rows.insert(rows.end(), part.begin(), part.end());
    }
    return rows;
  };
  EXPECT_EQ(scan(1, 0), expected);
  EXPECT_EQ(scan(2, 0), expected);           // one chunk per thread
  EXPECT_EQ(scan(2, 256u << 10), expected);  // 256 KiB blocks
  std::filesystem::remove(path);
}

TEST(ReportCsv, NumbersParseLikePythonFloat) {
  using artifacts::parse_cell_double;
  EXPECT_EQ(parse_cell_double("1788310143.461"), 1788310143.461);
  EXPECT_EQ(parse_cell_double("1789416029.2655346"), 1789416029.2655346);
  EXPECT_EQ(parse_cell_double(" 94.29 "), 94.29);
  EXPECT_EQ(parse_cell_double("1e-05"), 1e-05);
  EXPECT_EQ(parse_cell_double("+7"), 7.0);
  EXPECT_TRUE(std::isinf(*parse_cell_double("inf")));
  EXPECT_TRUE(std::isnan(*parse_cell_double("nan")));
  EXPECT_FALSE(parse_cell_double(""));
  EXPECT_FALSE(parse_cell_double("12abc"));
  EXPECT_EQ(artifacts::parse_cell_int(" 3 "), 3);
  EXPECT_FALSE(artifacts::parse_cell_int("3.0"));
}

// The inline fast paths (Clinger's, and the extended-precision one for 17 to 19 digits)
// against std::from_chars, which is correctly rounded: random decimals of every length and
// point position, and integers at, just below and just above the midpoint between two
// adjacent doubles, where rounding twice would go wrong.
TEST(ReportCsv, FastNumberPathsAreCorrectlyRounded) {
  const auto oracle = [](const std::string& text) {
    double v = 0;
    std::from_chars(text.data(), text.data() + text.size(), v);
    return v;
  };
  const auto check = [&](const std::string& text) {
    double v = -1;
    ASSERT_TRUE(artifacts::parse_number(text, &v)) << text;
    ASSERT_EQ(v, oracle(text)) << text;
  };
  std::mt19937_64 rng(7);
  for (int i = 0; i < 300000; ++i) {
    const int digits = 1 + static_cast<int>(rng() % 19);
    std::string text;
    for (int d = 0; d < digits; ++d) text += static_cast<char>('0' + rng() % 10);
    const auto point = static_cast<std::size_t>(rng() % (digits + 1));
    if (point < text.size()) text.insert(point, ".");
    check(text);
  }
  for (int i = 0; i < 100000; ++i) {
    // A double between 2^54 and 2^63: its neighbours are 4 or more apart, so the midpoint
    // and the integers beside it are exact.
    const int exponent = 54 + static_cast<int>(rng() % 9);
    const std::uint64_t x = (std::uint64_t{1} << exponent) | (rng() >> (64 - exponent));
    const double d = static_cast<double>(x);
    const auto lo = static_cast<std::uint64_t>(d);
    const auto hi = static_cast<std::uint64_t>(std::nextafter(d, 1e300));
    const std::uint64_t mid = lo + (hi - lo) / 2;
    for (const std::uint64_t m : {mid - 1, mid, mid + 1}) {
      const std::string text = std::to_string(m);
      check(text);
      check(text.substr(0, 10) + "." + text.substr(10));  // the shape of a time.time() stamp
    }
  }
}

// Values keeps decimals as scaled 32-bit integers: whatever goes in must read back as the
// very same double (bit for bit: -0.0 too), whether it came with its decimal or not, and
// whatever the column had to do on the way (finer scales, doubles).
std::uint64_t bits(double v) {
  std::uint64_t b = 0;
  std::memcpy(&b, &v, sizeof b);
  return b;
}

void expect_read_back(const std::vector<std::string>& cells, bool compact) {
  Values with_parts, plain;  // from the cells' digits, and from parsed doubles
  std::vector<double> parsed;
  for (const auto& c : cells) {
    double v = std::numeric_limits<double>::quiet_NaN();
    artifacts::parse_number(c, &v);
    parsed.push_back(v);
    with_parts.push_text(c);
    plain.push_back(v);
  }
  EXPECT_EQ(with_parts.compact(), compact);
  EXPECT_EQ(plain.compact(), compact);
  ASSERT_EQ(with_parts.size(), parsed.size());
  for (std::size_t i = 0; i < parsed.size(); ++i) {
    if (std::isnan(parsed[i])) {
      ASSERT_TRUE(std::isnan(with_parts[i]) && std::isnan(plain[i])) << cells[i];
      continue;
    }
    ASSERT_EQ(bits(with_parts[i]), bits(parsed[i])) << cells[i];
    ASSERT_EQ(bits(plain[i]), bits(parsed[i])) << cells[i];
  }
}

TEST(ReportValues, EveryValueReadsBackAsParsed) {
  std::mt19937_64 rng(11);
  std::vector<std::string> cells;  // up to 5 integer and 4 decimal digits: always 32 bits
  for (int i = 0; i < 200000; ++i) {
    const int decimals = static_cast<int>(rng() % 5);
    const int digits = decimals + static_cast<int>(rng() % 6);
    std::string text = rng() % 5 == 0 ? "-" : "";
    for (int d = 0; d < std::max(digits, 1); ++d) text += static_cast<char>('0' + rng() % 10);
    if (decimals > 0) text.insert(text.size() - static_cast<std::size_t>(decimals), ".");
    if (text[0] == '-' && text.find_first_of("123456789") == std::string::npos) text.erase(0, 1);
    cells.push_back(i % 1000 == 0 ? "" : text);  // -0 has no integer form: not here
  }
  expect_read_back(cells, true);
  // Cells without an integer form switch the column to doubles; nothing read changes.
  for (const auto& [odd, compact] :
       std::vector<std::pair<std::string, bool>>{{"-0.0", false},
                                                 {"inf", false},
                                                 {"123.4567890123", false},
                                                 {"1e5", true},
                                                 {"nan", true},
                                                 {" 7.5 ", true}}) {
    auto mixed = cells;
    mixed.resize(5000);
    mixed.insert(mixed.begin() + 2500, odd);
    expect_read_back(mixed, compact);
  }
}

TEST(ReportValues, ScalesGrowUntilTheIntegersWouldOverflow) {
  Values v;
  v.push_back(95.1);
  EXPECT_TRUE(v.compact());
  EXPECT_EQ(v.scale(), 1);
  v.push_back(95.123);  // a finer scale for the whole column
  EXPECT_EQ(v.scale(), 3);
  v.push_back(std::numeric_limits<double>::quiet_NaN());
  v.push_back(2000000.5);
  EXPECT_TRUE(v.compact());
  EXPECT_EQ(v[0], 95.1);
  EXPECT_TRUE(std::isnan(v[2]));

  Values coarse, fine;
  coarse.push_back(1.5);
  coarse.push_back(-2.25);
  fine.push_back(0.00001);
  v.append(coarse);  // scale 2 integers widened to scale 3
  EXPECT_TRUE(v.compact());
  EXPECT_EQ(v[5], -2.25);
  v.append(fine);  // 2000000.5 at scale 5 no longer fits 32 bits: doubles from here on
  EXPECT_FALSE(v.compact());
  EXPECT_EQ(v.to_vector().size(), 7u);
  EXPECT_EQ(v[1], 95.123);
  EXPECT_EQ(v[3], 2000000.5);
  EXPECT_EQ(v[6], 0.00001);

  Values w;
  w.push_back(1.25);
  w.append_fill(3, std::numeric_limits<double>::quiet_NaN());
  w.set(2, 1.25);
  EXPECT_TRUE(w.compact());
  EXPECT_TRUE(std::isnan(w[1]));
  EXPECT_EQ(w[2], 1.25);
  w.set(3, -0.0);  // has no integer form
  EXPECT_FALSE(w.compact());
  EXPECT_TRUE(std::signbit(w[3]));
  EXPECT_TRUE(w.any_value());
  EXPECT_FALSE(Values(Doubles(4, std::numeric_limits<double>::quiet_NaN())).any_value());
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
  EXPECT_TRUE(artifacts::CpuCsvColumns::from_header(split(artifacts::kHostHeaderV5)).module_w);
}

TEST(ReportGpuLoad, RolesAndPerRoleSums) {  // T3 #26
  const auto file = artifacts::parse_gpu_samples(
      "schema_version,timestamp_unix,scrape_seq,hostname,gpu_index,gpu_uuid,power_w\n"
      "1,10,0,node-a,0,GPU-a,100\n1,10,0,node-a,1,GPU-b,50\n"
      "1,11,1,node-a,0,GPU-a,110\n1,11,1,node-a,1,GPU-b,55\n");
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
                                           "1,x,2,n,0,G,1\n");
  EXPECT_EQ(file.skipped_rows, 2u);
  EXPECT_EQ(file.first_skipped, "gpu_index 'one' is not an integer");
  file = artifacts::parse_gpu_samples(header + "1,,0,n,0,G,1\n");
  EXPECT_EQ(file.first_skipped, "timestamp_unix is blank");
  EXPECT_EQ(build_gpu_data(file, {}).skipped_rows, 1u);
}

TEST(ReportGpuLoad, UtilizationColumnsAndBlankPower) {  // T3 #32, #33
  const auto file = artifacts::parse_gpu_samples(
      "schema_version,timestamp_unix,scrape_seq,hostname,gpu_index,gpu_uuid,power_w,"
      "gpu_util_pct,sm_active\n"
      "2,10,0,n,0,G0,80,70,0.7\n2,10,0,n,1,G1,,20,\n2,11,1,n,0,G0,90,80,0.8\n2,11,1,n,1,G1,5,,\n");
  const GpuData d = build_gpu_data(file, {});
  ASSERT_EQ(d.devices.size(), 2u);
  EXPECT_EQ(values(*d.devices[1].util[0]), (std::vector<double>{20}));
  EXPECT_FALSE(d.devices[1].util[1]);
  EXPECT_EQ(values(d.devices[1].power), (std::vector<double>{5}));  // blank power: no sample
  const auto v1 = artifacts::parse_gpu_samples(
      "schema_version,timestamp_unix,scrape_seq,hostname,gpu_index,gpu_uuid,power_w\n1,1,0,n,0,G,"
      "1\n");
  EXPECT_FALSE(build_gpu_data(v1, {}).devices[0].util[0]);
}

}  // namespace
}  // namespace cpupower::report
