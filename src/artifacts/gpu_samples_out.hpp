#pragma once
// Rows of the GPU leg's samples.csv as the collector writes them: one row per GPU per
// scrape, CRLF line ends, numbers as the shortest text that reads back to the same double,
// empty cells for readings the scrape did not have (docs/formats.md, "GPU leg"). The
// collector owns the file; this only formats.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace cpupower::artifacts {

inline constexpr std::string_view kGpuSamplesFilename = "samples.csv";
inline constexpr int kGpuSamplesSchemaV1 = 1;
inline constexpr int kGpuSamplesSchemaV2 = 2;
inline constexpr int kGpuSamplesSchemaV3 = 3;
inline constexpr int kGpuSamplesSchemaVersion = kGpuSamplesSchemaV3;  // what we write

struct GpuSampleOut {
  double timestamp_unix = 0;     // head-node clock, shared by every GPU of a host in a scrape
  std::uint64_t scrape_seq = 0;  // shared by every host in a collection cycle
  std::string hostname;
  long long gpu_index = 0;
  std::string gpu_uuid;
  double power_w = 0;
  std::optional<double> gpu_util_pct;
  std::optional<double> sm_active;
  std::optional<double> temperature_c;
};

// The header line of a samples schema version (1, 2 or 3), without a line end; nullopt for
// any other version.
std::optional<std::string_view> gpu_samples_header(int schema_version);

// Whether the strict reader would accept the row's required cells: non-empty hostname and
// gpu_uuid, finite timestamp_unix, finite power_w >= 0, gpu_index >= 0.
bool gpu_sample_writable(const GpuSampleOut& row);

// One row of `schema_version` (1, 2 or 3; anything else is 3) with its "\r\n": the first
// cell is the version, the columns are those of the version's header (v1 drops the
// utilization and temperature readings, v2 the temperature). An optional reading missing,
// not finite or out of its column's range (artifacts/layout.hpp) is an empty cell; hostname
// and gpu_uuid are quoted when they hold , " CR or LF. Rows that are not gpu_sample_writable
// are the caller's to refuse.
std::string format_gpu_row(const GpuSampleOut& row, int schema_version);
// The same row appended to `out` (the collector's buffer for a scrape's rows: no string of
// its own per row).
void append_gpu_row(std::string& out, const GpuSampleOut& row, int schema_version);
inline std::string format_gpu_v3_row(const GpuSampleOut& row) {
  return format_gpu_row(row, kGpuSamplesSchemaV3);
}

}  // namespace cpupower::artifacts
