#include "sources/sysfs_read.hpp"

#include <algorithm>
#include <atomic>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>

#include "artifacts/limits.hpp"
#include "common/text.hpp"

namespace cpupower::sources {

PowerRead interpret_microwatts(std::string_view text) {
  const auto t = common::trim(text);
  if (t.empty()) return {std::nullopt, "empty"};
  if (t == kFirmwareInvalidUw) return {std::nullopt, "firmware reports the reading invalid"};
  const auto uw = common::parse_double(t);
  if (!uw) return {std::nullopt, "unparsable value " + std::string(t.substr(0, 32))};
  const double w = *uw / 1e6;
  if (!std::isfinite(w)) return {std::nullopt, "non-finite value"};
  if (w == 0.0) return {std::nullopt, "zero (no reading yet)"};
  if (w < 0.0) return {std::nullopt, "negative value"};
  // The bound the collectors and the report hold a socket's readings to: above it the
  // reading is an error (a wrapped counter, a firmware fault), never power.
  if (w > artifacts::kMaxSocketWatts) {
    return {std::nullopt, "above the physical bound of " +
                              std::to_string(static_cast<long>(artifacts::kMaxSocketWatts)) +
                              " W: " + std::string(t.substr(0, 32)) + " uW"};
  }
  return {w, {}};
}

namespace {

// Reads an open file from where it stands to its end or to `limit` bytes, then closes it.
ValueText read_to_end(int fd, std::size_t limit) {
  ValueText out;
  char buf[256];
  while (out.text.size() < limit) {
    const ssize_t n = ::read(fd, buf, std::min(sizeof buf, limit - out.text.size()));
    if (n < 0) {
      if (errno == EINTR) continue;
      out.error_number = errno;
      ::close(fd);
      return out;
    }
    if (n == 0) break;
    out.text.append(buf, static_cast<std::size_t>(n));
  }
  while (out.text.size() == limit) {
    char extra = 0;
    const ssize_t n = ::read(fd, &extra, 1);
    if (n < 0 && errno == EINTR) continue;
    out.too_long = n > 0;
    break;
  }
  ::close(fd);
  return out;
}

}  // namespace

ValueText read_value_text(const std::string& path, std::size_t limit) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    ValueText out;
    out.error_number = errno;
    return out;
  }
  return read_to_end(fd, limit);
}

namespace {

std::atomic<int> held_value_files{0};

// The whole text of a small file at offset 0 in one pread: a regular file gives all of it, and
// a sysfs attribute is generated whole on a read from offset 0. Reads limit + 1 bytes to tell
// a longer file. Returns the pread's result (-1 with errno set).
ssize_t pread_whole(int fd, std::size_t limit, ValueText& out) {
  char buf[1024];
  const std::size_t want = std::min(sizeof buf, limit + 1);
  ssize_t n;
  do {
    n = ::pread(fd, buf, want, 0);
  } while (n < 0 && errno == EINTR);
  if (n < 0) return n;
  const auto got = static_cast<std::size_t>(n);
  out.too_long = got > limit;
  out.text.assign(buf, std::min(got, limit));
  return n;
}

}  // namespace

ValueFile::~ValueFile() {
  release();
}

void ValueFile::release() {
  if (fd_ < 0) return;
  ::close(fd_);
  fd_ = -1;
  held_value_files.fetch_sub(1);
}

ValueText ValueFile::read(const std::string& path, std::size_t limit) {
  if (path != path_) {
    release();
    path_ = path;
    stream_ = false;
    replaced_ = false;
  }
  if (stream_ || limit >= 1024) return read_value_text(path, limit);
  if (fd_ >= 0) {
    ValueText out;
    if (pread_whole(fd_, limit, out) < 0) {
      // One attempt a read, as with a fresh open (a failing firmware read is slow): the
      // error now (ENODEV: the device went away), and the next read opens the path again.
      out.error_number = errno;
      release();
      return out;
    }
    struct stat st {};
    // Still the file at `path`: the value is the one a fresh open would give.
    if (::fstat(fd_, &st) == 0 && st.st_nlink > 0) return out;
    replaced_ = true;
    release();  // replaced: the new file is opened below
  }
  ValueText out;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    out.error_number = errno;
    return out;
  }
  if (pread_whole(fd, limit, out) < 0) {
    if (errno == ESPIPE) {
      // A FIFO or another stream: its text is for this open only, so each read opens it.
      stream_ = true;
      return read_to_end(fd, limit);
    }
    out.error_number = errno;
    ::close(fd);
    return out;
  }
  if (replaced_) {
    ::close(fd);  // values come as new files here: holding one would keep it alive
  } else if (held_value_files.fetch_add(1) < kMaxHeldValueFiles) {
    fd_ = fd;
  } else {
    held_value_files.fetch_sub(1);
    ::close(fd);
  }
  return out;
}

namespace {

PowerRead interpret_power_text(const ValueText& v, std::size_t limit) {
  if (v.error_number != 0) {
    return {std::nullopt, std::string("read failed: ") + std::strerror(v.error_number),
            v.error_number};
  }
  if (v.too_long) {
    return {std::nullopt, "value longer than " + std::to_string(limit) + " bytes"};
  }
  return interpret_microwatts(v.text);
}

// A value file holds a few digits. One that goes on past the limit is not a reading: its
// first bytes alone would parse as a number that the whole text is not.
constexpr std::size_t kPowerTextLimit = 256;

}  // namespace

PowerRead read_power_file(const std::string& path) {
  return interpret_power_text(read_value_text(path, kPowerTextLimit), kPowerTextLimit);
}

PowerRead read_power_file(ValueFile& file, const std::string& path) {
  return interpret_power_text(file.read(path, kPowerTextLimit), kPowerTextLimit);
}

bool device_gone(int error_number) {
  return error_number == ENOENT || error_number == ENODEV;
}

}  // namespace cpupower::sources
