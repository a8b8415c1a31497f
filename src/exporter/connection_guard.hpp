#pragma once
// Slow-client protection for the HTTP server: the bookkeeping that decides which connections
// to close, kept apart from libmicrohttpd so that it can be tested on its own.
//
// A connection is *waiting* from its accept, and again from the end of each response, until
// its next request is complete (header block and any body): a client that trickles a request
// one byte at a time, or sends nothing at all, is waiting the whole time. Two rules bound
// what waiting connections can hold:
//   - a deadline: a connection waiting longer than `request_timeout` is closed, however
//     often bytes arrive (libmicrohttpd's own timeout is an idle timeout that each byte
//     resets);
//   - a cap per polling thread: when a new connection would make more than `waiting_cap`
//     connections of that thread wait, the one waiting longest is closed. The thread's
//     remaining slots stay free for connections with a complete request and for new arrivals,
//     so the server never sits at its connection limit with every slot held by slow clients;
//     a client that sends its request at once is never the oldest waiter.
// Closing means shutdown(2) of the socket; libmicrohttpd then sees the end of the stream and
// releases the connection on its own thread.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <list>
#include <mutex>
#include <unordered_map>

namespace cpupower::exporter {

class ConnectionGuard {
 public:
  using Clock = std::chrono::steady_clock;
  struct Entry;

  // `close_fd` is called, with the guard's lock held, for each connection to close; the fd
  // stays open until `closed` has been called for its entry.
  ConnectionGuard(std::size_t waiting_cap, Clock::duration request_timeout,
                  std::function<void(int fd)> close_fd);
  ~ConnectionGuard();
  ConnectionGuard(const ConnectionGuard&) = delete;
  ConnectionGuard& operator=(const ConnectionGuard&) = delete;

  // A connection accepted by polling thread `worker` at `now`: it is waiting. Closes the
  // longest-waiting connection of that thread when the thread is over its cap.
  Entry* opened(int fd, std::uintptr_t worker, Clock::time_point now);
  // Its request is complete: no deadline applies while it is answered.
  void request_complete(Entry* entry);
  // Its response is done and the connection stays open: waiting again, from `now`.
  void response_done(Entry* entry, Clock::time_point now);
  // libmicrohttpd has let go of the connection (its fd is closed after this returns).
  void closed(Entry* entry);

  // Closes every connection that has waited past the deadline; returns when the next one
  // falls due (now + request_timeout when nothing waits).
  Clock::time_point sweep(Clock::time_point now);

  // Counters since construction, for logs and tests.
  struct Counts {
    std::size_t open = 0;
    std::size_t waiting = 0;
    std::uint64_t evicted = 0;  // closed to make room under the cap
    std::uint64_t expired = 0;  // closed at the deadline
  };
  Counts counts() const;

 private:
  struct Worker {
    std::list<Entry*> waiting;  // oldest first
  };
  void wait_from(Entry* entry, Clock::time_point now);
  void stop_waiting(Entry* entry);
  void close_entry(Entry* entry);

  const std::size_t waiting_cap_;
  const Clock::duration request_timeout_;
  const std::function<void(int)> close_fd_;
  mutable std::mutex mu_;
  std::unordered_map<std::uintptr_t, Worker> workers_;
  std::size_t open_ = 0;
  std::size_t waiting_ = 0;
  std::uint64_t evicted_ = 0;
  std::uint64_t expired_ = 0;
};

}  // namespace cpupower::exporter
