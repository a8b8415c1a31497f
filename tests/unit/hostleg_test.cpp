#include <gtest/gtest.h>
#include <stdlib.h>
#include <time.h>

#include <thread>

#include "artifacts/host_samples.hpp"
#include "hostleg/local_time.hpp"
#include "hostleg/node_metadata.hpp"
#include "hostleg/sampler.hpp"
#include "hostleg/socket_rows.hpp"
#include "sources/acpi_reader.hpp"
#include "sources/ladder.hpp"
#include "test_tree.hpp"

namespace cpupower::hostleg {
namespace {

using cpupower::testing::TestTree;
using namespace std::chrono_literals;

// Sets TZ for one test and restores it.
class ScopedTz {
 public:
  explicit ScopedTz(const char* tz) {
    if (const char* old = std::getenv("TZ")) old_ = old;
    ::setenv("TZ", tz, 1);
    ::tzset();
  }
  ~ScopedTz() {
    if (old_) {
      ::setenv("TZ", old_->c_str(), 1);
    } else {
      ::unsetenv("TZ");
    }
    ::tzset();
  }

 private:
  std::optional<std::string> old_;
};

// Expected values from Python: datetime.fromtimestamp(ts).astimezone().isoformat().
TEST(IsoLocal, MatchesPythonIsoformatInSeveralZones) {
  struct Case {
    const char* tz;
    double ts;
    const char* want;
  };
  const Case cases[] = {
      {"UTC", 1788310143.627448, "2026-09-02T00:49:03.627448+00:00"},
      {"UTC", 1788310143.0, "2026-09-02T00:49:03+00:00"},
      {"UTC", 1700000000.5, "2023-11-14T22:13:20.500000+00:00"},
      {"UTC", 1609459199.9999995, "2021-01-01T00:00:00+00:00"},
      {"America/Los_Angeles", 1788310143.627448, "2026-09-01T17:49:03.627448-07:00"},
      {"America/Los_Angeles", 1700000000.5, "2023-11-14T14:13:20.500000-08:00"},
      {"Asia/Kolkata", 1788310143.0, "2026-09-02T06:19:03+05:30"},
      {"Australia/Lord_Howe", 1788310143.627448, "2026-09-02T11:19:03.627448+10:30"},
      {"Australia/Lord_Howe", 1700000000.5, "2023-11-15T09:13:20.500000+11:00"},
      {"Europe/Dublin", 1000000000.000001, "2001-09-09T02:46:40.000001+01:00"},
      {"Africa/Monrovia", -1, "1969-12-31T23:15:29-00:44:30"},
  };
  for (const auto& c : cases) {
    ScopedTz tz(c.tz);
    EXPECT_EQ(iso_local(c.ts), c.want) << c.tz << " " << c.ts;
  }
}

// A sensor row of a hand-made snapshot (the shape a DCGM or NVML reader publishes).
sources::Sensor sensor(std::uint32_t socket, rails::Kind kind, std::uint16_t field, bool power,
                       bool primary) {
  sources::Sensor s;
  s.name = "dcgm/cpu" + std::to_string(socket) + "/" + std::to_string(field);
  s.kind = kind;
  s.socket = socket;
  s.field_id = field;
  s.power = power;
  s.primary = primary;
  return s;
}

sources::ChannelReading reading(std::optional<double> value, double read_at_unix) {
  sources::ChannelReading r;
  r.watts = value;
  if (value) r.read_at_unix = read_at_unix;
  return r;
}

sources::Snapshot dcgm_snapshot(std::optional<double> rail1) {
  using K = rails::Kind;
  auto sensors = std::make_shared<std::vector<sources::Sensor>>(std::vector<sources::Sensor>{
      sensor(0, K::cpu_rail, 1130, true, true), sensor(0, K::soc, 1132, true, false),
      sensor(0, K::other, 1100, false, false), sensor(0, K::other, 1103, false, false),
      sensor(1, K::cpu_rail, 1130, true, true), sensor(1, K::other, 1100, false, false)});
  sources::Snapshot s;
  s.sensors = sensors;
  s.readings = {reading(50.5, 100.0),  reading(6.25, 100.0),  reading(0.0, 100.0),
                reading(0.125, 100.0), reading(rail1, 100.2), reading(std::nullopt, 0)};
  return s;
}

TEST(SocketRows, DcgmFillsRailsUtilizationAndTheNodeTotal) {
  ScopedTz tz("UTC");
  const auto sample = socket_rows(dcgm_snapshot(46.0), "dcgm", nullptr, "n1");
  ASSERT_EQ(sample.rows.size(), 2u);
  EXPECT_DOUBLE_EQ(sample.timestamp_unix, 100.1);  // mean read time of the primaries
  const auto& r0 = sample.rows[0];
  EXPECT_EQ(r0.sensor, "CPU0:cpuPowerUsageW");
  EXPECT_EQ(r0.source, "dcgm");
  EXPECT_EQ(r0.power_w, 50.5);
  EXPECT_EQ(r0.cpu_rail_w, 50.5);  // 1130 is the CPU rail: power_w and cpu_rail_w
  EXPECT_EQ(r0.soc_w, 6.25);
  EXPECT_FALSE(r0.dram_w);
  EXPECT_EQ(r0.cpu_util[0], 0.0);  // an idle socket is 0, not blank
  EXPECT_FALSE(r0.cpu_util[1]);
  EXPECT_EQ(r0.cpu_util[3], 0.125);
  EXPECT_EQ(r0.total_power_w, 96.5);
  EXPECT_EQ(sample.rows[1].total_power_w, 96.5);
  EXPECT_FALSE(sample.rows[1].cpu_util[0]);  // missing: blank
  EXPECT_EQ(r0.timestamp_local, "1970-01-01T00:01:40.100000+00:00");
  EXPECT_EQ(artifacts::format_host_row(r0),
            "5,100.1,1970-01-01T00:01:40.100000+00:00,n1,dcgm,CPU0:cpuPowerUsageW,0,50.5,50.5,"
            "6.25,,,96.5,0,,,0.125,\r\n");
}

// An averaging meter's value describes the interval before its read: the row time is the
// mean centre of the primaries' intervals (1 s ACPI averaging: half a second earlier).
TEST(SocketRows, RowTimeIsTheCentreOfTheAveragedInterval) {
  auto snap = dcgm_snapshot(46.0);
  snap.readings[0].centre_offset_s = 0.5;
  snap.readings[4].centre_offset_s = 0.5;
  snap.readings[1].centre_offset_s = 3.0;  // not a primary: does not move the row
  const auto sample = socket_rows(snap, "dcgm", nullptr, "n1");
  ASSERT_EQ(sample.rows.size(), 2u);
  EXPECT_DOUBLE_EQ(sample.timestamp_unix, 99.6);
  EXPECT_DOUBLE_EQ(sample.rows[1].timestamp_unix, 99.6);
}

TEST(SocketRows, ASocketWithoutItsPrimaryHasNoRowAndTheTotalIsBlank) {
  const auto sample = socket_rows(dcgm_snapshot(std::nullopt), "dcgm", nullptr, "n1");
  ASSERT_EQ(sample.rows.size(), 1u);
  EXPECT_EQ(sample.rows[0].socket_id, 0u);
  EXPECT_FALSE(sample.rows[0].total_power_w);  // never a partial node total
  EXPECT_DOUBLE_EQ(sample.timestamp_unix, 100.0);
}

// Neither socket's primary has a reading.
sources::Snapshot nothing_fresh() {
  auto snap = dcgm_snapshot(std::nullopt);
  snap.readings[0] = reading(std::nullopt, 0);
  return snap;
}

TEST(SocketRows, NothingFreshIsNoSample) {
  EXPECT_TRUE(socket_rows(nothing_fresh(), "dcgm", nullptr, "n1").rows.empty());
}

// A source whose snapshot is set by the test: the one the sampler copies at each take().
class ScriptedSource final : public sources::Source {
 public:
  std::string_view mode() const override { return "dcgm"; }
  const expo::Family& family() const override { return expo::kAcpiWatts; }
  expo::CounterFamilies counters() const override { return expo::kAcpiCounters; }
  void start() override {}
  void stop(std::chrono::milliseconds) override {}
  sources::Snapshot snapshot(sources::SteadyTime) const override { return next; }
  sources::Snapshot next;
};

// Both sockets' primaries read at `t` (the sample's time).
sources::Snapshot read_at(double t) {
  auto snap = dcgm_snapshot(46.0);
  snap.readings[0].read_at_unix = t;
  snap.readings[4].read_at_unix = t;
  return snap;
}

TEST(Sampler, RowsComeInTheOrderTakenAndTheSameReadingAgainAddsNone) {
  ScriptedSource source;
  Sampler sampler(source, nullptr, "dcgm", "n1", 0.1);
  for (const double t : {100.0, 100.0, 100.1}) {
    source.next = read_at(t);
    sampler.take();
  }
  const auto batch = sampler.rows();
  EXPECT_EQ(batch.rows, 4u);  // two samples of two sockets; the repeat adds none
  EXPECT_EQ(batch.read_failures, 0u);
  EXPECT_EQ(batch.dropped_samples, 0u);
  const auto first = batch.text.find(",100,");
  const auto second = batch.text.find(",100.1,");
  ASSERT_NE(first, std::string::npos) << batch.text;
  ASSERT_NE(second, std::string::npos) << batch.text;
  EXPECT_LT(first, second);
  // The repeat is recognised across batches too.
  sampler.take();
  EXPECT_EQ(sampler.rows().rows, 0u);
}

// Socket 0's primary read at t0 and socket 1's at t1.
sources::Snapshot read_at(double t0, double t1) {
  auto snap = read_at(t0);
  snap.readings[4].read_at_unix = t1;
  return snap;
}

// Slow reads of a cycle end a few milliseconds apart: a sample taken between the ends holds
// one socket's new value beside the other's old one, and its one row time would be neither's
// (75 ms off for reads 150 ms apart). It is passed over for the next sample, which holds the
// cycle whole; seen again, it is still no row. Only one in a row: sockets read apart at every
// cycle still give rows.
TEST(Sampler, ACycleHalfFinishedIsPassedOverForTheWholeOne) {
  ScriptedSource source;
  Sampler sampler(source, nullptr, "dcgm", "n1", 0.1);
  for (const auto& [t0, t1] : std::vector<std::pair<double, double>>{
           {100.0, 100.002},   // whole (2 ms apart)
           {100.15, 100.002},  // half: socket 0 new, socket 1 old
           {100.15, 100.002},  // the same half again
           {100.15, 100.151},  // whole
           {100.30, 100.151},  // half
           {100.45, 100.301},  // half again, the next cycle's: written
           {100.45, 100.452}}) {
    source.next = read_at(t0, t1);
    sampler.take();
  }
  const auto batch = sampler.rows();
  EXPECT_EQ(batch.half_cycles, 2u);
  EXPECT_EQ(batch.rows, 2u * 4);
  EXPECT_EQ(batch.text.find(",100.076,"), std::string::npos) << batch.text;
  EXPECT_NE(batch.text.find(",100.1505,"), std::string::npos) << batch.text;
  EXPECT_EQ(batch.text.find(",100.2255,"), std::string::npos) << batch.text;
  EXPECT_NE(batch.text.find(",100.3755,"), std::string::npos) << batch.text;

  // Sockets averaging over different intervals (50 ms and 1 s), read together: one cycle,
  // though the centres of what they measured are 475 ms apart.
  auto mixed = read_at(200.0, 200.001);
  mixed.readings[4].centre_offset_s = 0.475;
  source.next = mixed;
  sampler.take();
  const auto next = sampler.rows();
  EXPECT_EQ(next.half_cycles, 0u);
  EXPECT_EQ(next.rows, 2u);
}

TEST(Sampler, ASampleWithoutAnySocketsPowerIsAReadFailureNotARow) {
  ScriptedSource source;
  Sampler sampler(source, nullptr, "dcgm", "n1", 0.1);
  source.next = nothing_fresh();
  sampler.take();
  source.next = read_at(101.0);
  sampler.take();
  const auto batch = sampler.rows();
  EXPECT_EQ(batch.read_failures, 1u);
  EXPECT_EQ(batch.rows, 2u);
}

// A writer held up (a hung file system) keeps the first kMaxPendingSamples samples and counts
// the rest as dropped, once: memory stays bounded and the loss is said.
TEST(Sampler, SamplesBeyondTheBoundAreDroppedAndCountedTheFirstOnesKept) {
  ScriptedSource source;
  Sampler sampler(source, nullptr, "dcgm", "n1", 0.1);
  const std::size_t extra = 7;
  for (std::size_t i = 0; i < kMaxPendingSamples + extra; ++i) {
    source.next = read_at(1000.0 + static_cast<double>(i));
    sampler.take();
  }
  const auto batch = sampler.rows();
  EXPECT_EQ(batch.dropped_samples, extra);
  EXPECT_EQ(batch.rows, 2 * kMaxPendingSamples);
  EXPECT_NE(batch.text.find(",1000,"), std::string::npos);
  EXPECT_NE(batch.text.find("," + std::to_string(1000 + kMaxPendingSamples - 1) + ","),
            std::string::npos);
  EXPECT_EQ(batch.text.find("," + std::to_string(1000 + kMaxPendingSamples) + ","),
            std::string::npos);
  // Counted once; the bound is per batch, so the writer's next batch takes new samples again.
  source.next = read_at(9000.0);
  sampler.take();
  const auto next = sampler.rows();
  EXPECT_EQ(next.dropped_samples, 0u);
  EXPECT_EQ(next.rows, 2u);
}

TEST(SocketRows, ModulePowerFromNvmlOnlyOntoCpuSockets) {
  auto module = std::make_shared<std::vector<sources::Sensor>>();
  sources::Snapshot m;
  for (std::uint32_t s : {0u, 2u}) {
    sources::Sensor sensor;
    sensor.kind = rails::Kind::module;
    sensor.socket = s;
    module->push_back(sensor);
    m.readings.push_back(reading(900.0 + s, 100.0));
  }
  m.sensors = module;
  const auto sample = socket_rows(dcgm_snapshot(46.0), "dcgm", &m, "n1");
  ASSERT_EQ(sample.rows.size(), 2u);
  EXPECT_EQ(sample.rows[0].module_w, 900.0);
  EXPECT_FALSE(sample.rows[1].module_w);  // socket 1 has no module reading; socket 2 no CPU row
  EXPECT_EQ(sample.rows[0].total_power_w, 96.5);  // module power never adds to the total
}

// The ACPI path end to end: a real tree, the real reader, its snapshot pivoted.
TEST(SocketRows, AcpiTotalsAndComponentRailsFromARealReader) {
  TestTree t;
  t.meter("hwmon1", "Grace Power Socket 0", "150000000");
  t.meter("hwmon2", "CPU Power Socket 0", "125500000");
  t.meter("hwmon3", "SysIO Power Socket 0", "9500000");
  t.write("hwmon1/power1_accuracy", "1\n");
  t.write("hwmon1/power1_average_interval", "100\n");
  t.meter("hwmon4", "Grace Power Socket 1", "60000000");
  t.meter("hwmon5", "Module Power Socket 0", "700000000");  // ACPI module meter: not module_w
  sources::AcpiReader reader(sources::discover_acpi(t.root()).channels, 10ms, 2000ms);
  reader.start();
  sources::Snapshot snap;
  for (int i = 0; i < 200; ++i) {
    snap = reader.snapshot();
    bool all = true;
    for (const auto& r : snap.readings) all = all && r.watts.has_value();
    if (all) break;
    std::this_thread::sleep_for(10ms);
  }
  const auto sample = socket_rows(snap, "acpi", nullptr, "n1");
  ASSERT_EQ(sample.rows.size(), 2u);
  const auto& r0 = sample.rows[0];
  EXPECT_EQ(r0.sensor, "CPU0:cpuSidePowerUsageW");
  EXPECT_EQ(r0.power_w, 150.0);
  EXPECT_EQ(r0.cpu_rail_w, 125.5);
  EXPECT_EQ(r0.soc_w, 9.5);
  EXPECT_FALSE(r0.module_w);
  EXPECT_EQ(r0.total_power_w, 210.0);
  EXPECT_FALSE(r0.cpu_util[0]);  // ACPI has no utilization
  EXPECT_GT(sample.timestamp_unix, 1.7e9);

  RunInfo info{"n1", "auto", 0.1, 1000.0, false};
  sources::ResolvedSource resolved;
  resolved.mode = "acpi";
  resolved.acpi = &reader;
  const auto meta = node_metadata(info, resolved, RunOutcome{1001.0, 42, 3});
  EXPECT_EQ(meta["source"], "acpi");
  EXPECT_EQ(meta["aggregate_scope"], "cpu_side_socket_total");
  EXPECT_EQ(meta["sample_row_count"], 42);
  EXPECT_EQ(meta["read_failure_count"], 3);
  EXPECT_EQ(meta["status"], "complete");
  EXPECT_EQ(meta["ended_at_unix"], 1001.0);
  ASSERT_EQ(meta["available_power_domains"].size(), 5u);
  // Classified channels with a socket: the module meter is unclassified, so it is only in
  // available_power_domains.
  ASSERT_EQ(meta["sensors"].size(), 4u);
  for (const auto& s : meta["sensors"]) EXPECT_NE(s["domain_kind"], "module");
  EXPECT_EQ(meta["available_power_domains"][4]["name"], "Module Power Socket 0");
  const auto& s0 = meta["sensors"][0];
  EXPECT_EQ(s0["name"], "CPU0:cpuSidePowerUsageW");
  EXPECT_EQ(s0["domain_kind"], "total");
  EXPECT_EQ(s0["domain"], "Grace Power Socket 0");
  EXPECT_EQ(s0["socket_id"], 0);
  EXPECT_EQ(s0["accuracy"], 1.0);
  EXPECT_EQ(s0["average_interval_ms"], 100.0);
  EXPECT_TRUE(meta["sensors"][1]["average_interval_ms"].is_null());  // not exposed there
  EXPECT_EQ(node_metadata(info, resolved, RunOutcome{1001.0, 0, 9})["status"], "failed");
  EXPECT_FALSE(node_metadata(info, resolved).contains("status"));  // before the first row
  reader.stop(100ms);
}

}  // namespace
}  // namespace cpupower::hostleg
