#pragma once
// A tolerant parser for the Prometheus text exposition format (version 0.0.4), the input of
// the head-node collector. Tolerant of what real exporters send (HELP/TYPE anywhere, other
// comments, blank lines, CRLF, extra blanks, a trailing comma in the label set, optional
// timestamps, an OpenMetrics `# EOF`), strict about anything it cannot read unambiguously:
// one bad line fails the whole body with its line and column, because a half-read body
// could silently drop a socket and under-report the node total.
//
// Never throws on bad input. Zero-copy: names and label values are views into the body;
// only label values that contained escapes are copied (into the result). So:
//   * the body must outlive the result;
//   * the result is move-only (its spans point into its own storage).

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace cpupower::expo {

// Larger bodies are refused unread: a Grace exporter serves a few kilobytes, and the cap
// keeps a misbehaving endpoint from costing the collector memory or time.
inline constexpr std::size_t kMaxBodyBytes = std::size_t{1} << 20;

struct ParsedLabel {
  std::string_view name;
  std::string_view value;  // unescaped
};

struct Sample {
  std::string_view name;
  std::span<const ParsedLabel> labels;  // in the order the body lists them; names are unique
  double value = 0;                     // NaN and +-Inf are kept as such
  std::optional<std::int64_t> timestamp_ms;

  // The value of a label, or nullopt when the sample has no label of that name.
  std::optional<std::string_view> label(std::string_view label_name) const;
};

struct ParseError {
  std::size_t line = 0;    // 1-based; 0 for a problem with the body as a whole
  std::size_t column = 0;  // 1-based byte column; 0 when not about one place
  std::string message;
};

// "line 3, column 17: expected '=' after label name \"socket\"" and the like.
std::string describe(const ParseError& error);

struct ParseResult {
  std::vector<Sample> samples;      // empty when error is set
  std::optional<ParseError> error;  // set when the body was refused

  bool ok() const { return !error.has_value(); }

  ParseResult() = default;
  ParseResult(ParseResult&&) = default;
  ParseResult& operator=(ParseResult&&) = default;
  ParseResult(const ParseResult&) = delete;
  ParseResult& operator=(const ParseResult&) = delete;

  // Storage the samples' views point into; not for direct use.
  std::vector<ParsedLabel> label_storage;
  std::deque<std::string> unescaped_storage;  // a deque: growing it never moves a string
};

// Parses a whole body. Unknown escapes in label values (\t, \x, ...) are kept literally, as
// the Python reference parser does; the three defined ones (\\ \" \n) are decoded.
ParseResult parse(std::string_view body, std::size_t max_body_bytes = kMaxBodyBytes);

}  // namespace cpupower::expo
