#include "artifacts/gpu_samples_out.hpp"

#include <cmath>

#include "artifacts/csv.hpp"
#include "artifacts/gpu_samples.hpp"

namespace cpupower::artifacts {
namespace {

bool finite_in(double value, double lo, double hi) {
  return std::isfinite(value) && value >= lo && value <= hi;
}

// ",value" when the reading is present and valid, else ",".
void append_reading(std::string& out, const std::optional<double>& value, bool (*valid)(double)) {
  out += ',';
  if (value && valid(*value)) append_number(out, *value);
}

}  // namespace

std::optional<std::string_view> gpu_samples_header(int schema_version) {
  switch (schema_version) {
    case kGpuSamplesSchemaV1:
      return kGpuHeaderV1;
    case kGpuSamplesSchemaV2:
      return kGpuHeaderV2;
    case kGpuSamplesSchemaV3:
      return kGpuHeaderV3;
    default:
      return std::nullopt;
  }
}

bool gpu_sample_writable(const GpuSampleOut& row) {
  return !row.hostname.empty() && !row.gpu_uuid.empty() && std::isfinite(row.timestamp_unix) &&
         std::isfinite(row.power_w) && row.power_w >= 0 && row.gpu_index >= 0;
}

bool gpu_util_pct_valid(double value) {
  return finite_in(value, 0, kGpuUtilPctMax);
}
bool gpu_sm_active_valid(double value) {
  return finite_in(value, 0, kGpuSmActiveMax);
}
bool gpu_temperature_c_valid(double value) {
  return finite_in(value, kGpuTemperatureMinC, kGpuTemperatureMaxC);
}

std::string format_gpu_row(const GpuSampleOut& row, int schema_version) {
  std::string out;
  out.reserve(128);
  append_gpu_row(out, row, schema_version);
  return out;
}

void append_gpu_row(std::string& out, const GpuSampleOut& row, int schema_version) {
  if (!gpu_samples_header(schema_version)) schema_version = kGpuSamplesSchemaV3;
  out += std::to_string(schema_version);
  out += ',';
  append_number(out, row.timestamp_unix);
  out += ',';
  out += std::to_string(row.scrape_seq);
  out += ',';
  append_cell(out, row.hostname);
  out += ',';
  out += std::to_string(row.gpu_index);
  out += ',';
  append_cell(out, row.gpu_uuid);
  out += ',';
  append_number(out, row.power_w);
  if (schema_version >= kGpuSamplesSchemaV2) {
    append_reading(out, row.gpu_util_pct, gpu_util_pct_valid);
    append_reading(out, row.sm_active, gpu_sm_active_valid);
  }
  if (schema_version >= kGpuSamplesSchemaV3) {
    append_reading(out, row.temperature_c, gpu_temperature_c_valid);
  }
  out += "\r\n";
}

}  // namespace cpupower::artifacts
