#pragma once
// One dcgm-exporter body -> the GPU leg's readings, one per GPU. Pure: no I/O, no clock.
//
// The rules and the reason code each refusal carries (artifacts/gpu_reasons.hpp) are stated
// once, in docs/formats.md ("What the GPU leg reads"), in dcgm-exporter's names; another
// exporter's profile (GpuExporterProfile below) renames the families and labels, the rules
// stay. In short: one reading per GPU index with a UUID and a power value within the bound;
// MIG instances, duplicated indices and unnamed GPUs give none; the optional metrics join a
// reading by index (and UUID), and are missing, never a reason, when they cannot.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "expo/parser.hpp"

namespace cpupower::scrape {

// Which families and labels of an exporter's body carry what: data, so that one parser reads
// dcgm-exporter and any other GPU exporter (an AMD GPU metrics exporter, say). dcgm() is
// dcgm-exporter's, and the rules are written in its names.
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
