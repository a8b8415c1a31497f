#include "sources/socket_watch.hpp"

#include <algorithm>
#include <map>
#include <utility>

#include "common/log.hpp"

namespace cpupower::sources {

std::vector<SocketUp> socket_states(const Snapshot& snapshot) {
  std::map<std::uint32_t, SocketUp> by_socket;
  const auto& sensors = *snapshot.sensors;
  for (std::size_t i = 0; i < sensors.size(); ++i) {
    const auto& s = sensors[i];
    if (!s.primary || !s.socket) continue;
    auto& state = by_socket[*s.socket];
    state.socket = *s.socket;
    state.sensors += (state.sensors.empty() ? "" : ",") + s.name;
    if (i < snapshot.readings.size() && snapshot.readings[i].watts) state.up = true;
  }
  std::vector<SocketUp> out;
  out.reserve(by_socket.size());
  for (auto& [socket, state] : by_socket) out.push_back(std::move(state));
  return out;
}

SocketWatch::SocketWatch(const Source& source, std::chrono::milliseconds period) {
  auto last = std::make_shared<std::map<std::uint32_t, bool>>();
  auto first_pass = std::make_shared<bool>(true);
  thread_.spawn(period, [&source, last, first_pass] {
    // The first look is one period in: a source started just now (DCGM's poller) may not
    // have recorded its first read yet.
    if (std::exchange(*first_pass, false)) return true;
    const auto states = socket_states(source.snapshot());
    auto log = common::logger("cpu_power_exporter");
    const auto live = std::count_if(states.begin(), states.end(), [](auto& s) { return s.up; });
    for (const auto& s : states) {
      const auto it = last->try_emplace(s.socket, true).first;
      if (it->second == s.up) continue;
      it->second = s.up;
      if (!s.up) {
        log->warn(
            "socket's primary power reading is withheld; the node's power is incomplete "
            "socket={} sensors={} live={} total={}",
            s.socket, s.sensors, live, states.size());
      } else {
        log->info(
            "socket's primary power reading is served again socket={} sensors={} live={} "
            "total={}",
            s.socket, s.sensors, live, states.size());
      }
    }
    return true;
  });
}

SocketWatch::~SocketWatch() {
  stop();
}

void SocketWatch::stop() {
  thread_.stop(std::chrono::seconds(2));  // only the first call waits
}

}  // namespace cpupower::sources
