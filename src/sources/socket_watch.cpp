#include "sources/socket_watch.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "common/log.hpp"

namespace cpupower::sources {

std::vector<SocketUp> socket_states(const Snapshot& snapshot) {
  std::map<std::uint32_t, SocketUp> by_socket;
  std::set<std::uint32_t> silent;  // up, but a fresh reading does not say for how long
  const auto& sensors = *snapshot.sensors;
  for (std::size_t i = 0; i < sensors.size(); ++i) {
    const auto& s = sensors[i];
    if (!s.primary || !s.socket) continue;
    auto& state = by_socket[*s.socket];
    state.socket = *s.socket;
    state.sensors += (state.sensors.empty() ? "" : ",") + s.name;
    if (i >= snapshot.readings.size() || !snapshot.readings[i].watts) continue;
    state.up = true;
    // Up until its freshest primary reading is withheld.
    if (const auto fresh = snapshot.readings[i].fresh_for_s) {
      state.up_for_s = std::max(state.up_for_s.value_or(0.0), *fresh);
    } else {
      silent.insert(*s.socket);
    }
  }
  std::vector<SocketUp> out;
  out.reserve(by_socket.size());
  for (auto& [socket, state] : by_socket) {
    if (silent.count(socket) != 0) state.up_for_s.reset();
    out.push_back(std::move(state));
  }
  return out;
}

std::chrono::steady_clock::time_point next_socket_look(const std::vector<SocketUp>& states,
                                                       std::chrono::steady_clock::time_point now,
                                                       std::chrono::milliseconds period) {
  // While a socket is down, every period, to log it up again the moment it is.
  auto can_go_down = std::chrono::steady_clock::time_point::max();
  for (const auto& s : states) {
    if (!s.up || !s.up_for_s) return now + period;
    can_go_down =
        std::min(can_go_down, now + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                        std::chrono::duration<double>(*s.up_for_s)));
  }
  return look_again(can_go_down, now, period);
}

SocketWatch::SocketWatch(const Source& source, std::chrono::milliseconds period) {
  auto last = std::make_shared<std::map<std::uint32_t, bool>>();
  auto first_pass = std::make_shared<bool>(true);
  thread_.spawn_at([&source, last, first_pass,
                    period]() -> std::optional<std::chrono::steady_clock::time_point> {
    // The first look is one period in: a source started just now (DCGM's poller) may not
    // have recorded its first read yet.
    if (std::exchange(*first_pass, false)) return std::chrono::steady_clock::now() + period;
    const auto now = std::chrono::steady_clock::now();
    const auto states = socket_states(source.snapshot(now));
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
    return next_socket_look(states, now, period);
  });
}

SocketWatch::~SocketWatch() {
  stop();
}

void SocketWatch::stop() {
  thread_.stop(std::chrono::seconds(2));  // only the first call waits
}

}  // namespace cpupower::sources
