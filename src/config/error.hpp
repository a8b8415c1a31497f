#pragma once
// A recipe problem with its place, printed the way compilers print theirs
// (file:line:column: message) so that editors and terminals can jump to it.

#include <string>
#include <vector>

#include "config/recipe.hpp"

namespace cpupower::config {

struct ConfigError {
  std::string file;
  Mark mark;  // line 0: the problem has no single place in the file
  std::string message;
};

// "recipe.yaml:12:5: telemetry.cpu_power_exporter.port must be in 1..65535", or
// "recipe.yaml: <message>" without a place.
std::string format_error(const ConfigError& error);

// The same for a warning, as compilers print theirs: "recipe.yaml:4:24: warning: <message>".
std::string format_warning(const ConfigError& warning);

}  // namespace cpupower::config
