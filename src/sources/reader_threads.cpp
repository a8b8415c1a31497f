#include "sources/reader_threads.hpp"

#include <condition_variable>
#include <mutex>
#include <thread>

namespace cpupower::sources {

struct ReaderThreads::State {
  std::mutex mutex;
  std::condition_variable wake;
  bool stopping = false;
  int running = 0;
};

ReaderThreads::ReaderThreads() : state_(std::make_shared<State>()) {}

ReaderThreads::~ReaderThreads() {
  stop(std::chrono::milliseconds(0));
}

void ReaderThreads::spawn(std::chrono::milliseconds period, std::function<bool()> cycle) {
  {
    std::lock_guard lock(state_->mutex);
    if (state_->stopping) return;
    state_->running++;
  }
  std::thread([st = state_, period, cycle = std::move(cycle)] {
    while (true) {
      const auto cycle_start = std::chrono::steady_clock::now();
      if (!cycle()) break;
      std::unique_lock lock(st->mutex);
      if (st->wake.wait_until(lock, cycle_start + period, [&] { return st->stopping; })) break;
    }
    std::lock_guard lock(st->mutex);
    st->running--;
    st->wake.notify_all();
  }).detach();
}

bool ReaderThreads::stop(std::chrono::milliseconds grace) {
  std::unique_lock lock(state_->mutex);
  if (state_->stopping) return state_->running == 0;
  state_->stopping = true;
  state_->wake.notify_all();
  return state_->wake.wait_for(lock, grace, [&] { return state_->running == 0; });
}

}  // namespace cpupower::sources
