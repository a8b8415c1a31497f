#pragma once
// Slow-client protection for the HTTP server: the bookkeeping that decides which connections
// to close, kept apart from libmicrohttpd so that it can be tested on its own.
//
// A connection is *waiting* from its accept, and again from the end of each response, until
// its next request is complete (header block and any body): a client that trickles a request
// one byte at a time, or sends nothing at all, is waiting the whole time. Three rules bound
// what waiting connections can hold:
//   - a deadline: a connection waiting longer than `request_timeout` is closed, however
//     often bytes arrive (libmicrohttpd's own timeout is an idle timeout that each byte
//     resets);
//   - a cap per polling thread: when a new connection would make more than `waiting_cap`
//     connections of that thread wait, the one waiting longest is closed. The thread's
//     remaining slots stay free for connections with a complete request and for new arrivals,
//     so the server never sits at its connection limit with every slot held by slow clients;
//     a client that sends its request at once is never the oldest waiter;
//   - a half-close: a connection whose client has shut its write side (shutdown(SHUT_WR))
//     can never bring more bytes. libmicrohttpd 0.9.75 sometimes reads that end of stream
//     and keeps the connection anyway until its idle timeout, so the guard closes a waiting
//     connection whose client has half-closed once the socket holds no unread bytes and
//     `kHalfCloseGrace` has passed: libmicrohttpd has then read everything the client sent,
//     and a complete request would have been taken up (it is parsed and answered on the
//     same pass as the read that brings its last byte).
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

  static constexpr std::chrono::milliseconds kHalfCloseGrace{100};

  // How the guard acts on a connection's socket; both are called with the guard's lock held,
  // and the fd stays open until `closed` has been called for its entry.
  struct SocketOps {
    std::function<void(int fd)> close;       // shut it both ways
    std::function<bool(int fd)> has_unread;  // received bytes not yet read by the server
  };

  ConnectionGuard(std::size_t waiting_cap, Clock::duration request_timeout, SocketOps ops);
  ~ConnectionGuard();
  ConnectionGuard(const ConnectionGuard&) = delete;
  ConnectionGuard& operator=(const ConnectionGuard&) = delete;

  // A connection accepted by polling thread `worker` at `now`: it is waiting. Closes the
  // longest-waiting connection of that thread when the thread is over its cap.
  Entry* opened(int fd, std::uintptr_t worker, Clock::time_point now);
  // Its request is complete: no deadline applies while it is answered.
  void request_complete(Entry* entry);
  // Its response is done and the connection stays open: waiting again, from `now`. True when
  // that makes a half-closed connection due for a look at `now + kHalfCloseGrace`: the
  // caller must then have `sweep` run again (it may be waiting for a later time).
  bool response_done(Entry* entry, Clock::time_point now);
  // libmicrohttpd has let go of the connection (its fd is closed after this returns).
  void closed(Entry* entry);

  // A key for `entry` that stays unique after the entry is gone, for event loops that may
  // report a connection after libmicrohttpd has released it.
  std::uint64_t key(const Entry* entry) const;
  // The client of connection `key` (if still open) has shut its write side, seen at `now`.
  void peer_closed(std::uint64_t key, Clock::time_point now);

  // Closes every connection that has waited past the deadline and every half-closed one
  // due; returns when the next one falls due (at most now + request_timeout).
  Clock::time_point sweep(Clock::time_point now);

  // Counters since construction, for logs and tests.
  struct Counts {
    std::size_t open = 0;
    std::size_t waiting = 0;
    std::uint64_t evicted = 0;      // closed to make room under the cap
    std::uint64_t expired = 0;      // closed at the deadline
    std::uint64_t half_closed = 0;  // closed after their client shut its write side
  };
  Counts counts() const;

 private:
  struct Worker {
    std::list<Entry*> waiting;  // oldest first
  };
  void wait_from(Entry* entry, Clock::time_point now);
  void stop_waiting(Entry* entry);
  void close_entry(Entry* entry);
  void check_at(Entry* entry, Clock::time_point when);
  void drop_check(Entry* entry);

  const std::size_t waiting_cap_;
  const Clock::duration request_timeout_;
  const SocketOps ops_;
  mutable std::mutex mu_;
  std::unordered_map<std::uintptr_t, Worker> workers_;
  std::unordered_map<std::uint64_t, Entry*> by_key_;
  std::list<Entry*> checks_;  // half-closed connections to look at again
  std::uint64_t next_key_ = 1;
  std::size_t waiting_ = 0;
  std::uint64_t evicted_ = 0;
  std::uint64_t expired_ = 0;
  std::uint64_t half_closed_ = 0;
};

}  // namespace cpupower::exporter
