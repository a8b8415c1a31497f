#pragma once
// The CPU leg of a run as the report sees it: per-socket tracks (power_w, rails, module_w,
// utilization) and per-node total_power_w tracks, from any CPU samples layout.

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "artifacts/host_samples.hpp"
#include "artifacts/row_issues.hpp"
#include "common/result.hpp"
#include "report/expected.hpp"
#include "report/track.hpp"

namespace cpupower::report {

// Sensor kinds of the one-row-per-rail layouts, in preference order for picking a socket's
// power sensor (legacy_rail_rank; upstream's order, so that both pick the same sensor).
enum class SensorKind { total, dcgm, cpu_rail, soc, dram, module, other };
SensorKind classify_sensor(std::string_view sensor);

struct CpuSocket {
  std::string host;
  long long socket = 0;
  Track power;  // the socket's power_w (or chosen sensor)
  std::array<std::optional<Track>, artifacts::kRails> rails;  // cpu_rail, soc, dram
  std::optional<Track> module;                                // superchip module_w
  std::array<std::optional<Track>, artifacts::kUtils>
      util;                                // kCpuUtilColumns order; lists, not maps
  std::string sensor;                      // provenance of power
  std::vector<std::string> other_sensors;  // long layouts: the sensors not chosen
  std::vector<std::string> sources;        // distinct `source` cells, first-seen order
  bool dcgm = false;                       // power is DCGM field 1130, the CPU rail only
  bool rapl = false;                       // power is an x86 RAPL package: a package boundary

  std::string label() const { return "cpu/" + host + "/socket" + std::to_string(socket); }
};

struct CpuNode {
  std::string host;
  Track total;  // total_power_w, one value per (host, timestamp), last row wins
};

struct CpuData {
  std::string path;
  std::string layout;  // "exporter v3", "host v4", ..., "empty"
  bool wide = false;
  std::vector<CpuSocket> sockets;  // by (host, socket)
  std::vector<CpuNode> nodes;      // by host; hosts with at least one total
  std::vector<std::string> hosts;  // every host seen, sorted
  bool empty = false;              // no header at all (a collector died before writing it)
  std::size_t rows = 0;            // data records, the skipped ones included
  std::size_t repeated_rows = 0;   // rows at an instant their host and socket already had
  artifacts::RowIssues issues;

  const CpuSocket* find_socket(std::string_view host, long long socket) const;
};

// A node's sockets: those the manifest expects when it says, else every socket the node has
// rows of anywhere in the file (a socket that goes silent mid-run is still expected).
std::vector<long long> expected_sockets(const CpuData& cpu, const std::string& host,
                                        const RunExpectations& expect);

// total_power_w is the node's only when every expected socket has a reading at that instant;
// a total taken while one had none is a part of the node, not the node. Such totals are
// dropped (a missing sample, never a smaller one), and said once per host.
std::vector<std::string> drop_partial_totals(CpuData& cpu, const RunExpectations& expect);

// A node of the run with fewer expected sockets than another node of it (the most any has):
// a power meter its exporter did not find when it started is never read, and the exporter
// does not serve it, so the manifest does not expect it either; the node's total is then
// short of the node with nothing else to say so. One warning per such node, naming both
// counts (nodes of different kinds in one run are said too).
std::vector<std::string> uneven_socket_counts(const CpuData& cpu, const RunExpectations& expect);
// The same warnings for nodes given as (host, expected socket ids), in the order given (the
// report from a metrics store gives the sockets it found); nodes without sockets are skipped.
std::vector<std::string> uneven_socket_warnings(
    const std::vector<std::pair<std::string, std::vector<long long>>>& nodes);

// Reads a CPU samples.csv of either leg. `threads` > 1 reads a large file in parallel parts.
Result<CpuData> load_cpu_samples(const std::string& path, unsigned threads);
Result<CpuData> parse_cpu_samples_text(std::string_view text);

}  // namespace cpupower::report
