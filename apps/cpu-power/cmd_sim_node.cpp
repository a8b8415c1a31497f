#include "apps/cpu-power/commands.hpp"

namespace cpupower::app {
void add_sim_node_command(CLI::App& app, Action& action) {
  auto* cmd = app.add_subcommand("sim-node", "Simulate a Grace node's hwmon tree");
  cmd->callback([&action] { action = [] { return 0; }; });
}
}  // namespace cpupower::app
