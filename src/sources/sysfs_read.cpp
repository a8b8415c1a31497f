#include "sources/sysfs_read.hpp"

#include <algorithm>

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

ValueText read_value_text(const std::string& path, std::size_t limit) {
  ValueText out;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    out.error_number = errno;
    return out;
  }
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

PowerRead read_power_file(const std::string& path) {
  // A value file holds a few digits. One that goes on past the limit is not a reading: its
  // first bytes alone would parse as a number that the whole text is not.
  constexpr std::size_t kLimit = 256;
  const ValueText v = read_value_text(path, kLimit);
  if (v.error_number != 0) {
    return {std::nullopt, std::string("read failed: ") + std::strerror(v.error_number),
            v.error_number};
  }
  if (v.too_long) {
    return {std::nullopt, "value longer than " + std::to_string(kLimit) + " bytes"};
  }
  return interpret_microwatts(v.text);
}

bool device_gone(int error_number) {
  return error_number == ENOENT || error_number == ENODEV;
}

}  // namespace cpupower::sources
