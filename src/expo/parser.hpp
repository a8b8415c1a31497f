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
#include <utility>
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

  // Duplicate series: a kept sample whose name and label set (the same labels with the same
  // values, in any order) repeat an earlier kept sample's. Exposition allows a series once
  // per body; readers that take the first sample would otherwise resolve it silently. The
  // samples stay in `samples` (a reader may have a rule of its own for them); these say how
  // many repeats there were and name the first one, `name{label="value",...}`.
  std::size_t duplicate_series = 0;
  std::string first_duplicate;

  bool ok() const { return !error.has_value(); }

  ParseResult() = default;
  ParseResult(ParseResult&&) = default;
  ParseResult& operator=(ParseResult&&) = default;
  ParseResult(const ParseResult&) = delete;
  ParseResult& operator=(const ParseResult&) = delete;

  // Storage the samples' views point into, and the parser's scratch; not for direct use.
  std::vector<ParsedLabel> label_storage;
  std::deque<std::string> unescaped_storage;  // a deque: growing it never moves a string
  std::vector<std::pair<std::size_t, std::size_t>> label_ranges;  // per sample, while parsing
  std::vector<ParsedLabel> skipped_labels;  // the labels of the line read, when not kept
  struct SeenLabelSet {
    std::string_view text;  // "{...}" as in the body
    std::size_t begin = 0;  // its labels in seen_labels
    std::size_t count = 0;
  };
  std::vector<SeenLabelSet> seen_label_sets;  // label sets read so far, to read them once
  std::vector<ParsedLabel> seen_labels;
  std::vector<std::pair<std::uint64_t, std::size_t>> series_keys;  // (hash, sample index)
};

// Parses a whole body. Unknown escapes in label values (\t, \x, ...) are kept literally, as
// upstream's Python parser keeps them; the three defined ones (\\ \" \n) are decoded.
ParseResult parse(std::string_view body, std::size_t max_body_bytes = kMaxBodyBytes);

struct ParseOptions {
  std::size_t max_body_bytes = kMaxBodyBytes;
  // When not empty: only samples whose metric name is one of these are kept. Every other
  // line is still read in full and refuses the body just the same when it is not valid
  // exposition (with the same line, column and message), so the verdict on a body never
  // depends on the names asked for; it only gives no sample. What a reader that uses a few
  // families of a large body (the GPU leg: 4 of dcgm-exporter's 13) saves is the storage
  // and the label lookups of the rest. The views must outlive the call only.
  std::span<const std::string_view> only_names;
};

// parse(), into `out`: its previous contents are dropped but its storage is kept, so that a
// caller parsing one body after another (the collector's legs) allocates nothing once the
// buffers have grown to its bodies.
void parse_into(std::string_view body, ParseResult& out, const ParseOptions& options = {});

}  // namespace cpupower::expo
