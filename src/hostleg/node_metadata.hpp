#pragma once
// <host>.metadata.json: what a host collector measured and how, written before the first
// row and rewritten at exit with the outcome. Keys sorted, 2-space indent, trailing newline.
// Every key of the srtctl host collector is here (so its readers work unchanged), plus
// `module_power` (NVML) and `row_time`, which it never had.

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "sources/ladder.hpp"

namespace cpupower::hostleg {

inline constexpr int kMetadataSchemaVersion = 5;

struct RunInfo {
  std::string hostname;
  std::string requested_source;  // auto | acpi | rapl | dcgm
  double sample_interval_seconds = 0.1;
  double started_at_unix = 0;
  bool module_power = false;  // an NVML reader was started
};

struct RunOutcome {
  double ended_at_unix = 0;
  std::uint64_t sample_row_count = 0;
  std::uint64_t read_failure_count = 0;  // samples with no fresh socket reading
  // Rows written without module_w because NVML withheld the socket's module power, by reason
  // (sources::ModuleSocketState): its latest reading was stale, or its GPUs disagreed.
  std::uint64_t module_withheld_stale_rows = 0;
  std::uint64_t module_withheld_disagree_rows = 0;
};

// The description of the resolved source (ACPI channels, RAPL zones, or DCGM fields and
// entities).
nlohmann::json node_metadata(const RunInfo& info, const sources::ResolvedSource& source,
                             const std::optional<RunOutcome>& outcome = std::nullopt);

}  // namespace cpupower::hostleg
