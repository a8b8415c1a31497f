#include "artifacts/csv.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <utility>

namespace cpupower::artifacts {

// ---- CsvTextReader ----------------------------------------------------------------------

// Parses the record at `start`. On `record`, cells_ (or, for a record with quotes, refs_)
// hold its cells, *next is where the next record starts and line_ has advanced past its line
// ends.
CsvTextReader::Outcome CsvTextReader::parse(std::size_t start, std::size_t* next) {
  refs_.clear();
  cells_.clear();
  scratch_.clear();
  const char* const base = text_.data();
  const std::size_t n = text_.size();
  // Fast path: a line without quotes or a bare CR is split at its commas in place.
  const void* nl = std::memchr(base + start, '\n', n - start);
  if (!nl && !final_) return n - start > kMaxRecordBytes ? Outcome::too_long : Outcome::incomplete;
  const std::size_t line_end = nl ? static_cast<const char*>(nl) - base : n;
  std::size_t content_end = line_end;
  if (nl && content_end > start && base[content_end - 1] == '\r') --content_end;
  if (line_end - start > kMaxRecordBytes) return Outcome::too_long;
  // A line without a quote or a bare CR is split at its commas in place. memchr per comma
  // measured about twice as fast as a byte loop here (docs/performance.md).
  const char* cell = base + start;
  const char* const end = base + content_end;
  const auto size = static_cast<std::size_t>(end - cell);
  if (!std::memchr(cell, '"', size) && !std::memchr(cell, '\r', size)) {
    while (const void* comma = std::memchr(cell, ',', static_cast<std::size_t>(end - cell))) {
      const auto* c = static_cast<const char*>(comma);
      cells_.emplace_back(cell, static_cast<std::size_t>(c - cell));
      cell = c + 1;
    }
    cells_.emplace_back(cell, static_cast<std::size_t>(end - cell));
    ++line_;
    *next = nl ? line_end + 1 : n;
    return Outcome::record;
  }
  cells_.clear();
  // Python's csv state machine (doublequote, non-strict): a quote opens a quoted cell only at
  // the cell's start; "" inside it is a quote; text after the closing quote joins the cell.
  saw_quote_ = true;
  enum { start_cell, plain, quoted, quote_in_quoted } state = start_cell;
  std::size_t lines = 0;
  bool own = false;  // the cell is being copied into scratch_
  std::size_t cell_begin = start;
  const auto save = [&](std::size_t end) {
    refs_.push_back(own ? Ref{true, cell_begin, scratch_.size() - cell_begin}
                        : Ref{false, cell_begin, end - cell_begin});
  };
  for (std::size_t i = start; i < n; ++i) {
    if (i - start > kMaxRecordBytes) return Outcome::too_long;
    const char c = base[i];
    const bool eol = c == '\n' || c == '\r';
    if (state == start_cell) {
      own = c == '"';
      cell_begin = own ? scratch_.size() : i;
      state = own ? quoted : plain;
      if (own) continue;
    }
    if (state == quote_in_quoted) {
      if (c == '"') {
        scratch_ += '"';
        state = quoted;
        continue;
      }
      state = plain;  // the quoted part is over; anything up to the next comma joins it
    }
    if (state == quoted) {
      if (c == '"') {
        state = quote_in_quoted;
        continue;
      }
      if (c == '\n' || (c == '\r' && !(i + 1 < n && base[i + 1] == '\n'))) ++lines;
      scratch_ += c;
      continue;
    }
    // plain
    if (c == ',') {
      save(i);
      state = start_cell;
      continue;
    }
    if (eol) {
      if (c == '\r' && i + 1 == n && !final_) return Outcome::incomplete;  // CR LF split?
      save(i);
      *next = i + 1 + (c == '\r' && i + 1 < n && base[i + 1] == '\n' ? 1 : 0);
      line_ += lines + 1;
      return Outcome::record;
    }
    if (own) scratch_ += c;
  }
  if (!final_) return Outcome::incomplete;
  if (state == quoted) return Outcome::open_quote;
  if (state == start_cell) {
    own = false;
    cell_begin = n;
  }
  save(n);  // the input ends inside the last cell (or right after its comma: an empty one)
  line_ += lines + 1;
  *next = n;
  return Outcome::record;
}

bool CsvTextReader::next(CsvRecord& out, std::vector<CsvDamage>& damage) {
  while (pos_ < text_.size()) {
    if (skip_to_line_end_) {
      // After damage only the line the damaged record starts on is lost: read on from the
      // next one. Text without its line end is consumed, so memory stays bounded.
      const void* nl = std::memchr(text_.data() + pos_, '\n', text_.size() - pos_);
      pos_ = nl ? static_cast<std::size_t>(static_cast<const char*>(nl) - text_.data()) + 1
                : text_.size();
      if (!nl && !final_) return false;
      skip_to_line_end_ = false;
      continue;
    }
    const char c = text_[pos_];
    if (c == '\n' || c == '\r') {  // a blank line
      const bool crlf = c == '\r' && pos_ + 1 < text_.size() && text_[pos_ + 1] == '\n';
      if (c == '\r' && !crlf && pos_ + 1 == text_.size() && !final_) return false;
      pos_ += crlf ? 2 : 1;
      ++line_;
      continue;
    }
    start_ = pos_;
    const std::size_t start_line = line_;
    std::size_t next = 0;
    const Outcome o = parse(pos_, &next);
    if (o == Outcome::incomplete) return false;
    if (o != Outcome::record) {
      damage.push_back(
          {start_line, o == Outcome::open_quote
                           ? "a quote is never closed"
                           : "a record longer than " + std::to_string(kMaxRecordBytes) + " bytes"});
      skip_to_line_end_ = true;
      line_ = start_line + 1;
      continue;
    }
    for (const Ref& r : refs_) {
      cells_.push_back(r.own ? std::string_view(scratch_).substr(r.begin, r.size)
                             : text_.substr(r.begin, r.size));
    }
    out.line = start_line;
    out.cells = cells_;
    out.terminated = text_[next - 1] == '\n' || text_[next - 1] == '\r';
    pos_ = next;
    return true;
  }
  return false;
}

// ---- CsvFileReader ----------------------------------------------------------------------

namespace {
constexpr std::size_t kBlockBytes = 4u << 20;
}

CsvFileReader::Fd::~Fd() {
  if (fd >= 0) ::close(fd);
}

CsvFileReader::~CsvFileReader() = default;

Result<CsvFileReader> CsvFileReader::open(const std::string& path, std::size_t begin,
                                          std::size_t end) {
  CsvFileReader r;
  r.path_ = path;
  r.fd_.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (r.fd_.fd < 0) return Error{path + ": " + std::strerror(errno)};
  struct stat st {};
  if (::fstat(r.fd_.fd, &st) != 0) return Error{path + ": " + std::strerror(errno)};
  if (S_ISDIR(st.st_mode)) return Error{path + ": is a directory"};
  r.size_ = static_cast<std::size_t>(st.st_size);
  r.range_end_ = end;
  r.buf_pos_ = begin > 0 ? begin - 1 : 0;
  if (begin > 0) {
    // Start at the first line that begins at or after `begin`.
    while (true) {
      if (!r.fill(r.len_)) return Error{r.error_};
      const void* nl = std::memchr(r.buf_.data(), '\n', r.len_);
      if (nl != nullptr) {
        r.text_base_ = static_cast<const char*>(nl) - r.buf_.data() + 1;
        break;
      }
      if (r.eof_) {
        r.text_base_ = r.len_;
        break;
      }
    }
  }
  r.first_ = r.last_end_ = r.buf_pos_ + r.text_base_;
  r.text_.reset(std::string_view(r.buf_.data() + r.text_base_, r.len_ - r.text_base_), r.eof_);
  return r;
}

bool CsvFileReader::fill(std::size_t drop) {
  // Keep the unconsumed bytes at the front, then read a block behind them (a record longer
  // than what is left of the buffer grows it; the text reader refuses very long records).
  // (Not on the first fill: memmove with the null data() of an empty buffer is undefined,
  // even for zero bytes.)
  if (drop > 0) std::memmove(buf_.data(), buf_.data() + drop, len_ - drop);
  len_ -= drop;
  buf_pos_ += drop;
  if (buf_.size() < len_ + kBlockBytes) buf_.resize(len_ + kBlockBytes);
  std::size_t got = 0;
  while (got < kBlockBytes) {
    const ssize_t n = ::pread(fd_.fd, buf_.data() + len_ + got, kBlockBytes - got,
                              static_cast<off_t>(buf_pos_ + len_ + got));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      error_ = path_ + ": " + std::strerror(errno);
      return false;
    }
    if (n == 0) {
      eof_ = true;
      break;
    }
    got += static_cast<std::size_t>(n);
  }
  len_ += got;
  return true;
}

bool CsvFileReader::next(CsvRecord& out, std::vector<CsvDamage>& damage) {
  while (!done_) {
    if (text_.next(out, damage)) {
      const std::size_t at = buf_pos_ + text_base_ + text_.record_start();
      if (at < range_end_) {
        last_end_ = buf_pos_ + text_base_ + text_.offset();
        last_lines_ = text_.lines();
        return true;
      }
      // The range ends with its last record (the blank lines after it belong to the next).
      stop_ = last_end_;
      stop_lines_ = last_lines_;
      stopped_ = done_ = true;
      return false;
    }
    if (eof_) {
      stop_ = buf_pos_ + len_;
      done_ = true;
      return false;
    }
    if (!fill(text_base_ + text_.offset())) return false;
    text_base_ = 0;
    text_.reset(std::string_view(buf_.data(), len_), eof_);
  }
  return false;
}

// ---- small files, cells, numbers --------------------------------------------------------

std::optional<std::size_t> column_index(std::span<const std::string> header,
                                        std::string_view name) {
  const auto it = std::find(header.begin(), header.end(), name);
  if (it == header.end()) return std::nullopt;
  return static_cast<std::size_t>(it - header.begin());
}

std::string csv_header_problem(std::span<const std::string_view> header, std::size_t line,
                               const std::vector<CsvDamage>& damage_before) {
  if (!damage_before.empty()) {
    return "line " + std::to_string(damage_before.front().line) + ": " +
           damage_before.front().what + ", no CSV header";
  }
  for (std::size_t i = 0; i < header.size(); ++i) {
    if (header[i].find('\0') != std::string_view::npos) {
      return "line " + std::to_string(line) + ": a NUL byte in the header (column " +
             std::to_string(i + 1) + "), no CSV header";
    }
  }
  for (std::size_t i = 0; i < header.size(); ++i) {
    const std::string_view c = header[i];
    if (!c.empty() && (std::isspace(static_cast<unsigned char>(c.front())) ||
                       std::isspace(static_cast<unsigned char>(c.back())))) {
      // Columns are found by exact name: ' power_w' is not power_w, and a reader that let
      // it pass would read the file as if the column were absent.
      std::string shown(c.substr(0, 40));
      return "line " + std::to_string(line) + ": column " + std::to_string(i + 1) + " '" + shown +
             "' has blanks around its name";
    }
  }
  for (std::size_t i = 0; i < header.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      if (header[j] == header[i]) {
        return "line " + std::to_string(line) + ": column '" + std::string(header[i]) +
               "' appears twice in the header (columns " + std::to_string(j + 1) + " and " +
               std::to_string(i + 1) + ")";
      }
    }
  }
  return "";
}

Result<std::optional<std::vector<std::string>>> read_csv_header(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Error{path + ": " + std::strerror(errno)};
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) return Error{path + ": " + std::strerror(errno)};
  if (S_ISDIR(st.st_mode)) return Error{path + ": is a directory"};
  // A header is far shorter than a record may be: what the text reader needs to call a first
  // line too long is all that is read, however large the file.
  std::string head(kMaxRecordBytes + 2, '\0');
  std::size_t got = 0;
  while (got < head.size()) {
    const ssize_t n = ::pread(fd, head.data() + got, head.size() - got, static_cast<off_t>(got));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Error{path + ": " + std::strerror(errno)};
    if (n == 0) break;
    got += static_cast<std::size_t>(n);
  }
  const bool whole = got < head.size();
  head.resize(got);
  CsvTextReader reader(head, whole);
  CsvRecord r;
  std::vector<CsvDamage> damage;
  const bool found = reader.next(r, damage);
  if (!found && damage.empty()) {
    if (whole) return std::optional<std::vector<std::string>>();  // no record at all
    damage.push_back(
        {reader.lines() + 1, "a record longer than " + std::to_string(kMaxRecordBytes) + " bytes"});
  }
  const std::string problem =
      csv_header_problem(found ? r.cells : std::span<const std::string_view>{}, r.line, damage);
  if (!problem.empty()) return Error{problem};
  return std::optional<std::vector<std::string>>(
      std::vector<std::string>(r.cells.begin(), r.cells.end()));
}

namespace {

// Python's str.strip() for the ASCII blanks float() and int() ignore.
std::string_view strip(std::string_view s) {
  constexpr std::string_view kBlanks = " \t\n\r\v\f";
  const auto b = s.find_first_not_of(kBlanks);
  if (b == std::string_view::npos) return {};
  return s.substr(b, s.find_last_not_of(kBlanks) - b + 1);
}

}  // namespace

std::optional<double> parse_double(std::string_view cell) {
  std::string_view s = strip(cell);
  if (!s.empty() && s[0] == '+') {
    s.remove_prefix(1);
    if (!s.empty() && (s[0] == '+' || s[0] == '-')) return std::nullopt;
  }
  if (s.empty() || s.back() == ')') return std::nullopt;  // from_chars takes "nan(...)"
  double v = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (p != s.data() + s.size()) return std::nullopt;
  if (ec == std::errc::result_out_of_range) {
    // Python gives inf for an overflow and (signed) zero for an underflow, as strtod does.
    const std::string copy(s);
    return std::strtod(copy.c_str(), nullptr);
  }
  if (ec != std::errc()) return std::nullopt;
  return v;
}

std::optional<long long> parse_int(std::string_view cell) {
  std::string_view s = strip(cell);
  if (!s.empty() && s[0] == '+') {
    s.remove_prefix(1);
    if (!s.empty() && s[0] == '-') return std::nullopt;
  }
  long long v = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

std::string describe_bad_cell(std::string_view column, std::string_view cell,
                              std::string_view wanted) {
  if (strip(cell).empty()) return std::string(column) + " is blank";
  const bool cut = cell.size() > 40;
  return std::string(column) + " '" + std::string(cell.substr(0, 40)) + (cut ? "...'" : "'") +
         " is not " + std::string(wanted);
}

void append_cell(std::string& out, std::string_view cell) {
  // One pass over the cell (find_first_of searches the set once per byte of it).
  const bool plain = std::none_of(cell.begin(), cell.end(), [](char c) {
    return c == ',' || c == '"' || c == '\r' || c == '\n';
  });
  if (plain) {
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

void append_number(std::string& out, double value) {
  char buf[32];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value);
  if (ec == std::errc()) out.append(buf, end);
}

}  // namespace cpupower::artifacts
