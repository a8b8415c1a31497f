#pragma once
// The schedule both simulators keep: one thread that works at the times it chooses until
// stop(), and waits of any thread that stop() cuts short.

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>

namespace cpupower::sim {

using Clock = std::chrono::steady_clock;

inline double seconds(Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

// The time after `next` on a fixed-rate schedule: one `step` on, or one step from `now` when
// the machine was too busy to keep the schedule (the missed ticks are skipped, not bunched).
inline Clock::time_point next_tick(Clock::time_point next, Clock::duration step,
                                   Clock::time_point now) {
  next += step;
  return next <= now ? now + step : next;
}

class Ticker {
 public:
  ~Ticker() { stop(); }

  // A thread that calls tick(now) at `first`, then at each time tick returns, until stop().
  void start(Clock::time_point first, std::function<Clock::time_point(Clock::time_point)> tick) {
    thread_ = std::thread([this, first, tick = std::move(tick)] {
      for (auto at = first; !wait_until(at);) at = tick(Clock::now());
    });
  }

  // Waits until `until` (nullopt: for ever) or stop(); true when stopped.
  bool wait_until(std::optional<Clock::time_point> until) {
    std::unique_lock lock(mu_);
    const auto stopped = [this] { return stopping_; };
    if (until) return cv_.wait_until(lock, *until, stopped);
    cv_.wait(lock, stopped);
    return true;
  }

  // Idempotent, and for good: every wait ends, now and later, and the thread is joined.
  void stop() {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace cpupower::sim
