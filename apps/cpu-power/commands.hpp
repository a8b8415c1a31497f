#pragma once
// Each `cpu-power` subcommand lives in its own cmd_<name>.cpp and registers itself here:
// it adds a CLI11 subcommand to `app` and sets `action` to run once parsing succeeded.
// The action returns the process exit status.

#include <CLI/CLI.hpp>

#include <functional>

namespace cpupower::app {

using Action = std::function<int()>;

void add_sim_node_command(CLI::App& app, Action& action);
void add_sim_gpu_command(CLI::App& app, Action& action);
void add_run_command(CLI::App& app, Action& action);
void add_check_config_command(CLI::App& app, Action& action);
void add_report_command(CLI::App& app, Action& action);
void add_scrape_command(CLI::App& app, Action& action);
void add_host_collect_command(CLI::App& app, Action& action);
void add_merge_command(CLI::App& app, Action& action);

}  // namespace cpupower::app
