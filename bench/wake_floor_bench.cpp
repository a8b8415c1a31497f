// The least a reader of a node's value files at a fixed rate can cost on this machine: one
// thread that sleeps to an absolute grid of PERIOD_MS (clock_nanosleep on CLOCK_MONOTONIC) and
// reads each file given in place (ValueFile: a pread and an fstat), nothing else: no pool, no
// table, no locks, no log. bench/side_by_side.sh runs it beside the exporter and the host
// collector (FLOOR=1, with the value files they read), so that what the machine charges for a
// wake-up and a read is measured at the same time as what our processes cost
// (docs/performance.md, Telemetry overhead). With no files it is a bare wake-up loop.
// Runs until killed; with --seconds N it stops after N seconds and prints its CPU a second.
// Usage: wake_floor_bench [--seconds N] PERIOD_MS [PATH...]

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <vector>

#include "sources/sysfs_read.hpp"

namespace {

constexpr long long kNanos = 1'000'000'000LL;

long long now_ns(clockid_t clock) {
  timespec ts{};
  ::clock_gettime(clock, &ts);
  return static_cast<long long>(ts.tv_sec) * kNanos + ts.tv_nsec;
}

}  // namespace

int main(int argc, char** argv) {
  long long seconds = 0;
  int i = 1;
  if (i + 1 < argc && std::string(argv[i]) == "--seconds") {
    seconds = std::atoll(argv[i + 1]);
    i += 2;
  }
  if (i >= argc || std::atoll(argv[i]) <= 0) {
    std::fprintf(stderr, "usage: wake_floor_bench [--seconds N] PERIOD_MS [PATH...]\n");
    return 2;
  }
  const long long period = std::atoll(argv[i++]) * 1'000'000LL;
  std::vector<std::string> paths(argv + i, argv + argc);
  std::vector<cpupower::sources::ValueFile> files(paths.size());  // held open, never moved

  const long long cpu0 = now_ns(CLOCK_PROCESS_CPUTIME_ID);
  const long long start = now_ns(CLOCK_MONOTONIC);
  std::size_t bytes = 0;
  for (long long next = start / period * period + period;; next += period) {
    const timespec at{static_cast<time_t>(next / kNanos), static_cast<long>(next % kNanos)};
    while (::clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &at, nullptr) == EINTR) {
    }
    for (std::size_t k = 0; k < paths.size(); ++k)
      bytes += files[k].read(paths[k], 256).text.size();
    if (seconds > 0 && next - start >= seconds * kNanos) break;
  }
  const double cpu_ms = static_cast<double>(now_ns(CLOCK_PROCESS_CPUTIME_ID) - cpu0) / 1e6;
  std::printf("%zu files every %lld ms: %.3f ms of CPU a second (%zu bytes read)\n", paths.size(),
              period / 1'000'000LL, cpu_ms / static_cast<double>(seconds), bytes);
  return 0;
}
