#pragma once
// Runs job(i) for every i in [0, n) on up to `threads` threads (the caller's among them),
// each taking the next index as it finishes one. The report's loaders and windows use it for
// work items that only read shared data and write their own slots.

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <thread>
#include <vector>

namespace cpupower::report {

// The report's parallel phases run one thread per core, at most 8.
inline unsigned default_threads() {
  return std::clamp(std::thread::hardware_concurrency(), 1u, 8u);
}

template <typename Job>
void parallel_for(std::size_t n, unsigned threads, const Job& job) {
  std::atomic<std::size_t> next{0};
  const auto work = [&] {
    for (std::size_t i = next++; i < n; i = next++) job(i);
  };
  std::vector<std::thread> pool;
  for (std::size_t k = 1; k < std::min<std::size_t>(threads, n); ++k) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
}

}  // namespace cpupower::report
