#include "report/iso_time.hpp"

#include <cctype>
#include <ctime>
#include <filesystem>

#include "report/json_value.hpp"

namespace cpupower::report {
namespace {

bool digits_at(std::string_view s, std::size_t at, std::size_t n, int* out) {
  if (at + n > s.size()) return false;
  int v = 0;
  for (std::size_t i = at; i < at + n; ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    v = v * 10 + (s[i] - '0');
  }
  *out = v;
  return true;
}

// Days from 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's algorithm).
long long days_from_civil(int y, int m, int d) {
  y -= m <= 2;
  const long long era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = static_cast<unsigned>((153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1);
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<long long>(doe) - 719468;
}

struct Parsed {
  int year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0, micros = 0;
  std::optional<int> offset_min;
};

// HH[:MM[:SS[.f+]]] starting at `p`; returns where it stopped.
std::optional<std::size_t> parse_clock(std::string_view s, std::size_t p, Parsed* out) {
  if (!digits_at(s, p, 2, &out->hour)) return std::nullopt;
  p += 2;
  if (p < s.size() && s[p] == ':' && digits_at(s, p + 1, 2, &out->minute)) {
    p += 3;
    if (p < s.size() && s[p] == ':' && digits_at(s, p + 1, 2, &out->second)) {
      p += 3;
      if (p < s.size() && (s[p] == '.' || s[p] == ',')) {
        std::size_t q = p + 1;
        int scale = 100000;
        while (q < s.size() && s[q] >= '0' && s[q] <= '9') {
          out->micros += (s[q] - '0') * scale;  // digits past the sixth are truncated
          scale /= 10;
          ++q;
        }
        if (q == p + 1) return std::nullopt;
        p = q;
      }
    }
  }
  return p;
}

std::optional<Parsed> parse_iso(std::string_view s) {
  Parsed out;
  if (s.size() < 10 || !digits_at(s, 0, 4, &out.year) || s[4] != '-' ||
      !digits_at(s, 5, 2, &out.month) || s[7] != '-' || !digits_at(s, 8, 2, &out.day)) {
    return std::nullopt;
  }
  if (out.month < 1 || out.month > 12 || out.day < 1 || out.day > 31) return std::nullopt;
  std::size_t p = 10;
  if (p < s.size()) {
    const auto clock = parse_clock(s, p + 1, &out);  // any one separator character
    if (!clock) return std::nullopt;
    p = *clock;
  }
  if (p < s.size()) {
    const std::string_view tz = s.substr(p);
    out.offset_min = tz == "Z" ? std::optional<int>(0) : parse_utc_offset(tz);
    if (!out.offset_min) return std::nullopt;
  }
  if (out.hour > 23 || out.minute > 59 || out.second > 59) return std::nullopt;
  return out;
}

}  // namespace

std::optional<int> parse_utc_offset(std::string_view text) {
  if (text.size() < 5 || (text[0] != '+' && text[0] != '-')) return std::nullopt;
  int hh = 0, mm = 0;
  if (!digits_at(text, 1, 2, &hh)) return std::nullopt;
  const std::size_t at = text[3] == ':' ? 4 : 3;
  if (at + 2 != text.size() || !digits_at(text, at, 2, &mm)) return std::nullopt;
  const int minutes = hh * 60 + mm;
  return text[0] == '-' ? -minutes : minutes;
}

std::optional<double> iso_to_unix(std::string_view stamp, std::optional<int> naive_offset_min) {
  const auto p = parse_iso(stamp);
  if (!p) return std::nullopt;
  const std::optional<int> offset = p->offset_min ? p->offset_min : naive_offset_min;
  long long seconds = 0;
  if (offset) {
    seconds = days_from_civil(p->year, p->month, p->day) * 86400 + p->hour * 3600LL +
              p->minute * 60LL + p->second - *offset * 60LL;
  } else {
    std::tm tm{};
    tm.tm_year = p->year - 1900;
    tm.tm_mon = p->month - 1;
    tm.tm_mday = p->day;
    tm.tm_hour = p->hour;
    tm.tm_min = p->minute;
    tm.tm_sec = p->second;
    tm.tm_isdst = -1;
    // Python's naive timestamp(): mktime seconds plus the microseconds as a fraction.
    return static_cast<double>(std::mktime(&tm)) + p->micros / 1e6;
  }
  const long long micros = seconds * 1000000LL + p->micros;
  return static_cast<double>(micros) / 1e6;
}

std::optional<int> recorded_utc_offset(const std::string& aiperf_artifacts_dir) {
  std::filesystem::path dir(aiperf_artifacts_dir);
  for (int up = 0; up < 3; ++up) {
    const auto text = read_text_file((dir / "agentic_power_timezone_offset.txt").string());
    if (text) {
      std::string_view s(*text);
      while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
      while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
      return parse_utc_offset(s);
    }
    if (!dir.has_parent_path() || dir.parent_path() == dir) break;
    dir = dir.parent_path();
  }
  return std::nullopt;
}

}  // namespace cpupower::report
