#include "exporter/auth_queue.hpp"

namespace cpupower::exporter {

AuthQueue::AuthQueue(std::size_t capacity, std::size_t per_peer)
    : capacity_(capacity), per_peer_(per_peer), thread_([this] { loop(); }) {}

AuthQueue::~AuthQueue() {
  stop();
}

AuthQueue::Submit AuthQueue::submit(const std::string& peer, Job job) {
  {
    std::lock_guard lock(mu_);
    if (stopping_) return Submit::stopped;
    auto& held = held_[peer];
    const std::size_t limit = failing_.count(peer) ? capacity_ / 2 : capacity_;
    if (queue_.size() + running_ >= limit || held >= per_peer_) {
      if (held == 0) held_.erase(peer);
      ++counts_.refused;
      return Submit::full;
    }
    ++held;
    queue_.push_back({peer, std::move(job)});
  }
  cv_.notify_one();
  return Submit::queued;
}

void AuthQueue::note_result(const std::string& peer, bool accepted) {
  std::lock_guard lock(mu_);
  if (accepted) {
    failing_.erase(peer);
    return;
  }
  if (failing_.size() >= kMaxFailingPeers && !failing_.count(peer)) failing_.clear();
  failing_.insert(peer);
}

void AuthQueue::loop() {
  std::unique_lock lock(mu_);
  for (;;) {
    cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (stopping_) return;
    Entry e = std::move(queue_.front());
    queue_.pop_front();
    ++running_;
    lock.unlock();
    e.job(false);
    lock.lock();
    --running_;
    ++counts_.ran;
    if (auto it = held_.find(e.peer); it != held_.end() && --it->second == 0) held_.erase(it);
  }
}

void AuthQueue::stop() {
  std::deque<Entry> left;
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    left.swap(queue_);
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  for (auto& e : left) e.job(true);
}

std::size_t AuthQueue::pending() const {
  std::lock_guard lock(mu_);
  return queue_.size() + running_;
}

AuthQueue::Counts AuthQueue::counts() const {
  std::lock_guard lock(mu_);
  return counts_;
}

}  // namespace cpupower::exporter
