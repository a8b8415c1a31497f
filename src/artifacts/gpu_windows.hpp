#pragma once
// The GPU leg's measurement windows: <power_dir>/windows/<stem>.json, one per measured
// (benchmark_type, concurrency), written by the benchmark side on the head node's clock and
// pointing at the benchmark result it brackets; and the audit that turns every expected
// window into its manifest window_validations entry (docs/formats.md, "GPU leg").

#include <cstddef>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "artifacts/gpu_contract.hpp"
#include "common/result.hpp"

namespace cpupower::artifacts {

inline constexpr std::string_view kGpuWindowsDirname = "windows";
inline constexpr std::size_t kGpuWindowMaxBytes = 1u << 20;  // a larger file is malformed

enum class GpuWindowStatus { running, interrupted, completed, failed };
std::string_view gpu_window_status_name(GpuWindowStatus status);
std::optional<GpuWindowStatus> parse_gpu_window_status(std::string_view name);

struct GpuWindowFile {
  int schema_version = kGpuContractSchemaVersion;
  std::string benchmark_type;
  std::string result_path;  // relative to the log directory; its stem is the file's stem
  long long concurrency = 0;
  double benchmark_start_time_unix = 0;
  std::optional<double> benchmark_end_time_unix;
  std::optional<double> duration_s;  // JSON "duration": the monotonic length, seconds
  std::string clock_source = std::string(kGpuClockSource);
  GpuWindowStatus status = GpuWindowStatus::running;
  std::optional<std::string> reason;
  GpuWindowKey key() const { return {benchmark_type, concurrency}; }
  bool operator==(const GpuWindowFile&) const = default;
};

// The JSON text: keys in the order above, 2-space indent, trailing newline, null for unset.
std::string gpu_window_json(const GpuWindowFile& window);
// Writes it atomically (temporary file in the same directory, fsync, rename).
Status write_gpu_window(const std::string& path, const GpuWindowFile& window);

// The status table: end, duration and reason are fixed by the status.
//   running      end null    duration null        reason null
//   interrupted  end null    duration null        reason a non-empty string
//   completed    end finite  duration finite > 0  reason null
//   failed       end finite  duration finite > 0  reason a non-empty string
bool gpu_window_invariants_hold(const GpuWindowFile& window);

// The result file of a window whose benchmark writes none with the three values the window
// check compares (aiperf): start, end and duration as the energy report derives them from
// the benchmark's own files, with the file they came from and how. The window points at it.
struct DerivedWindowResult {
  std::string benchmark_type;
  long long concurrency = 0;
  double start_unix = 0, end_unix = 0, duration_s = 0;
  std::string derived_from;  // relative to the log directory
  std::string derivation;    // in words
};
std::string derived_window_result_json(const DerivedWindowResult& result);
Status write_derived_window_result(const std::string& path, const DerivedWindowResult& result);

// A relative POSIX path that stays below its root: not empty, not starting with / or ~, no
// .. component, at least one component other than "." (empty and "." components are
// ignored, as Python's PurePosixPath does).
bool is_safe_relative_subpath(std::string_view path);
// Python's Path(p).stem and .suffix of the last component.
std::string python_path_stem(std::string_view path);
std::string python_path_suffix(std::string_view path);

// A window file's JSON, parsed the strict way. `window_stem` is the file's stem, which the
// result_path's stem must equal. Reasons (one, or none when `window` is set):
//   measurement_window_malformed: not JSON, not an object, schema_version not the integer 1,
//     clock_source not head_node_unix_clock, an unknown status, benchmark_type not a string,
//     concurrency not an integer (true, 4.0 and "4" are not), start not a finite number, or
//     the status table broken (a missing key reads as null);
//   measurement_window_result_path_invalid: result_path not a string, not a safe relative
//     path, or with another stem.
struct GpuWindowParse {
  std::optional<GpuWindowFile> window;
  GpuReasons reason_codes;
};
GpuWindowParse parse_gpu_window(std::string_view json_text, std::string_view window_stem);

// The benchmark result a completed window points at: its three boundary keys.
struct GpuWindowResult {
  bool found = false;                     // a regular file that reads as JSON
  bool is_object = false;                 // ... and is an object
  std::optional<double> start_time_unix;  // benchmark_start_time_unix, when a finite number
  std::optional<double> end_time_unix;    // benchmark_end_time_unix, likewise
  std::optional<double> duration_s;       // duration, likewise
};
GpuWindowResult read_gpu_window_result(const std::string& path);

// A completed window against its result, in order, the first failure only:
//   measurement_window_result_missing   no result file, or not JSON;
//   measurement_window_result_mismatch  not an object, or start, end or duration not a
//                                       finite number equal to the window's;
//   measurement_window_clock_mismatch   wall span (end - start) <= 0, or differing from
//                                       duration by more than max(0.5 s, 1% of duration).
GpuReasons gpu_window_result_reasons(const GpuWindowFile& window, const GpuWindowResult& result);

// The samples that cover [start, end] in one device's (or one CPU series') ascending times:
// the last at or before `start`, every one strictly inside, the first at or after `end`;
// nullopt when either end is not bracketed. The coverage rules below and `cpu-power
// validate`'s CPU series checks both take their samples from here.
std::optional<std::vector<double>> bracketing_samples(std::span<const double> sorted_times,
                                                      double start, double end);
// The largest difference between consecutive times of `seq` (0 for fewer than two).
double largest_sample_gap_s(std::span<const double> seq);

// What coverage is checked against.
struct GpuCoverageInputs {
  std::span<const GpuExpectedDevice> expected_devices;
  std::span<const GpuObservedDevice> observed_devices;  // sample_times_unix filled
  std::optional<double> sample_interval_s;              // the recorded cadence
};

struct GpuWindowCoverage {
  GpuReasons reason_codes;
  std::vector<std::pair<std::string, double>> per_device_max_sample_gap_seconds;
};

// For every expected device key, in key order: the last sample at or before `start_unix`,
// every sample strictly inside, and the first sample at or after `end_unix` (the bracketing
// samples). Reasons:
//   measurement_window_not_bracketed  the device has no samples, none at or before start or
//                                     none at or after end;
//   gpu_uuid_changed                  the device has other than exactly one UUID;
//   sample_gap_exceeded               the largest gap between consecutive bracketing
//                                     samples exceeds common::kMaxSampleGapS (3.0 s passes);
//   sample_loss_exceeded              with expected = floor((last - first bracketing sample)
//                                     / sample_interval_s) and observed = distinct bracketing
//                                     sample times - 1, (expected - observed) / expected
//                                     exceeds kGpuMaxMissingSampleFraction; also when the
//                                     interval is not a finite positive number.
// The largest gap of each bracketed device is recorded under "<hostname>/<gpu_uuid>".
GpuWindowCoverage gpu_window_coverage(double start_unix, double end_unix,
                                      const GpuCoverageInputs& in);

// A window file found in windows/ and parsed.
struct GpuScannedWindow {
  std::string relative_path;  // "windows/<name>"
  GpuWindowFile window;
};

// One expected window's verdict. `found` is null when no usable file has its key;
// `duplicated` says two files had it. Order: missing or duplicate (nothing else); else
// measurement_window_incomplete unless completed; else the result reasons; only when those
// pass, coverage.
GpuWindowValidation validate_gpu_window(const GpuWindowKey& expected, const GpuScannedWindow* found,
                                        bool duplicated, const GpuWindowResult& result,
                                        const GpuCoverageInputs& coverage);

struct GpuWindowScan {
  std::map<GpuWindowKey, GpuScannedWindow> windows;  // usable and unique
  std::set<GpuWindowKey> duplicates;                 // keys more than one file had
  std::vector<GpuArtifactError> artifact_errors;     // in file name order
};

// Reads every entry of <power_dir>/windows/ in name order. Each unusable one is an artifact
// error: the directory resolving outside power_dir or unreadable ("windows"), an entry that
// is a symlink, not a regular file or not *.json (measurement_window_artifact_path_invalid),
// a file that does not parse (its parse reason), a result_path resolving outside
// `result_root` (measurement_window_result_path_invalid), and every file of a key seen
// twice (measurement_window_duplicate). No windows/ directory: nothing found, no error.
GpuWindowScan scan_gpu_windows(const std::string& power_dir, const std::string& result_root);

// The whole audit: scan, one validation per expected window in the given order, and the
// artifact errors (the scan's, then measurement_window_unexpected for each usable window
// nobody expected, in key order) appended to `artifact_errors`.
std::vector<GpuWindowValidation> validate_gpu_windows(
    const std::string& power_dir, const std::string& result_root,
    std::span<const GpuWindowKey> expected_windows, const GpuCoverageInputs& coverage,
    std::vector<GpuArtifactError>& artifact_errors);

}  // namespace cpupower::artifacts
