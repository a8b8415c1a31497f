// cpu-power overhead [--pairs N] [--warmup N] [--duration S] [--metric REGEX [--lower-is-better]]
//                    [--hwmon-root DIR] [--source S] [--interval-seconds 0.1]
//                    [--exporter-command CMD] [--json FILE] -- COMMAND [ARGS...]
// The workload run with and without the telemetry a recipe starts on a node, in a
// drift-cancelling order, and what the telemetry cost it (launch/overhead_run.hpp).
// Exit 0 with the report; 2 for usage errors; 1 when the telemetry could not start, the
// workload failed or its metric was not found (the round and arm named); 128 + the signal
// when stopped by SIGINT or SIGTERM.

#include <cmath>
#include <iostream>
#include <regex>

#include "apps/cpu-power/commands.hpp"
#include "common/signals.hpp"
#include "common/text.hpp"
#include "launch/exporter_binary.hpp"
#include "launch/overhead_run.hpp"
#include "sources/ladder.hpp"

namespace cpupower::app {
namespace {

struct OverheadArgs {
  launch::OverheadOptions options;
  std::string metric;
  bool lower_is_better = false;
  std::string exporter_command;
  std::string json_path;
};

// The words of --exporter-command: split on blanks, no shell quoting.
std::vector<std::string> words(const std::string& text) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while ((at = text.find_first_not_of(" \t", at)) != std::string::npos) {
    const auto end = std::min(text.find_first_of(" \t", at), text.size());
    out.push_back(text.substr(at, end - at));
    at = end;
  }
  return out;
}

int overhead(OverheadArgs& args) {
  auto& o = args.options;
  // Before any thread exists: the telemetry's scraper thread inherits the mask, and the run
  // waits for the workload's end and for a stop with sigtimedwait.
  launch::block_overhead_signals();
  common::ignore_sigpipe();
  if (!args.metric.empty()) o.metric_regex = args.metric;
  o.higher_is_better = !args.lower_is_better;
  o.exporter_command = words(args.exporter_command);
  const auto exporter = o.exporter_command.empty()
                            ? launch::resolve_exporter(launch::ExporterLookup::from_process())
                            : launch::ExporterChoice{};
  std::string self = launch::self_exe_path();
  if (self.empty()) self = "cpu-power";
  const auto commands = launch::telemetry_commands(o, exporter, self);
  if (!commands) {
    std::cerr << "Error: " << commands.error() << std::endl;
    return 1;
  }
  const auto outcome = launch::run_overhead(o, *commands, [](const std::string& line) {
    std::cerr << "cpu-power overhead: " << line << std::endl;
  });
  if (outcome.failure != launch::OverheadFailure::none) {
    std::cerr << "Error: " << outcome.message << std::endl;
    if (!outcome.work_dir.empty()) {
      std::cerr << "cpu-power overhead: logs kept in " << outcome.work_dir << std::endl;
    }
    return outcome.failure == launch::OverheadFailure::interrupted ? 128 + outcome.signal : 1;
  }
  std::cout << launch::overhead_text(*outcome.report) << std::flush;
  if (!args.json_path.empty()) {
    const auto written = common::write_file_atomic(
        args.json_path, launch::overhead_json(*outcome.report).dump(2) + "\n");
    if (!written) {
      std::cerr << "Error: --json " << args.json_path << ": " << written.error() << std::endl;
      return 1;
    }
  }
  if (!outcome.work_dir.empty()) {
    std::cerr << "cpu-power overhead: logs kept in " << outcome.work_dir << std::endl;
  }
  return 0;
}

}  // namespace

void add_overhead_command(CLI::App& app, Action& action) {
  auto args = std::make_shared<OverheadArgs>();
  auto& o = args->options;
  auto* cmd = app.add_subcommand(
      "overhead",
      "Run a workload with and without this node's telemetry (exporter, host collector, both) "
      "and report the difference with a 95 % confidence interval, and the telemetry's CPU "
      "time, wake-ups and peak RSS");
  cmd->add_option("--pairs", o.rounds,
                  "Rounds: each runs the workload once per arm (baseline, exporter, host "
                  "collector, both), so every telemetry arm gets N pairs with the baseline. "
                  "Even N cancels a linear drift; a multiple of 4 balances every position")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  cmd->add_option("--warmup", o.warmup_runs,
                  "Untimed runs of the workload alone before the rounds, so that a cold start "
                  "(file cache, compilation, clocks) is not charged to round 1's first arm")
      ->capture_default_str()
      ->check(CLI::Range(0, 100));
  cmd->add_option("--duration", o.idle_seconds,
                  "Also measure the telemetry's cost on the idle node: both legs run this many "
                  "seconds after the rounds, with no workload")
      ->check(CLI::PositiveNumber);
  auto* metric =
      cmd->add_option("--metric", args->metric,
                      "Compare a number the workload prints instead of its wall time: the first "
                      "capture group of the last match of this regular expression (ECMAScript) "
                      "in its stdout and stderr; higher is better (a throughput)")
          ->check([](const std::string& text) -> std::string {
            try {
              const std::regex re(text);
              if (re.mark_count() < 1) return "needs a capture group around the number: " + text;
            } catch (const std::regex_error& e) {
              return "not a regular expression: " + text + " (" + e.what() + ")";
            }
            return {};
          });
  cmd->add_flag("--lower-is-better", args->lower_is_better,
                "The --metric is a time or a latency: lower is better")
      ->needs(metric);
  cmd->add_option("--hwmon-root", o.hwmon_root,
                  "hwmon class directory for both legs (default: theirs, /sys/class/hwmon)");
  cmd->add_option(
         "--source", o.source,
         "CPU power source for both legs (default: theirs, auto): " + sources::source_help())
      ->check(CLI::IsMember(sources::source_choices()));
  cmd->add_option("--interval-seconds", o.interval_seconds,
                  "The host collector's sample period (a recipe's sample_interval_seconds)")
      ->capture_default_str()
      ->check([](const std::string& text) -> std::string {
        const auto v = common::parse_double(text);
        if (v && std::isfinite(*v) && *v > 0 && *v <= 3600) return {};
        return "must be a finite number of seconds, > 0 and <= 3600: " + text;
      });
  cmd->add_option("--scrape-interval-seconds", o.scrape_interval_seconds,
                  "GET /metrics from the exporter this often while it runs, as the collector "
                  "does (a recipe's collect_interval_ms); 0: never")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 3600.0));
  cmd->add_option("--startup-timeout-s", o.startup_timeout_seconds,
                  "How long each run's telemetry may take to become ready")
      ->capture_default_str()
      ->check(CLI::Range(0.1, 3600.0));
  cmd->add_option("--exporter-command", args->exporter_command,
                  "Measure this exporter instead (words split on blanks, no shell quoting), "
                  "e.g. \"python3 tools/cpu_power_exporter_fallback.py\"; it is given --port 0 "
                  "--bind 127.0.0.1 [--hwmon-root DIR] and must log `listening addr=IP:PORT`. "
                  "Default: the exporter `cpu-power run` would start")
      ->check([](const std::string& text) -> std::string {
        return words(text).empty() ? std::string("empty command") : std::string();
      });
  cmd->add_option("--work-dir", o.work_dir,
                  "Keep the workload's output and the telemetry's logs and files here (default: "
                  "a temporary directory, removed after a good run)");
  cmd->add_option("--json", args->json_path, "Also write the report as JSON to this file");
  cmd->add_option("command", o.command, "The workload, after --")->required();
  cmd->callback([&action, args] { action = [args] { return overhead(*args); }; });
}

}  // namespace cpupower::app
