#include "artifacts/cpu_samples.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>

#include "artifacts/csv_cells.hpp"
#include "common/text.hpp"

namespace cpupower::artifacts {
namespace {

std::string errno_text(const char* what, const std::string& path) {
  return std::string(what) + " " + path + ": " + std::strerror(errno);
}

// ---- reading --------------------------------------------------------------------------

struct Layout {
  int version;
  std::size_t columns;
};

std::optional<Layout> layout_of(std::string_view header) {
  if (header == kCpuHeaderV1) return Layout{kCpuSchemaVersionV1, 8};
  if (header == kCpuHeaderV2) return Layout{kCpuSchemaVersionV2, 11};
  if (header == kCpuHeaderV3) return Layout{kCpuSchemaVersion, 12};
  return std::nullopt;
}

// One CSV record of the csv module's default dialect: quoted cells may hold commas, doubled
// quotes and line breaks; a record ends at LF, CRLF or a lone CR outside quotes.
struct Record {
  std::vector<std::string> cells;  // reused across records; only the first `count` count
  std::size_t count = 0;
  std::size_t first_line = 0;
  bool terminated = false;  // ended with a line break (not at end of text)
  bool blank = false;
  bool stray_quote = false;  // text after a closing quote: not something our writer makes
};

class RecordReader {
 public:
  explicit RecordReader(std::string_view text, std::size_t pos, std::size_t line)
      : text_(text), pos_(pos), line_(line) {}

  bool done() const { return pos_ >= text_.size(); }

  void next(Record& rec) {
    rec.count = 0;
    rec.first_line = line_;
    rec.terminated = false;
    rec.stray_quote = false;
    rec.blank = text_[pos_] == '\n' || text_[pos_] == '\r';
    std::string* cell = start_cell(rec);
    while (pos_ < text_.size()) {
      const char c = text_[pos_];
      if (c == '"' && cell->empty() && !quoted_cell_done_) {
        if (!quoted(*cell)) return;  // text ended inside the quotes: torn
        quoted_cell_done_ = true;
        continue;
      }
      if (quoted_cell_done_ && c != ',' && c != '\n' && c != '\r') rec.stray_quote = true;
      if (c == ',') {
        ++pos_;
        cell = start_cell(rec);
      } else if (c == '\n' || c == '\r') {
        pos_ += (c == '\r' && pos_ + 1 < text_.size() && text_[pos_ + 1] == '\n') ? 2 : 1;
        ++line_;
        rec.terminated = true;
        return;
      } else {
        *cell += c;
        ++pos_;
      }
    }
  }

 private:
  std::string* start_cell(Record& rec) {
    quoted_cell_done_ = false;
    if (rec.cells.size() <= rec.count) rec.cells.emplace_back();
    auto* cell = &rec.cells[rec.count++];
    cell->clear();
    return cell;
  }

  // Reads a quoted cell from its opening quote; false when the text ends before it closes.
  bool quoted(std::string& cell) {
    ++pos_;
    while (pos_ < text_.size()) {
      const char c = text_[pos_];
      if (c == '"') {
        if (pos_ + 1 < text_.size() && text_[pos_ + 1] == '"') {
          cell += '"';
          pos_ += 2;
          continue;
        }
        ++pos_;
        return true;
      }
      if (c == '\n') ++line_;
      cell += c;
      ++pos_;
    }
    return false;
  }

  std::string_view text_;
  std::size_t pos_;
  std::size_t line_;
  bool quoted_cell_done_ = false;
};

class RowValidator {
 public:
  RowValidator(const Layout& layout, CpuSamplesFile& out) : layout_(layout), out_(out) {}

  void row(const Record& rec) {
    line_ = rec.first_line;
    const auto& c = rec.cells;
    if (rec.stray_quote) return malformed("text after a closing quote");
    if (rec.count != layout_.columns) {
      return malformed(std::to_string(rec.count) + " cells, the header has " +
                       std::to_string(layout_.columns));
    }
    CpuSampleRow row;
    const auto version = common::parse_i64(c[0]);
    if (!version) return malformed("schema_version '" + c[0] + "' is not an integer");
    if (*version != layout_.version) {
      return malformed("schema_version " + c[0] + " in a v" + std::to_string(layout_.version) +
                       " file");
    }
    row.schema_version = layout_.version;
    if (!number("timestamp_unix", c[1], row.timestamp_unix)) return;
    row.hostname = c[2];
    row.source = c[3];
    row.sensor = c[4];
    if (row.hostname.empty() || row.source.empty() || row.sensor.empty()) {
      return malformed("hostname, source and sensor must not be empty");
    }
    if (layout_.version != kCpuSchemaVersionV1 && row.source != "acpi" && row.source != "dcgm") {
      return malformed("unknown source '" + row.source + "'");
    }
    const auto socket = common::parse_u64(c[5]);
    if (!socket || *socket > std::numeric_limits<std::uint32_t>::max()) {
      return malformed("socket_id '" + c[5] + "' is not a non-negative integer");
    }
    row.socket_id = static_cast<std::uint32_t>(*socket);
    if (!number("power_w", c[6], row.power_w)) return;
    if (layout_.version == kCpuSchemaVersionV1) {
      if (!optional_number("total_power_w", c[7], row.total_power_w)) return;
    } else {
      if (!optional_number("cpu_rail_w", c[7], row.cpu_rail_w) ||
          !optional_number("soc_w", c[8], row.soc_w) ||
          !optional_number("dram_w", c[9], row.dram_w)) {
        return;
      }
      const std::size_t total_at = layout_.version == kCpuSchemaVersion ? 11 : 10;
      if (layout_.version == kCpuSchemaVersion &&
          !optional_number("module_w", c[10], row.module_w)) {
        return;
      }
      if (!optional_number("total_power_w", c[total_at], row.total_power_w)) return;
    }
    out_.rows.push_back(std::move(row));
  }

  void torn(const Record& rec) {
    line_ = rec.first_line;
    skip(kReasonTornLastLine, "last line has no line terminator (writer stopped mid-row)");
  }

 private:
  bool number(const char* column, const std::string& cell, double& value) {
    const auto v = common::parse_double(cell);
    if (!v) {
      malformed(std::string(column) + " '" + cell + "' is not a number");
      return false;
    }
    value = *v;
    return true;
  }

  bool optional_number(const char* column, const std::string& cell, std::optional<double>& value) {
    if (cell.empty()) return true;
    double v = 0;
    if (!number(column, cell, v)) return false;
    value = v;
    return true;
  }

  void malformed(std::string message) { skip(kReasonMalformed, std::move(message)); }

  void skip(std::string_view reason, std::string message) {
    ++out_.skipped_rows;
    if (std::find(out_.reasons.begin(), out_.reasons.end(), reason) == out_.reasons.end()) {
      out_.reasons.emplace_back(reason);
    }
    if (out_.problems.size() < CpuSamplesFile::kMaxProblems) {
      out_.problems.push_back(RowProblem{line_, std::move(message)});
    }
  }

  Layout layout_;
  CpuSamplesFile& out_;
  std::size_t line_ = 0;
};

}  // namespace

std::string format_double(double value) {
  std::string out;
  append_number(out, value);
  return out;
}

std::string format_v3_row(const CpuSampleRow& row) {
  std::string out;
  out.reserve(128);
  out += '3';
  out += ',';
  append_number(out, row.timestamp_unix);
  out += ',';
  append_cell(out, row.hostname);
  out += ',';
  append_cell(out, row.source);
  out += ',';
  append_cell(out, row.sensor);
  out += ',';
  out += std::to_string(row.socket_id);
  out += ',';
  append_number(out, row.power_w);
  append_optional(out, row.cpu_rail_w);
  append_optional(out, row.soc_w);
  append_optional(out, row.dram_w);
  append_optional(out, row.module_w);
  append_optional(out, row.total_power_w);
  out += "\r\n";
  return out;
}

// ---- writer ---------------------------------------------------------------------------

CpuSamplesWriter::CpuSamplesWriter(std::string path, int fd, bool needs_line_break)
    : path_(std::move(path)), fd_(fd), needs_line_break_(needs_line_break) {}

CpuSamplesWriter::~CpuSamplesWriter() {
  close();
}

std::unique_ptr<CpuSamplesWriter> CpuSamplesWriter::open(const std::string& path,
                                                         std::string* error) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) {
    if (error) *error = errno_text("open", path);
    return nullptr;
  }
  std::unique_ptr<CpuSamplesWriter> writer(new CpuSamplesWriter(path, fd, false));
  std::string message;
  if (!writer->start(&message)) {
    if (error) *error = std::move(message);
    return nullptr;  // the destructor closes fd
  }
  return writer;
}

bool CpuSamplesWriter::start(std::string* error) {
  struct stat st {};
  if (::fstat(fd_, &st) != 0) {
    *error = errno_text("stat", path_);
    return false;
  }
  if (st.st_size == 0) {
    const std::string header = std::string(kCpuHeaderV3) + "\r\n";
    std::size_t written = 0;
    if (!write_all(header, &written)) {
      *error = last_error_;
      return false;
    }
    return true;
  }
  // Continue an existing file only when it is ours: v3 header, then a line break.
  std::string head(kCpuHeaderV3.size() + 1, '\0');
  const ssize_t n = ::pread(fd_, head.data(), head.size(), 0);
  if (n < 0) {
    *error = errno_text("read", path_);
    return false;
  }
  head.resize(static_cast<std::size_t>(n));
  const bool header_ok = head.size() > kCpuHeaderV3.size() &&
                         std::string_view(head).starts_with(kCpuHeaderV3) &&
                         (head.back() == '\r' || head.back() == '\n');
  if (!header_ok) {
    *error = path_ + " exists and does not start with the samples.csv v3 header";
    return false;
  }
  char last = '\n';
  if (::pread(fd_, &last, 1, st.st_size - 1) != 1) {
    *error = errno_text("read", path_);
    return false;
  }
  needs_line_break_ = last != '\n';
  return true;
}

bool CpuSamplesWriter::append(std::span<const CpuSampleRow> rows) {
  if (fd_ < 0) {
    last_error_ = "append to closed writer for " + path_;
    rows_dropped_ += rows.size();
    return false;
  }
  bool all_ok = true;
  for (const auto& row : rows) {
    if (!std::isfinite(row.timestamp_unix) || !std::isfinite(row.power_w) || row.hostname.empty() ||
        row.source.empty() || row.sensor.empty()) {
      last_error_ = "refused row for host '" + row.hostname + "' socket " +
                    std::to_string(row.socket_id) +
                    ": needs a finite timestamp_unix and power_w and non-empty names";
      ++rows_dropped_;
      all_ok = false;
      continue;
    }
    pending_ += format_v3_row(row);
    ++pending_rows_;
  }
  return all_ok;
}

bool CpuSamplesWriter::write_all(std::string_view bytes, std::size_t* written) {
  *written = 0;
  while (*written < bytes.size()) {
    const ssize_t n = ::write(fd_, bytes.data() + *written, bytes.size() - *written);
    if (n < 0) {
      if (errno == EINTR) continue;
      last_error_ = errno_text("write", path_);
      return false;
    }
    *written += static_cast<std::size_t>(n);
  }
  return true;
}

bool CpuSamplesWriter::flush() {
  if (fd_ < 0) {
    last_error_ = "flush of closed writer for " + path_;
    return false;
  }
  if (pending_.empty()) return true;
  // A line left half-written by a crash or a failed write would swallow the next row; end
  // it so that it reads as one malformed row and ours stay whole.
  if (needs_line_break_) pending_.insert(0, "\r\n");
  std::size_t written = 0;
  const bool ok = write_all(pending_, &written);
  if (ok) {
    rows_written_ += pending_rows_;
    needs_line_break_ = false;
  } else {
    ++write_errors_;
    const auto prefix = needs_line_break_ ? std::size_t{2} : 0;
    const auto body_written = written > prefix ? written - prefix : 0;
    const auto done = static_cast<std::uint64_t>(
        std::count(pending_.begin() + static_cast<std::ptrdiff_t>(prefix),
                   pending_.begin() + static_cast<std::ptrdiff_t>(prefix + body_written), '\n'));
    rows_written_ += done;
    rows_dropped_ += pending_rows_ - done;
    if (written > 0) needs_line_break_ = pending_[written - 1] != '\n';
  }
  pending_.clear();
  pending_rows_ = 0;
  return ok;
}

bool CpuSamplesWriter::close() {
  if (fd_ < 0) return true;
  bool ok = flush();
  if (::close(fd_) != 0) {
    last_error_ = errno_text("close", path_);
    ++write_errors_;
    ok = false;
  }
  fd_ = -1;
  return ok;
}

// ---- reader ---------------------------------------------------------------------------

CpuSamplesFile parse_cpu_samples(std::string_view text) {
  CpuSamplesFile out;
  const auto nl = text.find('\n');
  auto header = text.substr(0, nl);
  if (!header.empty() && header.back() == '\r') header.remove_suffix(1);
  const auto layout = layout_of(header);
  if (!layout) {
    out.reasons.emplace_back(kReasonHeaderMismatch);
    return out;
  }
  out.schema_version = layout->version;
  if (nl == std::string_view::npos) return out;

  RowValidator validator(*layout, out);
  RecordReader reader(text, nl + 1, 2);
  Record rec;
  while (!reader.done()) {
    reader.next(rec);
    if (!rec.terminated) {
      validator.torn(rec);
    } else if (!rec.blank) {
      validator.row(rec);
    }
  }
  return out;
}

CpuSamplesFile read_cpu_samples(const std::string& path) {
  CpuSamplesFile out;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    out.reasons.emplace_back(errno == ENOENT ? kReasonMissing : kReasonMalformed);
    if (errno != ENOENT) out.problems.push_back(RowProblem{0, errno_text("open", path)});
    return out;
  }
  std::string text;
  char buf[1 << 16];
  while (true) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      out.reasons.emplace_back(kReasonMalformed);
      out.problems.push_back(RowProblem{0, errno_text("read", path)});
      ::close(fd);
      return out;
    }
    if (n == 0) break;
    text.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return parse_cpu_samples(text);
}

}  // namespace cpupower::artifacts
