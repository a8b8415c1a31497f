#pragma once
// One dcgm-exporter body -> the GPU leg's readings, one per GPU. Pure: no I/O, no clock.
//
// The rules (docs/formats.md, "dcgm-exporter exposition"; reason codes from
// artifacts/gpu_reasons.hpp), in dcgm-exporter's names; another exporter's profile
// (GpuExporterProfile below) renames the families and labels, the rules stay:
//   * The source metric is DCGM_FI_DEV_POWER_USAGE; a GPU is named by its `gpu` label (the
//     index, a non-negative integer) and its `UUID` label. Hostname and every other label are
//     ignored.
//   * A sample with a GPU_I_ID or GPU_I_PROFILE label is a MIG instance: rejected
//     (mig_instance_unsupported). DCGM reports the whole board's power on each instance, so
//     no instance can stand for the GPU and their sum would count the board several times.
//   * No DCGM_FI_DEV_POWER_USAGE sample at all: power_metric_missing.
//   * `gpu` missing or not a non-negative integer: gpu_index_missing. UUID missing or empty:
//     gpu_uuid_missing. Either way the sample gives no reading.
//   * The same index on more than one (non-MIG) power sample: duplicate_power_metric, and that
//     GPU has no reading at all: which sample is right cannot be told, and keeping either could
//     attribute another board's power (or the same board twice) to it; a GPU without a reading
//     is a visible gap that the coverage checks report, a wrong value is not.
//   * Power NaN, infinite, negative or above the physical bound (artifacts/limits.hpp):
//     invalid_power_value, and the GPU is left out.
//   * DCGM_FI_DEV_GPU_UTIL (0..100 %), DCGM_FI_PROF_SM_ACTIVE (0..1) and DCGM_FI_DEV_GPU_TEMP
//     (-273.15..200 C) are joined to a reading by gpu index, and by UUID when the sample has
//     one. Out of range, non-finite, ambiguous (two samples for one GPU), MIG-instance or
//     UUID-mismatched values are simply missing, never a reason.
//   * A body that cannot be parsed: `error` set, reasons = {endpoint_parse_error}, no GPUs.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "expo/parser.hpp"

namespace cpupower::scrape {

// Which families and labels of an exporter's body carry what: data, so that one parser reads
// dcgm-exporter and any other GPU exporter (an AMD GPU metrics exporter, say). dcgm() is
// dcgm-exporter's, and the rules above are written in its names.
struct GpuExporterProfile {
  std::string power_metric;  // watts
  std::string power_scope;   // what the watts measure (the manifest's power_scope)
  std::string index_label;
  std::string identity_label;                     // fills gpu_uuid
  std::vector<std::string> instance_labels;       // a sample with one is a sub-device: refused
  std::optional<std::string> util_metric;         // percent
  std::optional<std::string> sm_active_metric;    // 0..1
  std::optional<std::string> temperature_metric;  // Celsius

  static const GpuExporterProfile& dcgm();
  bool operator==(const GpuExporterProfile&) const = default;
};

// How a body is read: the profile, and optionally the only GPU indices the run expects (the
// visible-devices selection); samples of other indices are not read at all.
struct GpuReadOptions {
  GpuExporterProfile profile = GpuExporterProfile::dcgm();
  std::optional<std::vector<long long>> only_indices;

  static const GpuReadOptions& dcgm();  // dcgm-exporter's names, every GPU
};

struct GpuReading {
  long long gpu_index = 0;
  std::string uuid;
  double power_w = 0;
  std::optional<double> gpu_util_pct;
  std::optional<double> sm_active;
  std::optional<double> temperature_c;

  bool operator==(const GpuReading&) const = default;
};

struct GpuScrape {
  std::vector<GpuReading> gpus;      // gpu_index ascending, one per GPU
  std::vector<std::string> reasons;  // contract reason codes, each once, sorted
  std::optional<std::string> error;  // body could not be parsed at all
  std::uint64_t fingerprint = 0;     // hash of every reading's values (not the reasons)
};

// Parses one body and extracts the readings. Never throws. Without options: dcgm-exporter's
// names, every GPU.
GpuScrape gpu_readings_from_body(std::string_view body,
                                 const GpuReadOptions& options = GpuReadOptions::dcgm());

// The same, parsing into `scratch` (whose storage is reused from one call to the next: the
// GPU leg keeps one). Only the profile's families are kept from the parse; a line of any
// other family still fails the body when it is not valid exposition.
GpuScrape gpu_readings_from_body(std::string_view body, expo::ParseResult& scratch,
                                 const GpuReadOptions& options);

}  // namespace cpupower::scrape
