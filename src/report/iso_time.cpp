#include "report/iso_time.hpp"

#include <fmt/core.h>

#include <chrono>
#include <ctime>
#include <filesystem>

#include "common/text.hpp"
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

struct Parsed {
  std::chrono::sys_days date;
  int hour = 0, minute = 0, second = 0, micros = 0;
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

Result<Parsed> parse_iso(std::string_view s) {
  const Error not_iso{"not an ISO 8601 date and time"};
  Parsed out;
  int year = 0, month = 0, day = 0;
  if (s.size() < 10 || !digits_at(s, 0, 4, &year) || s[4] != '-' || !digits_at(s, 5, 2, &month) ||
      s[7] != '-' || !digits_at(s, 8, 2, &day)) {
    return not_iso;
  }
  std::size_t p = 10;
  if (p < s.size()) {
    const auto clock = parse_clock(s, p + 1, &out);  // any one separator character
    if (!clock) return not_iso;
    p = *clock;
  }
  if (p < s.size()) {
    const std::string_view tz = s.substr(p);
    if (tz == "Z") {
      out.offset_min = 0;
    } else {
      const auto offset = parse_utc_offset(tz);
      if (!offset) return offset.error() == "not a UTC offset" ? not_iso : Error{offset.error()};
      out.offset_min = *offset;
    }
  }
  // Python's checks, in its order and words.
  if (year < 1) return Error{fmt::format("year {} is out of range", year)};
  if (month < 1 || month > 12) return Error{"month must be in 1..12"};
  const std::chrono::year_month_day date{std::chrono::year(year),
                                         std::chrono::month(static_cast<unsigned>(month)),
                                         std::chrono::day(static_cast<unsigned>(day))};
  if (!date.ok()) return Error{"day is out of range for month"};
  if (out.hour > 23) return Error{"hour must be in 0..23"};
  if (out.minute > 59) return Error{"minute must be in 0..59"};
  if (out.second > 59) return Error{"second must be in 0..59"};
  out.date = std::chrono::sys_days(date);
  return out;
}

}  // namespace

Result<int> parse_utc_offset(std::string_view text) {
  const Error not_offset{"not a UTC offset"};
  if (text.size() < 5 || (text[0] != '+' && text[0] != '-')) return not_offset;
  int hh = 0, mm = 0;
  if (!digits_at(text, 1, 2, &hh)) return not_offset;
  const std::size_t at = text[3] == ':' ? 4 : 3;
  if (at + 2 != text.size() || !digits_at(text, at, 2, &mm)) return not_offset;
  const int minutes = hh * 60 + mm;
  if (minutes >= 24 * 60) return Error{"UTC offset must be strictly inside a day"};
  return text[0] == '-' ? -minutes : minutes;
}

Result<double> iso_to_unix(std::string_view stamp, std::optional<int> naive_offset_min) {
  const auto parsed = parse_iso(stamp);
  if (!parsed) return Error{parsed.error()};
  const Parsed& p = *parsed;
  const std::optional<int> offset = p.offset_min ? p.offset_min : naive_offset_min;
  if (!offset) {
    const std::chrono::year_month_day date(p.date);
    std::tm tm{};
    tm.tm_year = static_cast<int>(date.year()) - 1900;
    tm.tm_mon = static_cast<int>(static_cast<unsigned>(date.month())) - 1;
    tm.tm_mday = static_cast<int>(static_cast<unsigned>(date.day()));
    tm.tm_hour = p.hour;
    tm.tm_min = p.minute;
    tm.tm_sec = p.second;
    tm.tm_isdst = -1;
    // Python's naive timestamp(): mktime seconds plus the microseconds as a fraction.
    return static_cast<double>(std::mktime(&tm)) + p.micros / 1e6;
  }
  const long long seconds = static_cast<long long>(p.date.time_since_epoch().count()) * 86400 +
                            p.hour * 3600LL + p.minute * 60LL + p.second - *offset * 60LL;
  const long long micros = seconds * 1000000LL + p.micros;
  return static_cast<double>(micros) / 1e6;
}

Result<std::optional<int>> recorded_utc_offset(const std::string& aiperf_artifacts_dir) {
  std::filesystem::path dir(aiperf_artifacts_dir);
  for (int up = 0; up < 3; ++up) {
    const std::string path = (dir / "agentic_power_timezone_offset.txt").string();
    const auto text = read_text_file(path);
    if (text) {
      const auto offset = parse_utc_offset(common::trim(*text));
      if (!offset) return Error{path + ": " + offset.error() + " (want +HH:MM or -HHMM)"};
      return std::optional<int>(*offset);
    }
    if (!dir.has_parent_path() || dir.parent_path() == dir) break;
    dir = dir.parent_path();
  }
  return std::optional<int>();
}

}  // namespace cpupower::report
