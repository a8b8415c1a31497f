// cpu-power: the head-node and tooling front end (run, scrape, report, sim-node, sim-gpu, ...).

#include <CLI/CLI.hpp>

#include "apps/cpu-power/commands.hpp"
#include "common/version.hpp"

int main(int argc, char** argv) {
  CLI::App app{"CPU and superchip power telemetry for Grace clusters under Slurm"};
  app.name("cpu-power");
  app.require_subcommand(1);
  app.set_version_flag("-V,--version", std::string("cpu-power ") + cpupower::kVersion);

  cpupower::app::Action action;
  cpupower::app::add_sim_node_command(app, action);
  cpupower::app::add_sim_gpu_command(app, action);
  cpupower::app::add_run_command(app, action);
  cpupower::app::add_check_config_command(app, action);
  cpupower::app::add_validate_command(app, action);
  cpupower::app::add_report_command(app, action);
  cpupower::app::add_scrape_command(app, action);
  cpupower::app::add_host_collect_command(app, action);
  cpupower::app::add_merge_command(app, action);
  cpupower::app::add_clock_check_command(app, action);
  cpupower::app::add_overhead_command(app, action);

  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {  // --help, --version
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return 2;  // usage errors exit 2, like the exporter
  }
  return action ? action() : 2;
}
