#pragma once
// The HTTP server's authentication thread: password checks that need bcrypt (50-100 ms each
// at cost 10, on purpose) run here, one at a time, never on a polling thread, so a client
// sending wrong passwords cannot hold up the scrapes of the others. The queue is bounded in
// all and per client address: a request that finds no room is answered at once (429) rather
// than queued, so a flood from a few addresses keeps neither memory nor every slot. An address
// whose last check failed may only queue while the queue is under half full: the other half is
// kept for addresses without a failure, so a scraper checking new credentials (after a
// restart) finds room however many failing addresses flood the queue.

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>

namespace cpupower::exporter {

class AuthQueue {
 public:
  // A job is called once: with cancelled=false on the authentication thread when its turn
  // comes, or with cancelled=true by stop() when it never ran.
  using Job = std::function<void(bool cancelled)>;

  AuthQueue(std::size_t capacity, std::size_t per_peer);
  ~AuthQueue();
  AuthQueue(const AuthQueue&) = delete;
  AuthQueue& operator=(const AuthQueue&) = delete;

  // Queues `job` for `peer` (a client address). Otherwise the job is dropped uncalled: `full`
  // when the queue holds `capacity` jobs, or `per_peer` of this peer's, counting the one
  // running (counted as refused); `stopped` once stop() has begun.
  enum class Submit { queued, full, stopped };
  Submit submit(const std::string& peer, Job job);

  // The outcome of `peer`'s check: a refused one marks the address as failing (it then only
  // queues below half the capacity), an accepted one clears the mark. At most
  // kMaxFailingPeers addresses are remembered; past that the marks are forgotten at once.
  void note_result(const std::string& peer, bool accepted);
  static constexpr std::size_t kMaxFailingPeers = 4096;

  // Lets the running job finish, calls every queued one with cancelled=true, and joins the
  // thread; later submits are refused. Safe to call more than once.
  void stop();

  // Jobs queued or running.
  std::size_t pending() const;

  struct Counts {
    std::uint64_t ran = 0;
    std::uint64_t refused = 0;  // queue or peer full
  };
  Counts counts() const;

 private:
  void loop();

  struct Entry {
    std::string peer;
    Job job;
  };
  const std::size_t capacity_;
  const std::size_t per_peer_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Entry> queue_;
  std::map<std::string, std::size_t> held_;  // queued or running jobs per peer
  std::set<std::string> failing_;            // peers whose last check was refused
  std::size_t running_ = 0;
  bool stopping_ = false;
  Counts counts_;
  std::thread thread_;
};

}  // namespace cpupower::exporter
