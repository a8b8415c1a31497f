#pragma once
// The thread scaffolding every reader shares: detached threads that each run one cycle at a
// fixed rate measured from the start of the cycle (a slow cycle stretches its own period,
// with no extra sleep), a stop flag that wakes them, and a bounded wait for them to exit.
// Threads are detached and own what their cycle captures, so a thread blocked for good in a
// firmware read or a library call cannot hold up shutdown.

#include <chrono>
#include <functional>
#include <memory>

namespace cpupower::sources {

class ReaderThreads {
 public:
  ReaderThreads();
  ~ReaderThreads();  // stop(0): never waits
  ReaderThreads(const ReaderThreads&) = delete;
  ReaderThreads& operator=(const ReaderThreads&) = delete;

  // Runs `cycle` on a new thread every `period` until stop(), or until `cycle` returns false.
  void spawn(std::chrono::milliseconds period, std::function<bool()> cycle);

  // Sets the stop flag, wakes every thread and waits up to `grace` for them to exit.
  // Returns true when all did. Only the first call waits.
  bool stop(std::chrono::milliseconds grace);

  struct State;

 private:
  std::shared_ptr<State> state_;
};

}  // namespace cpupower::sources
