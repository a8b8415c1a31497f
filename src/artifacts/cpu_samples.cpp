#include "artifacts/cpu_samples.hpp"

#include <cmath>

#include "artifacts/csv.hpp"

namespace cpupower::artifacts {

std::string format_double(double value) {
  std::string out;
  append_number(out, value);
  return out;
}

std::string format_cpu_row(const CpuSampleRow& row, int version) {
  if (version != kCpuSchemaVersionV2) version = kCpuSchemaVersion;
  std::string out;
  out.reserve(128);
  append_row(out, kCpuColumns, version, version, row.timestamp_unix, row.hostname, row.source,
             row.sensor, row.socket_id, row.power_w, row.cpu_rail_w, row.soc_w, row.dram_w,
             row.module_w, row.total_power_w);
  return out;
}

bool is_writable_cpu_schema(int version) {
  return version == kCpuSchemaVersionV2 || version == kCpuSchemaVersion;
}

std::string_view cpu_header(int version) {
  static const std::string_view known[] = {kCpuHeaderV1, kCpuHeaderV2, kCpuHeaderV3};
  if (version < 1 || version > kCpuSchemaVersion) return {};
  return known[version - 1];
}

std::optional<std::string> cpu_row_problem(const CpuSampleRow& row) {
  if (std::isfinite(row.timestamp_unix) && std::isfinite(row.power_w) && !row.hostname.empty() &&
      !row.source.empty() && !row.sensor.empty()) {
    return std::nullopt;
  }
  return "refused row for host '" + row.hostname + "' socket " + std::to_string(row.socket_id) +
         ": needs a finite timestamp_unix and power_w and non-empty names";
}

}  // namespace cpupower::artifacts
