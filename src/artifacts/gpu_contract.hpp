#pragma once
// The GPU (dcgm-exporter) leg's artifact contract as pure rules: the run status and when it
// may become terminal, device identity, window validation records, whether the package may
// be published and whether telemetry fails the job (docs/formats.md, "GPU leg"). Nothing
// here does I/O; the readers and writers of the files are gpu_samples_check, gpu_manifest
// and gpu_windows.

#include <compare>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/result.hpp"
#include "common/sample_gap.hpp"

namespace cpupower::artifacts {

// The largest share of a device's expected sample intervals a window may miss.
inline constexpr double kGpuMaxMissingSampleFraction = 0.05;
// A completed window's wall span (end - start) must agree with its monotonic `duration`
// within max(kGpuWindowClockToleranceS, kGpuWindowClockToleranceFraction * duration).
inline constexpr double kGpuWindowClockToleranceS = 0.5;
inline constexpr double kGpuWindowClockToleranceFraction = 0.01;

inline constexpr int kGpuContractSchemaVersion = 1;  // manifest.json and windows/*.json
inline constexpr std::string_view kGpuClockSource = "head_node_unix_clock";

// ---- reason codes ---------------------------------------------------------------------

// Reason codes without repeats, in the order first added (how the manifests list them); the
// verdict of every leg of a run carries one (launch/leg.hpp).
class ReasonSet {
 public:
  ReasonSet() = default;
  ReasonSet(std::initializer_list<std::string_view> codes) {
    for (auto c : codes) add(c);
  }
  // Adds `code` unless present; returns whether it was added.
  bool add(std::string_view code);
  void add_all(const ReasonSet& other) {
    for (const auto& c : other.codes_) add(c);
  }
  bool contains(std::string_view code) const;
  bool contains_any(std::span<const std::string_view> codes) const;
  bool empty() const { return codes_.empty(); }
  std::size_t size() const { return codes_.size(); }
  const std::vector<std::string>& codes() const { return codes_; }
  auto begin() const { return codes_.begin(); }
  auto end() const { return codes_.end(); }
  bool operator==(const ReasonSet&) const = default;

 private:
  std::vector<std::string> codes_;
};

using GpuReasons = ReasonSet;

// A fatal lifecycle reason: collection was lost, so the run is `incomplete`.
bool is_gpu_fatal_lifecycle_reason(std::string_view code);
// A startup reason: collection could not be established (`failed` when required).
bool is_gpu_startup_reason(std::string_view code);
// An operational failure: fails the job whether or not telemetry is required.
bool is_gpu_operational_failure_reason(std::string_view code);

// ---- run status -----------------------------------------------------------------------

enum class GpuRunStatus { starting, running, complete, incomplete, failed };

std::string_view gpu_run_status_name(GpuRunStatus status);
std::optional<GpuRunStatus> parse_gpu_run_status(std::string_view name);

// The terminal status the reasons call for. Precedence, first match wins:
//   1. any fatal lifecycle reason -> incomplete (losing collection outranks failing to
//      start it, so a run with both is incomplete, never failed);
//   2. `required` and any startup reason -> failed;
//   3. otherwise complete (a best-effort run whose exporter was late still finishes; whether
//      it can be published is publication_valid's question).
GpuRunStatus gpu_terminal_status(const ReasonSet& reasons, bool required);

// ---- devices --------------------------------------------------------------------------

struct GpuDeviceKey {
  std::string hostname;
  long long gpu_index = 0;
  auto operator<=>(const GpuDeviceKey&) const = default;
  bool operator==(const GpuDeviceKey&) const = default;
};

// One backend process's claim on a GPU.
struct GpuAssignment {
  std::string worker_role;             // prefill | decode | agg
  long long worker_index = 0;          // the endpoint's index within its role
  long long worker_process = 0;        // the process's node rank within the endpoint
  std::optional<long long> het_group;  // the Slurm heterogeneous job group, null when none
  bool operator==(const GpuAssignment&) const = default;
};

struct GpuExpectedDevice {
  std::string hostname;
  long long gpu_index = 0;
  std::vector<GpuAssignment> assignments;
  GpuDeviceKey key() const { return {hostname, gpu_index}; }
  bool operator==(const GpuExpectedDevice&) const = default;
};

// A device as samples.csv shows it.
struct GpuObservedDevice {
  std::string hostname;
  long long gpu_index = 0;
  std::vector<std::string> gpu_uuids;     // distinct, in scrape_seq order of first appearance
  double first_sample_time_unix = 0;      // min over the device's rows
  double last_sample_time_unix = 0;       // max over the device's rows
  std::vector<double> sample_times_unix;  // sorted ascending; not written to the manifest
  GpuDeviceKey key() const { return {hostname, gpu_index}; }
  bool operator==(const GpuObservedDevice&) const = default;
};

// Device identity and topology reasons, in this order, each at most once:
//   expected_device_missing  no expected device, or an expected key without samples;
//   unexpected_device        an observed key that is not expected;
//   gpu_uuid_changed         an observed device with other than exactly one UUID, or (when
//                            each has one) a UUID shared by two device keys;
//   conflicting_worker_roles an expected device whose assignments name other than exactly
//                            one worker_role;
//   conflicting_het_groups   an expected device whose assignments name other than exactly
//                            one het_group (null counts as a value), or two devices of one
//                            host in different het groups.
ReasonSet gpu_device_reasons(std::span<const GpuExpectedDevice> expected,
                             std::span<const GpuObservedDevice> observed);

// ---- windows and artifact errors (the manifest's records) -----------------------------

struct GpuWindowKey {
  std::string benchmark_type;
  long long concurrency = 0;
  auto operator<=>(const GpuWindowKey&) const = default;
  bool operator==(const GpuWindowKey&) const = default;
};

// One expected window's verdict (manifest window_validations[]).
struct GpuWindowValidation {
  std::string benchmark_type;
  long long concurrency = 0;
  std::optional<std::string> window_file;  // "windows/<name>.json"; null when none was usable
  bool power_coverage_valid = false;
  ReasonSet reason_codes;
  // "<hostname>/<gpu_uuid>" -> largest gap in seconds, in expected-device key order; only
  // devices whose samples bracket the window.
  std::vector<std::pair<std::string, double>> per_device_max_sample_gap_seconds;
  GpuWindowKey key() const { return {benchmark_type, concurrency}; }
  bool operator==(const GpuWindowValidation&) const = default;
};

// A stale, malformed, duplicate or unsafe artifact file (manifest artifact_errors[]).
struct GpuArtifactError {
  std::string path;  // relative to the power directory, e.g. "windows/x.json"
  ReasonSet reason_codes;
  bool operator==(const GpuArtifactError&) const = default;
};

// ---- publication ----------------------------------------------------------------------

// The rules publication_valid checks, by name (the CLI prints the failing ones).
namespace gpu_publication_rule {
inline constexpr std::string_view kStatusNotComplete = "status_not_complete";
inline constexpr std::string_view kExpectedDevicesEmpty = "expected_devices_empty";
inline constexpr std::string_view kDeviceKeysMismatch = "device_keys_mismatch";
inline constexpr std::string_view kDeviceUuidNotSingle = "device_uuid_not_single";
inline constexpr std::string_view kDeviceUuidNotUnique = "device_uuid_not_unique";
inline constexpr std::string_view kConflictingWorkerRoles = "conflicting_worker_roles";
inline constexpr std::string_view kConflictingHetGroups = "conflicting_het_groups";
inline constexpr std::string_view kExpectedWindowsEmpty = "expected_windows_empty";
inline constexpr std::string_view kWindowCoverageInvalid = "window_coverage_invalid";
inline constexpr std::string_view kSamplesReasons = "samples_reasons";
inline constexpr std::string_view kArtifactErrors = "artifact_errors";
}  // namespace gpu_publication_rule

struct GpuPublicationInputs {
  GpuRunStatus status = GpuRunStatus::starting;
  std::span<const GpuExpectedDevice> expected_devices;
  std::span<const GpuObservedDevice> observed_devices;
  std::span<const GpuWindowKey> expected_windows;
  std::span<const GpuWindowValidation> window_validations;
  const ReasonSet* samples_reasons = nullptr;  // the strict samples check's; null = none
  std::span<const GpuArtifactError> artifact_errors;
};

struct GpuPublication {
  bool valid = false;
  std::vector<std::string_view> failed_rules;  // gpu_publication_rule names, in check order
};

// True only when every rule holds: status complete; expected device keys non-empty and
// equal to the observed keys; each observed device with exactly one UUID; UUIDs unique;
// no conflicting roles or het groups; expected windows non-empty and each with a
// power_coverage_valid validation; no samples reasons; no artifact errors.
GpuPublication gpu_publication_valid(const GpuPublicationInputs& in);

// Whether telemetry fails the job: an operational failure reason
// (benchmark_child_reap_timeout, collector_join_timeout) whatever `required` says, or
// `required` and not publishable.
bool gpu_exit_nonzero(const ReasonSet& reasons, bool required, bool publication_valid);

}  // namespace cpupower::artifacts
