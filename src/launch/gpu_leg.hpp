#pragma once
// The GPU leg of a `cpu-power run`: dcgm-exporter on every node (already running, started
// with srun from the recipe's binary or command, or `cpu-power sim-gpu` per simulated node),
// a second collector scraping it into <log_dir>/<storage_subdir>/samples.csv, and at the end
// the package the contract defines: windows/<name>.json for every benchmark window the
// session knows, the strict check of samples.csv, and manifest.json with its status and
// publication_valid (docs/formats.md, GPU leg).
//
// Best-effort unless telemetry.required: then a readiness failure keeps the command from
// running (exit 1) and an unpublishable result turns exit 0 into 1. A command's own failure
// is never masked.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "artifacts/gpu_contract.hpp"
#include "artifacts/gpu_manifest.hpp"
#include "artifacts/gpu_windows.hpp"
#include "launch/process.hpp"
#include "launch/session_plan.hpp"
#include "scrape/collector.hpp"
#include "scrape/gpu_leg.hpp"

namespace cpupower::launch {

class Launcher;

// A benchmark window the session knows, for windows/<name>.json.
struct GpuWindowInput {
  std::string name;            // the file stem
  std::string benchmark_type;  // session | sa-bench | aiperf
  long long concurrency = 1;
  std::string result_path;  // relative to the log directory; its stem is `name`
  std::optional<double> start_unix;
  std::optional<double> end_unix;
  std::optional<double> duration_s;  // the monotonic duration when known
  std::string failure;               // non-empty: the window's command failed
  // Set when the benchmark's own result file lacks start, end and duration (aiperf): the
  // result file written at result_path for the window to point at.
  std::optional<artifacts::DerivedWindowResult> derived_result;
};

struct GpuLegOutcome {
  std::string power_dir;
  std::string status;  // complete | incomplete | failed
  bool publication_valid = false;
  std::vector<std::string> reason_codes;
  std::vector<std::string> failed_rules;  // why not publishable
  bool exit_nonzero = false;
  std::size_t sample_row_count = 0;
  std::size_t devices = 0;
  std::optional<scrape::CollectorStats> stats;
};

class GpuLegRun {
 public:
  GpuLegRun(const SessionPlan& plan, Launcher& launcher);
  ~GpuLegRun();  // exporters still running get SIGTERM, then SIGKILL
  GpuLegRun(const GpuLegRun&) = delete;
  GpuLegRun& operator=(const GpuLegRun&) = delete;

  // Starts the exporters (when the plan starts them) and the collector, and waits until
  // every node has given rows, `deadline` passes or `give_up` says so. True when all did.
  bool start(std::chrono::steady_clock::time_point deadline, const std::function<bool()>& give_up);

  // Why start() failed, as a contract reason code (empty when ready).
  const std::string& readiness_reason() const { return readiness_reason_; }

  // Waits (bounded) for a row from every node dated at or after `end_unix`, stops the
  // collector, writes the windows, checks samples.csv and writes manifest.json.
  GpuLegOutcome finish(const std::vector<GpuWindowInput>& windows, bool interrupted,
                       std::optional<double> end_unix);

  // The session's clock check, for the manifest's clock_sync_check and clock_sync_failures
  // (unset: none ran, the manifest's clock_sync_check is null).
  void set_clock_check(std::optional<artifacts::ClockSyncCheck> check) {
    clock_check_ = std::move(check);
  }

  // A signal came: the collector's stop, also one under way, drains briefly
  // (scrape::Collector::interrupt). Safe from another thread once start() has returned.
  void interrupt() {
    if (collector_) collector_->interrupt();
  }

 private:
  std::vector<scrape::Endpoint> start_exporters(std::chrono::steady_clock::time_point deadline,
                                                const std::function<bool()>& give_up);

  const SessionPlan& plan_;
  Launcher& launcher_;
  const GpuLegPlan& leg_;
  ProcessSet processes_{"dcgm-exporter"};
  std::vector<scrape::Endpoint> endpoints_;
  std::unique_ptr<scrape::Collector> collector_;
  std::shared_ptr<scrape::GpuLegSummary> summary_ = std::make_shared<scrape::GpuLegSummary>();
  artifacts::GpuReasons reasons_;  // lifecycle and startup reasons met by the session
  // The slowest scrape so far in microseconds (-1 before one), from the loop thread.
  std::shared_ptr<std::atomic<std::int64_t>> slowest_scrape_us_ =
      std::make_shared<std::atomic<std::int64_t>>(-1);
  double started_at_unix_ = 0;
  std::string readiness_reason_;
  std::optional<artifacts::ClockSyncCheck> clock_check_;
};

}  // namespace cpupower::launch
