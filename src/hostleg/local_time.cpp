#include "hostleg/local_time.hpp"

#include <time.h>

#include <cmath>
#include <cstdio>

namespace cpupower::hostleg {

std::string iso_local(double timestamp_unix) {
  // Python rounds the fraction to whole microseconds, half to even.
  double whole = std::floor(timestamp_unix);
  double us = std::nearbyint((timestamp_unix - whole) * 1e6);  // default mode: half to even
  if (us >= 1e6) {
    whole += 1;
    us -= 1e6;
  }
  const auto seconds = static_cast<time_t>(whole);
  struct tm tm {};
  localtime_r(&seconds, &tm);
  char out[64];
  int n = std::snprintf(out, sizeof out, "%04d-%02d-%02dT%02d:%02d:%02d", tm.tm_year + 1900,
                        tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
  if (us > 0) n += std::snprintf(out + n, sizeof out - n, ".%06ld", static_cast<long>(us));
  long offset = tm.tm_gmtoff;
  const char sign = offset < 0 ? '-' : '+';
  if (offset < 0) offset = -offset;
  n += std::snprintf(out + n, sizeof out - n, "%c%02ld:%02ld", sign, offset / 3600,
                     offset / 60 % 60);
  if (offset % 60 != 0) std::snprintf(out + n, sizeof out - n, ":%02ld", offset % 60);
  return out;
}

}  // namespace cpupower::hostleg
