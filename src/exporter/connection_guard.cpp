#include "exporter/connection_guard.hpp"

#include <algorithm>
#include <utility>

namespace cpupower::exporter {

struct ConnectionGuard::Entry {
  enum class State { kWaiting, kAnswering, kClosing };
  int fd = -1;
  std::uintptr_t worker = 0;
  State state = State::kWaiting;
  Clock::time_point since{};
  std::list<Entry*>::iterator pos{};  // in workers_[worker].waiting while kWaiting
};

ConnectionGuard::ConnectionGuard(std::size_t waiting_cap, Clock::duration request_timeout,
                                 std::function<void(int fd)> close_fd)
    : waiting_cap_(std::max<std::size_t>(waiting_cap, 1)),
      request_timeout_(request_timeout),
      close_fd_(std::move(close_fd)) {}

// libmicrohttpd reports every connection closed before MHD_stop_daemon returns, so by now
// every entry has been released through closed().
ConnectionGuard::~ConnectionGuard() = default;

void ConnectionGuard::wait_from(Entry* entry, Clock::time_point now) {
  auto& list = workers_[entry->worker].waiting;
  entry->state = Entry::State::kWaiting;
  entry->since = now;
  entry->pos = list.insert(list.end(), entry);
  ++waiting_;
}

void ConnectionGuard::stop_waiting(Entry* entry) {
  if (entry->state != Entry::State::kWaiting) return;
  workers_[entry->worker].waiting.erase(entry->pos);
  --waiting_;
}

void ConnectionGuard::close_entry(Entry* entry) {
  stop_waiting(entry);
  entry->state = Entry::State::kClosing;
  close_fd_(entry->fd);
}

ConnectionGuard::Entry* ConnectionGuard::opened(int fd, std::uintptr_t worker,
                                                Clock::time_point now) {
  auto* entry = new Entry;
  entry->fd = fd;
  entry->worker = worker;
  std::lock_guard lock(mu_);
  ++open_;
  wait_from(entry, now);
  auto& list = workers_[worker].waiting;
  if (list.size() > waiting_cap_) {
    close_entry(list.front());
    ++evicted_;
  }
  return entry;
}

void ConnectionGuard::request_complete(Entry* entry) {
  std::lock_guard lock(mu_);
  if (entry->state != Entry::State::kWaiting) return;
  stop_waiting(entry);
  entry->state = Entry::State::kAnswering;
}

void ConnectionGuard::response_done(Entry* entry, Clock::time_point now) {
  std::lock_guard lock(mu_);
  if (entry->state != Entry::State::kAnswering) return;
  wait_from(entry, now);
}

void ConnectionGuard::closed(Entry* entry) {
  {
    std::lock_guard lock(mu_);
    stop_waiting(entry);
    --open_;
  }
  delete entry;
}

ConnectionGuard::Clock::time_point ConnectionGuard::sweep(Clock::time_point now) {
  std::lock_guard lock(mu_);
  Clock::time_point next = now + request_timeout_;
  for (auto& [worker, w] : workers_) {
    while (!w.waiting.empty()) {
      Entry* oldest = w.waiting.front();
      const auto due = oldest->since + request_timeout_;
      if (due > now) {
        next = std::min(next, due);
        break;
      }
      close_entry(oldest);
      ++expired_;
    }
  }
  return next;
}

ConnectionGuard::Counts ConnectionGuard::counts() const {
  std::lock_guard lock(mu_);
  return {open_, waiting_, evicted_, expired_};
}

}  // namespace cpupower::exporter
