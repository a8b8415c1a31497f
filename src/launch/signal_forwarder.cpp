#include "launch/signal_forwarder.hpp"

#include <signal.h>

#include <ctime>

#include "common/signals.hpp"
#include "launch/process.hpp"

namespace cpupower::launch {
SignalForwarder::~SignalForwarder() {
  stop();
}

void SignalForwarder::start() {
  sigset_t set = common::shutdown_set();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  thread_ = std::thread([this] {
    const sigset_t waited = common::shutdown_set();
    while (!stop_.load()) {
      siginfo_t info{};
      const timespec tick{0, 100 * 1000 * 1000};  // to notice stop()
      const int sig = sigtimedwait(&waited, &info, &tick);
      common::retire_closed_stdout();  // a reader that went away costs the log, not the run
      if (sig <= 0) continue;
      last_signal_.store(sig);
      {
        std::lock_guard lock(hook_mutex_);
        if (hook_) hook_();
      }
      const pid_t target = target_.load();
      const char* name = common::signal_name(sig);  // SIGINT or SIGTERM
      if (target <= 0) {
        log()->warn("received {} before the command started; the session stops", name);
      } else if (info.si_code == SI_KERNEL) {
        log()->info("received {} from the terminal; the command got it too", name);
      } else {
        log()->info("forwarding {} to the command pid={}", name, target);
        ::kill(target, sig);
      }
    }
  });
}

void SignalForwarder::stop() {
  stop_.store(true);
  if (thread_.joinable()) thread_.join();
}

}  // namespace cpupower::launch
