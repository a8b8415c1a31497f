#pragma once
// Fault injection for `cpu-power sim-gpu`: the ways a dcgm-exporter endpoint misbehaves, for a
// window of time measured from the start, in the spirit of sim-node's channel faults
// (sim/faults.hpp) and with the same window syntax.

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>

#include "sim/faults.hpp"

namespace cpupower::sim {

struct GpuFault : FaultWindow {
  enum class Kind {
    slow,         // every response waits `delay` before it is sent
    hang,         // the request is read, never answered while the window lasts
    garbage,      // 200 with a body that is not the exposition format
    http500,      // 500 "internal server error", as dcgm-exporter answers a failed gather
    vanish,       // GPU `gpu` leaves the exposition (every one of its series)
    uuid_change,  // GPU `gpu` reports another UUID
  };
  Kind kind = Kind::slow;
  std::chrono::milliseconds delay{0};  // slow only
  std::uint32_t gpu = 0;               // vanish and uuid_change only
};

std::string_view gpu_fault_kind_name(GpuFault::Kind kind);

// Parses KIND[:ARG][@FROM_MS[-TO_MS]]: slow:MS, hang, garbage, http500, vanish:GPU,
// uuid-change:GPU; e.g. "slow:250@0-2000", "hang@5000", "vanish:1@3000-6000",
// "uuid-change:2@1500". An error saying what is wrong otherwise.
Result<GpuFault> parse_gpu_fault(std::string_view spec);

// What the faults make of a request arriving `elapsed` after the start.
struct GpuFaultState {
  std::chrono::milliseconds delay{0};  // the longest active slow delay
  // Set while a hang is active: the request is held until this offset from the start, or
  // until the simulator stops when nullopt (a hang without an end).
  bool hang = false;
  std::optional<std::chrono::milliseconds> hang_until;
  bool http500 = false;
  bool garbage = false;
  std::set<std::uint32_t> vanished;
  // The UUID generation of each GPU with an active uuid-change: one per active fault, so two
  // changes at different times give two different UUIDs.
  std::map<std::uint32_t, std::uint32_t> uuid_generation;
};

GpuFaultState gpu_fault_state_at(std::span<const GpuFault> faults,
                                 std::chrono::milliseconds elapsed);

// The body the garbage fault serves: binary noise and a broken sample line that no
// exposition parser accepts.
std::string_view garbage_body();

}  // namespace cpupower::sim
