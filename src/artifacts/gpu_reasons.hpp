#pragma once
// The GPU leg's reason codes: every code its manifest.json, windows and samples check may
// carry, spelled as the artifact contract spells them (docs/formats.md, GPU leg), and, for
// the codes `cpu-power validate` finds in a package, what each means and what fixes it. One
// place, so that the producer, its checks, the validator and the tests never disagree on a
// spelling, and a new code is its constant, its row and the rule that adds it.

#include <string_view>

namespace cpupower::artifacts::gpu_reason {

// dcgm-exporter and its endpoint.
inline constexpr std::string_view kExporterStartupTimeout = "exporter_startup_timeout";
inline constexpr std::string_view kExporterLaunchFailed = "exporter_launch_failed";
inline constexpr std::string_view kExporterExited = "exporter_exited";
inline constexpr std::string_view kEndpointTimeout = "endpoint_timeout";
inline constexpr std::string_view kEndpointHttpError = "endpoint_http_error";
inline constexpr std::string_view kEndpointParseError = "endpoint_parse_error";
inline constexpr std::string_view kEndpointResolutionFailed = "endpoint_resolution_failed";

// Scheduling.
inline constexpr std::string_view kSampleScheduleOverrun = "sample_schedule_overrun";

// What a scrape's body held.
inline constexpr std::string_view kPowerMetricMissing = "power_metric_missing";
inline constexpr std::string_view kDuplicatePowerMetric = "duplicate_power_metric";

// samples.csv as the strict reader sees it.
inline constexpr std::string_view kSamplesCsvMissing = "samples_csv_missing";
inline constexpr std::string_view kSamplesCsvHeaderMismatch = "samples_csv_header_mismatch";
inline constexpr std::string_view kSamplesCsvMalformed = "samples_csv_malformed";
inline constexpr std::string_view kSamplesDigestUnavailable = "samples_digest_unavailable";
inline constexpr std::string_view kDuplicateSampleRow = "duplicate_sample_row";

// Device identity.
inline constexpr std::string_view kGpuIndexMissing = "gpu_index_missing";
inline constexpr std::string_view kGpuUuidMissing = "gpu_uuid_missing";
inline constexpr std::string_view kInvalidPowerValue = "invalid_power_value";
inline constexpr std::string_view kUnexpectedDevice = "unexpected_device";
inline constexpr std::string_view kExpectedDeviceMissing = "expected_device_missing";
inline constexpr std::string_view kGpuUuidChanged = "gpu_uuid_changed";
inline constexpr std::string_view kMigInstanceUnsupported = "mig_instance_unsupported";
inline constexpr std::string_view kTimestampNonMonotonic = "timestamp_non_monotonic";
inline constexpr std::string_view kConflictingWorkerRoles = "conflicting_worker_roles";
inline constexpr std::string_view kConflictingHetGroups = "conflicting_het_groups";

// The collector's own lifecycle.
inline constexpr std::string_view kCollectorException = "collector_exception";
inline constexpr std::string_view kCollectorInterrupted = "collector_interrupted";
inline constexpr std::string_view kCollectorJoinTimeout = "collector_join_timeout";
inline constexpr std::string_view kBenchmarkChildReapTimeout = "benchmark_child_reap_timeout";

// Measurement windows.
inline constexpr std::string_view kWindowMissing = "measurement_window_missing";
inline constexpr std::string_view kWindowUnexpected = "measurement_window_unexpected";
inline constexpr std::string_view kWindowDuplicate = "measurement_window_duplicate";
inline constexpr std::string_view kWindowMalformed = "measurement_window_malformed";
inline constexpr std::string_view kWindowArtifactPathInvalid =
    "measurement_window_artifact_path_invalid";
inline constexpr std::string_view kWindowIncomplete = "measurement_window_incomplete";
inline constexpr std::string_view kWindowResultMissing = "measurement_window_result_missing";
inline constexpr std::string_view kWindowResultMismatch = "measurement_window_result_mismatch";
inline constexpr std::string_view kWindowResultPathInvalid =
    "measurement_window_result_path_invalid";
inline constexpr std::string_view kWindowClockMismatch = "measurement_window_clock_mismatch";
inline constexpr std::string_view kWindowNotBracketed = "measurement_window_not_bracketed";

// Coverage of a window by samples.
inline constexpr std::string_view kSampleGapExceeded = "sample_gap_exceeded";
inline constexpr std::string_view kSampleLossExceeded = "sample_loss_exceeded";

// Clocks.
inline constexpr std::string_view kClockSyncUnverified = "clock_sync_unverified";

// The codes that decide the run's status and exit (gpu_contract.hpp): a fatal lifecycle code
// (collection was lost: `incomplete`), a startup code (collection never began: `failed` when
// required) and an operational failure (fails the job whether or not telemetry is required).
inline constexpr std::string_view kFatalLifecycle[] = {kExporterExited, kCollectorException,
                                                       kCollectorInterrupted, kCollectorJoinTimeout,
                                                       kBenchmarkChildReapTimeout};
inline constexpr std::string_view kStartup[] = {kExporterStartupTimeout, kExporterLaunchFailed,
                                                kEndpointResolutionFailed};
inline constexpr std::string_view kOperational[] = {kBenchmarkChildReapTimeout,
                                                    kCollectorJoinTimeout};

// What a code found in a finished package means and what fixes it, as `cpu-power validate`
// reports it: one row per code its rules can find in samples.csv, windows/ or the device
// audit. A code without a row is reported by its name, with kRestoreFix.
struct CodeText {
  std::string_view code, what, fix;
};

inline constexpr std::string_view kRestoreFix =
    "restore the files as the run wrote them (any edit invalidates the package), or rerun";

inline constexpr CodeText kCodeTexts[] = {
    {kSamplesCsvMissing, "no samples.csv",
     "the GPU leg writes it while the run lasts: check that dcgm-exporter answers on every "
     "node, then rerun"},
    {kSamplesCsvHeaderMismatch, "the first line is no GPU samples header", kRestoreFix},
    {kSamplesCsvMalformed, "rows break the contract's cell rules", kRestoreFix},
    {kSamplesDigestUnavailable, "the file's SHA-256 cannot be computed", kRestoreFix},
    {kDuplicateSampleRow, "a (scrape_seq, hostname, gpu_index) appears twice", kRestoreFix},
    {kTimestampNonMonotonic, "a GPU's timestamps decrease in scrape_seq order",
     "synchronise the head node's clock (a step back moved the rows), then rerun"},
    {kExpectedDeviceMissing, "expected GPUs have no samples",
     "make dcgm-exporter serve every allocated GPU on every node (visible devices), then rerun"},
    {kUnexpectedDevice, "samples of GPUs no worker was assigned",
     "restrict the exporter to the allocated GPUs (visible devices) or fix the worker "
     "placement, then rerun"},
    {kGpuUuidChanged, "a GPU has other than one UUID, or two GPUs share one",
     "run on whole GPUs (no MIG instances or partitions), then rerun"},
    {kConflictingWorkerRoles, "a GPU is assigned to more than one worker role",
     "give each GPU one role in the recipe's worker placement"},
    {kConflictingHetGroups, "a node's GPUs are in more than one het group",
     "give each node one heterogeneous job group"},
    {kWindowMissing, "an expected window has no window file",
     "the benchmark must finish and write its result so the window is stamped: rerun"},
    {kWindowUnexpected, "a window file no expected window names", kRestoreFix},
    {kWindowDuplicate, "two window files have the same window", kRestoreFix},
    {kWindowMalformed, "the window file breaks the window contract", kRestoreFix},
    {kWindowArtifactPathInvalid, "an entry of windows/ is not a regular *.json file", kRestoreFix},
    {kWindowIncomplete, "the window did not complete", "rerun the benchmark to its end"},
    {kWindowResultMissing, "the benchmark result the window points at is missing",
     "keep the benchmark's result file beside the run (under the run directory)"},
    {kWindowResultMismatch, "the benchmark result disagrees with the window", kRestoreFix},
    {kWindowResultPathInvalid, "the window's result_path leaves the run directory", kRestoreFix},
    {kWindowClockMismatch, "the window's wall-clock span disagrees with its monotonic duration",
     "the head node's clock stepped during the window: synchronise it, then rerun"},
    {kWindowNotBracketed, "no sample at or before the start, or at or after the end",
     "keep telemetry running from before the benchmark starts to after it ends (a longer "
     "`telemetry.startup_timeout_seconds`, no early stop), then rerun"},
    {kSampleGapExceeded, "two consecutive samples more than 3.0 s apart",
     "lower `telemetry.collect_interval_ms` and check the exporters for slow scrapes "
     "(`request_timeout_seconds`), then rerun"},
    {kSampleLossExceeded, "more than 5% of the expected sample intervals are missing",
     "the collector missed scrapes at the recorded cadence: use a `collect_interval_ms` the "
     "exporters keep up with, then rerun"},
};

}  // namespace cpupower::artifacts::gpu_reason
