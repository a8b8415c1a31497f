#pragma once
// power/cpu/samples.csv: the exporter leg's one file of record. The writer produces schema
// v3 by default, or v2 (v3 without module_w) for readers pinned to the v1/v2 headers
// (docs/formats.md, docs/compatibility.md); the report reads every version
// (report/cpu_load.cpp). Nothing here throws on I/O failure: the collector is best-effort.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "artifacts/layout.hpp"
#include "artifacts/row_appender.hpp"
#include "common/result.hpp"

namespace cpupower::artifacts {

inline constexpr std::string_view kCpuSamplesFilename = "samples.csv";
inline constexpr int kCpuSchemaVersionV1 = 1;
inline constexpr int kCpuSchemaVersionV2 = 2;
inline constexpr int kCpuSchemaVersion = 3;

inline const std::string kCpuHeaderV1 = csv_header(kCpuColumns, 1);
inline const std::string kCpuHeaderV2 = csv_header(kCpuColumns, 2);
inline const std::string kCpuHeaderV3 = csv_header(kCpuColumns, 3);

// One row of any version. v1 rows are one rail each: `sensor` is the raw label (e.g. "Grace
// Power Socket 0"), power_w that rail's value, and the rail columns are absent.
struct CpuSampleRow {
  int schema_version = kCpuSchemaVersion;
  double timestamp_unix = 0;
  std::string hostname;
  std::string source;  // acpi | dcgm (v2, v3); anything non-empty in v1
  std::string sensor;
  std::uint32_t socket_id = 0;
  double power_w = 0;
  std::optional<double> cpu_rail_w;
  std::optional<double> soc_w;
  std::optional<double> dram_w;
  std::optional<double> module_w;
  std::optional<double> total_power_w;

  bool operator==(const CpuSampleRow&) const = default;
};

// Shortest text that reads back to the same double (std::to_chars), e.g. 94.29, 1e-05, 94.
std::string format_double(double value);

// A v2 or v3 line (anything but 2 is v3) with its "\r\n" terminator (the csv module's
// default dialect): schema_version is the version written, whatever the row says; v2 is v3
// without module_w. Missing or non-finite optional values are empty cells; cells holding , "
// CR or LF are quoted.
std::string format_cpu_row(const CpuSampleRow& row, int schema_version);

// The versions a collector writes: 2 and 3 (v1 is read only).
bool is_writable_cpu_schema(int version);

// The header line (without its line end) of v1, v2 or v3; empty for any other version.
std::string_view cpu_header(int version);

// Why a row cannot be written (a non-finite timestamp_unix or power_w, an empty hostname,
// source or sensor), or nullopt when it can.
std::optional<std::string> cpu_row_problem(const CpuSampleRow& row);

}  // namespace cpupower::artifacts
