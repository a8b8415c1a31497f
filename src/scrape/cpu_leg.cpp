#include "scrape/cpu_leg.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

#include "scrape/collector.hpp"

namespace cpupower::scrape {

CpuLeg::CpuLeg(std::size_t endpoints, CpuLegOptions options)
    : options_(std::move(options)), written_(endpoints), sockets_(endpoints) {}

bool CpuLeg::same_reading(const Written& w, const Readings& readings, double read_unix,
                          double round_trip_s) const {
  if (w.fingerprint != readings.fingerprint) return false;
  if (!readings.total_age_s || !w.read_unix) return true;
  // Equal values, but the ages can still show a newer sensor read (a steady sensor). The
  // read-time estimate is off by up to half a round trip on each side; a quarter interval
  // on top keeps jitter from passing for a new read.
  const double interval_s = std::chrono::duration<double>(options_.collect_interval).count();
  const double tolerance_s = interval_s / 4 + (round_trip_s + w.round_trip_s) / 2;
  return std::abs(read_unix - *w.read_unix) <= tolerance_s;
}

BodyOutcome CpuLeg::on_body(const BodyInput& input, std::string& lines) {
  BodyOutcome out;
  Readings readings = readings_from_body(input.body, parsed_);
  out.mode = readings.mode;
  out.duplicate_series = readings.duplicate_series;
  out.first_duplicate = std::move(readings.first_duplicate);
  if (readings.error) {
    out.reason = kReasonMalformed;
    out.detail = *readings.error;
    return out;
  }
  if (readings.rows.empty()) {
    out.reason = kReasonNoSockets;
    out.detail = "no socket power in the body (mode " + std::string(mode_name(readings.mode)) + ")";
    return out;
  }
  const double read_unix = input.midpoint_unix - readings.total_age_s.value_or(0.0);
  out.timestamp_unix = read_unix;
  // Missing: what the exporter says it lacks, and any socket of the node without a row here.
  auto& node = sockets_[input.endpoint_index];
  for (const auto& s : readings.socket_up) node.expected.insert(s.socket);
  std::set<std::uint32_t> missing(readings.sockets_missing.begin(), readings.sockets_missing.end());
  for (const auto socket : node.expected) {
    if (!std::ranges::count(readings.rows, socket, &SocketRow::socket_id)) missing.insert(socket);
  }
  out.sockets_missing.assign(missing.begin(), missing.end());
  auto& w = written_[input.endpoint_index];
  if (same_reading(w, readings, read_unix, input.round_trip_s)) {
    out.unchanged = true;
    return out;
  }
  artifacts::CpuSampleRow row;
  row.timestamp_unix = read_unix;
  row.hostname = input.hostname;
  for (const auto& r : readings.rows) {
    row.source = r.source;
    row.sensor = r.sensor;
    row.socket_id = r.socket_id;
    row.power_w = r.power_w;
    row.cpu_rail_w = r.cpu_rail_w;
    row.soc_w = r.soc_w;
    row.dram_w = r.dram_w;
    row.module_w = r.module_w;
    // A sum over some of the node's sockets must never pass for the node's total.
    row.total_power_w = missing.empty() ? std::optional(r.total_power_w) : std::nullopt;
    if (auto problem = artifacts::cpu_row_problem(row)) {
      if (out.refused++ == 0) out.refused_why = std::move(*problem);
      continue;
    }
    lines += artifacts::format_cpu_row(row, options_.samples_schema);
    ++out.rows;
    node.expected.insert(r.socket_id);
  }
  if (out.rows > 0 && readings.average_interval_min_s) {
    node.average_min_s =
        std::min(node.average_min_s.value_or(INFINITY), *readings.average_interval_min_s);
    node.average_max_s =
        std::max(node.average_max_s.value_or(-INFINITY), *readings.average_interval_max_s);
  }
  if (out.rows > 0) {
    for (const auto socket : missing) {
      auto& gap = node.missing[socket];
      gap.rows += out.rows;
      // The earliest and latest row times, not the first and last processed: two scrapes of
      // one reading (the final one at stop) can date it a few microseconds apart, either way.
      gap.first_unix = std::min(gap.first_unix.value_or(read_unix), read_unix);
      gap.last_unix = std::max(gap.last_unix.value_or(read_unix), read_unix);
    }
  }
  w.fingerprint = readings.fingerprint;
  w.read_unix = readings.total_age_s ? std::optional(read_unix) : std::nullopt;
  w.round_trip_s = input.round_trip_s;
  return out;
}

Status CpuLeg::finalize(const CollectorStats& stats, std::optional<double> started_at_unix,
                        double stopped_at_unix, const std::string& manifest_path) {
  artifacts::CpuManifest manifest{.producer_git_commit = options_.producer_git_commit,
                                  .started_at_unix = started_at_unix,
                                  .stopped_at_unix = stopped_at_unix,
                                  .nodes = {},
                                  .rows_written = stats.rows_written,
                                  .rows_dropped = stats.rows_dropped,
                                  .write_errors = stats.write_error_log,
                                  .samples_file_changes = stats.samples_file_changes,
                                  .samples_schema_version = options_.samples_schema,
                                  .clock_steps = stats.clock_steps};
  for (std::size_t i = 0; i < stats.nodes.size(); ++i) {
    const auto& node = stats.nodes[i];
    const auto& sockets = sockets_[i];  // both by endpoint
    manifest.nodes[node.hostname] = {
        .resolved_mode = std::string(mode_name(node.resolved_mode)),
        .scrape_count = node.scrape_count,
        .error_count = node.error_count,
        .endpoint_url = node.endpoint_url,
        .last_error = node.last_error,
        .missed_slots = node.missed_slots,
        .first_sample_unix = node.first_sample_unix,
        .last_sample_unix = node.last_sample_unix,
        .sockets_expected = {sockets.expected.begin(), sockets.expected.end()},
        .sockets_missing = sockets.missing,
        .status = sockets.missing.empty() && !node.degraded_scrapes ? "ok" : "degraded",
        .duplicate_series = node.duplicate_series,
        .average_interval_min_s = sockets.average_min_s,
        .average_interval_max_s = sockets.average_max_s};
  }
  return artifacts::write_cpu_manifest(manifest_path, manifest);
}

}  // namespace cpupower::scrape
