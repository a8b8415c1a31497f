#pragma once
// One sample of the host leg: the base source's snapshot (and NVML's) pivoted into one v5
// row per socket. The rules are the exporter leg's, applied on the node:
// - power_w is the socket's primary reading (ACPI socket total, RAPL package, DCGM field
//   1130); a socket without a fresh one gets no row. Component rails fill cpu_rail_w, soc_w,
//   dram_w (RAPL: core, uncore, dram) and never substitute for power_w.
// - total_power_w is the sum of power_w over the sockets, present only when every
//   discovered primary sensor read back (never a partial node), the same on every row.
// - module_w comes from NVML only, and only onto a socket the CPU source produced.
// - cpu_util_* come from DCGM fields 1100..1104 of the socket, blank when missing.
// - Every row of a sample carries one time: the mean read time of the primaries it holds,
//   so the sample is dated by when its values were read, not when the loop woke.

#include <optional>
#include <string>
#include <vector>

#include "artifacts/host_samples.hpp"
#include "sources/source.hpp"

namespace cpupower::hostleg {

struct Sample {
  std::vector<artifacts::HostSampleRow> rows;  // ascending socket; empty: nothing fresh
  double timestamp_unix = 0;
  double read_spread_s = 0;  // the latest less the earliest read (not centre) of those primaries
};

// `mode` is the base source's ("acpi", "rapl" or "dcgm"); `module` may be null.
Sample socket_rows(const sources::Snapshot& base, std::string_view mode,
                   const sources::Snapshot* module, const std::string& hostname);

}  // namespace cpupower::hostleg
