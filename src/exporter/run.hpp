#pragma once
// The exporter process (cpu-power-exporter): the web config, the node's sources, the HTTP
// server, then serving until SIGINT/SIGTERM. The binary's main parses the flags into Options.

#include <cstdint>
#include <string>
#include <string_view>

#include "sources/ladder.hpp"

namespace cpupower::exporter {

struct Options : sources::NodeFlags {
  std::uint16_t port = 9405;
  std::string bind = "0.0.0.0";
  unsigned read_interval_ms = 100;
  std::string log_level = "info";
  unsigned set_average_interval_ms = 0;  // 0: leave the firmware's interval alone
  std::string web_config_file;           // empty: plain HTTP, no authentication
};

// 2 for a web config that cannot be used (nothing served), 1 with "Error: <message>" when no
// source or listener can be established; once serving, it exits 0 after a shutdown signal
// without running the destructors a reader thread stuck in a read would hold up.
int run(const Options& options, std::string_view version);

}  // namespace cpupower::exporter
