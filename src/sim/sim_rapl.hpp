#pragma once
// A simulated x86 node: writes a Linux powercap tree shaped like /sys/class/powercap on an
// x86 host with the intel_rapl driver (which serves Intel and AMD packages alike) and keeps
// its energy counters moving, so an exporter pointed at the root with --powercap-root reads
// it through the same code path as on hardware.
//
// The tree, as the kernel lays it out: the control type devices/virtual/powercap/intel-rapl/
// (`enabled`), each package zone intel-rapl:<S> below it and each subzone intel-rapl:<S>:<M>
// below its package; every zone holds name, energy_uj, max_energy_range_uj, enabled and its
// power-limit constraints. The class directory (the root) holds a relative link per control
// type and zone, each made once its zone's files are written.
//
// energy_uj is the integral of the zone's underlying power (the load, trace or constant model
// the Grace simulator uses, the trace's steps entered at their own times) since the start,
// plus the start value, in whole microjoules, modulo max_energy_range_uj + 1: from the maximum
// it wraps to 0. A new value every update interval (hardware updates about every
// millisecond: power from two reads is off by up to one update interval's share of the
// interval between the reads). In root-only mode energy_uj has mode 0400, as on kernels with
// the side-channel fix; otherwise 0444. The other attributes are 0444, `enabled` and the
// power limits 0644, as the kernel has them.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/result.hpp"
#include "sim/sim_node.hpp"

namespace cpupower::sim {

// max_energy_range_uj as the hardware has it: 2^32 energy-status units of 61.04 µJ (Intel)
// or 15.26 µJ (AMD).
inline constexpr std::uint64_t kIntelMaxEnergyRangeUj = 262'143'328'850;
inline constexpr std::uint64_t kAmdMaxEnergyRangeUj = 65'712'999'613;
std::uint64_t hardware_max_energy_range_uj(Profile profile);

// A zone of the profile where the tree has it.
struct RaplZoneInfo : ChannelSpec {
  std::string zone;         // "intel-rapl:0:1": its class entry
  std::string energy_path;  // absolute, through the class entry
};

class SimRaplNode {
 public:
  // `options.profile` must be an x86 one; the Grace-only settings (layout, averaging
  // interval, faults) do not apply, and faults are refused.
  explicit SimRaplNode(SimOptions options);
  ~SimRaplNode();  // stops

  // Writes the whole tree and the counters' first values, then starts the update thread
  // (none with `once`). An error for bad options, an unreadable proc_stat for the load
  // model, a bad trace file, or a root that holds something other than an earlier sim tree.
  Status start();
  void stop();  // idempotent; joins the update thread; files stay as they are

  std::vector<RaplZoneInfo> zones() const;
  // The counter as last written (µJ); nullopt for an unknown key or before start().
  std::optional<std::uint64_t> energy_uj(const std::string& key) const;
  // The energy written into a zone's counter since the start, unwrapped (J); nullopt as above.
  std::optional<double> energy_j(const std::string& key) const;
  // When the node started, on the system clock (Unix seconds): a trace's time 0.
  double started_unix() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace cpupower::sim
