#include "expo/writer.hpp"

#include <charconv>
#include <cmath>

namespace cpupower::expo {

std::string escape_label_value(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    switch (c) {
      case '\\':
        out += "\\\\";
        break;
      case '"':
        out += "\\\"";
        break;
      case '\n':
        out += "\\n";
        break;
      default:
        out += c;
    }
  }
  return out;
}

void append_fixed6(std::string& out, double value) {
  if (std::isnan(value)) {
    out += "NaN";
    return;
  }
  if (std::isinf(value)) {
    out += value > 0 ? "+Inf" : "-Inf";
    return;
  }
  char buf[400];  // a double's integral part has at most 309 digits
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value, std::chars_format::fixed, 6);
  if (ec == std::errc()) out.append(buf, end);
}

void append_uint(std::string& out, std::uint64_t value) {
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value);
  if (ec == std::errc()) out.append(buf, end);
}

std::string label_text(const Family& family, std::initializer_list<std::string_view> values) {
  std::string out;
  auto value = values.begin();
  for (std::size_t i = 0; i < family.labels.size() && value != values.end(); ++i, ++value) {
    out +=
        (i ? "," : "") + std::string(family.labels[i]) + "=\"" + escape_label_value(*value) + '"';
  }
  return out;
}

void append_family_header(std::string& out, const Family& family) {
  out += "# HELP ";
  out += family.name;
  out += ' ';
  out += family.help;
  out += "\n# TYPE ";
  out += family.name;
  out += ' ';
  out += family.type;
  out += '\n';
}

void append_sample_prefix(std::string& out, std::string_view name, std::string_view label_text) {
  out += name;
  out += '{';
  out += label_text;
  out += "} ";
}

}  // namespace cpupower::expo
