#pragma once
// The exporter process (cpu-power-exporter): the web config, the node's sources, the HTTP
// server, then serving until SIGINT/SIGTERM. The binary's main parses the flags into Options.

#include <cstdint>
#include <string>

namespace cpupower::exporter {

struct Options {
  std::uint16_t port = 9405;
  std::string bind = "0.0.0.0";
  std::string hwmon_root = "/sys/class/hwmon";
  std::string pci_root = "/sys/bus/pci/devices";
  std::string source = "auto";
  unsigned read_interval_ms = 100;
  double max_age_s = 3.0;
  std::string log_level = "info";
  std::string dcgm_lib;
  std::string nvml_lib;
  bool no_nvml = false;
  unsigned set_average_interval_ms = 0;  // 0: leave the firmware's interval alone
  std::string web_config_file;           // empty: plain HTTP, no authentication
};

// Returns the exit status: 2 for a web config that cannot be used (nothing is served),
// 1 with "Error: <message>" when no source or listener can be established, 0 after a
// shutdown signal. Does not return once serving has begun: it exits without running the
// destructors a reader thread stuck in a read would hold up.
int run(const Options& options, std::string_view version);

}  // namespace cpupower::exporter
