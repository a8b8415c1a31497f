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

std::string errno_text(const char* what, const std::string& path) {
  return std::string(what) + " " + path + ": " + std::strerror(errno);
}

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

Result<std::unique_ptr<CpuSamplesWriter>> CpuSamplesWriter::open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return Error{errno_text("open", path)};
  std::unique_ptr<CpuSamplesWriter> writer(new CpuSamplesWriter(path, fd, false));
  if (Status started = writer->start(); !started) {
    return Error{started.error()};  // the destructor closes fd
  }
  return writer;
}

Status CpuSamplesWriter::start() {
  struct stat st {};
  if (::fstat(fd_, &st) != 0) return Error{errno_text("stat", path_)};
  if (st.st_size == 0) {
    const std::string header = std::string(kCpuHeaderV3) + "\r\n";
    std::size_t written = 0;
    if (!write_all(header, &written)) return Error{last_error_};
    return Ok{};
  }
  // Continue an existing file only when it is ours: v3 header, then a line break.
  std::string head(kCpuHeaderV3.size() + 1, '\0');
  const ssize_t n = ::pread(fd_, head.data(), head.size(), 0);
  if (n < 0) return Error{errno_text("read", path_)};
  head.resize(static_cast<std::size_t>(n));
  const bool header_ok = head.size() > kCpuHeaderV3.size() &&
                         std::string_view(head).starts_with(kCpuHeaderV3) &&
                         (head.back() == '\r' || head.back() == '\n');
  if (!header_ok) return Error{path_ + " exists and does not start with the samples.csv v3 header"};
  char last = '\n';
  if (::pread(fd_, &last, 1, st.st_size - 1) != 1) return Error{errno_text("read", path_)};
  needs_line_break_ = last != '\n';
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

}  // namespace cpupower::artifacts
