// The x86 RAPL source: the counter rules (wrap, reset, no negative power), discovery of the
// powercap tree (the kernel's layout, the simulator's, zones left out), the permission error,
// the ladder's rung, and RAPL through both sinks' pivots and the exporter's counter family.

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <map>
#include <mutex>
#include <thread>

#include "expo/writer.hpp"
#include "exporter/render.hpp"
#include "hostleg/socket_rows.hpp"
#include "rails/rails.hpp"
#include "scrape/readings.hpp"
#include "sim/sim_rapl.hpp"
#include "sources/ladder.hpp"
#include "sources/rapl.hpp"
#include "test_tree.hpp"

namespace cpupower::sources {
namespace {

using cpupower::testing::TestTree;
using namespace std::chrono_literals;

constexpr std::uint64_t kIntelMax = 262'143'328'850;

template <typename Done>
bool eventually(const Done& done) {
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(10ms);
  }
  return true;
}

// A zone as the kernel has it: its directory below the control type (a subzone's below its
// package's), reached through a flat class entry `entry` ("intel-rapl:0", "intel-rapl:0:1").
void zone(const TestTree& t, const std::string& entry, const std::string& name,
          std::optional<std::string> energy = "1000\n", std::string max = "262143328850\n") {
  const auto last = entry.rfind(':');
  const bool sub = entry.find(':') != last;
  const std::string dir =
      "devices/virtual/powercap/intel-rapl/" + (sub ? entry.substr(0, last) + "/" + entry : entry);
  t.write(dir + "/name", name + "\n");
  if (energy) t.write(dir + "/energy_uj", *energy);
  t.write(dir + "/max_energy_range_uj", max);
  t.symlink(dir, entry);
}

// ---- the counter rules ------------------------------------------------------------------

TEST(RaplCounter, ForwardIsTheDifference) {
  const auto s = counter_step(1'000, 31'000, kIntelMax, 0.1);
  ASSERT_TRUE(s.delta_uj);
  EXPECT_EQ(*s.delta_uj, 30'000u);
  EXPECT_FALSE(s.wrapped);
  EXPECT_EQ(*counter_step(5, 5, kIntelMax, 0.1).delta_uj, 0u);  // not advanced: no power
}

TEST(RaplCounter, AWrapPassesFromTheMaximumToZero) {
  // 1,000 µJ to the maximum, one to 0, then 2,000.
  const auto s = counter_step(kIntelMax - 1'000, 2'000, kIntelMax, 0.1);
  ASSERT_TRUE(s.delta_uj);
  EXPECT_EQ(*s.delta_uj, 3'001u);
  EXPECT_TRUE(s.wrapped);
  // A small range, as the simulator's tests use: 100 J.
  const auto small = counter_step(99'000'000, 1'000'000, 100'000'000, 0.1);
  ASSERT_TRUE(small.delta_uj);
  EXPECT_EQ(*small.delta_uj, 2'000'001u);  // 20 W over 0.1 s
}

TEST(RaplCounter, BackwardsByLessThanAWrapIsAResetNeverNegativePower) {
  // 4,000 µJ back: as a wrap it would be 262 kJ in 0.1 s, far above any package.
  EXPECT_FALSE(counter_step(5'000, 1'000, kIntelMax, 0.1).delta_uj);
  // Back to 0 (a counter restarted) from the middle of the range.
  EXPECT_FALSE(counter_step(kIntelMax / 2, 0, kIntelMax, 1.0).delta_uj);
  // No known range, or values outside it: nothing to wrap in.
  EXPECT_FALSE(counter_step(5'000, 1'000, 0, 0.1).delta_uj);
  EXPECT_FALSE(counter_step(kIntelMax + 5, 1'000, kIntelMax, 0.1).delta_uj);
  // A wrap's energy at the bound (10 kJ in 1 s: 10 kW) is a wrap; one µJ more, a reset.
  const auto at_bound = counter_step(15'000'000'000, 4'999'999'999, 20'000'000'000, 1.0);
  ASSERT_TRUE(at_bound.delta_uj);
  EXPECT_EQ(*at_bound.delta_uj, 10'000'000'000u);
  EXPECT_FALSE(counter_step(15'000'000'000, 5'000'000'000, 20'000'000'000, 1.0).delta_uj);
}

// ---- discovery --------------------------------------------------------------------------

TEST(RaplDiscovery, PackagesAndSubzonesWithTheirSocketsAndTypes) {
  TestTree t;
  t.write("devices/virtual/powercap/intel-rapl/enabled", "1\n");
  t.symlink("devices/virtual/powercap/intel-rapl", "intel-rapl");  // the control type
  zone(t, "intel-rapl:0", "package-0");
  zone(t, "intel-rapl:0:0", "core");
  zone(t, "intel-rapl:0:1", "uncore");
  zone(t, "intel-rapl:0:2", "dram");
  zone(t, "intel-rapl:1", "package-1");
  zone(t, "intel-rapl:1:0", "dram");
  zone(t, "intel-rapl:2", "psys");            // platform: more than the packages, left out
  zone(t, "intel-rapl-mmio:0", "package-0");  // another control type: not read
  const auto d = discover_rapl(t.root());
  ASSERT_TRUE(d.error.empty()) << d.error;
  EXPECT_TRUE(d.warnings.empty()) << d.warnings.front();
  std::vector<std::string> got;
  for (const auto& z : d.zones) {
    got.push_back(z.sensor + "=" + std::string(rapl_type_name(z.type)) + "/" +
                  std::to_string(z.socket));
  }
  EXPECT_EQ(got, (std::vector<std::string>{"intel-rapl:0=total/0", "intel-rapl:0:0=core/0",
                                           "intel-rapl:0:1=uncore/0", "intel-rapl:0:2=dram/0",
                                           "intel-rapl:1=total/1", "intel-rapl:1:0=dram/1"}));
  EXPECT_EQ(d.zones[0].energy_path, t.root() + "/intel-rapl:0/energy_uj");
  EXPECT_EQ(d.zones[0].max_energy_range_uj, kIntelMax);
  EXPECT_EQ(d.zones[3].label_text, R"(socket="0",type="dram",sensor="intel-rapl:0:2")");
  EXPECT_EQ(rapl_kind(RaplType::core), rails::Kind::cpu_rail);
  EXPECT_EQ(rapl_kind(RaplType::uncore), rails::Kind::soc);
}

TEST(RaplDiscovery, SocketIsThePackageIdNotTheZoneNumber) {
  TestTree t;
  zone(t, "intel-rapl:0", "package-1");
  zone(t, "intel-rapl:0:0", "core");
  zone(t, "intel-rapl:1", "package-0");
  const auto d = discover_rapl(t.root());
  ASSERT_EQ(d.zones.size(), 3u);
  EXPECT_EQ(d.zones[0].sensor, "intel-rapl:1");  // socket 0 first
  EXPECT_EQ(d.zones[0].socket, 0u);
  EXPECT_EQ(d.zones[1].sensor, "intel-rapl:0");
  EXPECT_EQ(d.zones[2].sensor, "intel-rapl:0:0");
  EXPECT_EQ(d.zones[2].socket, 1u);
}

TEST(RaplDiscovery, AMissingSubzoneOrCounterIsLeftOutWithAWarning) {
  TestTree t;
  zone(t, "intel-rapl:0", "package-0");
  zone(t, "intel-rapl:0:0", "core", std::nullopt);           // no energy_uj
  zone(t, "intel-rapl:1", "package-1-die-1");                // split by die: not supported
  zone(t, "intel-rapl:2", "package-2", "5\n", "garbage\n");  // no usable range: kept
  zone(t, "intel-rapl:3", "package-3");
  std::filesystem::remove(t.path("devices/virtual/powercap/intel-rapl/intel-rapl:3/name"));
  const auto d = discover_rapl(t.root());
  ASSERT_EQ(d.zones.size(), 2u);
  EXPECT_EQ(d.zones[0].sensor, "intel-rapl:0");
  EXPECT_EQ(d.zones[1].sensor, "intel-rapl:2");
  EXPECT_EQ(d.zones[1].max_energy_range_uj, 0u);
  std::string all;
  for (const auto& w : d.warnings) all += w + "\n";
  EXPECT_NE(all.find("RAPL zone without energy_uj; left out zone=intel-rapl:0:0"),
            std::string::npos)
      << all;
  EXPECT_NE(all.find("split by die is not supported; left out zone=intel-rapl:1"),
            std::string::npos)
      << all;
  EXPECT_NE(all.find("without a usable max_energy_range_uj"), std::string::npos) << all;
  EXPECT_NE(all.find("without a readable name; left out zone=intel-rapl:3"), std::string::npos)
      << all;
}

TEST(RaplDiscovery, AGraceNodeHasNoRapl) {
  const auto d = discover_rapl("/nonexistent/powercap");
  EXPECT_EQ(d.error.rfind("no RAPL: cannot list /nonexistent/powercap", 0), 0u) << d.error;
  TestTree empty;
  const auto r = try_rapl({.root = empty.root()});
  EXPECT_EQ(r.reason, "no RAPL: no intel-rapl package zones under " + empty.root());
}

// ---- the simulator's trees --------------------------------------------------------------

TEST(RaplSim, TheX86ProfilesWriteTheKernelsLayout) {
  for (const auto profile : {sim::Profile::x86_intel, sim::Profile::x86_amd}) {
    TestTree t;
    sim::SimOptions o;
    o.root = t.root();
    o.profile = profile;
    o.model = sim::Model::constant;
    o.load = 0.5;
    o.once = true;
    o.energy_start_uj = 42;
    sim::SimRaplNode node(o);
    ASSERT_TRUE(node.start()) << sim::profile_name(profile);
    const bool intel = profile == sim::Profile::x86_intel;
    const auto d = discover_rapl(t.root());
    ASSERT_TRUE(d.error.empty());
    EXPECT_TRUE(d.warnings.empty());
    ASSERT_EQ(d.zones.size(), intel ? 8u : 4u);
    EXPECT_EQ(d.zones[0].zone_name, "package-0");
    EXPECT_EQ(d.zones[1].zone_name, "core");
    EXPECT_EQ(d.zones[1].sensor, "intel-rapl:0:0");
    if (intel) {
      EXPECT_EQ(d.zones[3].zone_name, "dram");
      EXPECT_EQ(d.zones[4].sensor, "intel-rapl:1");
      EXPECT_EQ(d.zones[4].socket, 1u);
    }
    EXPECT_EQ(d.zones[0].max_energy_range_uj,
              intel ? sim::kIntelMaxEnergyRangeUj : sim::kAmdMaxEnergyRangeUj);
    // The control type's class entry, and each subzone's directory below its package.
    EXPECT_TRUE(std::filesystem::is_symlink(t.path("intel-rapl")));
    EXPECT_TRUE(std::filesystem::exists(
        t.path("devices/virtual/powercap/intel-rapl/intel-rapl:0/intel-rapl:0:0/energy_uj")));
    EXPECT_EQ(read_energy_file(d.zones[0].energy_path).uj, 42u);
    struct stat st {};
    ASSERT_EQ(::stat(d.zones[0].energy_path.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0444u);
  }
}

TEST(RaplSim, RootOnlyModeIsTheKernels0400AndCountersWrap) {
  TestTree t;
  sim::SimOptions o;
  o.root = t.root();
  o.profile = sim::Profile::x86_amd;
  o.model = sim::Model::constant;
  o.load = 1.0;  // package 310 W: 100 J wraps about every 0.3 s
  o.root_only = true;
  o.max_energy_range_uj = 100'000'000;
  o.update_interval = 5ms;
  sim::SimRaplNode node(o);
  ASSERT_TRUE(node.start());
  const auto path = node.zones()[0].energy_path;
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0400u);
  ASSERT_TRUE(eventually([&] { return node.energy_j("package:0").value_or(0) > 150; }));
  EXPECT_LE(*node.energy_uj("package:0"), 100'000'000u);  // it wrapped, and stays in range
  node.stop();
}

// ---- the reader -------------------------------------------------------------------------

// A counter file read from a script: each read of a path gives its next value, then the last
// one again; an errno instead of a value where the script says so.
class ScriptedCounters {
 public:
  void set(const std::string& path, std::vector<std::int64_t> values) {
    std::lock_guard lock(mutex_);
    script_[path] = std::move(values);
  }
  EnergyReadFn fn() {
    return [this](const std::string& path) {
      std::lock_guard lock(mutex_);
      auto& values = script_[path];
      auto& at = next_[path];
      const auto v = values.at(std::min(at, values.size() - 1));
      if (at < values.size()) ++at;
      if (v < 0) return EnergyRead{std::nullopt, "read failed", static_cast<int>(-v)};
      return EnergyRead{static_cast<std::uint64_t>(v), {}, 0};
    };
  }
  bool done(const std::string& path) {
    std::lock_guard lock(mutex_);
    return next_[path] >= script_[path].size();
  }

 private:
  std::mutex mutex_;
  std::map<std::string, std::vector<std::int64_t>> script_;
  std::map<std::string, std::size_t> next_;
};

RaplZone package_zone(const std::string& path, std::uint64_t max = kIntelMax) {
  RaplZone z;
  z.sensor = "intel-rapl:0";
  z.zone_name = "package-0";
  z.type = RaplType::total;
  z.socket = 0;
  z.energy_path = path;
  z.max_energy_range_uj = max;
  z.label_text = R"(socket="0",type="total",sensor="intel-rapl:0")";
  return z;
}

TEST(RaplReader, WrapsCountResetsGiveNoPowerAndPowerIsNeverNegative) {
  ScriptedCounters counters;
  const std::int64_t max = static_cast<std::int64_t>(kIntelMax);
  // Baseline near the top; a wrap (+3,001); +3,001; back by 4,001 (a reset: nothing); +3,001.
  counters.set("pkg", {max - 1'000, 2'000, 5'001, 1'000, 4'001});
  RaplReader reader({package_zone("pkg")}, 20ms, 10'000ms, counters.fn());
  reader.start();
  std::vector<double> seen;
  ASSERT_TRUE(eventually([&] {
    const auto snap = reader.snapshot();
    if (snap.readings[0].watts) seen.push_back(*snap.readings[0].watts);
    return counters.done("pkg") && snap.readings[0].read_errors_total >= 2;
  }));
  reader.stop(200ms);
  const auto snap = reader.snapshot();
  // Three steps counted, the reset's none: 9,003 µJ, whatever the intervals were.
  ASSERT_TRUE(snap.readings[0].energy_j);
  EXPECT_DOUBLE_EQ(*snap.readings[0].energy_j, 9'003 / 1e6);
  for (const double w : seen) EXPECT_GT(w, 0.0);
  // Reads after the baseline: the script's four and at least one unchanged (no power either).
  EXPECT_GE(snap.readings[0].reads_total, 5u);
  EXPECT_GE(snap.readings[0].read_errors_total, 2u);  // the reset and an unchanged counter
  ASSERT_TRUE(snap.readings[0].average_interval_s);
  EXPECT_GT(*snap.readings[0].average_interval_s, 0.0);
}

TEST(RaplReader, AFailedReadKeepsTheBaselineForTheNextGoodOne) {
  ScriptedCounters counters;
  counters.set("pkg", {1'000, -EIO, 11'000});
  RaplReader reader({package_zone("pkg")}, 20ms, 10'000ms, counters.fn());
  reader.start();
  ASSERT_TRUE(eventually([&] { return counters.done("pkg"); }));
  ASSERT_TRUE(eventually([&] { return reader.snapshot().readings[0].energy_j.has_value(); }));
  reader.stop(200ms);
  EXPECT_DOUBLE_EQ(*reader.snapshot().readings[0].energy_j, 10'000 / 1e6);
}

// ---- permissions ------------------------------------------------------------------------

// EACCES is injected through the read function: the tests may run as root, whom no file mode
// refuses. The rung's reason is the error: the file, the mode, and each remedy.
TEST(RaplPermissions, ARefusedCounterMakesTheRungUnusableNamingTheFileAndTheRemedy) {
  TestTree t;
  zone(t, "intel-rapl:0", "package-0");
  const std::string path = t.root() + "/intel-rapl:0/energy_uj";
  ScriptedCounters counters;
  counters.set(path, {-EACCES});
  RaplOptions o;
  o.root = t.root();
  o.read = counters.fn();
  const auto r = try_rapl(o);
  EXPECT_FALSE(r.reader);
  EXPECT_EQ(r.reason, rapl_permission_error(path));
  for (const auto* part : {"cannot read ", "permission denied", "root only, mode 0400", "udev",
                           "CAP_DAC_READ_SEARCH", "docs/operations.md"}) {
    EXPECT_NE(r.reason.find(part), std::string::npos) << part << " in " << r.reason;
  }
  EXPECT_NE(r.reason.find(path), std::string::npos);
}

// The real open's errno, where the test can be refused one: not as root.
TEST(RaplPermissions, AnUnreadableFileGivesEaccesWhenNotRoot) {
  if (::geteuid() == 0) GTEST_SKIP() << "root reads a mode 0000 file; the injected test covers it";
  TestTree t;
  t.write("energy_uj", "5\n");
  ::chmod(t.path("energy_uj").c_str(), 0);
  const auto r = read_energy_file(t.path("energy_uj"));
  EXPECT_FALSE(r.uj);
  EXPECT_EQ(r.error_number, EACCES);
}

// A counter that cannot be read for another reason (here a directory in its place, which
// refuses root too) leaves its zone out; with no package left the rung says so.
TEST(RaplPermissions, AnUnreadablePackageCounterIsLeftOutNotMistakenForPermission) {
  TestTree t;
  zone(t, "intel-rapl:0", "package-0", std::nullopt);
  std::filesystem::create_directories(
      t.path("devices/virtual/powercap/intel-rapl/intel-rapl:0/energy_uj"));
  const auto r = try_rapl({.root = t.root()});
  EXPECT_FALSE(r.reader);
  EXPECT_EQ(r.reason, "no RAPL package zone under " + t.root() + " can be read (intel-rapl:0)");
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_NE(r.warnings[0].find("cannot be read; left out zone=intel-rapl:0"), std::string::npos);
}

// ---- the ladder ---------------------------------------------------------------------------

LadderOptions ladder(const std::string& hwmon, const std::string& powercap,
                     std::string request = "auto") {
  LadderOptions o;
  o.request = std::move(request);
  o.hwmon_root = hwmon;
  o.powercap_root = powercap;
  o.read_interval = 100ms;
  o.max_age = 3000ms;
  o.probe_retry_delay = 100ms;
  return o;
}

TEST(RaplLadder, AutoOnAnX86NodePicksRaplAfterAcpi) {
  TestTree hwmon, powercap;
  sim::SimOptions o;
  o.root = powercap.root();
  o.profile = sim::Profile::x86_intel;
  o.model = sim::Model::constant;
  o.load = 0.5;  // package 167.5 W, core 112.5 W, dram 21 W
  o.update_interval = 2ms;
  sim::SimRaplNode node(o);
  ASSERT_TRUE(node.start());
  auto r = resolve_source(ladder(hwmon.root(), powercap.root()));
  ASSERT_TRUE(r.source) << r.error;
  EXPECT_EQ(r.mode, "rapl");
  ASSERT_TRUE(r.rapl);
  EXPECT_FALSE(r.acpi);
  EXPECT_EQ(r.cpu_sockets(), (std::set<std::uint32_t>{0, 1}));
  EXPECT_EQ(r.source->family().name, "cpu_power_rapl_watts");
  EXPECT_EQ(r.source->counters().joules->name, "cpu_power_rapl_joules_total");
  EXPECT_EQ(r.source->counters().joules->type, "counter");
  ASSERT_TRUE(eventually([&] {
    const auto snap = r.source->snapshot();
    for (std::size_t i = 0; i < snap.readings.size(); ++i) {
      if (!snap.readings[i].watts) return false;
    }
    return true;
  }));
  // Power over a second or more of counted time: the hardware counter's growth over the time
  // its differences covered. One 100 ms difference of a counter updated every 2 ms is within a
  // few percent on a quiet machine, but a busy or sanitized one delays the simulator's updates
  // (one interval 36 % off under ASan, 77 % under a loaded ctest), and over a second the delay
  // at each end is a tenth of it at most; the bound is a quarter of the value. The exact
  // arithmetic is the scripted counters' above.
  const auto first = r.source->snapshot();
  ASSERT_TRUE(eventually([&] {
    const auto snap = r.source->snapshot();
    for (std::size_t i = 0; i < snap.readings.size(); ++i) {
      if (*snap.readings[i].covered_s < *first.readings[i].covered_s + 1.0) return false;
    }
    return true;
  }));
  const auto snap = r.source->snapshot();
  const auto& sensors = *snap.sensors;
  for (std::size_t i = 0; i < sensors.size(); ++i) {
    const double want = sensors[i].kind == rails::Kind::total      ? 167.5
                        : sensors[i].kind == rails::Kind::cpu_rail ? 112.5
                        : sensors[i].kind == rails::Kind::soc      ? 40.0
                                                                   : 21.0;
    const auto& a = first.readings[i];
    const auto& b = snap.readings[i];
    const double counted_s = *b.covered_s + *b.bridged_s - *a.covered_s - *a.bridged_s;
    EXPECT_NEAR((*b.energy_j - *a.energy_j) / counted_s, want, want * 0.25) << sensors[i].name;
    EXPECT_GT(*b.covered_s - *a.covered_s, 0.9 * counted_s) << sensors[i].name;
  }
  r.source->stop(200ms);
  node.stop();
}

TEST(RaplLadder, CountersThatDoNotAdvanceAreNotAPowerSource) {
  TestTree powercap;
  sim::SimOptions o;
  o.root = powercap.root();
  o.profile = sim::Profile::x86_amd;
  o.model = sim::Model::constant;
  o.once = true;  // the tree, and counters that never move
  sim::SimRaplNode node(o);
  ASSERT_TRUE(node.start());
  const auto r = resolve_source(ladder("/nonexistent", powercap.root(), "rapl"));
  EXPECT_FALSE(r.source);
  EXPECT_EQ(r.error, "no RAPL package energy counter under " + powercap.root() +
                         " advanced across 2 probe(s) (2 packages)");
}

TEST(RaplLadder, ExplicitRaplOnAGraceNodeSaysNoRapl) {
  TestTree hwmon;
  hwmon.meter("hwmon2", "Grace Power Socket 0", "98029000");
  const auto r = resolve_source(ladder(hwmon.root(), "/nonexistent/powercap", "rapl"));
  EXPECT_FALSE(r.source);
  EXPECT_EQ(r.error.rfind("no RAPL: cannot list /nonexistent/powercap", 0), 0u) << r.error;
}

// ---- the sinks ----------------------------------------------------------------------------

// An x86 node's snapshot as the reader gives it: package, core, uncore and dram of socket 0.
Snapshot rapl_snapshot() {
  auto sensors = std::make_shared<std::vector<Sensor>>();
  Snapshot snap;
  const std::pair<rails::Kind, const char*> zones[] = {{rails::Kind::total, "total"},
                                                       {rails::Kind::cpu_rail, "core"},
                                                       {rails::Kind::soc, "uncore"},
                                                       {rails::Kind::dram, "dram"}};
  const double watts[] = {167.5, 112.5, 40.0, 21.0};
  for (std::size_t i = 0; i < 4; ++i) {
    Sensor s;
    s.name = i == 0 ? "intel-rapl:0" : "intel-rapl:0:" + std::to_string(i - 1);
    s.kind = zones[i].first;
    s.socket = 0;
    s.primary = i == 0;
    s.label_text = expo::label_text(expo::kRaplWatts, {"0", zones[i].second, s.name});
    sensors->push_back(s);
    ChannelReading r;
    r.watts = watts[i];
    r.energy_j = watts[i] * 10;
    r.read_at_unix = 1000.0;
    r.age_s = 0.01;
    snap.readings.push_back(r);
  }
  snap.sensors = sensors;
  return snap;
}

TEST(RaplSinks, TheExporterServesTheCounterFamilyBesideTheWatts) {
  const auto snap = rapl_snapshot();
  std::string out;
  exporter::render_family(out, expo::kRaplWatts, snap);
  exporter::render_counter_families(out, expo::kRaplCounters, snap);
  EXPECT_NE(out.find("# TYPE cpu_power_rapl_watts gauge\n"), std::string::npos);
  EXPECT_NE(out.find("# TYPE cpu_power_rapl_joules_total counter\n"), std::string::npos);
  EXPECT_NE(out.find("cpu_power_rapl_watts{socket=\"0\",type=\"total\",sensor=\"intel-rapl:0\"} "
                     "167.500000\n"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("cpu_power_rapl_joules_total{socket=\"0\",type=\"dram\",sensor=\"intel-"
                     "rapl:0:2\"} 210.000000\n"),
            std::string::npos)
      << out;
}

TEST(RaplSinks, TheHostLegRowHasThePackageAsPowerAndTheSubzonesAsRails) {
  const auto sample = hostleg::socket_rows(rapl_snapshot(), RaplReader::kMode, nullptr, "x86-a");
  ASSERT_EQ(sample.rows.size(), 1u);
  const auto& row = sample.rows[0];
  EXPECT_EQ(row.source, "rapl");
  EXPECT_EQ(row.sensor, "CPU0:packagePowerUsageW");
  EXPECT_DOUBLE_EQ(row.power_w, 167.5);
  EXPECT_EQ(row.cpu_rail_w, 112.5);
  EXPECT_EQ(row.soc_w, 40.0);
  EXPECT_EQ(row.dram_w, 21.0);
  EXPECT_EQ(row.total_power_w, 167.5);
  const auto named = rails::parse_sensor_name(row.sensor);
  ASSERT_TRUE(named);
  EXPECT_TRUE(named->rapl);
  EXPECT_EQ(named->kind, rails::Kind::total);
  EXPECT_EQ(rails::acpi_sensor_name(rails::Kind::total, 0), "CPU0:cpuSidePowerUsageW");
}

TEST(RaplSinks, TheExporterLegPivotsTheRaplFamily) {
  const std::string body =
      "cpu_power_rapl_watts{socket=\"1\",type=\"total\",sensor=\"intel-rapl:1\"} 150.0\n"
      "cpu_power_rapl_watts{socket=\"0\",type=\"total\",sensor=\"intel-rapl:0\"} 160.0\n"
      "cpu_power_rapl_watts{socket=\"0\",type=\"core\",sensor=\"intel-rapl:0:0\"} 100.0\n"
      "cpu_power_rapl_watts{socket=\"0\",type=\"uncore\",sensor=\"intel-rapl:0:1\"} 30.0\n"
      "cpu_power_rapl_watts{socket=\"0\",type=\"dram\",sensor=\"intel-rapl:0:2\"} 20.0\n"
      "cpu_power_rapl_watts{socket=\"0\",type=\"psys\",sensor=\"intel-rapl:2\"} 400.0\n"
      "cpu_power_rapl_joules_total{socket=\"0\",type=\"total\",sensor=\"intel-rapl:0\"} 5.0\n"
      "cpu_power_exporter_sample_age_seconds{sensor=\"intel-rapl:0\"} 0.2\n"
      "cpu_power_exporter_sample_age_seconds{sensor=\"intel-rapl:1\"} 0.4\n";
  const auto r = scrape::readings_from_body(body);
  ASSERT_FALSE(r.error) << *r.error;
  EXPECT_EQ(r.mode, scrape::Mode::rapl);
  EXPECT_EQ(scrape::mode_name(r.mode), "rapl");
  ASSERT_EQ(r.rows.size(), 2u);
  EXPECT_EQ(r.rows[0].sensor, "CPU0:packagePowerUsageW");
  EXPECT_EQ(r.rows[0].source, "rapl");
  EXPECT_DOUBLE_EQ(r.rows[0].power_w, 160.0);
  EXPECT_EQ(r.rows[0].cpu_rail_w, 100.0);
  EXPECT_EQ(r.rows[0].soc_w, 30.0);
  EXPECT_EQ(r.rows[0].dram_w, 20.0);
  EXPECT_DOUBLE_EQ(r.rows[0].total_power_w, 310.0);
  ASSERT_TRUE(r.total_age_s);
  EXPECT_NEAR(*r.total_age_s, 0.3, 1e-12);
}

}  // namespace
}  // namespace cpupower::sources
