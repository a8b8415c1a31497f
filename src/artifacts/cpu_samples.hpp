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
inline std::string format_v3_row(const CpuSampleRow& row) {
  return format_cpu_row(row, kCpuSchemaVersion);
}
inline std::string format_v2_row(const CpuSampleRow& row) {
  return format_cpu_row(row, kCpuSchemaVersionV2);
}

// The versions CpuSamplesWriter can write: 2 and 3.
bool is_writable_cpu_schema(int version);

// The header line (without its line end) of v1, v2 or v3; empty for any other version.
std::string_view cpu_header(int version);

// Why a row cannot be written (a non-finite timestamp_unix or power_w, an empty hostname,
// source or sensor), or nullopt when it can.
std::optional<std::string> cpu_row_problem(const CpuSampleRow& row);

// Appends v3 (or v2) rows to samples.csv (see RowAppender for what happens on failure).
class CpuSamplesWriter : public RowAppender {
 public:
  // Opens for appending rows of `schema_version` (2 or 3; anything else is an error). An
  // existing file must start with the header of that version, so a restarted collector
  // continues the same file instead of mixing layouts.
  static Result<std::unique_ptr<CpuSamplesWriter>> open(const std::string& path,
                                                        int schema_version = kCpuSchemaVersion);

  // Formats rows into the pending buffer. A row cpu_row_problem refuses is counted as
  // dropped. Returns false when any row was refused or the writer is closed.
  bool append(std::span<const CpuSampleRow> rows);

  int schema_version() const { return schema_version_; }  // of every row it writes

 private:
  CpuSamplesWriter(const std::string& path, int schema_version)
      : RowAppender(path, std::string(cpu_header(schema_version))),
        schema_version_(schema_version) {}

  int schema_version_ = kCpuSchemaVersion;
};

}  // namespace cpupower::artifacts
