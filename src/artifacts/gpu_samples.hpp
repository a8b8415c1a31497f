#pragma once
// The GPU (DCGM) leg as the energy report reads it: <power_dir>/samples.csv, one row per
// GPU per scrape (v1; v2 adds gpu_util_pct and sm_active; v3 adds temperature_c), and the
// roles in manifest.json's expected_devices. Read by column name, as a csv.DictReader reads
// it; blank or unparsable cells are missing values, never zeros.

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "artifacts/layout.hpp"
#include "artifacts/row_issues.hpp"
#include "common/result.hpp"

namespace cpupower::artifacts {

inline const std::string kGpuHeaderV1 = csv_header(kGpuColumns, 1);
inline const std::string kGpuHeaderV2 = csv_header(kGpuColumns, 2);
inline const std::string kGpuHeaderV3 = csv_header(kGpuColumns, 3);

// Utilization columns the report summarises, in name order.
inline constexpr std::string_view kGpuUtilColumns[] = {"gpu_util_pct", "sm_active"};
inline constexpr std::size_t kGpuUtils = std::size(kGpuUtilColumns);

struct GpuSampleRow {
  double timestamp_unix = 0;
  std::uint32_t host = 0;  // index into GpuSamplesFile::hosts
  std::uint32_t line = 0;  // where the row starts in the file (saturating)
  long long gpu_index = 0;
  std::optional<double> power_w;
  std::optional<double> util[kGpuUtils];  // kGpuUtilColumns order
};

// Why a repeated instant was dropped (RowIssues reason).
inline constexpr std::string_view kRepeatedInstantReason =
    "a repeat of an earlier row's hostname, gpu_index and timestamp_unix (each instant counts "
    "once)";

struct GpuSamplesFile {
  std::vector<std::string> hosts;
  std::vector<GpuSampleRow> rows;  // file order
  bool has_util_column[kGpuUtils] = {};
  std::size_t rows_read = 0;      // data records, the skipped ones included
  std::size_t repeated_rows = 0;  // rows dropped as repeats of an earlier row's instant
  bool empty = false;             // no record at all, not even a header
  RowIssues issues;               // rows skipped and readings read as missing, per reason
};

// An error when the file cannot be read or its first line is no usable header: not a CSV
// header (damage, NUL bytes), a column named twice, or one of timestamp_unix, hostname,
// gpu_index and power_w missing ("<path>: line 1: the header has no 'power_w' column (...)").
// Such a file has no samples to report, and a report without them would be wrong, not
// smaller. Rows that cannot be used are skipped and counted in `issues`; so is a row that
// repeats an earlier row's (hostname, gpu_index, timestamp_unix), the first one kept.
Result<GpuSamplesFile> read_gpu_samples(const std::string& path);
Result<GpuSamplesFile> parse_gpu_samples(std::string_view text);  // the same, without a path

// (hostname, gpu_index) -> the worker roles assigned to that GPU.
using GpuRoles = std::map<std::pair<std::string, long long>, std::set<std::string>>;

struct GpuManifestRoles {
  bool ok = false;
  std::string error;  // unreadable or malformed manifest, with the path
  GpuRoles roles;
  std::size_t skipped_devices = 0;  // entries without hostname, gpu_index or assignments
  // What the run says the file holds, when the manifest says it (a minimal manifest with
  // expected_devices alone is read too): the (hostname, gpu_index) of every expected device,
  // the rows the strict reader kept, the finalized file's SHA-256 and the verdict.
  std::optional<std::set<std::pair<std::string, long long>>> expected_devices;
  std::optional<std::uint64_t> sample_row_count;
  std::optional<std::string> samples_sha256;
  std::optional<bool> publication_valid;
  std::vector<std::string> reason_codes;
};

GpuManifestRoles read_gpu_manifest_roles(const std::string& path);
GpuManifestRoles parse_gpu_manifest_roles(std::string_view json_text);

}  // namespace cpupower::artifacts
