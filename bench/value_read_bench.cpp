// One value file read the two ways the readers can: opened, read and closed each time
// (read_value_text), or kept open and read again from offset 0 (ValueFile: pread and fstat).
// CPU time of the process per read, for each path given (a sysfs attribute, where a read from
// offset 0 runs its show function again, and a regular file). The simulated node's files are
// replaced by a rename at every update, so there ValueFile opens each read afresh (its third
// line). Usage: value_read_bench [READS] PATH...
// (default: 200000 reads of /sys/devices/system/cpu/online and /sys/devices/system/cpu/cpu0/
// topology/core_id)

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <vector>

#include "sources/sysfs_read.hpp"

namespace {

double cpu_seconds() {
  timespec ts{};
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

template <typename Read>
double us_per_read(int reads, const Read& read) {
  std::size_t bytes = 0;
  const double t0 = cpu_seconds();
  for (int i = 0; i < reads; ++i) bytes += read().text.size();
  const double t = cpu_seconds() - t0;
  if (bytes == 0) std::fprintf(stderr, "  (nothing read)\n");
  return t / reads * 1e6;
}

}  // namespace

int main(int argc, char** argv) {
  int reads = 200000;
  std::vector<std::string> paths;
  for (int i = 1; i < argc; ++i) {
    char* end = nullptr;
    const long n = std::strtol(argv[i], &end, 10);
    if (i == 1 && end != argv[i] && *end == '\0' && n > 0) {
      reads = static_cast<int>(n);
    } else {
      paths.emplace_back(argv[i]);
    }
  }
  if (paths.empty()) {
    paths = {"/sys/devices/system/cpu/online", "/sys/devices/system/cpu/cpu0/topology/core_id"};
  }
  using namespace cpupower::sources;
  for (const auto& path : paths) {
    std::printf("%s (%d reads)\n", path.c_str(), reads);
    std::printf("  open, read to the end, close: %.2f us CPU a read\n",
                us_per_read(reads, [&] { return read_value_text(path, 256); }));
    ValueFile held;
    const double us = us_per_read(reads, [&] { return held.read(path, 256); });
    std::printf("  kept open (ValueFile):        %.2f us CPU a read (held: %s)\n", us,
                held.held() ? "yes" : "no, opened each read");
  }
  return 0;
}
