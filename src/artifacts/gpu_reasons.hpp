#pragma once
// The GPU leg's reason codes: every code its manifest.json, windows and samples check may
// carry, spelled as the artifact contract spells them (docs/formats.md, GPU leg). One place,
// so that the producer, its checks and the tests never disagree on a spelling.

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

}  // namespace cpupower::artifacts::gpu_reason
