#include "sources/sysfs_read.hpp"

#include <cmath>

#include "common/text.hpp"

namespace cpupower::sources {

PowerRead interpret_microwatts(std::string_view text) {
  const auto t = common::trim(text);
  if (t.empty()) return {std::nullopt, "empty"};
  if (t == kFirmwareInvalidUw) return {std::nullopt, "firmware reports the reading invalid"};
  const auto uw = common::parse_double(t);
  if (!uw) return {std::nullopt, "unparsable value " + std::string(t.substr(0, 32))};
  const double w = *uw / 1e6;
  if (!std::isfinite(w)) return {std::nullopt, "non-finite value"};
  if (w == 0.0) return {std::nullopt, "zero (no reading yet)"};
  if (w < 0.0) return {std::nullopt, "negative value"};
  return {w, {}};
}

PowerRead read_power_file(const std::string& path) {
  std::string error;
  const auto text = common::read_small_file(path, &error, 256);
  if (!text) return {std::nullopt, "read failed: " + error};
  return interpret_microwatts(*text);
}

}  // namespace cpupower::sources
