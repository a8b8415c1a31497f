#pragma once
// The `cpu-power run` session: the clock check, then each leg (launch/leg.hpp) started
// under its startup deadline, the command run to its end and session.json written, then
// each leg finished while the exporters still answer (its last scrape), and the exporters
// stopped. The command's exit status is the session's; a leg the recipe requires changes it
// only when it is not ready (the command is not run, exit 1) or its result is not
// publishable (exit 0 becomes 1).

#include <chrono>
#include <string>
#include <vector>

#include "launch/leg.hpp"
#include "launch/session_plan.hpp"
#include "launch/signal_forwarder.hpp"
#include "scrape/collector.hpp"

namespace cpupower::launch {

struct SessionResult {
  int exit_code = 0;
  bool command_started = false;
  double command_seconds = 0;
  std::string session_path;      // empty when not written
  std::vector<LegVerdict> legs;  // in the order they finished
};

// `signals` must already be started (before any thread exists). `started` is when the
// session began: the startup deadline counts from it, the clock check's time left out.
SessionResult run_session(const SessionPlan& plan, SignalForwarder& signals,
                          std::chrono::steady_clock::time_point started);

// Each leg's summary, with rows per node from the exporter leg's collector, for the end of
// a run.
std::string summary_text(const SessionResult& result);
std::string exporter_leg_summary(const scrape::CollectorStats& stats,
                                 const std::string& samples_path, const std::string& manifest_path);

}  // namespace cpupower::launch
