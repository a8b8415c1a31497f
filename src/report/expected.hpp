#pragma once
// What a run says it expected, beside what its samples files hold: the nodes of the CPU leg
// (cpu_manifest.json's `nodes`, or the host leg's manifest.json `expected_nodes`), each node's
// sockets (`sockets_expected`, `sockets_missing`), and the GPU leg's expected devices. The
// report checks the files against it, so a node, socket or device that is missing from a file
// is a warning in every window it touches, never a smaller figure said as if whole.

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "report/uncertainty.hpp"

namespace cpupower::report {

// A stretch the collector recorded a socket as missing from (cpu_manifest.json).
struct SocketGap {
  long long socket = 0;
  std::uint64_t rows = 0;
  std::optional<double> first_unix, last_unix;
};

struct CpuNodeExpect {
  std::optional<std::vector<long long>> sockets_expected;
  std::vector<SocketGap> sockets_missing;
  // What its socket readings average: cpu_manifest.json's average_interval_s, or the host
  // leg's node metadata (each socket total's average_interval_ms); unknown in older files.
  Averaging averaging;
};

struct RunExpectations {
  std::string cpu_manifest;                        // the CPU leg's manifest read, or ""
  std::optional<std::set<std::string>> cpu_nodes;  // when the manifest names them
  std::map<std::string, CpuNodeExpect> cpu_node;   // by host, from cpu_manifest.json
  std::string gpu_manifest;                        // the GPU leg's manifest.json, or ""
  std::optional<std::set<std::pair<std::string, long long>>> gpu_devices;
};

}  // namespace cpupower::report
