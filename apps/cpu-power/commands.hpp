#pragma once
// Each `cpu-power` subcommand lives in its own cmd_<name>.cpp and registers itself here:
// it adds a CLI11 subcommand to `app` and sets `action` to run once parsing succeeded.
// The action returns the process exit status.

#include <CLI/CLI.hpp>

#include <functional>
#include <string>

namespace cpupower::app {

using Action = std::function<int()>;

// --cpu-samples-schema of `scrape` and `run`: the samples.csv layout the collector writes.
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
                   "headers (docs/compatibility.md). The report reads both")
      ->check(two_or_three)
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

}  // namespace cpupower::app
