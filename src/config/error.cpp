#include "config/error.hpp"

namespace cpupower::config {

std::string format_error(const ConfigError& error) {
  std::string out = error.file.empty() ? std::string("<recipe>") : error.file;
  if (error.mark.line > 0) {
    out += ":" + std::to_string(error.mark.line) + ":" + std::to_string(error.mark.column);
  }
  return out + ": " + error.message;
}

}  // namespace cpupower::config
