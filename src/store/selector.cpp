#include "store/selector.hpp"

#include <fmt/core.h>

#include <cmath>

namespace cpupower::store {
namespace {

bool name_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
bool name_char(char c) {
  return name_start(c) || (c >= '0' && c <= '9');
}

// A cursor over the selector text; every error names the byte offset.
struct Cursor {
  std::string_view s;
  std::size_t i = 0;

  void blanks() {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r')) ++i;
  }
  bool at_end() const { return i >= s.size(); }
  char peek() const { return s[i]; }
  Error fail(std::string_view why) const {
    return Error{fmt::format("--match {}: {} at offset {}", s, why, i)};
  }
};

Result<std::string> quoted(Cursor& c) {
  const char quote = c.peek();
  ++c.i;
  std::string out;
  while (!c.at_end()) {
    const char ch = c.peek();
    if (ch == quote) {
      ++c.i;
      return out;
    }
    if (quote != '`' && ch == '\n') return c.fail("a line break inside a quoted value");
    if (quote != '`' && ch == '\\') {
      ++c.i;
      if (c.at_end()) break;
      switch (c.peek()) {
        case '\\':
          out += '\\';
          break;
        case '"':
          out += '"';
          break;
        case '\'':
          out += '\'';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        default:
          return c.fail(
              fmt::format("escape \\{} is not one of \\\\ \\\" \\' \\n \\r \\t", c.peek()));
      }
      ++c.i;
      continue;
    }
    out += ch;
    ++c.i;
  }
  return c.fail("a quoted value that is never closed");
}

}  // namespace

Result<std::vector<Matcher>> parse_matchers(std::string_view selector) {
  Cursor c{selector};
  c.blanks();
  if (c.at_end() || c.peek() != '{') {
    return c.fail(
        "expected '{' (label matchers such as {job=\"cpu_power\"}; the metric names "
        "are the report's)");
  }
  ++c.i;
  std::vector<Matcher> out;
  for (;;) {
    c.blanks();
    if (c.at_end()) return c.fail("expected '}'");
    if (c.peek() == '}') {
      ++c.i;
      break;
    }
    if (!name_start(c.peek())) return c.fail("expected a label name");
    Matcher m;
    while (!c.at_end() && name_char(c.peek())) m.label += c.s[c.i++];
    if (m.label == "__name__") {
      return c.fail("__name__ is the report's to choose (it queries each counter by name)");
    }
    c.blanks();
    for (const char* op : {"=~", "!~", "!=", "="}) {
      if (c.s.substr(c.i).starts_with(op)) {
        m.op = op;
        c.i += m.op.size();
        break;
      }
    }
    if (m.op.empty()) return c.fail("expected one of = != =~ !~ after " + m.label);
    c.blanks();
    if (c.at_end() || (c.peek() != '"' && c.peek() != '\'' && c.peek() != '`')) {
      return c.fail("expected a quoted value");
    }
    auto value = quoted(c);
    if (!value) return Error{value.error()};
    m.value = std::move(*value);
    out.push_back(std::move(m));
    c.blanks();
    if (c.at_end()) return c.fail("expected ',' or '}'");
    if (c.peek() == ',') {
      ++c.i;
    } else if (c.peek() != '}') {
      return c.fail("expected ',' or '}'");
    }
  }
  c.blanks();
  if (!c.at_end()) return c.fail("text after the closing '}'");
  return out;
}

std::string promql_string(std::string_view s) {
  std::string out = "\"";
  for (const char ch : s) {
    switch (ch) {
      case '\\':
        out += "\\\\";
        break;
      case '"':
        out += "\\\"";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f) {
          out += fmt::format("\\x{:02x}", static_cast<unsigned char>(ch));
        } else {
          out += ch;
        }
    }
  }
  return out + "\"";
}

std::string render_matchers(const std::vector<Matcher>& matchers) {
  std::string out;
  for (const auto& m : matchers) {
    out += (out.empty() ? "" : ", ") + m.label + m.op + promql_string(m.value);
  }
  return out;
}

std::string alternation(const std::vector<std::string>& names) {
  std::string out;
  for (std::size_t n = 0; n < names.size(); ++n) {
    if (n > 0) out += '|';
    for (const char ch : names[n]) {
      if (std::string_view("\\.+*?()|[]{}^$").find(ch) != std::string_view::npos) out += '\\';
      out += ch;
    }
  }
  return out;
}

Matcher names_matcher(std::string label, const std::vector<std::string>& names, bool allow_domain) {
  std::string re = alternation(names);
  if (allow_domain) re = "(" + re + ")(\\..+)?";
  return {std::move(label), "=~", std::move(re)};
}

std::string range_selector(std::string_view metric, const std::vector<Matcher>& matchers,
                           double range_s) {
  const auto ms = static_cast<long long>(std::ceil(range_s * 1000));
  return fmt::format("{}{{{}}}[{}ms]", metric, render_matchers(matchers), ms);
}

}  // namespace cpupower::store
