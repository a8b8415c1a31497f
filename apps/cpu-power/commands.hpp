#pragma once
// Each `cpu-power` subcommand lives in its own cmd_<name>.cpp and registers itself here:
// it adds a CLI11 subcommand to `app` and sets `action` to run once parsing succeeded.
// The action returns the process exit status.

#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <iostream>
#include <optional>
#include <string>

#include "common/result.hpp"
#include "common/signals.hpp"

namespace cpupower::app {

using Action = std::function<int()>;

// Seconds from the command line as whole milliseconds, rounded.
inline std::chrono::milliseconds to_ms(double seconds) {
  return std::chrono::milliseconds(static_cast<std::int64_t>(seconds * 1000.0 + 0.5));
}

// --duration-s of `scrape`, `sim-node` and `sim-gpu`: 0 (not given) runs until a signal.
inline CLI::Option* add_duration_option(CLI::App* cmd, double& seconds) {
  return cmd
      ->add_option("--duration-s", seconds,
                   "Stop after this many seconds (default: SIGINT/SIGTERM)")
      ->check(CLI::PositiveNumber);
}

// Waits for SIGINT or SIGTERM, or `duration_s` when it is positive; why it stopped, as the
// stop lines say it: the signal's name or "duration".
inline std::string wait_for_stop(double duration_s) {
  const int sig = common::wait_shutdown_signal(duration_s > 0 ? std::optional(to_ms(duration_s))
                                                              : std::nullopt);
  return sig ? common::signal_name(sig) : "duration";
}

// A server's start: its failure said on stderr as "Error: <why>". Whether it started.
inline bool started(const Status& status) {
  if (!status) std::cerr << "Error: " << status.error() << std::endl;
  return status.ok();
}

// --cpu-samples-schema of `scrape` and `run`: the samples.csv layout the collector writes; 0
// (not given) leaves it to the consumer profile.
// Any value but 2 or 3 is a usage error naming it.
inline CLI::Option* add_cpu_samples_schema_option(CLI::App* cmd, int& schema) {
  const CLI::Validator two_or_three(
      [](std::string& value) -> std::string {
        if (value == "2" || value == "3") return {};
        return "must be 2 or 3, got '" + value + "'";
      },
      "2|3");
  return cmd
      ->add_option("--cpu-samples-schema", schema,
                   "samples.csv schema to write: 3 (default) has module_w, the superchip module "
                   "power; 2 is the same without module_w, for readers that accept only the v1/v2 "
                   "headers (docs/compatibility.md). The report reads both. Wins over "
                   "--consumer-profile")
      ->check(two_or_three);
}

// --gpu-samples-schema of `run`: the GPU leg's power/samples.csv layout, 1, 2 or 3; 0 (not
// given) leaves it to the consumer profile (3 by default).
inline CLI::Option* add_gpu_samples_schema_option(CLI::App* cmd, int& schema) {
  const CLI::Validator one_to_three(
      [](std::string& value) -> std::string {
        if (value == "1" || value == "2" || value == "3") return {};
        return "must be 1, 2 or 3, got '" + value + "'";
      },
      "1|2|3");
  return cmd
      ->add_option("--gpu-samples-schema", schema,
                   "GPU leg samples.csv schema to write: 3 (default) has gpu_util_pct, sm_active "
                   "and temperature_c; 2 drops temperature_c; 1 keeps power_w alone. Readers "
                   "that accept only the v1/v2 headers need 1 or 2 (docs/compatibility.md); the "
                   "report reads all three. Wins over --consumer-profile")
      ->check(one_to_three);
}

// --consumer-profile of `scrape` and `run`: the schemas a downstream consumer accepts, in one
// switch. An explicit --cpu-samples-schema or --gpu-samples-schema wins over it.
inline CLI::Option* add_consumer_profile_option(CLI::App* cmd, std::string& profile) {
  return cmd
      ->add_option("--consumer-profile", profile,
                   "default: CPU and GPU samples schema 3; compat: CPU schema 2 and GPU schema 2, "
                   "the layouts validators pinned to the v1/v2 headers accept "
                   "(docs/compatibility.md). --cpu-samples-schema and --gpu-samples-schema win "
                   "over it")
      ->check(CLI::IsMember({"default", "compat"}))
      ->capture_default_str();
}

void add_sim_node_command(CLI::App& app, Action& action);
void add_sim_gpu_command(CLI::App& app, Action& action);
void add_run_command(CLI::App& app, Action& action);
void add_check_config_command(CLI::App& app, Action& action);
void add_validate_command(CLI::App& app, Action& action);
void add_report_command(CLI::App& app, Action& action);
void add_scrape_command(CLI::App& app, Action& action);
void add_host_collect_command(CLI::App& app, Action& action);
void add_merge_command(CLI::App& app, Action& action);
void add_clock_check_command(CLI::App& app, Action& action);
void add_overhead_command(CLI::App& app, Action& action);

}  // namespace cpupower::app
