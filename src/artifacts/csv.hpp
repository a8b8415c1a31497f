#pragma once
// The one CSV reader of the project (and the writers' cell formatting). It reads RFC 4180 the
// way Python's csv module reads and writes it in its default dialect: comma separator, cells
// holding , " CR or LF enclosed in double quotes with "" for a quote, CR LF, LF or CR line
// ends, blank lines skipped. Files are read in blocks with pread, never mapped or read whole,
// so memory stays far below the file size; a byte range of a file can be read on its own,
// which lets a loader read a large file on several threads.
//
// Damage is stepped over, never silently: a quote that is never closed (or a record longer
// than kMaxRecordBytes) costs only the physical line it starts on, and reading goes on at the
// next line; a last record without a line end is flagged (a writer was stopped mid-row).

#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/result.hpp"

namespace cpupower::artifacts {

// A record longer than this is damage (real rows are about a hundred bytes).
inline constexpr std::size_t kMaxRecordBytes = 1u << 20;

struct CsvRecord {
  std::size_t line = 0;  // 1-based physical line the record starts on (within the range read)
  std::span<const std::string_view> cells;  // valid until the next call of next()
  bool terminated = true;  // false: the input ended inside this record, without a line end
};

// What a reader stepped over, for warnings.
struct CsvDamage {
  std::size_t line = 0;  // where the damaged record starts
  std::string what;      // "a quote is never closed", "a record longer than 1048576 bytes"
};

// Splits text into records. `text` must start at a record start.
class CsvTextReader {
 public:
  // `final`: the text ends the input. Otherwise a record that may go on past the text (a
  // quote still open at its end) is left unread for a reset() with more text.
  explicit CsvTextReader(std::string_view text = {}, bool final = true) { reset(text, final); }
  // Continues on new text that starts where the consumed bytes ended; lines keep counting.
  void reset(std::string_view text, bool final) {
    text_ = text;
    final_ = final;
    pos_ = 0;
  }
  // The next record; false when the text holds no further whole record. Damage is appended
  // to `damage` and stepped over.
  bool next(CsvRecord& out, std::vector<CsvDamage>& damage);
  std::size_t offset() const { return pos_; }          // bytes consumed of the text
  std::size_t record_start() const { return start_; }  // where the last record began
  std::size_t lines() const { return line_ - 1; }      // physical lines consumed in all
  bool saw_quote() const { return saw_quote_; }

 private:
  enum class Outcome { record, incomplete, open_quote, too_long };
  Outcome parse(std::size_t start, std::size_t* next);

  std::string_view text_;
  bool final_ = true;
  std::size_t pos_ = 0;
  std::size_t start_ = 0;
  std::size_t line_ = 1;
  bool saw_quote_ = false;
  bool skip_to_line_end_ = false;  // stepping over the rest of a damaged line
  struct Ref {
    bool own = false;  // in scratch_ (an unquoted copy), else in text_
    std::size_t begin = 0, size = 0;
  };
  std::vector<Ref> refs_;
  std::vector<std::string_view> cells_;
  std::string scratch_;
};

// Reads the records of a file, or of the byte range [begin, end) of it: a range that starts
// inside a line starts at the next line, and the record that starts before `end` is read to
// its end. Line numbers count from the range's first line.
class CsvFileReader {
 public:
  static Result<CsvFileReader> open(const std::string& path, std::size_t begin = 0,
                                    std::size_t end = SIZE_MAX);
  CsvFileReader(CsvFileReader&&) noexcept = default;
  CsvFileReader& operator=(CsvFileReader&&) noexcept = default;
  ~CsvFileReader();

  // The next record; false at the end of the range or on a read error (see error()).
  bool next(CsvRecord& out, std::vector<CsvDamage>& damage);
  const std::string& error() const { return error_; }
  bool saw_quote() const { return text_.saw_quote(); }
  // Physical lines of the range read so far (at its end: every line of the range).
  std::size_t lines() const { return stopped_ ? stop_lines_ : text_.lines(); }
  std::size_t size() const { return size_; }  // the whole file's size in bytes
  std::size_t offset() const { return buf_pos_ + text_base_ + text_.offset(); }  // consumed
  // File offsets where the range's text starts and, once next() has returned false, where
  // its last record ends (the file's size at its end): a range read covers [first, stop),
  // and ranges that join exactly read every record once.
  std::size_t first_offset() const { return first_; }
  std::size_t stop_offset() const { return stop_; }

 private:
  CsvFileReader() = default;
  bool fill(std::size_t drop);  // drops consumed bytes, reads a block; false on error

  std::string path_;
  struct Fd {
    int fd = -1;
    Fd() = default;
    Fd(Fd&& o) noexcept : fd(std::exchange(o.fd, -1)) {}
    Fd& operator=(Fd&& o) noexcept {
      std::swap(fd, o.fd);
      return *this;
    }
    ~Fd();
  } fd_;
  std::size_t size_ = 0;
  std::size_t range_end_ = SIZE_MAX;
  std::size_t first_ = 0, stop_ = 0;
  std::vector<char> buf_;      // grows only for records longer than a block
  std::size_t len_ = 0;        // bytes of buf_ holding file data
  std::size_t buf_pos_ = 0;    // file offset of buf_[0]
  std::size_t text_base_ = 0;  // where the text reader's text starts in buf_
  bool eof_ = false;
  bool done_ = false;
  bool stopped_ = false;  // at a record after the range
  std::size_t stop_lines_ = 0;
  std::size_t last_end_ = 0, last_lines_ = 0;  // just after the last record returned
  std::string error_;
  CsvTextReader text_{std::string_view{}, false};
};

// Index of `name` in `header`, or nullopt. Columns are always found by name.
std::optional<std::size_t> column_index(std::span<const std::string> header, std::string_view name);

// The first line of a CSV file as its header, read without reading the rest of the file:
// nullopt when the file holds no record at all (empty, or blank lines only). An error says
// why the first line is no header: the file cannot be read (its errno text, "is a directory"),
// the line is damage (a quote never closed, a record over kMaxRecordBytes: 2 GiB of NUL bytes
// is one such line), it holds a NUL byte, or it names a column twice:
//   "line 1: a record longer than 1048576 bytes, no CSV header"
//   "line 1: column 'power_w' appears twice in the header (columns 7 and 10)"
// File errors start with the path; the others are left to the caller to prefix.
Result<std::optional<std::vector<std::string>>> read_csv_header(const std::string& path);

// What is wrong with a header the reader returned as the first record at `line` (after the
// damage it stepped over before it): "" when nothing. The same texts as read_csv_header.
std::string csv_header_problem(std::span<const std::string_view> header, std::size_t line,
                               const std::vector<CsvDamage>& damage_before);

// Python float() for one cell: surrounding blanks allowed, decimal or exponent notation, inf
// and nan; an out-of-range exponent gives inf or 0 as Python does. nullopt when the cell is
// blank or not a number.
std::optional<double> parse_double(std::string_view cell);
namespace detail {
// A plain decimal ([-]digits[.digits]) of at most 15 digits, as m / 10^k: both are exact
// doubles, so one division rounds correctly and gives from_chars' double (Clinger's fast
// path). About twice as fast as from_chars on the collectors' watts (docs/performance.md);
// false for anything else, which from_chars takes.
inline bool plain_decimal(std::string_view s, double* out) {
  static constexpr double kPow10[] = {1e0, 1e1, 1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                      1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15};
  const char* p = s.data();
  const char* const e = p + s.size();
  const bool negative = p < e && *p == '-';
  p += negative ? 1 : 0;
  std::uint64_t m = 0;
  int digits = 0, frac = -1;
  for (; p < e; ++p) {
    const unsigned d = static_cast<unsigned char>(*p) - unsigned{'0'};
    if (d < 10) {
      m = m * 10 + d;
      ++digits;
      frac += frac >= 0 ? 1 : 0;
    } else if (*p == '.' && frac < 0) {
      frac = 0;
    } else {
      return false;
    }
  }
  if (digits == 0 || digits > 15 || (negative && m == 0)) return false;  // (-0: from_chars)
  const double v = static_cast<double>(m) / kPow10[frac < 0 ? 0 : frac];
  *out = negative ? -v : v;
  return true;
}
}  // namespace detail

// The same, for the loaders' hot path.
inline bool parse_double(std::string_view cell, double* out) {
  if (detail::plain_decimal(cell, out)) return true;
  if (cell.empty()) return false;
  const char* e = cell.data() + cell.size();
  const auto [p, ec] = std::from_chars(cell.data(), e, *out);
  if (ec == std::errc() && p == e && !std::isnan(*out)) return true;  // ("nan(1)": float() refuses)
  const auto v = parse_double(cell);
  if (v) *out = *v;
  return v.has_value();
}

// Python int() for one cell (surrounding blanks and a sign allowed). nullopt when it is not
// an integer or does not fit 64 bits.
std::optional<long long> parse_int(std::string_view cell);

// Why a cell was refused, for a warning: "timestamp_unix is blank" or "timestamp_unix 'abc'
// is not a number" (a long cell is cut to its first 40 bytes; control bytes are escaped).
std::string describe_bad_cell(std::string_view column, std::string_view cell,
                              std::string_view wanted = "a number");

// Writers: one cell in the csv module's default dialect (quoted only when it holds , " CR or
// LF), the shortest text that reads back to the same double, and an optional number (a
// missing or non-finite value is an empty cell).
void append_cell(std::string& out, std::string_view cell);
void append_number(std::string& out, double value);
inline void append_optional(std::string& out, const std::optional<double>& value) {
  if (value && std::isfinite(*value)) append_number(out, *value);
}

}  // namespace cpupower::artifacts
