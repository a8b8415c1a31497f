// Parser throughput on exposition text (target: at least 200 MB/s), on the body one Grace
// exporter serves, on what dcgm-exporter serves for 4 GPUs and on a large body near the 1 MiB
// cap, plus the whole scrape -> readings (-> rows, GPU leg) step the collector runs per
// endpoint and slot.

#include <benchmark/benchmark.h>

#include <string>

#include "expo/parser.hpp"
#include "scrape/gpu_leg.hpp"
#include "scrape/gpu_readings.hpp"
#include "scrape/readings.hpp"
#include "sim/gpu_exposition.hpp"
#include "sim/gpu_power.hpp"
#include "sim/sim_gpu.hpp"

namespace {

// What cpu-power-exporter serves on a two-socket Grace node: six ACPI rails with HELP and
// TYPE, then the self metrics (per-sensor age, read duration and error counters, info).
std::string exporter_body() {
  std::string body =
      "# HELP cpu_power_acpi_watts Grace CPU power from ACPI power_meter hwmon sensors.\n"
      "# TYPE cpu_power_acpi_watts gauge\n";
  const char* kinds[] = {"total", "cpu_rail", "soc"};
  const char* labels[] = {"Grace Power Socket ", "CPU Power Socket ", "SysIO Power Socket "};
  const char* values[] = {"98.029000", "49.023000", "5.100000"};
  for (int socket = 0; socket < 2; ++socket) {
    for (int k = 0; k < 3; ++k) {
      body += "cpu_power_acpi_watts{sensor=\"hwmon" + std::to_string(socket + 3) + "/power" +
              std::to_string(k + 1) + "\",type=\"" + kinds[k] + "\",socket=\"" +
              std::to_string(socket) + "\",oem_info=\"" + labels[k] + std::to_string(socket) +
              "\",source=\"acpi\"} " + values[k] + "\n";
    }
  }
  const char* self[][3] = {
      {"cpu_power_exporter_sample_age_seconds", "gauge", "0.042117"},
      {"cpu_power_exporter_read_duration_seconds", "gauge", "0.000311"},
      {"cpu_power_exporter_read_errors_total", "counter", "0"},
  };
  for (const auto& m : self) {
    body += std::string("# HELP ") + m[0] + " Exporter self metric.\n# TYPE " + m[0] + " " + m[1] +
            "\n";
    for (int socket = 0; socket < 2; ++socket) {
      for (int k = 1; k <= 3; ++k) {
        body += std::string(m[0]) + "{sensor=\"hwmon" + std::to_string(socket + 3) + "/power" +
                std::to_string(k) + "\"} " + m[2] + "\n";
      }
    }
  }
  body +=
      "# HELP cpu_power_exporter_info Exporter build and source.\n"
      "# TYPE cpu_power_exporter_info gauge\n"
      "cpu_power_exporter_info{version=\"0.1.0\",source=\"acpi\"} 1\n";
  return body;
}

// Many nodes' worth of rails in one body, just under the 1 MiB cap, with some escapes.
std::string large_body() {
  std::string body;
  const std::string unit = exporter_body();
  while (body.size() + unit.size() + 200 < cpupower::expo::kMaxBodyBytes) {
    body += unit;
    body += "cpu_power_exporter_note{text=\"a \\\"quoted\\\" word\\nand a line\"} 1\n";
  }
  return body;
}

// What `cpu-power sim-gpu --hostname node-0000` serves by default: 4 GPUs, 13 device fields.
std::string dcgm_body() {
  namespace sim = cpupower::sim;
  const sim::SimGpuOptions defaults;
  sim::ExpositionOptions options;
  options.hostname = "node-0000";
  options.driver_version = defaults.driver_version;
  std::vector<sim::GpuSeries> gpus;
  for (std::uint32_t g = 0; g < defaults.gpus; ++g) {
    sim::GpuSeries s;
    s.index = g;
    s.uuid = sim::simulated_gpu_uuid(options.hostname, g);
    s.pci_bus_id = sim::simulated_pci_bus_id(g);
    s.model_name = defaults.model_name;
    s.values = sim::derive_gpu_readout(300.0 + 10.0 * g, sim::kGpuIdleWatts, sim::kGpuMaxWatts);
    gpus.push_back(std::move(s));
  }
  return sim::render_dcgm_exposition(gpus, options);
}

void BM_ParseExporterBody(benchmark::State& state) {
  const std::string body = exporter_body();
  for (auto _ : state) {
    auto r = cpupower::expo::parse(body);
    benchmark::DoNotOptimize(r.samples.data());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * body.size()));
  state.counters["body_bytes"] = static_cast<double>(body.size());
}
BENCHMARK(BM_ParseExporterBody);

void BM_ParseLargeBody(benchmark::State& state) {
  const std::string body = large_body();
  for (auto _ : state) {
    auto r = cpupower::expo::parse(body);
    benchmark::DoNotOptimize(r.samples.data());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * body.size()));
  state.counters["body_bytes"] = static_cast<double>(body.size());
}
BENCHMARK(BM_ParseLargeBody);

void BM_ReadingsFromExporterBody(benchmark::State& state) {
  const std::string body = exporter_body();
  for (auto _ : state) {
    auto r = cpupower::scrape::readings_from_body(body);
    benchmark::DoNotOptimize(r.fingerprint);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * body.size()));
}
BENCHMARK(BM_ReadingsFromExporterBody);

void BM_ParseDcgmBody(benchmark::State& state) {
  const std::string body = dcgm_body();
  for (auto _ : state) {
    auto r = cpupower::expo::parse(body);
    benchmark::DoNotOptimize(r.samples.data());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * body.size()));
  state.counters["body_bytes"] = static_cast<double>(body.size());
}
BENCHMARK(BM_ParseDcgmBody);

void BM_GpuReadingsFromDcgmBody(benchmark::State& state) {
  const std::string body = dcgm_body();
  for (auto _ : state) {
    auto r = cpupower::scrape::gpu_readings_from_body(body);
    benchmark::DoNotOptimize(r.gpus.data());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * body.size()));
}
BENCHMARK(BM_GpuReadingsFromDcgmBody);

// The GPU leg's whole work on one body: readings, then one CSV row per GPU.
void BM_GpuLegOnBody(benchmark::State& state) {
  const std::string body = dcgm_body();
  cpupower::scrape::GpuLeg leg(1, nullptr);
  cpupower::scrape::BodyInput input;
  input.hostname = "node-0000";
  input.body = body;
  input.midpoint_unix = 1764600000.123456;
  std::string lines;
  for (auto _ : state) {
    lines.clear();
    ++input.scrape_seq;
    auto out = leg.on_body(input, lines);
    benchmark::DoNotOptimize(out.rows);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * body.size()));
}
BENCHMARK(BM_GpuLegOnBody);

}  // namespace

BENCHMARK_MAIN();
