#pragma once
// The CPU leg: cpu-power-exporter bodies -> per-socket rows of power/cpu/samples.csv (v3, or
// v2 for readers pinned to it)
// and cpu_manifest.json at the end (scrape/readings.hpp has the parsing rules).
//
// Row time: one timestamp per node per scrape, shared by all of that scrape's socket rows:
// the request midpoint minus the mean age the exporter reports for the socket totals
// (Readings::total_age_s) when it reports one. A scrape carrying the readings already
// written for that node is not written again.
//
// Sockets: a node's expected sockets are those its exporter lists in
// cpu_power_exporter_socket_up, with every socket a row was written for. A body that lacks
// one of them (listed at 0, or gone) makes the node degraded: its rows are written with
// total_power_w empty, since the sum over the sockets left is not the node's power, and the
// manifest counts them per missing socket.

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "artifacts/cpu_manifest.hpp"
#include "artifacts/cpu_samples.hpp"
#include "scrape/leg.hpp"

namespace cpupower::scrape {

struct CpuLegOptions {
  std::chrono::milliseconds collect_interval{1000};  // for telling a repeated reading
  std::optional<std::string> producer_git_commit;
  int samples_schema = artifacts::kCpuSchemaVersion;  // 2 or 3 (artifacts::is_writable_cpu_schema)
};

class CpuLeg final : public Leg {
 public:
  CpuLeg(std::size_t endpoints, CpuLegOptions options);

  std::string_view samples_filename() const override { return artifacts::kCpuSamplesFilename; }
  // None for a version the rows are not written in (v1): the collector refuses to start.
  std::string_view samples_header() const override {
    const int v = options_.samples_schema;
    return artifacts::is_writable_cpu_schema(v) ? artifacts::cpu_header(v) : "";
  }
  std::string_view manifest_filename() const override { return artifacts::kCpuManifestFilename; }
  BodyOutcome on_body(const BodyInput& input, std::string& lines) override;
  Status finalize(const CollectorStats& stats, std::optional<double> started_at_unix,
                  double stopped_at_unix, const std::string& manifest_path) override;

 private:
  // What was last written for a node, to tell a repeated scrape from a new reading.
  struct Written {
    std::optional<std::uint64_t> fingerprint;
    std::optional<double> read_unix;  // when the exporter reported sample ages
    double round_trip_s = 0;
  };
  bool same_reading(const Written& w, const Readings& readings, double read_unix,
                    double round_trip_s) const;

  // Which sockets a node has, and the rows written while one of them was missing.
  struct NodeSockets {
    std::set<std::uint32_t> expected;  // every socket socket_up listed or a row was written for
    std::map<std::uint32_t, artifacts::CpuManifestNode::SocketGap> missing;
    // The averaging interval of the rows written (Readings::average_interval_*), over the run.
    std::optional<double> average_min_s, average_max_s;
  };

  CpuLegOptions options_;
  std::vector<Written> written_;      // by endpoint
  std::vector<NodeSockets> sockets_;  // by endpoint
  expo::ParseResult parsed_;          // reused by every body: no allocation per scrape
};

}  // namespace cpupower::scrape
