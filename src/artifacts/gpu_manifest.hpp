#pragma once
// <power_dir>/manifest.json of the GPU (dcgm-exporter) leg: producer identity, topology,
// lifecycle status and the publication verdict, with the evidence it rests on (observed
// devices, window validations, artifact errors, the samples.csv digest). Every key of the
// contract's manifest, in its order (docs/formats.md, "GPU leg").

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "artifacts/gpu_contract.hpp"
#include "artifacts/gpu_samples_out.hpp"
#include "common/result.hpp"

namespace cpupower::artifacts {

inline constexpr std::string_view kGpuManifestFilename = "manifest.json";
// The producer name the package's consumers require: the offline validator and downstream
// aggregators reject a manifest whose `producer` is anything else (docs/compatibility.md).
inline constexpr std::string_view kGpuProducer = "srt-slurm.dcgm-power";
inline constexpr std::string_view kGpuSourceMetric = "DCGM_FI_DEV_POWER_USAGE";
inline constexpr std::string_view kGpuPowerUnit = "W";
inline constexpr std::string_view kGpuPowerScope = "gpu_device_board_as_reported_by_dcgm";

struct GpuUtilizationMetric {
  std::string column;         // the samples.csv column
  std::string source_metric;  // the DCGM field behind it
  std::string unit;           // percent | fraction
  bool operator==(const GpuUtilizationMetric&) const = default;
};

// The utilization columns of a samples schema version: none for v1; gpu_util_pct
// (DCGM_FI_DEV_GPU_UTIL, percent) and sm_active (DCGM_FI_PROF_SM_ACTIVE, fraction) from v2.
std::vector<GpuUtilizationMetric> gpu_utilization_metrics(int samples_schema_version);

struct GpuDcgmExporter {
  std::string container_image_resolved;               // the image as srun was given it
  std::optional<std::string> container_image_sha256;  // when the image is a regular file
  long long port = 0;
  std::string command;  // the exporter command line
  bool operator==(const GpuDcgmExporter&) const = default;
};

// The clock check of the session's nodes, as <log_dir>/clock_sync.json and the manifest's
// clock_sync_check hold it (docs/formats.md, Clock check):
//   {"schema_version": 1, "max_offset_seconds": B, "nodes": [{"hostname", "synchronized":
//    "yes"|"no"|"unknown", "offset_seconds": number|null, "tool": string|null,
//    "output_file": "clock_sync_<node>.out"|null}]}
struct ClockSyncNode {
  std::string hostname;
  std::string synchronized = "unknown";    // yes | no | unknown
  std::optional<double> offset_seconds;    // local minus the time source, where a tool reports one
  std::optional<std::string> tool;         // whose verdict it is; null when none gave one
  std::optional<std::string> output_file;  // relative to the log directory; null: none
  bool operator==(const ClockSyncNode&) const = default;
};
struct ClockSyncCheck {
  int schema_version = 1;
  double max_offset_seconds = 0;
  std::vector<ClockSyncNode> nodes;  // in the session's node order
  bool operator==(const ClockSyncCheck&) const = default;
};
// The JSON text of clock_sync.json: 2-space indent, this key order, trailing newline.
std::string clock_sync_check_json(const ClockSyncCheck& check);

struct GpuManifest {
  int schema_version = kGpuContractSchemaVersion;
  std::string producer = std::string(kGpuProducer);
  std::string producer_version;  // empty: this build's version
  std::optional<std::string> producer_git_commit;
  std::string source_metric = std::string(kGpuSourceMetric);
  std::string unit = std::string(kGpuPowerUnit);
  std::string power_scope = std::string(kGpuPowerScope);
  int samples_schema_version = kGpuSamplesSchemaVersion;
  std::vector<GpuUtilizationMetric> utilization_metrics =
      gpu_utilization_metrics(kGpuSamplesSchemaVersion);
  std::string timestamp_source = std::string(kGpuClockSource);
  std::string job_id;
  std::string run_name;
  double sample_interval_seconds = 0;
  double request_timeout_seconds = 0;
  std::optional<double> max_scrape_duration_seconds;  // the slowest scrape; null before one
  bool required = false;
  double started_at_unix = 0;
  std::optional<double> stopped_at_unix;  // null until terminal
  GpuRunStatus status = GpuRunStatus::starting;
  std::optional<bool> publication_valid;  // null until terminal; true only when complete
  GpuDcgmExporter dcgm_exporter;
  std::vector<GpuExpectedDevice> expected_devices;
  std::vector<GpuObservedDevice> observed_devices;  // sample_times_unix is not written
  std::vector<GpuWindowKey> expected_windows;
  std::uint64_t scrape_count = 0;             // collection cycles, the final one included
  std::uint64_t sample_row_count = 0;         // rows the strict reader kept
  std::optional<std::string> samples_sha256;  // of the finalized samples.csv bytes
  std::vector<GpuWindowValidation> window_validations;
  std::vector<GpuArtifactError> artifact_errors;
  // Nodes not synchronised, over the bound, or not checked.
  std::vector<std::string> clock_sync_failures;
  GpuReasons reason_codes;
  // The session's clock check; null when the manifest was written without one. An addition
  // to the contract's keys, so written last and read back only when present.
  std::optional<ClockSyncCheck> clock_sync_check;
  bool operator==(const GpuManifest&) const = default;
};

// The JSON text: 2-space indent, the contract's key order, null for unset, trailing newline.
std::string gpu_manifest_json(const GpuManifest& manifest);

// Writes it atomically (temporary file in the same directory, fsync, rename); never throws.
Status write_gpu_manifest(const std::string& path, const GpuManifest& manifest);

// Reads a manifest back. Every key must be present with its type (integers as JSON
// integers, finite numbers, the status a known one, reason codes strings); the error names
// the first key that is not. Keys beyond the contract's are ignored.
Result<GpuManifest> parse_gpu_manifest(std::string_view json_text);
Result<GpuManifest> read_gpu_manifest(const std::string& path);

// One element of an expected_devices list, read leniently: `device` when it has a string
// hostname and an integer gpu_index, with each assignment that has a string worker_role
// (the integers where they are integers); `assignments`: it has an assignments array;
// `error`: the first thing that keeps it from being a whole device, empty when none.
struct GpuExpectedDeviceEntry {
  std::optional<GpuExpectedDevice> device;
  bool assignments = false;
  std::string error;
};
GpuExpectedDeviceEntry read_gpu_expected_device(const nlohmann::json& d);

// `cpu-power run --gpu-roles FILE`: the expected devices, as a JSON array or an object
// holding one under "expected_devices" (a GPU manifest of an earlier run is such an
// object); every element a whole device, else the error names the file and the element.
Result<std::vector<GpuExpectedDevice>> read_gpu_roles_file(const std::string& path);

struct GpuSamplesCheck;

// Settles a terminal manifest from its evidence. `m` holds the producer's identity,
// settings, expected devices and windows, and the window audit (window_validations,
// artifact_errors); the strict samples check gives the observed devices, scrape and row
// counts and the digest. The reason codes are `reasons` (the producer's own), then the
// samples check's, the device check's, each window validation's and each artifact error's;
// the status and publication_valid follow from them. Pure; returns the publication verdict.
GpuPublication settle_gpu_manifest(GpuManifest& m, GpuReasons reasons,
                                   const GpuSamplesCheck& samples);

// publication_valid recomputed from what a manifest records, with the strict samples
// check's reasons (null: none); a consumer compares it with the stored verdict.
GpuPublication gpu_manifest_publication(const GpuManifest& manifest,
                                        const GpuReasons* samples_reasons);

}  // namespace cpupower::artifacts
