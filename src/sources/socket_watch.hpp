#pragma once
// Whether each socket's primary power reading (the ACPI socket total, DCGM field 1130) is
// served. The sockets are those the base source found at discovery: its sensors are fixed
// for its lifetime, so a socket whose reading goes missing stays listed, as down, instead of
// vanishing from the exposition and leaving a node that looks whole with half its power.

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sources/reader_threads.hpp"
#include "sources/source.hpp"

namespace cpupower::sources {

struct SocketUp {
  std::uint32_t socket = 0;
  bool up = false;      // some primary sensor of the socket holds a fresh value
  std::string sensors;  // its primary sensors' names, comma-separated, for log lines

  bool operator==(const SocketUp&) const = default;
};

// Every socket with a primary sensor in `snapshot`, ascending.
std::vector<SocketUp> socket_states(const Snapshot& snapshot);

// Watches a running source's sockets on a thread of its own (every `period`, whether or not
// anyone scrapes): WARN when a socket stops producing its primary reading, INFO when it comes
// back. Every socket counts as up when the watch starts, so one that never produced a
// reading is named at the first pass, one period after the start (a source started just
// before may not have recorded its first read yet). The source must outlive the watch.
class SocketWatch {
 public:
  SocketWatch(const Source& source, std::chrono::milliseconds period);
  ~SocketWatch();  // stops and waits for the watch's cycle (it never blocks on a sensor)
  SocketWatch(const SocketWatch&) = delete;
  SocketWatch& operator=(const SocketWatch&) = delete;

  void stop();

 private:
  ReaderThreads thread_;
};

}  // namespace cpupower::sources
