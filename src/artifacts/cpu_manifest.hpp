#pragma once
// power/cpu/cpu_manifest.json: non-authoritative debugging metadata written once, at
// finalize (the CSV is the record). The reference keys come first, in the reference order,
// so existing consumers read it unchanged; the per-node extras after them say why a node
// has gaps.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "common/result.hpp"

namespace cpupower::artifacts {

inline constexpr std::string_view kCpuManifestFilename = "cpu_manifest.json";
inline constexpr int kCpuManifestSchemaVersion = 1;

struct CpuManifestNode {
  std::string resolved_mode = "unknown";  // acpi | dcgm | unknown
  std::uint64_t scrape_count = 0;
  std::uint64_t error_count = 0;  // scrapes that produced no rows
  // Extras beyond the reference:
  std::string endpoint_url;
  std::optional<std::string> last_error;
  std::uint64_t missed_slots = 0;  // schedule slots with no completed scrape
  std::optional<double> first_sample_unix;
  std::optional<double> last_sample_unix;
};

struct CpuManifest {
  std::string producer = "srt-slurm.cpu-power";  // the reference's value, for consumers
  std::optional<std::string> producer_git_commit;
  std::optional<double> started_at_unix;  // null when the collector never started
  double stopped_at_unix = 0;
  std::map<std::string, CpuManifestNode> nodes;  // by hostname, so sorted
};

// The JSON text: 2-space indent, keys in reference order, trailing newline.
std::string render_cpu_manifest(const CpuManifest& manifest);

// Writes the manifest atomically (temporary file, fsync, rename); never throws.
Status write_cpu_manifest(const std::string& path, const CpuManifest& manifest);

}  // namespace cpupower::artifacts
