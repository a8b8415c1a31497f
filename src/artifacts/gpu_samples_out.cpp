#include "artifacts/gpu_samples_out.hpp"

#include <cmath>

#include "artifacts/csv.hpp"
#include "artifacts/gpu_samples.hpp"
#include "artifacts/layout.hpp"

namespace cpupower::artifacts {
namespace {

constexpr std::size_t kUtilPct = column_of(kGpuColumns, "gpu_util_pct");
constexpr std::size_t kSmActive = column_of(kGpuColumns, "sm_active");
constexpr std::size_t kTemperatureC = column_of(kGpuColumns, "temperature_c");

}  // namespace

std::optional<std::string_view> gpu_samples_header(int schema_version) {
  static const std::string_view known[] = {kGpuHeaderV1, kGpuHeaderV2, kGpuHeaderV3};
  if (schema_version < 1 || schema_version > kGpuSamplesSchemaV3) return std::nullopt;
  return known[schema_version - 1];
}

bool gpu_sample_writable(const GpuSampleOut& row) {
  return !row.hostname.empty() && !row.gpu_uuid.empty() && std::isfinite(row.timestamp_unix) &&
         std::isfinite(row.power_w) && row.power_w >= 0 && row.gpu_index >= 0;
}

std::string format_gpu_row(const GpuSampleOut& row, int schema_version) {
  std::string out;
  out.reserve(128);
  append_gpu_row(out, row, schema_version);
  return out;
}

void append_gpu_row(std::string& out, const GpuSampleOut& row, int schema_version) {
  if (!gpu_samples_header(schema_version)) schema_version = kGpuSamplesSchemaV3;
  // An optional reading only when it is in its column's range; else an empty cell.
  const auto reading = [](std::size_t column, const std::optional<double>& v) {
    return v && in_bounds(kGpuColumns[column], *v) ? v : std::nullopt;
  };
  append_row(out, kGpuColumns, schema_version, schema_version, row.timestamp_unix, row.scrape_seq,
             row.hostname, row.gpu_index, row.gpu_uuid, row.power_w,
             reading(kUtilPct, row.gpu_util_pct), reading(kSmActive, row.sm_active),
             reading(kTemperatureC, row.temperature_c));
}

}  // namespace cpupower::artifacts
