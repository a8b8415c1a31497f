#include "common/signals.hpp"

#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <ctime>
#include <iostream>

#include "common/log.hpp"

namespace cpupower::common {

sigset_t shutdown_set(bool relayed) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  if (relayed) sigaddset(&set, SIGUSR1);
  return set;
}

void block_shutdown_signals(bool relayed) {
  sigset_t set = shutdown_set(relayed);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  signal(SIGPIPE, SIG_IGN);
}

int wait_shutdown_signal(std::optional<std::chrono::milliseconds> timeout, bool relayed) {
  sigset_t set = shutdown_set(relayed);
  while (true) {
    int rc;
    if (timeout) {
      timespec ts{};
      ts.tv_sec = static_cast<time_t>(timeout->count() / 1000);
      ts.tv_nsec = static_cast<long>((timeout->count() % 1000) * 1000000);
      rc = sigtimedwait(&set, nullptr, &ts);
    } else {
      rc = sigwaitinfo(&set, nullptr);
    }
    if (rc > 0) return rc;
    if (errno == EAGAIN) return 0;
    if (errno != EINTR) return 0;
  }
}

const char* signal_name(int sig) {
  switch (sig) {
    case SIGINT:
      return "SIGINT";
    case SIGTERM:
      return "SIGTERM";
    case SIGUSR1:
      return "SIGUSR1";
    default:
      return "signal";
  }
}

void ignore_sigpipe() {
  signal(SIGPIPE, SIG_IGN);
}

bool stdout_reader_gone() {
  pollfd p{};
  p.fd = STDOUT_FILENO;
  p.events = POLLOUT;
  int rc;
  do {
    rc = ::poll(&p, 1, 0);
  } while (rc < 0 && errno == EINTR);
  return rc == 1 && (p.revents & POLLERR) != 0;
}

bool retire_closed_stdout() {
  static std::atomic<bool> retired{false};
  if (retired.load()) return true;
  if (!stdout_reader_gone()) return false;
  if (retired.exchange(true)) return true;
  init_logging(spdlog::level::off);
  std::cout.setstate(std::ios::badbit);
  std::fputs(
      "cpu-power: stdout was closed by its reader; the log is no longer written there (the "
      "run goes on)\n",
      stderr);
  return true;
}

}  // namespace cpupower::common
