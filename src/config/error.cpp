#include "config/error.hpp"

namespace cpupower::config {

namespace {

std::string place(const ConfigError& error) {
  std::string out = error.file.empty() ? std::string("<recipe>") : error.file;
  if (error.mark.line > 0) {
    out += ":" + std::to_string(error.mark.line) + ":" + std::to_string(error.mark.column);
  }
  return out;
}

}  // namespace

std::string format_error(const ConfigError& error) {
  return place(error) + ": " + error.message;
}

std::string format_warning(const ConfigError& warning) {
  return place(warning) + ": warning: " + warning.message;
}

}  // namespace cpupower::config
