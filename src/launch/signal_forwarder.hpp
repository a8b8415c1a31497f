#pragma once
// SIGINT/SIGTERM sent to `cpu-power run` go to the benchmark command, and the session goes
// on to finalize its artifacts instead of dying with them half-written. The signals are
// blocked in every thread and taken by one waiter thread, so no async handler is involved.
// A terminal's Ctrl-C (si_code SI_KERNEL) already reached the command, which shares our
// process group, so it is recorded but not sent a second time.

#include <sys/types.h>

#include <atomic>
#include <functional>
#include <mutex>
#include <thread>

namespace cpupower::launch {

class SignalForwarder {
 public:
  SignalForwarder() = default;
  ~SignalForwarder();
  SignalForwarder(const SignalForwarder&) = delete;
  SignalForwarder& operator=(const SignalForwarder&) = delete;

  // Blocks SIGINT and SIGTERM in the calling thread, so call it before any other thread
  // exists: threads started later inherit the mask.
  void start();
  void stop();

  void set_target(pid_t pid) { target_.store(pid); }  // 0: nobody to forward to
  // Called on the waiter thread after each SIGINT/SIGTERM (empty: nothing); for what must
  // hurry when the session is signalled while it finalizes.
  void set_on_signal(std::function<void()> hook) {
    std::lock_guard lock(hook_mutex_);
    hook_ = std::move(hook);
  }
  bool interrupted() const { return last_signal_.load() != 0; }
  int last_signal() const { return last_signal_.load(); }

 private:
  std::atomic<pid_t> target_{0};
  std::atomic<int> last_signal_{0};
  std::atomic<bool> stop_{false};
  std::mutex hook_mutex_;
  std::function<void()> hook_;
  std::thread thread_;
};

}  // namespace cpupower::launch
