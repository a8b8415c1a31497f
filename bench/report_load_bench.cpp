// The energy report's loading phase on its own, on THREADS threads: splitting an exporter v3
// samples.csv into cells, splitting and parsing its six numeric cells, and the whole load
// into tracks (load_cpu_samples). Usage: report_load_bench SAMPLES_CSV [THREADS] [load]; with
// `load` only the whole load runs (for profiling it alone).
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <string>

#include "artifacts/csv_stream.hpp"
#include "report/cpu_data.hpp"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s SAMPLES_CSV [THREADS]\n", argv[0]);
    return 2;
  }
  const std::string path = argv[1];
  const unsigned threads = argc > 2 ? static_cast<unsigned>(std::atoi(argv[2])) : 1;
  using Clock = std::chrono::steady_clock;
  const auto seconds = [](Clock::time_point a) {
    return std::chrono::duration<double>(Clock::now() - a).count();
  };
  auto t0 = Clock::now();
  if (argc > 3 && std::string(argv[3]) == "load") {
    const auto load = cpupower::report::load_cpu_samples(path, threads);
    std::printf("load_cpu_samples: %.3f s\n", seconds(t0));
    return load.data ? 0 : 1;
  }
  std::size_t cells = 0;
  cpupower::artifacts::CsvScanOptions options;
  options.threads = threads;
  // One cache line per thread: neighbouring counters would bounce a line between the cores.
  std::vector<std::array<std::size_t, 8>> per_chunk(threads, std::array<std::size_t, 8>{});
  const auto scan = cpupower::artifacts::scan_csv_file(
      path, options, [](const std::vector<std::string>&) { return true; },
      [&](std::size_t chunk, const cpupower::artifacts::CsvRecord& r) {
        per_chunk[chunk][0] += r.cells.size();
      },
      [] {});
  for (const auto& c : per_chunk) cells += c[0];
  std::printf("split only: %.3f s (%zu cells, ok=%d)\n", seconds(t0), cells, scan.ok);
  t0 = Clock::now();
  std::vector<std::array<double, 8>> sums(threads, std::array<double, 8>{});
  cpupower::artifacts::scan_csv_file(
      path, options, [](const std::vector<std::string>&) { return true; },
      [&](std::size_t chunk, const cpupower::artifacts::CsvRecord& r) {
        double v = 0;
        if (r.cells.size() < 12) return;
        for (std::size_t i : {1, 6, 7, 8, 10, 11}) {
          if (cpupower::artifacts::parse_number(r.cells[i], &v)) sums[chunk][0] += v;
        }
      },
      [] {});
  std::printf("split + parse 6 numbers: %.3f s\n", seconds(t0));
  t0 = Clock::now();
  const auto load = cpupower::report::load_cpu_samples(path, threads);
  std::printf("load_cpu_samples: %.3f s (%zu rows, %zu sockets)\n", seconds(t0),
              load.data ? load.data->rows : 0, load.data ? load.data->sockets.size() : 0);
  return load.data ? 0 : 1;
}
