// The CPU samples load in parts: splitting every record into cells (CsvFileReader, one
// thread), then the whole load into tracks (load_cpu_samples on THREADS threads). With `load`
// only the whole load runs, for a profiler. Usage: report_load_bench SAMPLES_CSV [THREADS] [load]

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "artifacts/csv.hpp"
#include "report/cpu_data.hpp"

namespace {

double seconds(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

int load(const std::string& path, unsigned threads) {
  const auto t0 = std::chrono::steady_clock::now();
  const auto data = cpupower::report::load_cpu_samples(path, threads);
  std::printf("load_cpu_samples, %u threads: %.3f s (%zu rows, %zu sockets)\n", threads,
              seconds(t0), data ? data->rows : 0, data ? data->sockets.size() : 0);
  if (!data) std::fprintf(stderr, "%s\n", data.error().c_str());
  return data ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: report_load_bench SAMPLES_CSV [THREADS] [load]\n");
    return 2;
  }
  const std::string path = argv[1];
  const unsigned threads = argc > 2 ? static_cast<unsigned>(std::atoi(argv[2])) : 1;
  if (argc > 3 && std::string(argv[3]) == "load") return load(path, threads);
  const auto t0 = std::chrono::steady_clock::now();
  auto reader = cpupower::artifacts::CsvFileReader::open(path);
  if (!reader) {
    std::fprintf(stderr, "%s\n", reader.error().c_str());
    return 1;
  }
  cpupower::artifacts::CsvRecord r;
  std::vector<cpupower::artifacts::CsvDamage> damage;
  std::size_t records = 0, cells = 0;
  while (reader->next(r, damage)) {
    ++records;
    cells += r.cells.size();
  }
  std::printf("split into cells, 1 thread: %.3f s (%zu records, %zu cells)\n", seconds(t0), records,
              cells);
  return load(path, threads);
}
