#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>
#include <utility>

#include "sim/sim_node.hpp"
#include "sources/acpi_discovery.hpp"
#include "sources/acpi_reader.hpp"
#include "sources/energy_counter.hpp"
#include "sources/ladder.hpp"
#include "sources/reader_threads.hpp"
#include "sources/socket_watch.hpp"
#include "sources/sysfs_read.hpp"
#include "test_tree.hpp"

namespace cpupower::sources {
namespace {

using cpupower::testing::TestTree;
using namespace std::chrono_literals;

// Waits until `done()` holds, up to a deadline far beyond any reader period: tests assert
// what happens, not how fast on a busy machine. Returns whether it held.
template <typename Done>
bool eventually(const Done& done) {
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(10ms);
  }
  return true;
}

std::vector<std::string> sensors(const AcpiDiscovery& d) {
  std::vector<std::string> out;
  for (const auto& c : d.channels) out.push_back(c.sensor);
  return out;
}

TEST(AcpiDiscovery, FindsPowerMeterChannelsAndClassifiesThem) {
  TestTree t;
  t.write("hwmon0/name", "power_meter\n");
  t.write("hwmon0/power1_average", "51000000\n");
  t.write("hwmon0/power1_oem_info", "CPU Power Socket 0\n");
  t.write("hwmon0/power2_average", "98029000\n");
  t.write("hwmon0/power2_oem_info", "Grace Power Socket 1\n");
  t.write("hwmon0/power1_average_interval", "50\n");
  const auto d = discover_acpi(t.root());
  ASSERT_TRUE(d.error.empty());
  ASSERT_EQ(d.channels.size(), 2u);
  EXPECT_EQ(d.channels[0].sensor, "hwmon0/power1");
  EXPECT_EQ(d.channels[0].cls.kind, rails::Kind::cpu_rail);
  EXPECT_EQ(d.channels[0].cls.socket, "0");
  EXPECT_EQ(d.channels[1].cls.kind, rails::Kind::total);
  EXPECT_EQ(d.channels[1].cls.socket, "1");
}

TEST(AcpiDiscovery, AcceptsLegacyRegistrationWithoutClassName) {
  TestTree t;
  t.write("hwmon11/device/name", "power_meter\n");
  t.write("hwmon11/device/power1_average", "98029000\n");
  t.write("hwmon11/device/power1_oem_info", "Grace Power Socket 0\n");
  t.write("hwmon1/device/name", "nvme\n");
  t.write("hwmon1/device/power1_average", "5000000\n");
  const auto d = discover_acpi(t.root());
  ASSERT_EQ(d.channels.size(), 1u);
  EXPECT_EQ(d.channels[0].sensor, "hwmon11/power1");
  EXPECT_EQ(d.channels[0].cls.kind, rails::Kind::total);
  EXPECT_EQ(read_power_file(d.channels[0].value_path).watts, 98.029);
}

TEST(AcpiDiscovery, AliasDedupKeepsTheSideThatCarriesTheMetadata) {
  TestTree t;
  t.write("hwmon0/name", "power_meter\n");
  t.write("hwmon0/power1_average", "98029000\n");
  t.symlink("../power1_average", "hwmon0/device/power1_average");
  t.write("hwmon0/device/power1_oem_info", "Grace Power Socket 0\n");
  const auto d = discover_acpi(t.root());
  ASSERT_EQ(d.channels.size(), 1u);
  EXPECT_EQ(d.channels[0].oem_info, "Grace Power Socket 0");
  EXPECT_EQ(d.channels[0].cls.kind, rails::Kind::total);
}

TEST(AcpiDiscovery, DistinctRailsGetDistinctSeriesWithoutUsableMetadata) {
  TestTree t;
  t.meter("hwmon0", "CPU Power", "1000000", "power1");
  t.meter("hwmon0", "CPU Power", "2000000", "power2");
  t.meter("hwmon1", "", "3000000");
  const auto d = discover_acpi(t.root());
  ASSERT_EQ(d.channels.size(), 3u);
  EXPECT_EQ(d.channels[2].oem_info, "power1");
  EXPECT_NE(d.channels[0].label_text, d.channels[1].label_text);
  EXPECT_NE(d.channels[1].label_text, d.channels[2].label_text);
  EXPECT_EQ(d.channels[0].cls.kind, rails::Kind::other);
}

TEST(AcpiDiscovery, OrdersNodesAndChannelsNumerically) {
  TestTree t;
  t.meter("hwmon10", "Grace Power Socket 1", "1000000");
  t.meter("hwmon2", "Grace Power Socket 0", "1000000", "power10");
  t.meter("hwmon2", "CPU Power Socket 0", "1000000", "power2");
  const auto d = discover_acpi(t.root());
  EXPECT_EQ(sensors(d),
            (std::vector<std::string>{"hwmon2/power2", "hwmon2/power10", "hwmon10/power1"}));
}

TEST(AcpiDiscovery, AcceptsInputWhereAverageIsAbsent) {
  TestTree t;
  t.write("hwmon3/name", "power_meter\n");
  t.write("hwmon3/power1_input", "90000000\n");
  t.write("hwmon3/power1_oem_info", "Grace Power Socket 0\n");
  t.write("hwmon3/power2_input", "1\n");
  t.write("hwmon3/power2_average", "2\n");
  const auto d = discover_acpi(t.root());
  ASSERT_EQ(d.channels.size(), 2u);
  EXPECT_EQ(d.channels[0].value_path, t.path("hwmon3/power1_input"));
  EXPECT_EQ(d.channels[1].value_path, t.path("hwmon3/power2_average"));
}

TEST(AcpiDiscovery, IgnoresOtherDriversAndNonHwmonEntries) {
  TestTree t;
  t.write("hwmon0/name", "acpitz\n");
  t.write("hwmon0/power1_average", "1000000\n");
  t.write("power_meter/name", "power_meter\n");
  t.write("power_meter/power1_average", "1000000\n");
  EXPECT_TRUE(discover_acpi(t.root()).channels.empty());
}

TEST(AcpiDiscovery, ReportsAnUnreadableRoot) {
  const auto d = discover_acpi("/nonexistent/hwmon");
  EXPECT_EQ(d.error, "list /nonexistent/hwmon: No such file or directory");
}

TEST(PowerValues, MicrowattsToWattsAndEveryNonValueIsMissing) {
  EXPECT_EQ(interpret_microwatts("98029000\n").watts, 98.029);
  EXPECT_EQ(interpret_microwatts("+1.5e6").watts, 1.5);
  EXPECT_FALSE(interpret_microwatts("0\n").watts);
  EXPECT_FALSE(interpret_microwatts("-5000000").watts);
  EXPECT_FALSE(interpret_microwatts("4294967295000\n").watts);
  EXPECT_FALSE(interpret_microwatts("").watts);
  EXPECT_FALSE(interpret_microwatts("  \n").watts);
  EXPECT_FALSE(interpret_microwatts("abc").watts);
  EXPECT_FALSE(interpret_microwatts("inf").watts);
  EXPECT_FALSE(interpret_microwatts("nan").watts);
  EXPECT_FALSE(read_power_file("/nonexistent/power1_average").watts);
  EXPECT_NE(read_power_file("/nonexistent/power1_average").problem.find("read failed"),
            std::string::npos);
}

TEST(PowerValues, ReadingsAboveThePhysicalBoundAreErrorsNotPower) {
  // The bound is the one the collectors and the report hold a socket to.
  EXPECT_EQ(interpret_microwatts("10000000000\n").watts, 10000.0);
  for (const auto* text : {"10000000001\n", "18446744073709551615\n", "1e300"}) {
    const auto r = interpret_microwatts(text);
    EXPECT_FALSE(r.watts) << text;
    EXPECT_NE(r.problem.find("physical bound"), std::string::npos) << text << ": " << r.problem;
  }
  // A value file longer than the read buffer: its first bytes alone would parse as 1e255 uW.
  TestTree t;
  t.write("long", std::string(4096, '9') + "\n");
  const auto r = read_power_file(t.path("long"));
  EXPECT_FALSE(r.watts);
  EXPECT_NE(r.problem.find("longer than"), std::string::npos) << r.problem;
  // Exactly the buffer's worth of text is still read (and here refused by the bound).
  t.write("full", std::string(255, '9') + "\n");
  EXPECT_NE(read_power_file(t.path("full")).problem.find("physical bound"), std::string::npos);
}

TEST(ValueFile, KeptOpenItReadsEveryNewValue) {
  TestTree t;
  t.write("power1_average", "98029000\n");
  ValueFile f;
  EXPECT_EQ(read_power_file(f, t.path("power1_average")).watts, 98.029);
  EXPECT_TRUE(f.held());
  // Rewritten in place (as a sysfs attribute's text changes under an open descriptor).
  {
    std::ofstream out(t.path("power1_average"), std::ios::trunc);
    out << "120500000\n";
  }
  EXPECT_EQ(read_power_file(f, t.path("power1_average")).watts, 120.5);
  EXPECT_TRUE(f.held());
  // Replaced by a rename, as the simulated node writes: the held file is unlinked, and the
  // read opens the new one; from then on that path is opened for every read, not held.
  t.write("power1_average", "7000000\n");
  EXPECT_EQ(read_power_file(f, t.path("power1_average")).watts, 7.0);
  EXPECT_FALSE(f.held());
  t.write("power1_average", "8000000\n");
  EXPECT_EQ(read_power_file(f, t.path("power1_average")).watts, 8.0);
  EXPECT_FALSE(f.held());
  // Removed: the error of an open (ENOENT: the device went away), never the last value.
  std::filesystem::remove(t.path("power1_average"));
  const auto gone = read_power_file(f, t.path("power1_average"));
  EXPECT_FALSE(gone.watts);
  EXPECT_TRUE(device_gone(gone.error_number)) << gone.problem;
  EXPECT_FALSE(f.held());
  t.write("power1_average", "9000000\n");
  EXPECT_EQ(read_power_file(f, t.path("power1_average")).watts, 9.0);
  // Another path: that file, held again.
  t.write("power2_average", "10000000\n");
  EXPECT_EQ(read_power_file(f, t.path("power2_average")).watts, 10.0);
  EXPECT_TRUE(f.held());
  // Longer than the limit, through the held descriptor too.
  t.write("power2_average", std::string(300, '9') + "\n");
  EXPECT_NE(read_power_file(f, t.path("power2_average")).problem.find("longer than"),
            std::string::npos);
  t.write("power2_average", std::string(255, '9') + "\n");
  EXPECT_NE(read_power_file(f, t.path("power2_average")).problem.find("physical bound"),
            std::string::npos);
}

TEST(ValueFile, AFifoIsOpenedAfreshForEveryRead) {
  TestTree t;
  t.fifo("power1_average");
  ValueFile f;
  // One writer per read: each open of a FIFO meets one writer, whose line it reads to the end.
  for (const auto* text : {"11000000\n", "12000000\n"}) {
    std::thread writer([&] {
      const int fd = ::open(t.path("power1_average").c_str(), O_WRONLY);
      ASSERT_GE(fd, 0);
      ASSERT_GT(::write(fd, text, std::strlen(text)), 0);
      ::close(fd);
    });
    EXPECT_EQ(read_power_file(f, t.path("power1_average")).watts, std::atof(text) / 1e6);
    EXPECT_FALSE(f.held());
    writer.join();
  }
}

TEST(ValueFile, AtMostTheCapIsHeldOpen) {
  TestTree t;
  const int n = kMaxHeldValueFiles + 8;
  std::vector<ValueFile> files(n);
  int held = 0;
  for (int i = 0; i < n; ++i) {
    const auto rel = "power" + std::to_string(i) + "_average";
    t.write(rel, std::to_string(1000000 + i) + "\n");
    EXPECT_EQ(read_power_file(files[i], t.path(rel)).watts, 1.0 + i / 1e6);
    held += files[i].held();
  }
  EXPECT_LE(held, kMaxHeldValueFiles);
  EXPECT_FALSE(files.back().held());
  // A file over the cap is still read, each time afresh.
  t.write("power" + std::to_string(n - 1) + "_average", "5000000\n");
  EXPECT_EQ(
      read_power_file(files.back(), t.path("power" + std::to_string(n - 1) + "_average")).watts,
      5.0);
}

TEST(AcpiReader, OverflowingValuesCountAsReadErrorsAndStayStale) {
  TestTree t;
  t.meter("hwmon2", "Grace Power Socket 0", "18446744073709551615");
  t.meter("hwmon3", "Grace Power Socket 1", "80000000");
  t.write("hwmon10/name", "power_meter\n");
  t.write("hwmon10/power1_oem_info", "Grace Power Socket 2\n");
  t.write("hwmon10/power1_average", std::string(4096, '7') + "\n");
  auto d = discover_acpi(t.root());
  ASSERT_EQ(d.channels.size(), 3u);
  AcpiReader reader(d.channels, 20ms, 300ms);
  reader.start();
  // Both bad channels: several reads, every one an error, no value, and stale once the
  // maximum age has passed without one; the good socket is served meanwhile.
  EXPECT_TRUE(eventually([&] {
    const auto r = reader.snapshot().readings;
    return r[0].reads_total >= 3 && r[2].reads_total >= 3 && r[0].stale && r[2].stale &&
           r[1].watts == 80.0;
  }));
  const auto r = reader.snapshot().readings;
  for (const std::size_t i : {std::size_t{0}, std::size_t{2}}) {
    EXPECT_FALSE(r[i].watts) << i;
    EXPECT_EQ(r[i].read_errors_total, r[i].reads_total) << i;
    EXPECT_TRUE(r[i].stale) << i;
  }
  EXPECT_EQ(r[1].read_errors_total, 0u);
  reader.stop();
}

// A sensor that has never produced a value is withheld and reads stale from the start, not
// only once --max-age-s has passed: a never-read meter is not fresh. The watchdog's WARN keeps
// its grace (no WARN for a first read still under way at start-up).
TEST(SampleTable, TheWatchdogSleepsWhileEveryValueIsFreshAndLooksOftenWhileOneIsStale) {
  // max_age 300 ms, period 10 ms: values recorded every 20 ms keep the first possible
  // staleness about 300 ms away, so the watchdog passes about three times a second, not a
  // hundred; once the records stop and a value goes stale it looks every period again.
  SampleTable table({"a", "b"}, 300ms, "sample_table_test", "test reading");
  table.start_watchdog(10ms);
  // A machine that holds this thread past max_age lets the values go stale meanwhile, and
  // the watchdog rightly looks every period then: that time is counted and allowed for.
  std::chrono::steady_clock::duration stale_time{};
  const auto record_for = [&](std::chrono::milliseconds how_long) {
    const auto end = std::chrono::steady_clock::now() + how_long;
    auto last = std::chrono::steady_clock::now();
    while (std::chrono::steady_clock::now() < end) {
      const auto t = std::chrono::steady_clock::now();
      table.record(0, 90.0, t, t, "", std::nullopt);
      table.record(1, 20.0, t, t, "", std::nullopt);
      stale_time += std::max(t - last - 300ms, std::chrono::steady_clock::duration::zero());
      last = t;
      std::this_thread::sleep_for(20ms);
    }
  };
  record_for(100ms);
  const auto before = table.watchdog_passes();
  stale_time = {};
  record_for(1000ms);
  const auto healthy = table.watchdog_passes() - before;
  const auto allowed = 20u + static_cast<std::size_t>(stale_time / 10ms) * 2;
  EXPECT_LE(healthy, allowed) << healthy << " passes in 1 s of fresh values";
  // Stale from about 300 ms after the last record: from then on, a pass every 10 ms.
  ASSERT_TRUE(eventually([&] { return table.snapshot()[0].stale; }));
  const auto stale_from = table.watchdog_passes();
  std::this_thread::sleep_for(500ms);
  EXPECT_GE(table.watchdog_passes() - stale_from, 10u);
  table.stop();
}

TEST(SampleTable, NeverReadIsStaleFromTheStart) {
  SampleTable table({"a", "b", "c"}, 60s, "sample_table_test", "test reading");
  table.start_watchdog(10ms);
  const auto t0 = std::chrono::steady_clock::now();
  auto r = table.snapshot();
  ASSERT_EQ(r.size(), 3u);
  for (const auto& row : r) {
    EXPECT_TRUE(row.stale);  // well inside the 60 s grace
    EXPECT_FALSE(row.watts);
  }
  table.record(0, 90.0, t0, t0 + 1ms);
  table.record(1, std::nullopt, t0, t0 + 1ms, "invalid value");  // read, but no value
  r = table.snapshot();
  EXPECT_FALSE(r[0].stale);
  EXPECT_EQ(r[0].watts, 90.0);
  EXPECT_TRUE(r[1].stale);
  EXPECT_EQ(r[1].reads_total, 1u);
  EXPECT_TRUE(r[2].stale);
  // Too old is stale as before.
  EXPECT_TRUE(table.snapshot(t0 + 61s)[0].stale);
  table.stop();
}

TEST(SampleTable, AServedValueSaysHowLongItStaysFresh) {
  SampleTable table({"a", "b"}, 2000ms, "sample_table_test", "test reading");
  const auto t0 = std::chrono::steady_clock::now();
  table.record(0, 90.0, t0, t0 + 2ms);  // read at t0 + 1 ms
  const auto r = table.snapshot(t0 + 501ms);
  ASSERT_TRUE(r[0].fresh_for_s);
  EXPECT_NEAR(*r[0].fresh_for_s, 1.5, 1e-6);
  EXPECT_FALSE(r[1].fresh_for_s);                            // never read: withheld, nothing to say
  EXPECT_FALSE(table.snapshot(t0 + 2002ms)[0].fresh_for_s);  // withheld: the age is past
  EXPECT_TRUE(table.snapshot(t0 + 2002ms)[0].age_s);
}

TEST(EnergyCounter, IntegratesCoversAndBridgesBetweenGoodReadings) {
  const SteadyTime t0{};
  EnergyCounter c;
  c.add(100.0, t0, 0.05, 5.0);  // the first reading measures no interval
  EXPECT_EQ(c.joules, 0.0);
  c.add(200.0, t0 + 100ms, 0.05, 5.0);  // 50 ms averaged of a 100 ms step
  EXPECT_NEAR(c.joules, 15.0, 1e-9);    // (100 + 200) / 2 W x 0.1 s
  EXPECT_NEAR(c.covered_s, 0.05, 1e-12);
  EXPECT_NEAR(c.bridged_s, 0.05, 1e-12);
  c.add(999.0, t0 + 100ms, 0.05, 5.0);  // the same instant again: no time, nothing added
  EXPECT_NEAR(c.joules, 15.0, 1e-9);
  c.add(200.0, t0 + 7100ms, 0.05, 5.0);  // 7 s without a reading: over the maximum age
  EXPECT_NEAR(c.joules, 15.0, 1e-9);
  EXPECT_NEAR(c.covered_s + c.bridged_s, 0.1, 1e-12);  // uncovered, not bridged
  c.add(200.0, t0 + 8100ms, std::nullopt, 5.0);        // an unknown interval vouches for nothing
  EXPECT_NEAR(c.joules, 215.0, 1e-9);
  EXPECT_NEAR(c.covered_s, 0.075, 1e-12);  // the previous reading's later 25 ms only
  EXPECT_NEAR(c.bridged_s, 1.025, 1e-12);
  c.add(200.0, t0 + 8300ms, 0.1, 5.0);  // an unknown interval, then half of 100 ms
  EXPECT_NEAR(c.covered_s, 0.125, 1e-12);
  c.add(200.0, t0 + 8400ms, 1.0, 5.0);  // the intervals overlap: the whole 100 ms covered
  EXPECT_NEAR(c.covered_s, 0.225, 1e-12);
  EXPECT_NEAR(c.bridged_s, 1.175, 1e-12);
}

TEST(SampleTable, CountsEnergyFromTheCentreOfEachReadingAndKeepsItWhileStale) {
  SampleTable table({"a", "b"}, 2s, "sample_table_test", "test reading");
  const auto t0 = std::chrono::steady_clock::now();
  auto r = table.snapshot(t0);
  ASSERT_EQ(r[0].energy_j, 0.0);  // every counter from the start, at zero
  ASSERT_EQ(r[0].covered_s, 0.0);
  ASSERT_EQ(r[0].bridged_s, 0.0);
  // 1 s averages read every second: fully covered, 50 W for 3 s.
  for (int i = 0; i < 4; ++i) table.record(0, 50.0, t0 + i * 1s, t0 + i * 1s, {}, 1.0);
  table.record(0, std::nullopt, t0 + 4s, t0 + 4s, "failed read");  // no value, no energy
  r = table.snapshot(t0 + 10s);
  EXPECT_TRUE(r[0].stale);
  EXPECT_NEAR(*r[0].energy_j, 150.0, 1e-6);
  EXPECT_NEAR(*r[0].covered_s, 3.0, 1e-6);
  EXPECT_NEAR(*r[0].bridged_s, 0.0, 1e-6);
  EXPECT_EQ(r[1].energy_j, 0.0);
}

// True while some thread is blocked opening `fifo` for reading.
bool reader_waiting(const std::string& fifo) {
  const int fd = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
  if (fd < 0) return false;
  ::close(fd);
  return true;
}

// Lets a reader blocked on `fifo` through with `text`. The reader may leave between this open
// and the write (under qemu-user a blocked open can be interrupted and restarted), so the
// write must not raise SIGPIPE; callers that need the reader gone answer until it is.
void answer(const std::string& fifo, const std::string& text) {
  static const bool sigpipe_ignored = std::signal(SIGPIPE, SIG_IGN) != SIG_ERR;
  (void)sigpipe_ignored;
  const int fd = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
  if (fd < 0) return;
  (void)!::write(fd, text.data(), text.size());
  ::close(fd);
}

TEST(AcpiReader, PublishesFreshValuesAndWithholdsStaleOnes) {
  // Asserts order, not timing: a busy or emulated machine may starve the reader threads for
  // longer than max_age, so every freshness check waits for the state it expects.
  TestTree t;
  t.meter("hwmon2", "Grace Power Socket 0", "90000000");
  t.meter("hwmon3", "Grace Power Socket 1", "80000000");
  auto d = discover_acpi(t.root());
  AcpiReader reader(d.channels, 20ms, 300ms);
  reader.start();
  auto fresh = [&](std::size_t i, double watts) {
    const auto r = reader.snapshot().readings;
    return r.size() == 2 && r[i].watts == watts && !r[i].stale && r[i].age_s && *r[i].age_s < 0.3;
  };
  EXPECT_TRUE(eventually([&] { return fresh(0, 90.0) && fresh(1, 80.0); }));
  EXPECT_TRUE(eventually([&] { return reader.snapshot().readings[0].reads_total >= 2; }));

  t.write("hwmon2/power1_average", "91000000\n");
  EXPECT_TRUE(eventually([&] { return fresh(0, 91.0); }));

  // hwmon3 hangs in a read: after max_age its value is withheld, and it stays withheld while
  // the read hangs; hwmon2 keeps updating meanwhile.
  t.fifo("hwmon3/power1_average");
  EXPECT_TRUE(eventually([&] { return reader.snapshot().readings[1].stale; }));
  auto s = reader.snapshot().readings;
  EXPECT_FALSE(s[1].watts);
  ASSERT_TRUE(s[1].age_s);
  EXPECT_GT(*s[1].age_s, 0.3);
  EXPECT_TRUE(reader_waiting(t.path("hwmon3/power1_average")));
  t.write("hwmon2/power1_average", "92000000\n");
  EXPECT_TRUE(eventually([&] { return fresh(0, 92.0); }));
  s = reader.snapshot().readings;
  EXPECT_TRUE(s[1].stale);
  EXPECT_FALSE(s[1].watts);
  EXPECT_TRUE(reader_waiting(t.path("hwmon3/power1_average")));

  // The device answers again: the value comes back. The regular file takes the path first
  // and the hung read is answered through a second name of the FIFO, at every look: answered
  // before the swap, the reader could open the FIFO again on its next cycle (a slow test
  // thread under a sanitizer) and hang there with no writer left to let it through.
  const auto held = t.path("hwmon3/held_fifo");
  std::filesystem::create_hard_link(t.path("hwmon3/power1_average"), held);
  t.write("hwmon3/power1_average", "85000000\n");  // a new file renamed over the FIFO
  EXPECT_TRUE(eventually([&] {
    answer(held, "85000000\n");
    return fresh(1, 85.0);
  }));
}

TEST(AcpiReader, ManyNodesShareABoundedPoolAndHungOnesCostOnlyThemselves) {
  // 60 power meters, 20 of them hung in a read: more hung devices than the pool has workers.
  // The 40 others keep being read, and the threads are the pool, its supervisor and one per
  // hung read, not one per node.
  constexpr std::size_t kNodes = 60;
  TestTree t;
  std::vector<std::string> hung;
  for (std::size_t n = 0; n < kNodes; ++n) {
    const auto node = "hwmon" + std::to_string(n + 2);
    t.meter(node, "Grace Power Socket " + std::to_string(n), std::to_string(50000000 + n));
    if (n % 3 == 1) {
      t.fifo(node + "/power1_average");
      hung.push_back(t.path(node + "/power1_average"));
    }
  }
  auto d = discover_acpi(t.root());
  ASSERT_EQ(d.channels.size(), kNodes);
  AcpiReader reader(d.channels, 20ms, 300ms);
  reader.start();
  // Every hung device ends up blocked in its read, holding a worker the supervisor replaced:
  // the pool's own count says when (blocked workers never come back on their own): the hung
  // ones, at least one free worker and the supervisor.
  EXPECT_TRUE(eventually([&] { return reader.reader_threads() >= hung.size() + 2; }));
  const auto settled = reader.snapshot().readings;
  EXPECT_TRUE(eventually([&] {
    const auto r = reader.snapshot().readings;
    for (std::size_t i = 0; i < kNodes; ++i) {
      if (i % 3 == 1) continue;
      if (r[i].reads_total < settled[i].reads_total + 3 || !r[i].watts) return false;
    }
    return true;
  }));
  const auto r = reader.snapshot().readings;
  for (std::size_t i = 1; i < kNodes; i += 3) {
    EXPECT_EQ(r[i].reads_total, 0u) << i;
    EXPECT_FALSE(r[i].watts) << i;
  }
  EXPECT_LE(reader.reader_threads(), kMaxReaderThreads + 1 + hung.size());
  EXPECT_LT(reader.reader_threads(), kNodes);
  reader.stop(200ms);
  // Let the blocked reads return (again, for one whose open was restarted after an answer):
  // back from their reads, the extra workers leave.
  EXPECT_TRUE(eventually([&] {
    for (const auto& f : hung) answer(f, "1\n");
    return reader.reader_threads() == 0;
  }));
}

TEST(ReaderPool, RunsEveryJobOneCycleAtATimeOnAtMostItsWorkers) {
  ReaderPool pool(3, 1000ms);
  constexpr int kJobs = 50;
  std::vector<std::atomic<int>> cycles(kJobs), inside(kJobs);
  std::atomic<int> concurrent{0}, most{0};
  std::atomic<bool> overlap{false};
  for (int j = 0; j < kJobs; ++j) {
    pool.add(5ms, [&, j] {
      if (inside[j]++ != 0) overlap = true;
      const int now = ++concurrent;
      int seen = most.load();
      while (now > seen && !most.compare_exchange_weak(seen, now)) {
      }
      std::this_thread::sleep_for(1ms);
      --concurrent;
      --inside[j];
      ++cycles[j];
    });
  }
  pool.start();
  EXPECT_TRUE(eventually([&] {
    return std::all_of(cycles.begin(), cycles.end(), [](const auto& c) { return c >= 5; });
  }));
  EXPECT_TRUE(pool.stop(5000ms));
  EXPECT_FALSE(overlap);
  EXPECT_LE(most.load(), 3);
  EXPECT_EQ(pool.threads(), 0u);
}

TEST(ReaderPool, SizesItselfToTheTimeTheCyclesTake) {
  // Fast cycles share one worker; cycles that keep every worker busy grow the pool to its
  // most; fast again, it shrinks back. Threads are the workers and the supervisor.
  ReaderPool pool(8, 100ms);
  std::atomic<bool> slow{false};
  std::vector<std::atomic<int>> cycles(8);
  for (std::size_t j = 0; j < cycles.size(); ++j) {
    pool.add(20ms, [&, j] {
      if (slow) std::this_thread::sleep_for(30ms);
      ++cycles[j];
    });
  }
  pool.start();
  EXPECT_TRUE(eventually([&] { return pool.threads() == 2; }));
  slow = true;
  EXPECT_TRUE(eventually([&] { return pool.threads() == 9; }));
  slow = false;
  EXPECT_TRUE(eventually([&] { return pool.threads() == 2; }));
  // Every job is still read on the one worker.
  std::vector<int> before(cycles.begin(), cycles.end());
  EXPECT_TRUE(eventually([&] {
    for (std::size_t j = 0; j < cycles.size(); ++j) {
      if (cycles[j] < before[j] + 10) return false;
    }
    return true;
  }));
  EXPECT_TRUE(pool.stop(5000ms));
  EXPECT_EQ(pool.threads(), 0u);
}

TEST(ReaderPool, JobsWhoseReadsBlockReadSideBySide) {
  // Four jobs whose reads block for 100 ms (a firmware round trip), every 400 ms: they keep
  // about one worker busy, and on one or two workers one after another the values of one grid
  // time would come from instants 100 to 300 ms apart (a node's sockets share one row time
  // downstream). Once each has blocked three cycles running, the pool keeps a worker per job
  // (threads: four workers and the supervisor), and every job starts each round before the
  // first one's read is over.
  ReaderPool pool(8, 1000ms);
  std::vector<std::atomic<int>> cycles(4);
  std::mutex m;
  std::vector<std::vector<std::chrono::steady_clock::time_point>> starts(cycles.size());
  for (std::size_t j = 0; j < cycles.size(); ++j) {
    pool.add(400ms, [&, j] {
      {
        std::lock_guard lock(m);
        starts[j].push_back(std::chrono::steady_clock::now());
      }
      std::this_thread::sleep_for(100ms);
      ++cycles[j];
    });
  }
  pool.start();
  // Three slow cycles each, then the supervisor's next look (it starts with `workers` and
  // shrinks to what the first cycles need).
  const auto all_past = [&](int n) {
    return std::all_of(cycles.begin(), cycles.end(), [&](const auto& c) { return c >= n; });
  };
  ASSERT_TRUE(eventually([&] { return all_past(6); }));
  EXPECT_TRUE(eventually([&] { return pool.threads() == 5; })) << pool.threads();
  const int from = cycles[0] + 1;
  ASSERT_TRUE(eventually([&] { return all_past(from + 3); }));
  EXPECT_TRUE(pool.stop(5000ms));
  std::lock_guard lock(m);
  int side_by_side = 0;
  for (int r = from; r < from + 3; ++r) {
    auto first = starts[0][r], last = starts[0][r];
    for (const auto& s : starts) {
      first = std::min(first, s[r]);
      last = std::max(last, s[r]);
    }
    if (last - first < 100ms) ++side_by_side;
  }
  EXPECT_GE(side_by_side, 2);  // a busy machine may hold one round's wake-up back
}

// The pool's sleeps while `cycles` (one job's cycle count) grows by at least `rounds`, and
// the rounds it grew by.
std::pair<std::size_t, std::size_t> sleeps_over_rounds(const ReaderPool& pool,
                                                       const std::atomic<int>& cycles, int rounds) {
  const auto sleeps = pool.sleeps();
  const int before = cycles;
  EXPECT_TRUE(eventually([&] { return cycles >= before + rounds; }));
  return {pool.sleeps() - sleeps, static_cast<std::size_t>(cycles - before)};
}

TEST(ReaderPool, JobsStartedTogetherShareOneWakeUp) {
  // Six jobs whose first cycles end at different times (0 to 15 ms late), as reads of
  // different speed or a late wake-up leave them. Each keeps its own grid, so from the second
  // round on one wake-up serves all six; a schedule counted from each cycle's start would
  // keep them apart and wake the worker once a job (about six times as often).
  ReaderPool pool(1, 1000ms);
  std::vector<std::atomic<int>> cycles(6);
  for (std::size_t j = 0; j < cycles.size(); ++j) {
    pool.add(40ms, [&, j] {
      if (cycles[j]++ == 0) std::this_thread::sleep_for(std::chrono::milliseconds(3 * j));
    });
  }
  pool.start();
  ASSERT_TRUE(eventually([&] { return cycles[5] >= 2; }));
  const auto [slept, rounds] = sleeps_over_rounds(pool, cycles[5], 20);
  EXPECT_TRUE(pool.stop(5000ms));
  // One sleep a round; a busy machine may split a few rounds, never most of them.
  EXPECT_LE(slept, rounds * 2) << slept << " sleeps in " << rounds << " rounds";
  EXPECT_GE(slept, rounds / 2) << slept << " sleeps in " << rounds << " rounds";
}

TEST(ReaderPool, AStallLeavesTheJobsOnOneGrid) {
  // One worker, six jobs every 40 ms. Job 0's fifth cycle holds the worker for 130 ms, so the
  // other jobs' next cycles start late, one after another, 3 ms each, as a machine that
  // stalls and then runs them in turn leaves them. Their next times are back on the grid
  // they started on, so one wake-up serves all six again; a next time counted from each late
  // cycle's end put them 3 ms apart and woke the worker some three times a round for good.
  ReaderPool pool(1, 1000ms);
  std::vector<std::atomic<int>> cycles(6);
  std::vector<std::atomic<bool>> caught_up(6);
  std::atomic<bool> stalled{false};
  for (std::size_t j = 0; j < cycles.size(); ++j) {
    pool.add(40ms, [&, j] {
      if (cycles[j]++ == 4 && j == 0) {
        std::this_thread::sleep_for(130ms);
        stalled = true;
      } else if (stalled && !caught_up[j].exchange(true)) {
        std::this_thread::sleep_for(3ms);
      }
    });
  }
  pool.start();
  ASSERT_TRUE(eventually([&] {
    return std::all_of(caught_up.begin(), caught_up.end(), [](const auto& c) { return c.load(); });
  }));
  ASSERT_TRUE(eventually([&] { return cycles[0] >= 8; }));
  const auto [slept, rounds] = sleeps_over_rounds(pool, cycles[5], 20);
  EXPECT_TRUE(pool.stop(5000ms));
  // One sleep a round; a busy machine may split a few rounds, never most of them.
  EXPECT_LE(slept, rounds * 2) << slept << " sleeps in " << rounds << " rounds";
}

TEST(ReaderPool, AJobAddedWhileRunningWakesWithTheJobsOfItsPeriodAndRunsAfterThem) {
  // Three jobs every 40 ms on one worker, then a fourth added after start (a reader added
  // late; the host collector's sample is an observer, next test): it joins their grid, so it
  // runs on the wake-up that ran them, after them. Each cycle notes the
  // pool's sleep count: the same count as the third job's cycle before it is the same
  // wake-up. A job on a phase of its own would wake the worker again every round.
  ReaderPool pool(1, 1000ms);
  std::mutex m;
  std::vector<std::pair<int, std::size_t>> runs;  // (job, sleeps before its cycle)
  auto note = [&](int job) {
    const auto slept = pool.sleeps();
    std::lock_guard lock(m);
    runs.emplace_back(job, slept);
  };
  for (int j = 0; j < 3; ++j) pool.add(40ms, [&, j] { note(j); });
  pool.start();
  ASSERT_TRUE(eventually([&] {
    std::lock_guard lock(m);
    return runs.size() >= 6;
  }));
  std::this_thread::sleep_for(17ms);  // added between two grid times
  std::atomic<int> sink_runs{0};
  pool.add(40ms, [&] {
    note(3);
    sink_runs++;
  });
  ASSERT_TRUE(eventually([&] { return sink_runs >= 21; }));
  EXPECT_TRUE(pool.stop(5000ms));
  std::lock_guard lock(m);
  int rounds = 0, together = 0;
  for (std::size_t k = 1; k < runs.size(); ++k) {
    if (runs[k].first != 3) continue;
    rounds++;
    together += runs[k - 1].first == 2 && runs[k - 1].second == runs[k].second;
  }
  EXPECT_GE(rounds, 21);
  // A busy machine may split a few rounds, never most of them.
  EXPECT_GE(together, rounds * 3 / 4) << together << " of " << rounds << " rounds together";
}

TEST(ReaderPool, AnObserverRunsBeforeTheReadsDueWithItAndKeepsToItsGrid) {
  // One worker; a read every 80 ms that holds it for 65 ms (a slow firmware read), and an
  // observer every 40 ms (the host collector's sample). Due together, the observer runs
  // first, so it sees what the last cycle finished. Due while the read holds the worker, it
  // runs 25 ms late; it must then still be due at the next grid time, not half a period
  // after its start (that rule, right for readers, made the sample skip every other grid
  // time: as many samples as reads, half the rows).
  ReaderPool pool(1, 1000ms);
  std::mutex m;
  std::vector<int> order;  // 0: the read, 1: the observer
  std::atomic<int> reads{0}, looks{0};
  pool.add(80ms, [&] {
    {
      std::lock_guard lock(m);
      order.push_back(0);
    }
    std::this_thread::sleep_for(65ms);
    reads++;
  });
  pool.start();
  pool.add_observer(40ms, [&] {
    std::lock_guard lock(m);
    order.push_back(1);
    looks++;
  });
  ASSERT_TRUE(eventually([&] { return reads >= 12; }));
  EXPECT_TRUE(pool.stop(5000ms));
  std::lock_guard lock(m);
  // Accounting: about two looks a read (a stalled machine only makes both later).
  EXPECT_GE(2 * looks, 3 * reads) << looks << " looks, " << reads << " reads";
  // Order: after its first look, a read is preceded by a look (the one due with it).
  std::size_t reads_after_a_look = 0, reads_seen = 0;
  const auto first_look = std::find(order.begin(), order.end(), 1);
  for (auto it = first_look; it != order.end(); ++it) {
    if (*it != 0) continue;
    reads_seen++;
    reads_after_a_look += *std::prev(it) == 1;
  }
  EXPECT_GE(reads_seen, 8u);
  EXPECT_GE(4 * reads_after_a_look, 3 * reads_seen) << reads_after_a_look << " of " << reads_seen;
}

TEST(ReaderPool, ALateCycleIsFollowedNoSoonerThanHalfAPeriodLater) {
  // One worker, two jobs every 40 ms. Every fifth cycle of the first holds the worker for
  // 70 ms, so the second starts 70 ms late: its next grid time is then only 10 ms away, too
  // close for a counter's difference (and the old rule ran it again at once). The next
  // cycle comes no sooner than half a period after a start, less the tenth of a period by
  // which a worker may run a job early; a busy machine only makes the spacing longer.
  ReaderPool pool(1, 1000ms);
  std::atomic<int> holds{0};
  std::mutex m;
  std::vector<std::chrono::steady_clock::time_point> starts;
  pool.add(40ms, [&] {
    if (holds.fetch_add(1) % 5 == 4) std::this_thread::sleep_for(70ms);
  });
  pool.add(40ms, [&] {
    std::lock_guard lock(m);
    starts.push_back(std::chrono::steady_clock::now());
  });
  pool.start();
  ASSERT_TRUE(eventually([&] { return holds >= 16; }));  // three holds at least
  EXPECT_TRUE(pool.stop(5000ms));
  std::lock_guard lock(m);
  ASSERT_GE(starts.size(), 5u);
  auto closest = std::chrono::steady_clock::duration::max();
  for (std::size_t i = 1; i < starts.size(); ++i)
    closest = std::min(closest, starts[i] - starts[i - 1]);
  EXPECT_GE(closest, 16ms) << std::chrono::duration<double, std::milli>(closest).count()
                           << " ms between two cycles";
}

TEST(ReaderPool, TheSupervisorLooksWhenACycleCouldFirstCountAsStuck) {
  // stuck_after 400 ms: a cycle can count as stuck no sooner than 400 ms after the next due
  // time, so with fast cycles every 50 ms the supervisor looks about every 400-450 ms, where
  // a fixed tick of stuck_after / 2 looked every 200 ms. A cycle that hangs is still replaced,
  // and the other job keeps its cycles.
  ReaderPool pool(2, 400ms);
  std::atomic<int> fast{0}, other{0};
  std::atomic<bool> hang{false}, release{false};
  pool.add(50ms, [&] { ++fast; });
  pool.add(50ms, [&] {
    ++other;
    while (hang && !release) std::this_thread::sleep_for(5ms);
  });
  pool.start();
  ASSERT_TRUE(eventually([&] { return fast >= 2; }));
  const auto t0 = std::chrono::steady_clock::now();
  const auto passes = pool.supervisor_passes();
  ASSERT_TRUE(eventually([&] { return fast >= 42; }));  // about 2 s
  const auto looked = pool.supervisor_passes() - passes;
  const auto elapsed = std::chrono::steady_clock::now() - t0;
  // A busy machine makes the passes fewer, unless it keeps a due job from the worker for
  // more than a tick (200 ms): then the supervisor looks every tick to grow the pool.
  EXPECT_LE(looked, static_cast<std::size_t>(elapsed / 300ms))
      << looked << " passes in " << std::chrono::duration<double>(elapsed).count() << " s";
  hang = true;
  ASSERT_TRUE(eventually([&] { return other >= 1 && pool.threads() >= 3; }));
  const int before = fast;
  EXPECT_TRUE(eventually([&] { return fast >= before + 10; }));  // the other job goes on
  release = true;
  EXPECT_TRUE(pool.stop(5000ms));
}

TEST(SocketWatch, SleepsUntilTheFirstSocketCanGoDown) {
  const auto sensors = std::make_shared<std::vector<Sensor>>();
  for (const auto& [name, socket] :
       std::vector<std::pair<std::string, std::uint32_t>>{{"s0a", 0}, {"s0b", 0}, {"s1", 1}}) {
    Sensor s;
    s.name = name;
    s.socket = socket;
    s.primary = true;
    sensors->push_back(s);
  }
  Snapshot snap;
  snap.sensors = sensors;
  snap.readings.resize(3);
  const auto fresh = [](double watts, std::optional<double> for_s) {
    ChannelReading r;
    r.watts = watts;
    r.fresh_for_s = for_s;
    return r;
  };
  // Socket 0 is up until the fresher of its two readings is withheld.
  snap.readings = {fresh(50, 0.5), fresh(60, 2.5), fresh(70, 1.75)};
  auto states = socket_states(snap);
  ASSERT_EQ(states.size(), 2u);
  EXPECT_EQ(states[0].up_for_s, 2.5);
  EXPECT_EQ(states[1].up_for_s, 1.75);
  const std::chrono::steady_clock::time_point now{};
  EXPECT_EQ(next_socket_look(states, now, 250ms), now + 1751ms);
  // Never sooner than a period.
  snap.readings[2].fresh_for_s = 0.1;
  EXPECT_EQ(next_socket_look(socket_states(snap), now, 250ms), now + 250ms);
  // A reading that does not say how long it stays fresh: every period.
  snap.readings[2].fresh_for_s.reset();
  states = socket_states(snap);
  EXPECT_FALSE(states[1].up_for_s);
  EXPECT_EQ(next_socket_look(states, now, 250ms), now + 250ms);
  // A socket down: every period, to see it come back.
  snap.readings[2] = ChannelReading{};
  states = socket_states(snap);
  EXPECT_FALSE(states[1].up);
  EXPECT_EQ(next_socket_look(states, now, 250ms), now + 250ms);
}

TEST(AcpiReader, StopReturnsPromptlyWhileAReadHangs) {
  TestTree t;
  t.meter("hwmon2", "Grace Power Socket 0", "90000000");
  t.fifo("hwmon2/power1_average");
  auto d = discover_acpi(t.root());
  auto reader = std::make_unique<AcpiReader>(d.channels, 20ms, 300ms);
  reader->start();
  std::this_thread::sleep_for(50ms);
  const auto t0 = std::chrono::steady_clock::now();
  reader->stop(200ms);
  reader.reset();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 2000ms);  // a blocked join never returns
  answer(t.path("hwmon2/power1_average"), "1\n");            // let the detached thread finish
  std::this_thread::sleep_for(20ms);
}

LadderOptions fast(const std::string& root, std::string request = "auto") {
  LadderOptions o;
  o.request = request;
  o.hwmon_root = root;
  o.powercap_root = root;  // no intel-rapl zones there: the RAPL rung never reads the host's
  o.read_interval = 20ms;
  o.max_age = 2000ms;  // also the probe's deadline: long enough for a starved reader thread
  o.probe_retry_delay = 100ms;
  return o;
}

TEST(Ladder, UsesAcpiWhenASocketTotalIsLive) {
  TestTree t;
  t.meter("hwmon2", "Grace Power Socket 0", "98029000");
  t.meter("hwmon3", "CPU Power Socket 0", "0");
  const auto r = try_acpi(fast(t.root()));
  ASSERT_TRUE(r.reader) << r.reason;
  EXPECT_EQ(r.reader->channels().size(), 2u);
}

TEST(Ladder, FallsBackWhenNoPowerMeterSensorsExist) {
  TestTree t;
  t.write("hwmon0/name", "acpitz\n");
  const auto r = try_acpi(fast(t.root()));
  EXPECT_FALSE(r.reader);
  EXPECT_EQ(r.reason, "no ACPI power_meter hwmon sensors found under " + t.root());
}

TEST(Ladder, FallsBackWhenTheRootIsUnreadable) {
  const auto r = try_acpi(fast("/nonexistent/root"));
  EXPECT_EQ(r.reason, "list /nonexistent/root: No such file or directory");
}

TEST(Ladder, NoSocketTotalChannelIsCheckedBeforeAnyRead) {
  TestTree t;
  t.meter("hwmon2", "CPU Power Socket 0", "50000000");
  t.meter("hwmon3", "SysIO Power Socket 0", "6000000");
  t.fifo("hwmon3/power1_average");  // a read would block: the check must not read
  const auto r = try_acpi(fast(t.root()));
  EXPECT_EQ(r.reason, "no ACPI socket-total power_meter channels under " + t.root() +
                          " (found: CPU Power Socket 0, SysIO Power Socket 0)");
  EXPECT_FALSE(reader_waiting(t.path("hwmon3/power1_average")));
}

TEST(Ladder, LiveComponentRailsNeverVouchForADeadTotal) {
  TestTree t;
  t.meter("hwmon2", "Grace Power Socket 0", "0");
  t.meter("hwmon3", "CPU Power Socket 0", "50000000");
  const auto t0 = std::chrono::steady_clock::now();
  const auto r = try_acpi(fast(t.root()));
  EXPECT_FALSE(r.reader);
  EXPECT_EQ(r.reason, "no ACPI socket-total power_meter sensor under " + t.root() +
                          " read positive across 2 probe(s) (2 sensors discovered)");
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 100ms);  // it did wait for the retry
}

TEST(Ladder, RetriesOnceWhenTheFirstPassIsZero) {
  TestTree t;
  t.meter("hwmon2", "Grace Power Socket 0", "0");
  auto o = fast(t.root());
  o.probe_retry_delay = 1000ms;  // the writer below runs well before the retry
  std::thread writer([&] {
    std::this_thread::sleep_for(100ms);
    t.write("hwmon2/power1_average", "98029000\n");
  });
  const auto r = try_acpi(o);
  writer.join();
  EXPECT_TRUE(r.reader) << r.reason;
}

TEST(Ladder, AHungTotalCostsOnlyTheDeadline) {
  TestTree t;
  t.meter("hwmon2", "Grace Power Socket 0", "98029000");
  t.meter("hwmon3", "Grace Power Socket 1", "98029000");
  t.fifo("hwmon3/power1_average");
  const auto r = try_acpi(fast(t.root()));
  EXPECT_TRUE(r.reader) << r.reason;
  answer(t.path("hwmon3/power1_average"), "1\n");
}

TEST(Ladder, ExplicitAcpiFailsInsteadOfFallingBack) {
  TestTree t;
  const auto r = resolve_source(fast(t.root(), "acpi"));
  EXPECT_EQ(r.error, "no ACPI power_meter hwmon sensors found under " + t.root());
  EXPECT_FALSE(r.source);
}

TEST(Ladder, AutoWithNothingLiveReportsEveryRung) {
  TestTree t;
  const auto r = resolve_source(fast(t.root()));
  EXPECT_EQ(r.error.rfind("no CPU power source could be established: ACPI: no ACPI power_meter "
                          "hwmon sensors found under " +
                              t.root() + "; RAPL: no RAPL: no intel-rapl package zones under " +
                              t.root() + "; DCGM",
                          0),
            0u)
      << r.error;
}

TEST(Ladder, ExplicitDcgmNeverConsultsAcpi) {
  TestTree t;
  t.meter("hwmon2", "Grace Power Socket 0", "98029000");
  t.fifo("hwmon2/power1_average");
  const auto r = resolve_source(fast(t.root(), "dcgm"));
  EXPECT_FALSE(r.source);
  EXPECT_FALSE(reader_waiting(t.path("hwmon2/power1_average")));
  // The same tree under auto does open the channel.
  auto o = fast(t.root());
  o.max_age = 100ms;
  auto a = resolve_source(o);
  EXPECT_TRUE(reader_waiting(t.path("hwmon2/power1_average")));
  answer(t.path("hwmon2/power1_average"), "1\n");
}

// A source registered in the test's own table, as a new source is in ladder.cpp's: one
// socket total at 100 W, or no source at all.
class FakeSource final : public Source {
 public:
  FakeSource() {
    Sensor s;
    s.name = "fake/0";
    s.kind = rails::Kind::total;
    s.socket = 0;
    s.primary = true;
    sensors_ = std::make_shared<const std::vector<Sensor>>(std::vector<Sensor>{s});
  }
  std::string_view mode() const override { return "fake"; }
  const expo::Family& family() const override { return expo::kAcpiWatts; }
  expo::CounterFamilies counters() const override { return expo::kAcpiCounters; }
  void start() override {}
  void stop(std::chrono::milliseconds) override {}
  Snapshot snapshot(SteadyTime) const override {
    Snapshot out;
    out.sensors = sensors_;
    out.readings.resize(1);
    out.readings[0].watts = 100.0;
    return out;
  }

 private:
  std::shared_ptr<const std::vector<Sensor>> sensors_;
};

SourceRung open_fake(const LadderOptions&) {
  return {std::make_unique<FakeSource>(), {}};
}
SourceRung refuse_fake(const LadderOptions&) {
  return {nullptr, "no fake here"};
}

TEST(Ladder, ASourceRegisteredInATableIsParsedRankedAndPicked) {
  TestTree t;
  t.meter("hwmon2", "Grace Power Socket 0", "98029000");
  std::vector<SourceEntry> table(registered_sources().begin(), registered_sources().end());
  table.push_back({"fake", "Fake", "a fake", 0, open_fake});
  EXPECT_EQ(source_choices(table),
            (std::vector<std::string>{"auto", "fake", "acpi", "rapl", "dcgm"}));
  EXPECT_EQ(source_help(table),
            "auto (a fake, then live ACPI, then RAPL, then DCGM), fake, acpi, rapl or dcgm");
  EXPECT_EQ(source_help(), "auto (live ACPI, then RAPL, then DCGM), acpi, rapl or dcgm");

  // Ranked first, `auto` picks it over the live ACPI total.
  auto r = resolve_source(fast(t.root()), table);
  ASSERT_TRUE(r.source) << r.error;
  EXPECT_EQ(r.mode, "fake");
  EXPECT_EQ(r.cpu_sockets(), (std::set<std::uint32_t>{0}));
  EXPECT_FALSE(r.acpi);

  // Unusable, it is one rung of the ladder like any other: auto steps down to ACPI.
  table.back().open = refuse_fake;
  r = resolve_source(fast(t.root()), table);
  ASSERT_TRUE(r.acpi) << r.error;
  EXPECT_EQ(r.mode, "acpi");
  r.source->stop(std::chrono::milliseconds(200));
  r = resolve_source(fast(t.root(), "fake"), table);
  EXPECT_EQ(r.error, "no fake here");
}

}  // namespace
}  // namespace cpupower::sources

// Discovery over the simulator's trees: every profile in both kernel layouts.
namespace cpupower::sources {
namespace {

std::string real(const std::string& p) {
  char buf[PATH_MAX];
  return ::realpath(p.c_str(), buf) ? buf : p;
}

TEST(AcpiDiscoveryOnSimulatedNodes, EveryProfileInBothLayouts) {
  for (auto profile : {sim::Profile::gb200, sim::Profile::gh200, sim::Profile::platform_uw,
                       sim::Profile::gh200_quad}) {
    for (auto layout : {sim::Layout::modern, sim::Layout::legacy}) {
      cpupower::testing::TestTree t;
      sim::SimOptions o;
      o.root = t.path("node");
      o.profile = profile;
      o.layout = layout;
      o.model = sim::Model::constant;
      o.noise = false;
      o.once = true;
      sim::SimNode node(o);
      ASSERT_EQ(node.start().error(), "");
      const auto d = discover_acpi(o.root);
      const auto& want = node.channels();
      ASSERT_EQ(d.channels.size(), want.size())
          << sim::profile_name(profile) << "/" << sim::layout_name(layout);
      for (const auto& w : want) {
        const auto it = std::find_if(d.channels.begin(), d.channels.end(),
                                     [&](const AcpiChannel& c) { return c.hwmon == w.hwmon; });
        ASSERT_NE(it, d.channels.end()) << w.hwmon;
        if (w.kind == rails::Kind::module) {
          // gh200-quad's Module Power Socket N: unclassified, no socket (NVML alone gives
          // module power).
          EXPECT_EQ(it->cls.kind, rails::Kind::other) << w.oem_info;
          EXPECT_TRUE(it->cls.socket.empty()) << w.oem_info;
        } else {
          EXPECT_EQ(it->cls.kind, w.kind) << w.oem_info;
          EXPECT_EQ(rails::socket_index(it->cls.socket), w.socket) << w.oem_info;
        }
        EXPECT_EQ(it->oem_info, w.oem_info);
        EXPECT_EQ(real(it->value_path), w.value_path);
        EXPECT_EQ(it->average_interval, std::chrono::milliseconds(50));
        const auto r = read_power_file(it->value_path);
        ASSERT_TRUE(r.watts) << r.problem;
        EXPECT_NEAR(*r.watts, *node.current_watts(w.key), 1e-6);
      }
      // Numeric order: hwmon2 and hwmon3 come before hwmon10.
      EXPECT_EQ(d.channels[0].hwmon, "hwmon2");
      EXPECT_EQ(d.channels[2].hwmon, "hwmon10");
    }
  }
}

sim::SimOptions running_node(const std::string& root, sim::Layout layout) {
  sim::SimOptions o;
  o.root = root;
  o.profile = sim::Profile::gb200;
  o.layout = layout;
  o.model = sim::Model::constant;
  o.load = 0.5;
  o.noise = false;
  o.update_interval = 20ms;
  return o;
}

// The kernel (>= 6.15) re-registers a meter's hwmon device when its averaging interval
// changes: the reader follows every channel to its new hwmonN and keeps its sensor name.
TEST(AcpiReaderOnSimulatedNodes, FollowsChannelsToTheirNewHwmonNumbers) {
  cpupower::testing::TestTree t;
  const std::string root = t.path("node");
  sim::SimNode node(running_node(root, sim::Layout::modern));
  ASSERT_EQ(node.start().error(), "");
  const auto d = discover_acpi(root);
  ASSERT_EQ(d.channels.size(), 6u);
  AcpiReader reader(d.channels, 20ms, 3000ms, root);
  reader.start();
  ASSERT_TRUE(eventually([&] { return reader.snapshot().readings[0].watts.has_value(); }));
  auto s = reader.snapshot().readings;
  EXPECT_EQ(s[0].average_interval_s, 0.05);
  EXPECT_EQ(s[0].centre_offset_s, 0.025);

  const auto change = set_average_interval(root, 1000ms, 5s);
  EXPECT_EQ(change.written, 6u);
  EXPECT_TRUE(change.failures.empty());
  EXPECT_TRUE(change.settled);
  // All renumbered. The simulator records a channel's new number just after its node appears
  // under the root, which is what set_average_interval waits for: wait for the record too.
  EXPECT_TRUE(eventually([&] {
    const auto channels = node.channels();
    return std::all_of(channels.begin(), channels.end(), [](const sim::ChannelInfo& c) {
      return std::stoi(c.hwmon.substr(5)) >= 14;
    });
  }));
  for (const auto& c : node.channels()) {
    EXPECT_EQ(node.average_interval(c.key), 1000ms) << c.key;
    EXPECT_GE(std::stoi(c.hwmon.substr(5)), 14) << c.key;
  }
  // Every row reads again, from the new path, with the new interval; names stay.
  ASSERT_TRUE(eventually([&] {
    const auto r = reader.snapshot().readings;
    return std::all_of(r.begin(), r.end(), [](const ChannelReading& x) {
      return x.watts.has_value() && x.centre_offset_s == 0.5;
    });
  }));
  s = reader.snapshot().readings;
  for (std::size_t i = 0; i < s.size(); ++i) {
    EXPECT_EQ(s[i].average_interval_s, 1.0);
    EXPECT_EQ(*s[i].watts, *node.current_watts(node.channels()[i].key));
  }
  const auto now = reader.current_channels();
  for (std::size_t i = 0; i < now.size(); ++i) {
    EXPECT_EQ(now[i].sensor, d.channels[i].sensor);  // the published name is the first one
    EXPECT_NE(now[i].hwmon, d.channels[i].hwmon);
    EXPECT_EQ(now[i].oem_info, d.channels[i].oem_info);
    EXPECT_EQ(real(now[i].value_path), node.channels()[i].value_path);
  }
  EXPECT_EQ(reader.snapshot().sensors->at(0).name, "hwmon2/power1");

  // Asking for the interval the meters already have writes nothing.
  const auto again = set_average_interval(root, 1000ms, 5s);
  EXPECT_EQ(again.written, 0u);
  EXPECT_EQ(again.unchanged, 6u);
  reader.stop(200ms);
}

// A meter whose node the kernel removes while set_average_interval looks for it, and
// registers again only later: the wait must not take the old node for the new one and return
// while the meter is gone. A stand-in kernel thread removes the node the moment a discovery
// opens its label after the write (inotify; 100 ms after the write where none does), and
// many other hwmon nodes after it keep such a discovery going long after: read in the
// wrong order, the old node and its removal both look like the move being done.
TEST(AcpiIntervalChange, WaitsForTheNewNodeWhenTheOldOneGoesMidDiscovery) {
  TestTree t;
  const auto meter = [&](const std::string& hwmon, const std::string& interval) {
    t.meter(hwmon, "Grace Power Socket 0", "100000000");
    t.write(hwmon + "/power1_average_interval", interval + "\n");
  };
  meter("hwmon1", "50");
  for (int i = 10; i < 1500; ++i) t.write("hwmon" + std::to_string(i) + "/name", "nvme\n");
  const int in = ::inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
  ASSERT_GE(in, 0);
  ASSERT_GE(::inotify_add_watch(in, t.path("hwmon1").c_str(), IN_OPEN | IN_CLOSE_WRITE), 0);
  std::thread kernel([&] {
    // Waits up to `limit` for an event on `file` after the ones already read.
    const auto next = [&](std::uint32_t mask, const std::string& file, auto limit) {
      const auto deadline = std::chrono::steady_clock::now() + limit;
      alignas(inotify_event) char buf[4096];
      while (std::chrono::steady_clock::now() < deadline) {
        pollfd p{in, POLLIN, 0};
        if (::poll(&p, 1, 5) <= 0) continue;
        const ssize_t n = ::read(in, buf, sizeof buf);
        for (ssize_t off = 0; off < n;) {
          const auto* ev = reinterpret_cast<const inotify_event*>(buf + off);
          off += static_cast<ssize_t>(sizeof(inotify_event) + ev->len);
          if ((ev->mask & mask) && ev->len && file == ev->name) return true;
        }
      }
      return false;
    };
    if (!next(IN_CLOSE_WRITE, "power1_average_interval", 10s)) return;
    (void)next(IN_OPEN, "power1_oem_info", 100ms);
    // hwmon_device_unregister, then hwmon_device_register_with_info a while later.
    std::filesystem::rename(t.path("hwmon1"), t.path(".unregistered"));
    std::this_thread::sleep_for(300ms);
    meter("hwmon2", "1000");
  });
  const auto change = set_average_interval(t.root(), 1000ms, 10s);
  // What the exporter's own discovery sees right after: the meter, at its new number.
  const auto after = discover_acpi(t.root());
  kernel.join();
  ::close(in);
  EXPECT_EQ(change.written, 1u);
  EXPECT_TRUE(change.settled);
  ASSERT_EQ(after.channels.size(), 1u);
  EXPECT_EQ(after.channels[0].sensor, "hwmon2/power1");
  EXPECT_EQ(after.channels[0].average_interval, 1000ms);
}

// When the wait runs out it says which meters never left their node (read there) and which
// left and did not come back (missing until they do). The wait is long enough for the
// stand-in kernel thread to have seen the write on a slow machine.
TEST(AcpiIntervalChange, NamesTheMetersThatDidNotMoveOrDidNotComeBack) {
  TestTree t;
  for (const std::string h : {"hwmon1", "hwmon3"}) {
    t.meter(h, h == "hwmon1" ? "Grace Power Socket 0" : "Grace Power Socket 1", "100000000");
    t.write(h + "/power1_average_interval", "50\n");
  }
  std::thread kernel([&] {
    // hwmon1 unregisters on the write and never registers again; hwmon3 ignores it.
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (std::chrono::steady_clock::now() < deadline) {
      std::ifstream f(t.path("hwmon1/power1_average_interval"));
      std::string v;
      if (f >> v && v == "1000") break;
      std::this_thread::sleep_for(1ms);
    }
    std::filesystem::rename(t.path("hwmon1"), t.path(".unregistered"));
  });
  const auto change = set_average_interval(t.root(), 1000ms, 3s);
  kernel.join();
  EXPECT_EQ(change.written, 2u);
  EXPECT_FALSE(change.settled);
  EXPECT_EQ(change.not_back, std::vector<std::string>{"hwmon1/power1"});
  EXPECT_EQ(change.not_moved, std::vector<std::string>{"hwmon3/power1"});
}

TEST(AcpiReaderOnSimulatedNodes, LegacyKernelsChangeTheIntervalInPlace) {
  cpupower::testing::TestTree t;
  const std::string root = t.path("node");
  sim::SimNode node(running_node(root, sim::Layout::legacy));
  ASSERT_EQ(node.start().error(), "");
  const auto change = set_average_interval(root, 1000ms, 5s);
  EXPECT_EQ(change.written, 6u);
  EXPECT_TRUE(change.settled);  // nothing re-registers, nothing to wait for
  EXPECT_TRUE(eventually([&] { return node.average_interval("total:0") == 1000ms; }));
  EXPECT_EQ(node.channels()[0].hwmon, "hwmon2");
  const auto d = discover_acpi(root);
  ASSERT_FALSE(d.channels.empty());
  EXPECT_EQ(d.channels[0].average_interval, 1000ms);
}

TEST(AcpiDiscovery, StableKeysPreferAUniqueOemLabel) {
  TestTree t;
  t.meter("hwmon2", "Grace Power Socket 0", "1000000");
  t.meter("hwmon3", "Same", "1000000");
  t.meter("hwmon4", "Same", "1000000");
  const auto d = discover_acpi(t.root());
  const auto keys = stable_keys(d.channels);
  ASSERT_EQ(keys.size(), 3u);
  EXPECT_EQ(keys[0], "oem:Grace Power Socket 0");
  EXPECT_EQ(keys[1].rfind("dev:", 0), 0u);
  EXPECT_NE(keys[1], keys[2]);
}

}  // namespace
}  // namespace cpupower::sources
