#pragma once
// Rate limiting of the security log: each kind of refusal (wrong password, no credentials,
// plain HTTP on the TLS port, TLS handshake failure, unverified client certificate) is logged
// once per peer address, not once per request, so that a client retrying every second, or a
// flood, never floods the log. The remembered (kind, address) pairs are bounded: past
// `capacity` the least recently seen is forgotten (and would be logged again if it came
// back). Everything is counted, logged or not.

#include <cstddef>
#include <cstdint>
#include <list>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

namespace cpupower::exporter {

class PeerLogLimiter {
 public:
  explicit PeerLogLimiter(std::size_t capacity = 4096);

  // Counts an event of `kind` from `peer`; true when it should be logged: the first time this
  // (kind, peer) is seen, or the first time since it was forgotten.
  bool first(std::string_view kind, std::string_view peer);

  // Events per kind since construction, logged or not.
  std::map<std::string, std::uint64_t> counts() const;
  // Events not logged because their (kind, peer) was remembered.
  std::uint64_t suppressed() const;
  std::size_t remembered() const;

 private:
  const std::size_t capacity_;
  mutable std::mutex mu_;
  std::list<std::string> lru_;  // "kind\0peer", most recent first
  std::unordered_map<std::string, std::list<std::string>::iterator> index_;
  std::map<std::string, std::uint64_t> counts_;
  std::uint64_t suppressed_ = 0;
};

}  // namespace cpupower::exporter
