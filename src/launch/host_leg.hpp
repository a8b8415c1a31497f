#pragma once
// The host-collector leg of a `cpu-power run`: one `cpu-power host-collect` per node (srun
// per node group, or local processes on simulated nodes), the wait for every node's ready
// marker, the stop that lets each collector finish its sample and write its final metadata
// (SIGTERM, never a step cancel first), and the head-side merge.
//
// Best-effort unless telemetry.cpu_power.required: a failure here is logged and reasoned in
// manifest.json; with `required` a readiness failure keeps the command from running and an
// unpublishable result turns exit 0 into 1. Nothing here ever masks a command's failure.

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "launch/leg.hpp"
#include "launch/process.hpp"
#include "launch/session_plan.hpp"

namespace cpupower::launch {

class Launcher;

inline constexpr std::string_view kReasonSourceUnavailable = "cpu_power_source_unavailable";
inline constexpr std::string_view kReasonStartupTimeout = "cpu_power_startup_timeout";

class HostLeg : public Leg {
 public:
  HostLeg(const SessionPlan& plan, Launcher& launcher);

  // Starts the collectors and waits until every node is ready, a node reports that it has no
  // source (error marker), a launch fails, the startup deadline passes or `give_up` says so.
  // Writes the starting, then the running or failed manifest. True when every node is ready.
  bool start(std::chrono::steady_clock::time_point started,
             const std::function<bool()>& give_up) override;
  std::optional<std::string> blocks() const override;

  // Waits (bounded) until every node's file has a row dated at or after the command's end
  // (an energy window needs a sample at or after its end), then stops every collector (each
  // finishes its sample and writes its metadata) and merges the node files into samples.csv
  // and manifest.json.
  LegVerdict finish(const SessionEnd& end) override;

 private:
  bool any_failed();
  void write_status(std::string_view status, const std::vector<std::string>& observed);

  const SessionPlan& plan_;
  Launcher& launcher_;
  const HostLegPlan& leg_;
  ProcessSet processes_{"CPU power collector"};
  bool ready_ = false;
  std::string readiness_reason_;  // why not ready, as a reason code
};

}  // namespace cpupower::launch
