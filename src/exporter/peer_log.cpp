#include "exporter/peer_log.hpp"

#include <algorithm>

namespace cpupower::exporter {

PeerLogLimiter::PeerLogLimiter(std::size_t capacity)
    : capacity_(std::max<std::size_t>(capacity, 1)) {}

bool PeerLogLimiter::first(std::string_view kind, std::string_view peer) {
  std::string key;
  key.reserve(kind.size() + 1 + peer.size());
  key.append(kind).push_back('\0');
  key.append(peer);
  std::lock_guard lock(mu_);
  ++counts_[std::string(kind)];
  if (const auto it = index_.find(key); it != index_.end()) {
    lru_.splice(lru_.begin(), lru_, it->second);
    ++suppressed_;
    return false;
  }
  lru_.push_front(std::move(key));
  index_.emplace(lru_.front(), lru_.begin());
  if (lru_.size() > capacity_) {
    index_.erase(lru_.back());
    lru_.pop_back();
  }
  return true;
}

std::map<std::string, std::uint64_t> PeerLogLimiter::counts() const {
  std::lock_guard lock(mu_);
  return counts_;
}

std::uint64_t PeerLogLimiter::suppressed() const {
  std::lock_guard lock(mu_);
  return suppressed_;
}

std::size_t PeerLogLimiter::remembered() const {
  std::lock_guard lock(mu_);
  return lru_.size();
}

}  // namespace cpupower::exporter
