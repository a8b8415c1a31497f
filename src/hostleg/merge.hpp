#pragma once
// The head node's last step of the host-collector leg: every node's nodes/<host>.csv (host
// schema v1..v5) becomes one v5 <cpu_dir>/samples.csv sorted by time, and the final
// <cpu_dir>/manifest.json says whether the run's CPU telemetry is publishable and, if not,
// why. Telemetry is best-effort: bad input is counted and reported, never thrown, and a
// run that did not require it never fails because of it.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cpupower::hostleg {

inline constexpr std::string_view kNodesDir = "nodes";
inline constexpr std::string_view kReadyDir = "ready";
inline constexpr std::string_view kSamplesFilename = "samples.csv";
inline constexpr std::string_view kMetadataSuffix = ".metadata.json";

// Reason codes, in the order they are reported.
inline constexpr std::string_view kReasonInterrupted = "interrupted";
inline constexpr std::string_view kReasonMalformed = "cpu_samples_malformed";
inline constexpr std::string_view kReasonNodeMissing = "cpu_node_samples_missing";
inline constexpr std::string_view kReasonEmpty = "cpu_samples_empty";
inline constexpr std::string_view kReasonCollectorFailed = "cpu_collector_failed";
inline constexpr std::string_view kReasonWriteFailed = "cpu_samples_write_failed";

// True for the codes the merge works out itself from the files (and `interrupted`, which
// the caller states); any other code is a readiness reason the run session carried in.
bool is_merge_reason(std::string_view code);

struct MergeSettings {
  std::string cpu_dir;  // holds nodes/ and ready/
  std::vector<std::string> expected_nodes;
  bool required = false;
  bool interrupted = false;
  // e.g. cpu_power_startup_timeout / cpu_power_source_unavailable, carried into the final
  // reasons
  std::vector<std::string> readiness_reasons;
  std::vector<std::string> failed_processes;  // names of collector processes that exited early
  std::string job_id, run_name, requested_source = "auto";
  double sample_interval_seconds = 0.1;
  std::optional<std::string> producer_git_commit;
};

struct MergeOutcome {
  std::string status;  // complete | incomplete
  bool publication_valid = false;
  bool exit_nonzero = false;  // required && !publication_valid
  std::vector<std::string> reason_codes;
  std::uint64_t sample_row_count = 0, malformed_rows = 0, torn_rows = 0;
  std::uint64_t dropped_groups = 0;  // long-layout sockets without a primary reading
  std::vector<std::string> observed_nodes, missing_nodes;
  std::vector<std::string> malformed_files;  // relative to cpu_dir, e.g. nodes/n1.csv
  // Human messages naming file:line and what was wrong; the first kMaxProblems only.
  std::vector<std::string> problems;
  // I/O failure writing outputs (then status incomplete, reason cpu_samples_write_failed)
  std::string error;

  static constexpr std::size_t kMaxProblems = 50;
};

// Reads <cpu_dir>/nodes/, writes <cpu_dir>/samples.csv and <cpu_dir>/manifest.json. Never
// throws.
MergeOutcome merge_host_samples(const MergeSettings& settings);

// Hosts that left anything in <cpu_dir>/nodes/ (a .csv or a .metadata.json), sorted: the
// expected set when nobody said which nodes were expected.
std::vector<std::string> hosts_with_files(const std::string& cpu_dir);

// "CPU power telemetry: status=<s> publication_valid=<true|false> reasons=<a,b|none>"
std::string summary_line(const MergeOutcome& outcome);

}  // namespace cpupower::hostleg
