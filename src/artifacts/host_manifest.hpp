#pragma once
// <cpu_dir>/manifest.json of the host-collector leg. The run session writes it with status
// "starting", then "running" or "failed"; the merge writes the final one, "complete" or
// "incomplete". The keys existing consumers read come first, in their order, so those
// consumers read the file unchanged; our extras follow them.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.hpp"

// Its own namespace, so that the host leg takes these names as they are (hostleg/manifest.hpp).
namespace cpupower::artifacts::host {

inline constexpr std::string_view kManifestFilename = "manifest.json";
inline constexpr int kManifestSchemaVersion = 1;

inline constexpr std::string_view kStatusStarting = "starting";
inline constexpr std::string_view kStatusRunning = "running";
inline constexpr std::string_view kStatusFailed = "failed";
inline constexpr std::string_view kStatusComplete = "complete";
inline constexpr std::string_view kStatusIncomplete = "incomplete";

struct HostManifest {
  // The keys existing consumers read, in the order they are written.
  std::string job_id;
  std::string run_name;
  std::string status = std::string(kStatusStarting);
  bool required = false;
  std::string requested_source = "auto";
  double sample_interval_seconds = 0.1;
  std::vector<std::string> expected_nodes;
  std::vector<std::string> observed_nodes;
  std::vector<std::string> missing_nodes;
  std::optional<long long> sample_row_count;  // written as 0 when unset; read as the file has it
  std::vector<std::string> reason_codes;
  std::vector<std::string> failed_processes;
  std::optional<std::string> producer_git_commit;  // null when unknown
  // host -> its metadata.json object, in the file's own key order
  std::map<std::string, nlohmann::ordered_json> node_metadata;
  double updated_at_unix = 0;

  // Extras, after those keys.
  std::uint64_t malformed_rows = 0;
  std::uint64_t torn_rows = 0;
  std::uint64_t dropped_groups = 0;  // long-layout sockets with no primary reading
  std::vector<std::string> malformed_files;
  std::map<std::string, std::string> ready_errors;  // host -> error marker text
  std::vector<std::string> problems;                // the first few, naming file and line
};

// The JSON text: 2-space indent, keys in the order above, trailing newline. Invalid UTF-8
// in any string is replaced rather than thrown on.
std::string render_host_manifest(const HostManifest& manifest);

// Writes the manifest atomically (temporary file, fsync, rename). An error on failure; never
// throws.
Status write_host_manifest(const std::string& path, const HostManifest& manifest);

// Reads a manifest back, leniently: a key that is missing or of another type keeps its
// default, so a manifest from an older writer (or one cut short by the run session's
// status updates) still yields what it has; only `status` (empty) and `sample_row_count`
// (nullopt) say that the file has none. An error when the file cannot be read or is not a
// JSON object. Never throws.
Result<HostManifest> parse_host_manifest(std::string_view text);
Result<HostManifest> read_host_manifest(const std::string& path);

}  // namespace cpupower::artifacts::host
