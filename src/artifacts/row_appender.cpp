#include "artifacts/row_appender.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace cpupower::artifacts {
namespace {

constexpr int kOpenFlags = O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC;

std::string errno_text(const char* what, const std::string& path) {
  return std::string(what) + " " + path + ": " + std::strerror(errno);
}

}  // namespace

std::string_view samples_file_change_name(SamplesFileChange change) {
  // In the enum's order.
  static constexpr std::string_view kNames[] = {"none", "deleted", "replaced", "moved",
                                                "truncated"};
  return kNames[static_cast<std::size_t>(change)];
}

RowAppender::RowAppender(std::string path, std::string header)
    : path_(std::move(path)), header_(std::move(header)) {}

RowAppender::~RowAppender() {
  close();
}

Result<std::unique_ptr<RowAppender>> RowAppender::open(const std::string& path,
                                                       std::string_view header,
                                                       std::optional<mode_t> fresh_mode) {
  std::unique_ptr<RowAppender> appender(new RowAppender(path, std::string(header)));
  appender->mode_ = fresh_mode.value_or(0644);
  appender->whole_flushes_ = fresh_mode.has_value();
  if (Status opened = appender->open_fd(fresh_mode ? O_TRUNC : 0); !opened) {
    return Error{opened.error()};
  }
  return appender;
}

Status RowAppender::open_fd(int extra_flags) {
  fd_ = ::open(path_.c_str(), kOpenFlags | extra_flags, mode_);
  if (fd_ < 0) return fail("open");
  if (Status started = start(); !started) {
    ::close(fd_);
    fd_ = -1;
    last_error_ = started.error();
    return started;
  }
  return Ok{};
}

Error RowAppender::fail(const char* what) {
  last_errno_ = errno;
  last_error_ = errno_text(what, path_);
  return Error{last_error_};
}

Status RowAppender::start() {
  struct stat st {};
  if (::fstat(fd_, &st) != 0) return fail("stat");
  if (st.st_size == 0) {
    const std::string header = header_ + "\r\n";
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
  // Continue an existing file only when it is ours: our header, then a line break.
  std::string head(header_.size() + 1, '\0');
  const ssize_t n = ::pread(fd_, head.data(), head.size(), 0);
  if (n < 0) return fail("read");
  head.resize(static_cast<std::size_t>(n));
  const bool header_ok = head.size() > header_.size() &&
                         std::string_view(head).starts_with(header_) &&
                         (head.back() == '\r' || head.back() == '\n');
  if (!header_ok)
    return Error{path_ + " exists and does not start with the expected header (" + header_ + ")"};
  end_ = st.st_size;
  char last = '\n';
  if (::pread(fd_, &last, 1, st.st_size - 1) != 1) return fail("read");
  if (last != '\n') return cut_partial_tail(st.st_size);
  return Ok{};
}

// A killed writer can leave a last line without its line end; what it holds may be a value
// cut short, so it goes rather than become a row in the middle of the file.
Status RowAppender::cut_partial_tail(off_t size) {
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

bool RowAppender::append_rows(std::string_view text, std::uint64_t rows) {
  if (fd_ < 0) {
    last_error_ = "append to closed writer for " + path_;
    rows_dropped_ += rows;
    return false;
  }
  pending_ += text;
  pending_rows_ += rows;
  return true;
}

void RowAppender::refuse(std::string why) {
  last_error_ = std::move(why);
  ++rows_dropped_;
}

bool RowAppender::write_all(std::string_view bytes, std::size_t* written) {
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

bool RowAppender::repair_tail() {
  if (::ftruncate(fd_, *repair_to_) != 0) {
    fail("truncate");
    return false;
  }
  end_ = *repair_to_;
  repair_to_.reset();
  return true;
}

bool RowAppender::flush() {
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
    const std::size_t keep = nl == std::string_view::npos || whole_flushes_ ? 0 : nl + 1;
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

bool RowAppender::close() {
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

SamplesFileChange RowAppender::check_path() const {
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

Status RowAppender::reopen() {
  if (fd_ >= 0) ::close(fd_);  // whatever was pending stays pending, for the new file
  fd_ = -1;
  end_ = 0;
  repair_to_.reset();
  needs_line_break_ = false;
  rows_in_file_ = 0;
  return open_fd();
}

std::uint64_t RowAppender::discard_pending() {
  const auto n = pending_rows_;
  rows_dropped_ += n;
  pending_.clear();
  pending_rows_ = 0;
  return n;
}

}  // namespace cpupower::artifacts
