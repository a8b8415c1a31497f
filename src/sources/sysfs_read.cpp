#include "sources/sysfs_read.hpp"

#include <fcntl.h>
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

PowerRead read_power_file(const std::string& path) {
  auto failed = [](int e) {
    return PowerRead{std::nullopt, std::string("read failed: ") + std::strerror(e), e};
  };
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return failed(errno);
  std::string text;
  char buf[256];
  while (text.size() < sizeof buf) {
    const ssize_t n = ::read(fd, buf, sizeof buf - text.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      const int e = errno;
      ::close(fd);
      return failed(e);
    }
    if (n == 0) break;
    text.append(buf, static_cast<std::size_t>(n));
  }
  // A value file holds a few digits. One that fills the buffer and goes on is not a reading:
  // its first bytes alone would parse as a number that the whole text is not.
  bool longer = false;
  while (text.size() == sizeof buf) {
    char extra = 0;
    const ssize_t n = ::read(fd, &extra, 1);
    if (n < 0 && errno == EINTR) continue;
    longer = n > 0;
    break;
  }
  ::close(fd);
  if (longer) {
    return {std::nullopt, "value longer than " + std::to_string(sizeof buf) + " bytes"};
  }
  return interpret_microwatts(text);
}

bool device_gone(int error_number) {
  return error_number == ENOENT || error_number == ENODEV;
}

}  // namespace cpupower::sources
