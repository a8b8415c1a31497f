#pragma once
// Each `cpu-power` subcommand lives in its own cmd_<name>.cpp and registers itself here:
// it adds a CLI11 subcommand to `app` and sets `action` to run once parsing succeeded.
// The action returns the process exit status.

#include <CLI/CLI.hpp>

#include <functional>
#include <optional>
#include <string>

namespace cpupower::app {

using Action = std::function<int()>;

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

}  // namespace cpupower::app
