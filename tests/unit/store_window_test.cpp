// One window's report from hand-made store answers: socket, node and GPU rows from the
// counters' increases, coverage from the covered-seconds counters, the edge bound, re-dating
// by the sample age, NVML's gpus-label series, the GPU power gauge fallback, and the windows
// that must fail (no data at all, a missing socket, no sample near an edge).

#include <gtest/gtest.h>

#include "store/queries.hpp"
#include "store/window_builder.hpp"

namespace cpupower::store {
namespace {

constexpr double kS = 1000, kE = 1060, kLookback = 300;

// A counter rising at `rate` per second, sampled every `step` s from `from` to `to`.
RawSeries counter(Labels labels, double from, double to, double step, double rate) {
  RawSeries s;
  s.metric = std::move(labels);
  for (int i = 0; from + i * step <= to; ++i) {
    s.samples.t.push_back(from + i * step);
    s.samples.v.push_back(rate * i * step);
  }
  return s;
}

Labels acpi(const char* name, const char* socket, const char* sensor) {
  return {{"__name__", name}, {"sensor", sensor},    {"type", "total"},
          {"socket", socket}, {"oem_info", "Grace"}, {"source", "acpi"},
          {"node", "n1"},     {"job", "cpu_power"},  {"instance", "10.0.0.1:9405"}};
}

Labels self(std::string_view name, std::string sensor) {
  return {{"__name__", std::string(name)},
          {"sensor", std::move(sensor)},
          {"node", "n1"},
          {"job", "cpu_power"},
          {"instance", "10.0.0.1:9405"}};
}

Labels socket_up(const char* socket) {
  return {{"__name__", std::string(kSocketUp)},
          {"socket", socket},
          {"node", "n1"},
          {"job", "cpu_power"},
          {"instance", "10.0.0.1:9405"}};
}

// Every family queried, each with its query text; no series yet.
WindowData empty_data() {
  WindowData d;
  const Selectors sel = selectors_for(std::nullopt, {"n1"});
  const QuerySpan span = query_span(kS, kE, kLookback);
  for (std::size_t i = 0; i < kFamilies; ++i) {
    d.families[i].expr = family_query(static_cast<Family>(i), sel, span.range_s);
    d.families[i].queried = true;
  }
  return d;
}

// Node n1: socket 0 at 100 W, socket 1 at 50 W, sampled every second half-way between whole
// seconds (each window edge half-way between two samples), covered all along; GPU 0 at 300 W.
WindowData node_data() {
  WindowData d = empty_data();
  d[Family::acpi_joules].series = {
      counter(acpi("cpu_power_acpi_joules_total", "0", "hwmon2/power1"), 900.5, 1099.5, 1, 100),
      counter(acpi("cpu_power_acpi_joules_total", "1", "hwmon10/power1"), 900.5, 1099.5, 1, 50)};
  d[Family::acpi_covered].series = {
      counter(acpi("cpu_power_acpi_covered_seconds_total", "0", "hwmon2/power1"), 900.5, 1099.5, 1,
              1),
      counter(acpi("cpu_power_acpi_covered_seconds_total", "1", "hwmon10/power1"), 900.5, 1099.5, 1,
              1)};
  d[Family::exporter_self].series = {
      counter(self(kAverageInterval, "hwmon2/power1"), 900.5, 1099.5, 1, 0),
      counter(self(kAverageInterval, "hwmon10/power1"), 900.5, 1099.5, 1, 0),
      counter(socket_up("0"), 900.5, 1099.5, 1, 0), counter(socket_up("1"), 900.5, 1099.5, 1, 0)};
  d[Family::gpu_energy].series = {counter({{"__name__", "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"},
                                           {"gpu", "0"},
                                           {"UUID", "GPU-0"},
                                           {"Hostname", "n1"},
                                           {"job", "dcgm"},
                                           {"instance", "10.0.0.1:9400"}},
                                          900.5, 1099.5, 1, 300000)};  // mJ
  return d;
}

BuildOptions options() {
  BuildOptions o;
  o.lookback_s = kLookback;
  o.store_url = "http://127.0.0.1:9090";
  return o;
}

report::Window window() {
  report::Window w("window", "--window");
  w.start_unix = kS;
  w.end_unix = kE;
  w.start_json = kS;
  w.end_json = kE;
  return w;
}

bool has_warning(const report::WindowReport& r, std::string_view part) {
  for (const auto& w : r.warnings) {
    if (w.find(part) != std::string::npos) return true;
  }
  return false;
}

TEST(StoreWindow, RowsFromTheCountersIncreases) {
  Charts charts;
  const report::WindowReport r = build_window(window(), node_data(), options(), &charts);
  ASSERT_EQ(r.error, "");
  ASSERT_EQ(r.cpu_per_socket.size(), 2u);
  EXPECT_EQ(r.cpu_per_socket[0].label, "cpu/n1/socket0");
  EXPECT_DOUBLE_EQ(r.cpu_per_socket[0].stats.joules, 6000);
  EXPECT_DOUBLE_EQ(r.cpu_per_socket[0].stats.avg_power_w, 100);
  EXPECT_DOUBLE_EQ(r.cpu_per_socket[0].stats.sample_start_unix, 999.5);
  EXPECT_DOUBLE_EQ(r.cpu_per_socket[0].stats.sample_end_unix, 1060.5);
  EXPECT_EQ(r.cpu_per_socket[0].stats.samples, 62u);
  EXPECT_DOUBLE_EQ(r.cpu_per_socket[0].stats.p50_w, 100);
  // Each edge half-way between samples: half a second's energy either way.
  EXPECT_DOUBLE_EQ(r.cpu_per_socket[0].stats.uncertainty_j, 100);
  ASSERT_TRUE(r.cpu_per_socket[0].stats.coverage);
  EXPECT_DOUBLE_EQ(*r.cpu_per_socket[0].stats.coverage, 1);
  EXPECT_EQ(r.cpu_per_socket[1].label, "cpu/n1/socket1");
  EXPECT_DOUBLE_EQ(r.cpu_per_socket[1].stats.joules, 3000);
  EXPECT_DOUBLE_EQ(r.cpu_per_socket[1].stats.uncertainty_j, 50);
  ASSERT_EQ(r.cpu_per_node.size(), 1u);
  EXPECT_EQ(r.cpu_per_node[0].label, "cpu/n1");
  EXPECT_DOUBLE_EQ(r.cpu_per_node[0].stats.joules, 9000);
  EXPECT_DOUBLE_EQ(r.cpu_per_node[0].stats.uncertainty_j, 150);
  EXPECT_DOUBLE_EQ(r.cpu_per_node[0].stats.mean_w, 150);
  EXPECT_EQ(r.cpu_per_node[0].stats.samples, 61u);  // interval midpoints 1000 .. 1060
  EXPECT_DOUBLE_EQ(r.cpu_total_joules.get<double>(), 9000);
  ASSERT_EQ(r.cpu_sensors.size(), 2u);
  EXPECT_EQ(r.cpu_sensors[0].sensor, "CPU0:cpuSidePowerUsageW");
  // dcgm-exporter's counter counts millijoules.
  ASSERT_EQ(r.gpu_per_device.size(), 1u);
  EXPECT_EQ(r.gpu_per_device[0].label, "gpu/n1/gpu0");
  EXPECT_DOUBLE_EQ(r.gpu_per_device[0].stats.joules, 18000);
  EXPECT_FALSE(r.gpu_per_device[0].stats.coverage);
  ASSERT_EQ(r.gpu_per_node.size(), 1u);
  EXPECT_EQ(r.gpu_per_node[0].label, "gpu/n1");
  EXPECT_DOUBLE_EQ(r.gpu_total_joules.get<double>(), 18000);
  EXPECT_DOUBLE_EQ(r.combined_total_joules, 27000);
  EXPECT_EQ(r.perf.num_gpus, 1);
  EXPECT_DOUBLE_EQ(*r.perf.cpu_w, 150);
  EXPECT_DOUBLE_EQ(*r.perf.gpu_w, 300);
  ASSERT_EQ(r.node_power.size(), 1u);
  EXPECT_EQ(r.node_power[0].host, "n1");
  EXPECT_EQ(r.node_power[0].socket_count, 2u);
  EXPECT_EQ(r.node_power[0].gpu_count, 1u);
  EXPECT_DOUBLE_EQ(r.cpu_total_error.uncertainty_j, 150);
  ASSERT_TRUE(r.cpu_total_error.coverage);
  EXPECT_FALSE(r.gpu_total_error.coverage);
  ASSERT_TRUE(r.energy_source);
  EXPECT_EQ(r.energy_source->kind, "prometheus");
  EXPECT_EQ(r.energy_source->url, "http://127.0.0.1:9090");
  EXPECT_TRUE(has_warning(r, "GPU power: dcgm-exporter publishes no averaging interval"));
  EXPECT_FALSE(has_warning(r, "CPU power:"));
  // The charts: per socket, node totals, GPUs.
  report::RunData data;
  charts.fill(data);
  ASSERT_TRUE(data.cpu);
  EXPECT_EQ(data.cpu->sockets.size(), 2u);
  ASSERT_EQ(data.cpu->nodes.size(), 1u);
  EXPECT_DOUBLE_EQ(data.cpu->nodes[0].total.v.front(), 150);
  ASSERT_TRUE(data.gpu);
  EXPECT_EQ(data.gpu->devices.size(), 1u);
}

// The exporter's counter at a scrape counts up to the centre of the latest reading, the sample
// age before it: the samples move back by it, and the edges fall elsewhere between them.
TEST(StoreWindow, CountersAreDatedBySampleAge) {
  WindowData d = node_data();
  d[Family::exporter_self].series.push_back(
      counter(self(kSampleAge, "hwmon2/power1"), 900.5, 1099.5, 1, 0));
  for (auto& v : d[Family::exporter_self].series.back().samples.v) v = 0.25;
  const report::WindowReport r = build_window(window(), d, options(), nullptr);
  ASSERT_EQ(r.error, "");
  EXPECT_DOUBLE_EQ(r.cpu_per_socket[0].stats.joules, 6000);
  EXPECT_DOUBLE_EQ(r.cpu_per_socket[0].stats.sample_start_unix, 999.25);
  // Each edge a quarter of a second from the sample before: 0.75 s of energy either way.
  EXPECT_DOUBLE_EQ(r.cpu_per_socket[0].stats.uncertainty_j, 150);
  EXPECT_DOUBLE_EQ(r.cpu_per_socket[1].stats.uncertainty_j, 50);  // no age: scrape times
}

TEST(StoreWindow, NoCounterDataFailsNamingTheQueries) {
  const WindowData d = empty_data();
  const report::WindowReport r = build_window(window(), d, options(), nullptr);
  EXPECT_EQ(r.error.rfind("no energy counters in the store for this window: "
                          "cpu_power_acpi_joules_total{type=~\"total|cpu_rail|soc|dram\", "
                          "node=~\"n1\"}[660000ms], ",
                          0),
            0u)
      << r.error;
  EXPECT_NE(r.error.find(d[Family::gpu_energy].expr), std::string::npos) << r.error;
  EXPECT_TRUE(r.cpu_per_socket.empty());
  ASSERT_TRUE(r.energy_source);
}

// A socket its exporter found (socket_up) without a counter while the other has one: no node
// total, never a smaller one.
TEST(StoreWindow, AMissingSocketFailsTheNodeTotal) {
  WindowData d = node_data();
  d[Family::acpi_joules].series.pop_back();
  const report::WindowReport r = build_window(window(), d, options(), nullptr);
  EXPECT_EQ(r.error.rfind("cpu/n1: no node total: cpu/n1/socket1 has no energy counter in the "
                          "store for this window (cpu_power_acpi_joules_total{",
                          0),
            0u)
      << r.error;
  // The same from the run's manifest, without socket_up.
  WindowData m = node_data();
  m[Family::acpi_joules].series.pop_back();
  m[Family::exporter_self].series.resize(2);
  BuildOptions o = options();
  o.expected = ExpectedNodes{"cpu_manifest.json", {"n1"}, {{"n1", {0, 1}}}};
  EXPECT_NE(build_window(window(), m, o, nullptr).error.find("cpu/n1/socket1 has no energy"),
            std::string::npos);
}

TEST(StoreWindow, NoSampleNearAnEdgeFailsTheWindow) {
  WindowData d = node_data();
  d[Family::acpi_joules].series[0] =
      counter(acpi("cpu_power_acpi_joules_total", "0", "hwmon2/power1"), 1010.5, 1099.5, 1, 100);
  const report::WindowReport r = build_window(window(), d, options(), nullptr);
  EXPECT_EQ(r.error.rfind("cpu/n1/socket0: no sample of cpu_power_acpi_joules_total{", 0), 0u)
      << r.error;
  EXPECT_NE(r.error.find("within 300 s before the window's start (1000.000)"), std::string::npos)
      << r.error;
}

TEST(StoreWindow, GpuPowerGaugeWhenTheStoreHasNoGpuEnergy) {
  WindowData d = node_data();
  d[Family::gpu_energy].series.clear();
  RawSeries power;
  power.metric = {{"__name__", "DCGM_FI_DEV_POWER_USAGE"}, {"gpu", "0"}, {"Hostname", "n1"}};
  for (double t = 900; t <= 1100; t += 5) {
    power.samples.t.push_back(t);
    power.samples.v.push_back(200);
  }
  d[Family::gpu_power].series = {power};
  const report::WindowReport r = build_window(window(), d, options(), nullptr);
  ASSERT_EQ(r.error, "");
  ASSERT_EQ(r.gpu_per_device.size(), 1u);
  EXPECT_DOUBLE_EQ(r.gpu_per_device[0].stats.joules, 12000);
  EXPECT_TRUE(has_warning(r, "GPU energy from the power gauge"));
  EXPECT_TRUE(has_warning(r, "(median scrape interval 5 s)"));
}

// NVML's module counter under a new gpus label carries on the same value: one row.
TEST(StoreWindow, ModuleRowsFromNvmlSeriesMergedOverGpus) {
  WindowData d = node_data();
  const auto nvml = [](const char* gpus) {
    return Labels{{"__name__", "cpu_power_nvml_joules_total"},
                  {"type", "module"},
                  {"socket", "0"},
                  {"gpus", gpus},
                  {"source", "nvml"},
                  {"node", "n1"}};
  };
  RawSeries whole = counter(nvml("0,1"), 900.5, 1099.5, 1, 500);
  RawSeries before = whole, after = whole;
  before.samples = {};
  after.samples = {};
  after.metric = nvml("0");
  for (std::size_t i = 0; i < whole.samples.size(); ++i) {
    auto& part = whole.samples.t[i] < 1030 ? before : after;
    part.samples.t.push_back(whole.samples.t[i]);
    part.samples.v.push_back(whole.samples.v[i]);
  }
  d[Family::nvml_joules].series = {after, before};
  const report::WindowReport r = build_window(window(), d, options(), nullptr);
  ASSERT_EQ(r.error, "");
  ASSERT_EQ(r.module_per_socket.size(), 1u);
  EXPECT_EQ(r.module_per_socket[0].label, "cpu/n1/socket0/module");
  EXPECT_DOUBLE_EQ(r.module_per_socket[0].stats.joules, 30000);
  ASSERT_EQ(r.module_per_node.size(), 1u);
  EXPECT_EQ(r.module_per_node[0].label, "module/n1");
  ASSERT_TRUE(r.module_total_joules);
  EXPECT_DOUBLE_EQ(*r.module_total_joules, 30000);
  // Never added to anything.
  EXPECT_DOUBLE_EQ(r.combined_total_joules, 27000);
}

// An exporter restart inside the window: the energy after it counts from 0 and a warning
// names the lost stretch.
TEST(StoreWindow, AResetInsideTheWindowIsSaid) {
  WindowData d = node_data();
  auto& s = d[Family::acpi_joules].series[0].samples;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s.t[i] > 1030) s.v[i] = 100 * (s.t[i] - 1030.5) + 50;  // restarted at 1030
  }
  const report::WindowReport r = build_window(window(), d, options(), nullptr);
  ASSERT_EQ(r.error, "");
  EXPECT_TRUE(has_warning(r, "cpu/n1/socket0: the counter restarted"));
  // 999.5 .. 1029.5 at 100 W, the new counter's 50 J by 1030.5, 100 W after it.
  EXPECT_DOUBLE_EQ(r.cpu_per_socket[0].stats.joules, 2950 + 50 + 2950);
}

}  // namespace
}  // namespace cpupower::store
