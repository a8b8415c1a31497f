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

#include "artifacts/csv.hpp"

namespace cpupower::artifacts {
namespace {

constexpr int kOpenFlags = O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC;

std::string errno_text(const char* what, const std::string& path) {
  return std::string(what) + " " + path + ": " + std::strerror(errno);
}

}  // namespace

std::string format_double(double value) {
  std::string out;
  append_number(out, value);
  return out;
}

namespace {

// v2 and v3 rows differ only in the schema_version cell and v3's module_w cell.
std::string format_row(const CpuSampleRow& row, int version) {
  std::string out;
  out.reserve(128);
  out += version == kCpuSchemaVersionV2 ? '2' : '3';
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
  if (version != kCpuSchemaVersionV2) append_optional(out, row.module_w);
  append_optional(out, row.total_power_w);
  out += "\r\n";
  return out;
}

}  // namespace

std::string format_v3_row(const CpuSampleRow& row) {
  return format_row(row, kCpuSchemaVersion);
}

std::string format_v2_row(const CpuSampleRow& row) {
  return format_row(row, kCpuSchemaVersionV2);
}

bool is_writable_cpu_schema(int version) {
  return version == kCpuSchemaVersionV2 || version == kCpuSchemaVersion;
}

std::string_view cpu_header(int version) {
  switch (version) {
    case kCpuSchemaVersionV1:
      return kCpuHeaderV1;
    case kCpuSchemaVersionV2:
      return kCpuHeaderV2;
    case kCpuSchemaVersion:
      return kCpuHeaderV3;
    default:
      return {};
  }
}

// ---- writer ---------------------------------------------------------------------------

std::string_view samples_file_change_name(SamplesFileChange change) {
  switch (change) {
    case SamplesFileChange::none:
      return "none";
    case SamplesFileChange::deleted:
      return "deleted";
    case SamplesFileChange::replaced:
      return "replaced";
    case SamplesFileChange::moved:
      return "moved";
    case SamplesFileChange::truncated:
      return "truncated";
  }
  return "none";
}

CpuSamplesWriter::CpuSamplesWriter(std::string path, int fd, int schema_version)
    : path_(std::move(path)), fd_(fd), schema_version_(schema_version) {}

CpuSamplesWriter::~CpuSamplesWriter() {
  close();
}

Result<std::unique_ptr<CpuSamplesWriter>> CpuSamplesWriter::open(const std::string& path,
                                                                 int schema_version) {
  if (!is_writable_cpu_schema(schema_version)) {
    return Error{"cannot write samples.csv schema v" + std::to_string(schema_version) + " to " +
                 path + " (only v2 and v3)"};
  }
  const int fd = ::open(path.c_str(), kOpenFlags, 0644);
  if (fd < 0) return Error{errno_text("open", path)};
  std::unique_ptr<CpuSamplesWriter> writer(new CpuSamplesWriter(path, fd, schema_version));
  if (Status started = writer->start(); !started) {
    return Error{started.error()};  // the destructor closes fd
  }
  return writer;
}

void CpuSamplesWriter::fail(const char* what) {
  last_errno_ = errno;
  last_error_ = errno_text(what, path_);
}

Status CpuSamplesWriter::start() {
  struct stat st {};
  if (::fstat(fd_, &st) != 0) {
    fail("stat");
    return Error{last_error_};
  }
  const std::string_view want = cpu_header(schema_version_);
  if (st.st_size == 0) {
    const std::string header = std::string(want) + "\r\n";
    std::size_t written = 0;
    if (!write_all(header, &written)) {
      // A cut header would make every later attempt refuse the file as not ours.
      if (written > 0 && ::ftruncate(fd_, 0) != 0) {
        last_error_ += "; then truncate: " + std::string(std::strerror(errno));
      }
      return Error{last_error_};
    }
    end_ = static_cast<off_t>(header.size());
    return Ok{};
  }
  if (!S_ISREG(st.st_mode)) return Error{path_ + " is not a regular file"};
  // Continue an existing file only when it is ours: this version's header, then a line
  // break. Another version's file is refused, never continued in a second layout.
  std::string head(want.size() + 1, '\0');
  const ssize_t n = ::pread(fd_, head.data(), head.size(), 0);
  if (n < 0) {
    fail("read");
    return Error{last_error_};
  }
  head.resize(static_cast<std::size_t>(n));
  const bool header_ok = head.size() > want.size() && std::string_view(head).starts_with(want) &&
                         (head.back() == '\r' || head.back() == '\n');
  if (!header_ok) {
    return Error{path_ + " exists and does not start with the samples.csv v" +
                 std::to_string(schema_version_) + " header"};
  }
  end_ = st.st_size;
  char last = '\n';
  if (::pread(fd_, &last, 1, st.st_size - 1) != 1) {
    fail("read");
    return Error{last_error_};
  }
  if (last != '\n') return cut_partial_tail(st.st_size);
  return Ok{};
}

// A killed writer can leave a last line without its line end; what it holds may be a value
// cut short, so it goes rather than become a row in the middle of the file.
Status CpuSamplesWriter::cut_partial_tail(off_t size) {
  constexpr off_t kChunk = 64 * 1024;
  std::string buf;
  off_t pos = size;
  while (pos > 0) {
    const off_t from = std::max<off_t>(0, pos - kChunk);
    buf.resize(static_cast<std::size_t>(pos - from));
    const ssize_t n = ::pread(fd_, buf.data(), buf.size(), from);
    if (n != static_cast<ssize_t>(buf.size())) {
      if (n < 0) fail("read");
      break;
    }
    const auto nl = buf.rfind('\n');
    if (nl != std::string::npos) {
      const off_t keep = from + static_cast<off_t>(nl) + 1;
      if (::ftruncate(fd_, keep) == 0) {
        end_ = keep;
        return Ok{};
      }
      fail("truncate");
      break;
    }
    pos = from;
  }
  needs_line_break_ = true;  // could not cut it: terminate it before the next rows
  return Ok{};
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
    pending_ += format_row(row, schema_version_);
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
      fail("write");
      return false;
    }
    *written += static_cast<std::size_t>(n);
  }
  return true;
}

bool CpuSamplesWriter::repair_tail() {
  if (::ftruncate(fd_, *repair_to_) != 0) {
    fail("truncate");
    return false;
  }
  end_ = *repair_to_;
  repair_to_.reset();
  return true;
}

bool CpuSamplesWriter::flush() {
  if (fd_ < 0) {
    last_error_ = "flush of closed writer for " + path_;
    return false;
  }
  if (pending_.empty()) return true;
  bool ok = true;
  if (repair_to_ && !repair_tail()) {
    // The partial row of an earlier failed write is still there; end its line so that it
    // reads as one malformed row and ours stay whole.
    ++write_errors_;
    ok = false;
    repair_to_.reset();
    needs_line_break_ = true;
  }
  // Where this write starts: the size now (O_APPEND), which is what to cut back to.
  struct stat st {};
  const off_t base = ::fstat(fd_, &st) == 0 ? st.st_size : end_;
  const std::size_t prefix = needs_line_break_ ? 2 : 0;
  if (prefix) pending_.insert(0, "\r\n");
  std::size_t written = 0;
  std::uint64_t done = pending_rows_;
  if (write_all(pending_, &written)) {
    end_ = base + static_cast<off_t>(written);
    needs_line_break_ = false;
  } else {
    ++write_errors_;
    ok = false;
    // Keep the whole rows that made it; cut the partial one after them.
    const std::string_view out(pending_.data(), written);
    const auto nl = out.rfind('\n');
    const std::size_t keep = nl == std::string_view::npos ? 0 : nl + 1;
    done = keep > prefix ? static_cast<std::uint64_t>(
                               std::count(out.begin() + static_cast<std::ptrdiff_t>(prefix),
                                          out.begin() + static_cast<std::ptrdiff_t>(keep), '\n'))
                         : 0;
    if (keep > 0) needs_line_break_ = false;  // a kept prefix ended the torn line
    end_ = base + static_cast<off_t>(written);
    if (written > keep) {
      const off_t cut = base + static_cast<off_t>(keep);
      const std::string write_error = last_error_;
      const int write_errno = last_errno_;
      if (::ftruncate(fd_, cut) == 0) {
        end_ = cut;
      } else {
        repair_to_ = cut;  // tried again before the next write
        last_error_ = write_error + "; then truncate: " + std::strerror(errno);
      }
      last_errno_ = write_errno;
    }
    rows_dropped_ += pending_rows_ - done;
  }
  rows_written_ += done;
  rows_in_file_ += done;
  pending_.clear();
  pending_rows_ = 0;
  return ok;
}

bool CpuSamplesWriter::close() {
  if (fd_ < 0) return true;
  bool ok = flush();
  if (::close(fd_) != 0) {
    fail("close");
    ++write_errors_;
    ok = false;
  }
  fd_ = -1;
  return ok;
}

SamplesFileChange CpuSamplesWriter::check_path() const {
  if (fd_ < 0) return SamplesFileChange::none;
  struct stat held {};
  if (::fstat(fd_, &held) != 0) return SamplesFileChange::none;
  struct stat named {};
  if (::stat(path_.c_str(), &named) != 0) {
    if (errno != ENOENT && errno != ENOTDIR) return SamplesFileChange::none;
    return held.st_nlink == 0 ? SamplesFileChange::deleted : SamplesFileChange::moved;
  }
  if (named.st_dev != held.st_dev || named.st_ino != held.st_ino) {
    return held.st_nlink == 0 ? SamplesFileChange::replaced : SamplesFileChange::moved;
  }
  if (S_ISREG(held.st_mode) && held.st_size < end_) return SamplesFileChange::truncated;
  return SamplesFileChange::none;
}

Status CpuSamplesWriter::reopen() {
  if (fd_ >= 0) ::close(fd_);  // whatever was pending stays pending, for the new file
  fd_ = -1;
  end_ = 0;
  repair_to_.reset();
  needs_line_break_ = false;
  rows_in_file_ = 0;
  fd_ = ::open(path_.c_str(), kOpenFlags, 0644);
  if (fd_ < 0) {
    fail("open");
    return Error{last_error_};
  }
  if (Status started = start(); !started) {
    ::close(fd_);
    fd_ = -1;
    last_error_ = started.error();
    return started;
  }
  return Ok{};
}

std::uint64_t CpuSamplesWriter::discard_pending() {
  const auto n = pending_rows_;
  rows_dropped_ += n;
  pending_.clear();
  pending_rows_ = 0;
  return n;
}

}  // namespace cpupower::artifacts
