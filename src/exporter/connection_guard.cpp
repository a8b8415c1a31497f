#include "exporter/connection_guard.hpp"

#include <algorithm>
#include <utility>

namespace cpupower::exporter {

struct ConnectionGuard::Entry {
  enum class State { kWaiting, kAnswering, kClosing };
  int fd = -1;
  std::uint64_t key = 0;
  std::uintptr_t worker = 0;
  State state = State::kWaiting;
  Clock::time_point since{};
  std::list<Entry*>::iterator pos{};  // in workers_[worker].waiting while kWaiting
  bool peer_closed = false;           // the client has shut its write side
  bool checking = false;              // in checks_, due at check_due
  Clock::time_point check_due{};
  std::list<Entry*>::iterator check_pos{};
};

ConnectionGuard::ConnectionGuard(std::size_t waiting_cap, Clock::duration request_timeout,
                                 SocketOps ops)
    : waiting_cap_(std::max<std::size_t>(waiting_cap, 1)),
      request_timeout_(request_timeout),
      ops_(std::move(ops)) {}

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
  drop_check(entry);
  entry->state = Entry::State::kClosing;
  ops_.close(entry->fd);
}

void ConnectionGuard::check_at(Entry* entry, Clock::time_point when) {
  entry->check_due = when;
  if (entry->checking) return;
  entry->checking = true;
  entry->check_pos = checks_.insert(checks_.end(), entry);
}

void ConnectionGuard::drop_check(Entry* entry) {
  if (!entry->checking) return;
  checks_.erase(entry->check_pos);
  entry->checking = false;
}

ConnectionGuard::Entry* ConnectionGuard::opened(int fd, std::uintptr_t worker,
                                                Clock::time_point now) {
  auto* entry = new Entry;
  entry->fd = fd;
  entry->worker = worker;
  std::lock_guard lock(mu_);
  entry->key = next_key_++;
  by_key_.emplace(entry->key, entry);
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

bool ConnectionGuard::response_done(Entry* entry, Clock::time_point now) {
  std::lock_guard lock(mu_);
  if (entry->state != Entry::State::kAnswering) return false;
  wait_from(entry, now);
  // Its client shut its write side while it was answered: only requests it had already
  // sent can follow.
  if (!entry->peer_closed) return false;
  check_at(entry, now + kHalfCloseGrace);
  return true;
}

void ConnectionGuard::closed(Entry* entry) {
  {
    std::lock_guard lock(mu_);
    stop_waiting(entry);
    drop_check(entry);
    by_key_.erase(entry->key);
  }
  delete entry;
}

std::uint64_t ConnectionGuard::key(const Entry* entry) const {
  return entry->key;  // set once, under the lock, before the entry is handed out
}

void ConnectionGuard::peer_closed(std::uint64_t key, Clock::time_point now) {
  std::lock_guard lock(mu_);
  const auto it = by_key_.find(key);
  if (it == by_key_.end()) return;
  Entry* entry = it->second;
  if (entry->peer_closed || entry->state == Entry::State::kClosing) return;
  entry->peer_closed = true;
  if (entry->state == Entry::State::kWaiting) check_at(entry, now + kHalfCloseGrace);
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
  for (auto it = checks_.begin(); it != checks_.end();) {
    Entry* entry = *it++;
    if (entry->check_due > now) {
      next = std::min(next, entry->check_due);
    } else if (entry->state != Entry::State::kWaiting) {
      drop_check(entry);  // being answered: looked at again when its response is done
    } else if (ops_.has_unread(entry->fd)) {
      check_at(entry, now + kHalfCloseGrace);  // the server has yet to read it all
      next = std::min(next, entry->check_due);
    } else {
      close_entry(entry);
      ++half_closed_;
    }
  }
  return next;
}

ConnectionGuard::Counts ConnectionGuard::counts() const {
  std::lock_guard lock(mu_);
  return {by_key_.size(), waiting_, evicted_, expired_, half_closed_};
}

}  // namespace cpupower::exporter
