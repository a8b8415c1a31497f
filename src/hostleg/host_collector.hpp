#pragma once
// `cpu-power host-collect`: the host leg's per-node collector. The same source ladder and
// readers as the exporter, with a second sink: every interval it takes a snapshot of the
// readers (never a sensor read by the sample, so a 150 ms firmware read cannot stretch the
// cadence), on the readers' own cycle where the source has one (ACPI: one wake-up a cycle
// for the read and the sample) or on a loop of its own, and appends one v5 row per socket to
// <output_dir>/<host>.csv, written to the OS once a second in one write kept whole or not at
// all (a SIGKILL loses at most that second and tears at most the last line). Files, in
// order:
//   <output_dir>/<host>.metadata.json, then <output_dir>/<host>.csv with its header, then
//   <ready_dir>/<host>.ready.json once the first sample's rows are written after it (the
//   head node starts the benchmark on it, and an energy window needs a sample before it);
//   <ready_dir>/<host>.error.json instead when no source can be established (exit 2).
// SIGINT, SIGTERM or SIGUSR1 (the stop srun relays) stop the readers, write the rows still
// waiting, rewrite the metadata with the outcome and exit 0 when rows were written, 3 when
// none were.

#include <string>

#include "sources/ladder.hpp"

namespace cpupower::hostleg {

struct HostCollectOptions : sources::NodeFlags {
  std::string output_dir;
  std::string ready_dir;
  double interval_seconds = 0.1;
  std::string hostname;  // empty: $SLURMD_NODENAME, else the short host name
};

inline constexpr int kExitNoRows = 3;
inline constexpr int kExitNoSource = 2;

// The node name the head node matches markers against: $SLURMD_NODENAME, else the host name
// up to its first dot.
std::string node_name();

// Runs until SIGINT/SIGTERM/SIGUSR1; they must already be blocked in every thread
// (common::block_shutdown_signals(true) before any thread starts). Returns the exit status.
int run_host_collect(const HostCollectOptions& options);

}  // namespace cpupower::hostleg
