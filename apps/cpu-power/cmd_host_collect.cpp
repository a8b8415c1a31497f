// cpu-power host-collect: the host leg's collector on one worker node (see
// hostleg/host_collector.hpp for the files it writes and its exit statuses).

#include <cmath>

#include "apps/cpu-power/commands.hpp"
#include "common/log.hpp"
#include "common/signals.hpp"
#include "hostleg/host_collector.hpp"

namespace cpupower::app {

void add_host_collect_command(CLI::App& app, Action& action) {
  auto o = std::make_shared<hostleg::HostCollectOptions>();
  auto log_level = std::make_shared<std::string>("info");
  auto* cmd = app.add_subcommand(
      "host-collect", "Collect CPU power on this node into <output-dir>/<host>.csv (host leg)");
  cmd->add_option("--output-dir", o->output_dir,
                  "Directory for <host>.csv and <host>.metadata.json")
      ->required();
  cmd->add_option("--ready-dir", o->ready_dir, "Directory for <host>.ready.json / .error.json")
      ->required();
  cmd->add_option("--source", o->source, sources::source_help())
      ->capture_default_str()
      ->check(CLI::IsMember(sources::source_choices()));
  cmd->add_option("--interval-seconds", o->interval_seconds, "Sample period")
      ->capture_default_str()
      ->check([](const std::string& text) -> std::string {
        try {
          const double v = std::stod(text);
          if (std::isfinite(v) && v > 0 && v <= 3600) return {};
        } catch (...) {
        }
        return "must be a finite number of seconds, > 0 and <= 3600: " + text;
      });
  cmd->add_option("--hwmon-root", o->hwmon_root, "hwmon class directory")->capture_default_str();
  cmd->add_option("--powercap-root", o->powercap_root, "powercap class directory, for x86 RAPL")
      ->capture_default_str();
  cmd->add_option("--pci-root", o->pci_root, "PCI devices directory, for GPU NUMA nodes")
      ->capture_default_str();
  cmd->add_option("--dcgm-lib", o->dcgm_lib, "DCGM library (default: libdcgm.so.4, .so.3, .so)");
  cmd->add_option("--nvml-lib", o->nvml_lib, "NVML library (default: libnvidia-ml.so.1, .so)");
  cmd->add_flag("--no-nvml", o->no_nvml, "Leave module_w blank (no NVML)");
  cmd->add_option("--max-age-s", o->max_age_s, "Withhold a reading older than this")
      ->capture_default_str()
      ->check(CLI::Range(0.001, 86400.0));
  cmd->add_option("--hostname", o->hostname,
                  "Node name for the files (default: $SLURMD_NODENAME, else the short host name)");
  cmd->add_option("--log-level", *log_level, "trace, debug, info, warn or error")
      ->capture_default_str()
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "off"}));
  cmd->callback([&action, o, log_level] {
    action = [o, log_level] {
      // Before any reader thread exists, so that a stop waits for the sample loop. SIGUSR1
      // too: it is the stop that srun relays to its tasks.
      common::block_shutdown_signals(true);
      common::init_logging(*common::parse_log_level(*log_level));
      return hostleg::run_host_collect(*o);
    };
  });
}

}  // namespace cpupower::app
