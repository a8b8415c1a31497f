#pragma once
// power/cpu/cpu_manifest.json: non-authoritative debugging metadata written once, at
// finalize (the CSV is the record). The keys existing consumers read come first, in their
// order, so they read it unchanged; the per-node extras after them say why a node has gaps,
// and the samples.csv keys after `nodes` why the file has fewer rows than were collected.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.hpp"

namespace cpupower::artifacts {

inline constexpr std::string_view kCpuManifestFilename = "cpu_manifest.json";
inline constexpr int kCpuManifestSchemaVersion = 1;

struct CpuManifestNode {
  std::string resolved_mode = "unknown";  // acpi | rapl | dcgm | unknown
  std::uint64_t scrape_count = 0;
  std::uint64_t error_count = 0;  // scrapes that produced no rows
  // Extras, after the keys existing consumers read:
  std::string endpoint_url;
  std::optional<std::string> last_error;
  std::uint64_t missed_slots = 0;  // schedule slots with no completed scrape
  std::optional<double> first_sample_unix;
  std::optional<double> last_sample_unix;
  // The node's sockets, after the keys above (docs/formats.md, CPU manifest):
  std::vector<std::uint32_t> sockets_expected;  // ascending
  struct SocketGap {
    std::uint64_t rows = 0;            // the node's rows written without this socket
    std::optional<double> first_unix;  // row times of the first and last of them
    std::optional<double> last_unix;
  };
  std::map<std::uint32_t, SocketGap> sockets_missing;  // by socket
  std::string status = "ok";           // "degraded" when a scrape lacked one of sockets_expected
  std::uint64_t duplicate_series = 0;  // series repeated within a body, over the run
  // The averaging interval of the readings behind power_w (the exporter's
  // cpu_power_exporter_average_interval_seconds), smallest and largest over the run's rows;
  // written as {"min": s, "max": s}, or null when no scrape said (DCGM, older exporters).
  std::optional<double> average_interval_min_s, average_interval_max_s;
};

// One kind of samples.csv failure: every failed write, open or truncation with this text.
struct CpuManifestWriteError {
  std::string error;  // "<operation> <path>: <errno text>"
  std::uint64_t count = 0;
  std::optional<double> first_unix;
  std::optional<double> last_unix;
};

// samples.csv deleted, replaced, moved or truncated under the running collector.
struct CpuManifestFileChange {
  std::optional<double> at_unix;  // when the collector noticed (at its next flush)
  std::string change;             // deleted | replaced | moved | truncated
  std::uint64_t rows_in_old_file = 0;
};

// The wall clock stepped against the monotonic one between two collector cycles.
struct CpuManifestClockStep {
  double at_unix = 0;  // the wall clock just after the step
  double step_s = 0;   // negative: back
};

struct CpuManifest {
  std::string producer = "srt-slurm.cpu-power";  // the value consumers check
  std::optional<std::string> producer_git_commit;
  std::optional<double> started_at_unix;  // null when the collector never started
  double stopped_at_unix = 0;
  std::map<std::string, CpuManifestNode> nodes;  // by hostname, so sorted
  // samples.csv, after the keys existing consumers read:
  std::uint64_t rows_written = 0;                   // handed to the OS, over the run
  std::uint64_t rows_dropped = 0;                   // collected but never written
  std::vector<CpuManifestWriteError> write_errors;  // in the order first seen
  std::vector<CpuManifestFileChange> samples_file_changes;
  // Of samples.csv's rows: 2 or 3 (--cpu-samples-schema); none only in a file read back that
  // has none.
  std::optional<int> samples_schema_version = 3;
  // Last, and only when there was one: row times on either side of a step are on different
  // clocks.
  std::vector<CpuManifestClockStep> clock_steps;
};

// The JSON text: 2-space indent, existing consumers' keys first in their order, trailing
// newline.
std::string render_cpu_manifest(const CpuManifest& manifest);

// Writes the manifest atomically (temporary file, fsync, rename); never throws.
Status write_cpu_manifest(const std::string& path, const CpuManifest& manifest);

// Reads back what a consumer checks, leniently (a key of another type keeps its default):
// producer, the nodes with their resolved_mode, and samples_schema_version (none when the
// file has none: writers before it). The other keys keep their defaults. An error, "not JSON" or
// "not an object with "producer" and "nodes"", when the text is no such manifest. Never throws.
Result<CpuManifest> parse_cpu_manifest(std::string_view text);

}  // namespace cpupower::artifacts
