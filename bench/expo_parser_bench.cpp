// Parser throughput on exposition text (target: at least 200 MB/s), on the body one Grace
// exporter serves and on a large body near the 1 MiB cap, plus the whole scrape -> readings
// step the collector runs per endpoint and slot.

#include <benchmark/benchmark.h>

#include <string>

#include "expo/parser.hpp"
#include "scrape/readings.hpp"

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

}  // namespace

BENCHMARK_MAIN();
