#include "expo/parser.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstring>
#include <optional>
#include <string>
#include <utility>

namespace cpupower::expo {
namespace {

constexpr bool is_blank(char c) {
  return c == ' ' || c == '\t';
}
constexpr bool is_alpha(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
constexpr bool is_digit(char c) {
  return c >= '0' && c <= '9';
}
constexpr bool is_metric_start(char c) {
  return is_alpha(c) || c == '_' || c == ':';
}
constexpr bool is_label_start(char c) {
  return is_alpha(c) || c == '_';
}

// The name loops run over every byte of every name: one table lookup a byte instead of
// five comparisons.
enum : unsigned char { kMetricChar = 1, kLabelChar = 2 };
constexpr std::array<unsigned char, 256> kNameChars = [] {
  std::array<unsigned char, 256> t{};
  for (int c = 0; c < 256; ++c) {
    const auto ch = static_cast<char>(c);
    if (is_label_start(ch) || is_digit(ch)) t[static_cast<std::size_t>(c)] |= kLabelChar;
    if (is_metric_start(ch) || is_digit(ch)) t[static_cast<std::size_t>(c)] |= kMetricChar;
  }
  return t;
}();
constexpr bool is_metric_char(char c) {
  return (kNameChars[static_cast<unsigned char>(c)] & kMetricChar) != 0;
}
constexpr bool is_label_char(char c) {
  return (kNameChars[static_cast<unsigned char>(c)] & kLabelChar) != 0;
}

// What the parser found, for messages: a short, printable excerpt of the rest of the line.
std::string excerpt(std::string_view rest) {
  if (rest.empty()) return "end of line";
  constexpr std::size_t kMax = 24;
  std::string out = "'";
  for (std::size_t i = 0; i < rest.size() && i < kMax; ++i) {
    const auto c = static_cast<unsigned char>(rest[i]);
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 0xf];
    }
  }
  if (rest.size() > kMax) out += "...";
  out += "'";
  return out;
}

// Prometheus spells the special values NaN, +Inf, -Inf; from_chars takes the lower-case
// C spellings and no leading '+', so the sign is handled here.
std::optional<double> parse_value(std::string_view token) {
  if (!token.empty() && token.front() == '+') {
    token.remove_prefix(1);
    if (!token.empty() && (token.front() == '-' || token.front() == '+')) return std::nullopt;
  }
  if (token.empty()) return std::nullopt;
  double v = 0;
  const auto [p, ec] = std::from_chars(token.data(), token.data() + token.size(), v);
  if (ec != std::errc() || p != token.data() + token.size()) return std::nullopt;
  return v;
}

std::optional<std::int64_t> parse_timestamp(std::string_view token) {
  std::int64_t v = 0;
  const auto [p, ec] = std::from_chars(token.data(), token.data() + token.size(), v);
  if (token.empty() || ec != std::errc() || p != token.data() + token.size()) return std::nullopt;
  return v;
}

// Parses one line at a time into the result's flat storage. Errors record line and column.
class LineParser {
 public:
  LineParser(ParseResult& out, std::span<const std::string_view> only_names)
      : out_(out), only_names_(only_names) {}

  // Returns false with error_ set when the line is not valid exposition.
  bool sample_line(std::string_view line, std::size_t line_no) {
    line_ = line;
    line_no_ = line_no;
    pos_ = 0;
    skip_blanks();

    const auto name_begin = pos_;
    if (pos_ >= line_.size() || !is_metric_start(line_[pos_])) {
      return fail("expected a metric name, found " + excerpt(rest()));
    }
    pos_ = scan(pos_, is_metric_char);
    Sample sample;
    sample.name = line_.substr(name_begin, pos_ - name_begin);
    // A sample nobody asked for is read all the same, into scratch storage, and dropped.
    const bool keep = only_names_.empty() || std::find(only_names_.begin(), only_names_.end(),
                                                       sample.name) != only_names_.end();
    auto& storage = keep ? out_.label_storage : out_.skipped_labels;
    if (!keep) storage.clear();

    const auto labels_begin = storage.size();
    if (pos_ < line_.size() && line_[pos_] == '{') {
      if (!label_set(storage, labels_begin, keep)) return false;
    } else if (pos_ < line_.size() && !is_blank(line_[pos_])) {
      return fail("unexpected " + excerpt(rest()) + " after metric name");
    }

    skip_blanks();
    const auto value_token = token();
    if (value_token.empty()) return fail("missing sample value");
    const auto value = parse_value(value_token);
    if (!value) return fail("sample value '" + std::string(value_token) + "' is not a number");
    sample.value = *value;

    skip_blanks();
    if (pos_ < line_.size()) {
      const auto ts_pos = pos_;
      const auto ts_token = token();
      const auto ts = parse_timestamp(ts_token);
      if (!ts) {
        pos_ = ts_pos;
        return fail("timestamp '" + std::string(ts_token) +
                    "' is not an integer number of milliseconds");
      }
      sample.timestamp_ms = *ts;
      skip_blanks();
      if (pos_ < line_.size()) return fail("unexpected " + excerpt(rest()) + " after timestamp");
    }
    if (!keep) return true;
    // The span is fixed up once storage stops growing; keep the range in the meantime.
    out_.label_ranges.emplace_back(labels_begin, storage.size() - labels_begin);
    out_.samples.push_back(sample);
    return true;
  }

  void finish() {
    for (std::size_t i = 0; i < out_.samples.size(); ++i) {
      const auto [begin, count] = out_.label_ranges[i];
      out_.samples[i].labels =
          std::span<const ParsedLabel>(out_.label_storage.data() + begin, count);
    }
  }

  ParseError take_error() { return std::move(error_); }

 private:
  // How many distinct label sets a body may have remembered (see label_set).
  static constexpr std::size_t kMaxSeenLabelSets = 16;

  // The label set at pos_ ('{'). Exporters repeat one label set per device or sensor on
  // every family (dcgm-exporter: 7 labels, about 200 bytes, per GPU on each of its 13
  // families), and reading `{...}` depends on nothing but its own bytes up to the closing
  // brace. So a line that goes on with exactly the text of a set already read (and valid)
  // in this body gets that set's labels without reading them again: the same labels, the
  // same position after it, and no error, as a fresh read would give. The first
  // kMaxSeenLabelSets distinct sets of a body are remembered.
  bool label_set(std::vector<ParsedLabel>& storage, std::size_t labels_begin, bool keep) {
    const std::string_view rest = line_.substr(pos_);
    for (const auto& seen : out_.seen_label_sets) {
      if (rest.size() >= seen.text.size() &&
          std::memcmp(rest.data(), seen.text.data(), seen.text.size()) == 0) {
        if (keep) {
          const auto first = out_.seen_labels.begin() + static_cast<std::ptrdiff_t>(seen.begin);
          storage.insert(storage.end(), first, first + static_cast<std::ptrdiff_t>(seen.count));
        }
        pos_ += seen.text.size();
        return true;
      }
    }
    const auto open = pos_++;
    if (!labels(storage, labels_begin)) return false;
    if (out_.seen_label_sets.size() < kMaxSeenLabelSets) {
      out_.seen_label_sets.push_back(ParseResult::SeenLabelSet{
          line_.substr(open, pos_ - open), out_.seen_labels.size(), storage.size() - labels_begin});
      out_.seen_labels.insert(out_.seen_labels.end(),
                              storage.begin() + static_cast<std::ptrdiff_t>(labels_begin),
                              storage.end());
    }
    return true;
  }

  // The end of the run of bytes from `from` that `in_class` accepts.
  std::size_t scan(std::size_t from, bool (*in_class)(char)) const {
    const char* const data = line_.data();
    const std::size_t size = line_.size();
    while (from < size && in_class(data[from])) ++from;
    return from;
  }

  bool labels(std::vector<ParsedLabel>& storage, std::size_t labels_begin) {
    while (true) {
      skip_blanks();
      if (pos_ >= line_.size()) return fail("unterminated label set: missing '}'");
      if (line_[pos_] == '}') {
        ++pos_;
        return true;
      }
      if (!is_label_start(line_[pos_])) {
        return fail("expected a label name or '}', found " + excerpt(rest()));
      }
      const auto name_begin = pos_;
      pos_ = scan(pos_, is_label_char);
      const auto name = line_.substr(name_begin, pos_ - name_begin);
      for (auto i = labels_begin; i < storage.size(); ++i) {
        if (storage[i].name == name) {
          pos_ = name_begin;
          return fail("duplicate label \"" + std::string(name) + "\"");
        }
      }
      skip_blanks();
      if (pos_ >= line_.size() || line_[pos_] != '=') {
        return fail("expected '=' after label name \"" + std::string(name) + "\", found " +
                    excerpt(rest()));
      }
      ++pos_;
      skip_blanks();
      if (pos_ >= line_.size() || line_[pos_] != '"') {
        return fail("expected '\"' to open the value of label \"" + std::string(name) +
                    "\", found " + excerpt(rest()));
      }
      ++pos_;
      std::string_view value;
      if (!label_value(name, value)) return false;
      storage.push_back(ParsedLabel{name, value});
      skip_blanks();
      if (pos_ < line_.size() && line_[pos_] == ',') {
        ++pos_;
      } else if (pos_ >= line_.size() || line_[pos_] != '}') {
        return fail("expected ',' or '}' after the value of label \"" + std::string(name) +
                    "\", found " + excerpt(rest()));
      }
    }
  }

  // Most values hold no escape and stay a view into the body; the first backslash switches
  // to building a copy.
  bool label_value(std::string_view name, std::string_view& value) {
    const auto begin = pos_;
    // The closing quote, then whether a backslash comes before it: two memchr calls rather
    // than a loop over every byte of the value (UUIDs, bus ids and model names, on every
    // series of a dcgm-exporter body).
    const char* const from = line_.data() + pos_;
    const std::size_t left = line_.size() - pos_;
    const auto* quote = static_cast<const char*>(std::memchr(from, '"', left));
    const std::size_t span = quote ? static_cast<std::size_t>(quote - from) : left;
    const auto* backslash = static_cast<const char*>(std::memchr(from, '\\', span));
    if (!backslash && quote) {
      value = line_.substr(begin, span);
      pos_ += span + 1;
      return true;
    }
    pos_ += backslash ? static_cast<std::size_t>(backslash - from) : span;
    std::string copy(line_.substr(begin, pos_ - begin));
    while (pos_ < line_.size() && line_[pos_] != '"') {
      if (line_[pos_] == '\\' && pos_ + 1 < line_.size()) {
        const char next = line_[pos_ + 1];
        if (next == '\\' || next == '"') {
          copy += next;
        } else if (next == 'n') {
          copy += '\n';
        } else {
          copy += '\\';
          copy += next;
        }
        pos_ += 2;
      } else {
        copy += line_[pos_++];
      }
    }
    if (pos_ >= line_.size()) {
      pos_ = begin - 1;
      return fail("unterminated value of label \"" + std::string(name) + "\"");
    }
    ++pos_;
    value = out_.unescaped_storage.emplace_back(std::move(copy));
    return true;
  }

  std::string_view token() {
    const auto begin = pos_;
    while (pos_ < line_.size() && !is_blank(line_[pos_])) ++pos_;
    return line_.substr(begin, pos_ - begin);
  }

  void skip_blanks() {
    while (pos_ < line_.size() && is_blank(line_[pos_])) ++pos_;
  }

  std::string_view rest() const { return line_.substr(pos_); }

  bool fail(std::string message) {
    error_ = ParseError{line_no_, pos_ + 1, std::move(message)};
    return false;
  }

  ParseResult& out_;
  std::span<const std::string_view> only_names_;
  std::string_view line_;
  std::size_t line_no_ = 0;
  std::size_t pos_ = 0;
  ParseError error_;
};

enum class LineKind { blank, comment, eof, sample };

LineKind classify_line(std::string_view line) {
  std::size_t i = 0;
  while (i < line.size() && is_blank(line[i])) ++i;
  if (i == line.size()) return LineKind::blank;
  if (line[i] != '#') return LineKind::sample;
  // HELP, TYPE and free comments carry nothing the collector uses; only EOF matters.
  auto rest = line.substr(i + 1);
  while (!rest.empty() && is_blank(rest.front())) rest.remove_prefix(1);
  while (!rest.empty() && is_blank(rest.back())) rest.remove_suffix(1);
  return rest == "EOF" ? LineKind::eof : LineKind::comment;
}

// FNV-1a of a byte range, then a separator.
std::uint64_t hash_bytes(std::uint64_t h, std::string_view bytes) {
  for (const char c : bytes) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ULL;
  }
  h ^= 0xff;
  return h * 0x100000001b3ULL;
}

// A series' hash, whatever the order of its labels: the labels' own hashes are summed.
std::uint64_t series_hash(const Sample& s) {
  constexpr std::uint64_t kBasis = 0xcbf29ce484222325ULL;
  std::uint64_t labels = 0;
  for (const auto& l : s.labels) labels += hash_bytes(hash_bytes(kBasis, l.name), l.value);
  return hash_bytes(kBasis, s.name) ^ (labels * 0x9e3779b97f4a7c15ULL);
}

bool same_series(const Sample& a, const Sample& b) {
  if (a.name != b.name || a.labels.size() != b.labels.size()) return false;
  for (const auto& l : a.labels) {
    if (b.label(l.name) != std::optional(l.value)) return false;
  }
  return true;
}

std::string series_text(const Sample& s) {
  std::string out(s.name);
  if (s.labels.empty()) return out;
  out += '{';
  for (std::size_t i = 0; i < s.labels.size(); ++i) {
    if (i > 0) out += ',';
    out += s.labels[i].name;
    out += "=\"";
    for (const char c : s.labels[i].value) {
      if (c == '\\' || c == '"') out += '\\';
      if (c == '\n') {
        out += "\\n";
      } else {
        out += c;
      }
    }
    out += '"';
  }
  out += '}';
  return out;
}

// Counts the kept samples that repeat an earlier one's series and names the first repeat.
void find_duplicates(ParseResult& result) {
  auto& keys = result.series_keys;
  keys.clear();
  keys.reserve(result.samples.size());
  for (std::size_t i = 0; i < result.samples.size(); ++i) {
    keys.emplace_back(series_hash(result.samples[i]), i);
  }
  std::sort(keys.begin(), keys.end());
  std::optional<std::size_t> first;
  for (std::size_t i = 0; i < keys.size();) {
    std::size_t end = i + 1;
    while (end < keys.size() && keys[end].first == keys[i].first) ++end;
    // Equal hashes: the same series unless the hash collided, so compare each with those
    // before it in the group (groups hold one series, two at most, in practice).
    for (std::size_t j = i + 1; j < end; ++j) {
      for (std::size_t k = i; k < j; ++k) {
        if (same_series(result.samples[keys[j].second], result.samples[keys[k].second])) {
          ++result.duplicate_series;
          if (!first || keys[j].second < *first) first = keys[j].second;
          break;
        }
      }
    }
    i = end;
  }
  if (first) result.first_duplicate = series_text(result.samples[*first]);
}

}  // namespace

std::optional<std::string_view> Sample::label(std::string_view label_name) const {
  for (const auto& l : labels) {
    if (l.name == label_name) return l.value;
  }
  return std::nullopt;
}

std::string describe(const ParseError& error) {
  std::string out;
  if (error.line > 0) {
    out = "line " + std::to_string(error.line);
    if (error.column > 0) out += ", column " + std::to_string(error.column);
    out += ": ";
  }
  return out + error.message;
}

void parse_into(std::string_view body, ParseResult& result, const ParseOptions& options) {
  result.samples.clear();
  result.error.reset();
  result.label_storage.clear();
  result.unescaped_storage.clear();
  result.label_ranges.clear();
  result.skipped_labels.clear();
  result.seen_label_sets.clear();
  result.seen_labels.clear();
  result.duplicate_series = 0;
  result.first_duplicate.clear();
  if (body.size() > options.max_body_bytes) {
    result.error = ParseError{0, 0,
                              "body is " + std::to_string(body.size()) + " bytes, over the " +
                                  std::to_string(options.max_body_bytes) + "-byte limit"};
    return;
  }
  if (options.only_names.empty()) {
    // A typical exporter line is ~120 bytes with ~5 labels; reserving from that avoids most
    // regrowth without a counting pass. (With only some names kept, the storage grows to
    // what they need once and is reused.)
    result.samples.reserve(body.size() / 96 + 1);
    result.label_storage.reserve(body.size() / 24 + 1);
    result.label_ranges.reserve(body.size() / 96 + 1);
  }

  LineParser parser(result, options.only_names);
  std::size_t line_no = 0;
  const char* p = body.data();
  const char* const end = body.data() + body.size();
  while (p < end) {
    ++line_no;
    const auto* nl =
        static_cast<const char*>(std::memchr(p, '\n', static_cast<std::size_t>(end - p)));
    const char* line_end = nl ? nl : end;
    std::string_view line(p, static_cast<std::size_t>(line_end - p));
    p = nl ? nl + 1 : end;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);

    const auto kind = classify_line(line);
    if (kind == LineKind::eof) break;
    if (kind != LineKind::sample) continue;
    if (!parser.sample_line(line, line_no)) {
      result.error = parser.take_error();
      result.samples.clear();
      result.label_storage.clear();
      result.unescaped_storage.clear();
      result.label_ranges.clear();
      result.seen_label_sets.clear();
      result.seen_labels.clear();
      return;
    }
  }
  parser.finish();
  find_duplicates(result);
}

ParseResult parse(std::string_view body, std::size_t max_body_bytes) {
  ParseResult result;
  ParseOptions options;
  options.max_body_bytes = max_body_bytes;
  parse_into(body, result, options);
  return result;
}

}  // namespace cpupower::expo
