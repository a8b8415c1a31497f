#pragma once
// `cpu-power overhead`'s processes: first the warm-up runs (the workload alone, untimed: a
// cold file cache or a first compilation must not land on one arm of round 1); then for each
// run of the order (overhead.hpp's run_order), the
// arm's telemetry started and waited ready (the exporter's "listening addr=" line, the host
// collector's ready marker; no fixed sleeps), then the workload run and timed on the steady
// clock, then the telemetry's /proc figures read and the telemetry stopped by PID (SIGTERM,
// SIGKILL after 10 s). With an idle time (--duration), both legs then run alone on the idle
// node for that long and are measured the same way.

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/result.hpp"
#include "launch/exporter_binary.hpp"
#include "launch/overhead.hpp"

namespace cpupower::launch {

struct OverheadOptions {
  std::vector<std::string> command;  // the workload
  int rounds = 4;                    // --pairs
  int warmup_runs = 1;               // --warmup: untimed runs without telemetry, first
  double idle_seconds = 0;           // --duration; 0: no idle measurement
  std::optional<std::string> metric_regex;
  bool higher_is_better = true;
  std::string hwmon_root;                // empty: the telemetry's own default (/sys/class/hwmon)
  std::string source;                    // empty: the telemetry's own default (auto)
  double interval_seconds = 0.1;         // the host collector's
  double scrape_interval_seconds = 1.0;  // GET /metrics from the exporter; 0: none
  double startup_timeout_seconds = 30;
  std::vector<std::string> exporter_command;  // --exporter-command, split; empty: resolved
  std::string work_dir;  // empty: a temporary directory, removed after a good run
};

// The telemetry's command lines. The exporter listens on 127.0.0.1 and a port the kernel
// picks (a node's service may hold 9405), otherwise at its defaults; the host collector gets
// its output and ready directories per run.
struct TelemetryCommands {
  std::vector<std::string> exporter_argv;
  std::string exporter_origin;  // "beside cpu-power", "PATH", "fallback", "--exporter-command"...
  std::vector<std::string> host_collector_argv;
  std::string host_name = "overhead";  // --hostname: names the ready marker
  std::vector<std::string> warnings;
};

// From the resolved exporter (`cpupower run`'s order: $CPU_POWER_EXPORTER_BIN, beside
// cpu-power, PATH, the Python fallback) or options.exporter_command, and this cpu-power
// (`self_exe`) for `host-collect`. An error when there is no exporter to run.
Result<TelemetryCommands> telemetry_commands(const OverheadOptions& options,
                                             const ExporterChoice& exporter,
                                             const std::string& self_exe);

// Blocks SIGINT, SIGTERM and SIGCHLD in the calling thread; call it before any thread exists
// (run_overhead waits for them with sigtimedwait: the workload's end, a helper's early exit,
// or the user's stop, without polling).
void block_overhead_signals();

enum class OverheadFailure { none, telemetry, workload, interrupted };

struct OverheadOutcome {
  OverheadFailure failure = OverheadFailure::none;
  std::string message;  // what failed, naming the command line, round and arm, and its log
  int signal = 0;       // with interrupted
  std::optional<OverheadReport> report;  // when every run finished
  std::string work_dir;                  // kept: given, or a failure's logs are there
};

// Runs every round. `progress` gets one line per run (and per telemetry start) as it goes.
OverheadOutcome run_overhead(const OverheadOptions& options, const TelemetryCommands& commands,
                             const std::function<void(const std::string&)>& progress = {});

}  // namespace cpupower::launch
