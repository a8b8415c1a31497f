#pragma once
// Cell formatting shared by the CSV writers: the csv module's default dialect (cells holding
// , " CR or LF are quoted, quotes doubled) and the shortest round-trip text for numbers.

#include <charconv>
#include <cmath>
#include <optional>
#include <string>
#include <string_view>

namespace cpupower::artifacts {

inline void append_cell(std::string& out, std::string_view cell) {
  if (cell.find_first_of(",\"\r\n") == std::string_view::npos) {
    out += cell;
    return;
  }
  out += '"';
  for (const char c : cell) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
}

inline void append_number(std::string& out, double value) {
  char buf[32];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value);
  if (ec == std::errc()) out.append(buf, end);
}

// A comma, then the value; an empty cell when it is missing or not finite.
inline void append_optional(std::string& out, const std::optional<double>& value) {
  out += ',';
  if (value && std::isfinite(*value)) append_number(out, *value);
}

}  // namespace cpupower::artifacts
