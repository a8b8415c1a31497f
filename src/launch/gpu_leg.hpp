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

#include "artifacts/gpu_manifest.hpp"
#include "launch/leg.hpp"
#include "launch/process.hpp"
#include "launch/session_plan.hpp"
#include "scrape/collector.hpp"
#include "scrape/gpu_leg.hpp"

namespace cpupower::launch {

class Launcher;

class GpuLegRun : public Leg {
 public:
  // `clock_check`: the session's, for the manifest's clock_sync_check and
  // clock_sync_failures (unset: none ran, the manifest's clock_sync_check is null).
  GpuLegRun(const SessionPlan& plan, Launcher& launcher,
            std::optional<artifacts::ClockSyncCheck> clock_check);

  // Starts the exporters (when the plan starts them) and the collector, and waits until
  // every node has given rows, the startup deadline passes or `give_up` says so. True when
  // all did.
  bool start(std::chrono::steady_clock::time_point started,
             const std::function<bool()>& give_up) override;
  std::optional<std::string> blocks() const override;
  void interrupt() override {
    if (collector_) collector_->interrupt();
  }
  // Waits (bounded) for a row from every node dated at or after the command's end, stops
  // the collector, writes the windows, checks samples.csv and writes manifest.json.
  LegVerdict finish(const SessionEnd& end) override;

 private:
  std::vector<scrape::Endpoint> start_exporters(std::chrono::steady_clock::time_point deadline,
                                                const std::function<bool()>& give_up);
  // Waits (bounded) for rows past `end_unix` unless interrupted, stops the collector and
  // the exporters; the lifecycle reasons met on the way go to reasons_.
  void stop_collecting(std::optional<double> end_unix, bool interrupted);
  // The devices the manifest expects: --gpu-roles, else the visible-devices selection on
  // every node, else every GPU each node showed when it became ready.
  std::vector<artifacts::GpuExpectedDevice> expected_devices();
  // The manifest's identity, settings and lifecycle, before its evidence.
  artifacts::GpuManifest manifest_head() const;

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
  bool skipped_ = false;  // libcurl could not be loaded: nothing ran
  bool ready_ = false;
  std::string readiness_reason_;  // why not ready, as a contract reason code
  std::optional<artifacts::ClockSyncCheck> clock_check_;
};

}  // namespace cpupower::launch
