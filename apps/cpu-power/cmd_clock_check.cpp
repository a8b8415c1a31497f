// cpu-power clock-check: this node's clock, as every tool it has sees it (launch/
// clock_check.hpp). `cpu-power run` starts it on every node through srun before the servers
// start, each node's output in <log_dir>/clock_sync_<node>.out. Exits 0 whatever it finds:
// the last line says it.

#include <iostream>
#include <memory>

#include "apps/cpu-power/commands.hpp"
#include "hostleg/host_collector.hpp"
#include "launch/clock_check.hpp"

namespace cpupower::app {

void add_clock_check_command(CLI::App& app, Action& action) {
  auto timeout_ms = std::make_shared<int>(2000);
  auto* cmd = app.add_subcommand(
      "clock-check",
      "Print this node's clock synchronisation (timedatectl, chronyc, ntpq, adjtimex, "
      "ntp_adjtime) and a parseable result line");
  cmd->add_option("--tool-timeout-ms", *timeout_ms, "Time each tool may take")
      ->check(CLI::Range(1, 60000))
      ->capture_default_str();
  cmd->callback([&action, timeout_ms] {
    action = [timeout_ms] {
      const auto check =
          launch::probe_local_clock(hostleg::node_name(), std::chrono::milliseconds(*timeout_ms));
      std::cout << check.output << std::flush;
      return 0;
    };
  });
}

}  // namespace cpupower::app
