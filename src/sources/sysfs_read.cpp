#include "sources/sysfs_read.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>

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
  ::close(fd);
  return interpret_microwatts(text);
}

bool device_gone(int error_number) {
  return error_number == ENOENT || error_number == ENODEV;
}

}  // namespace cpupower::sources
