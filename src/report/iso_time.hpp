#pragma once
// aiperf's start_time / end_time stamps: Python's datetime.fromisoformat(...).timestamp().
// A naive stamp is local time: in the run's recorded UTC offset when there is one (the
// aiperf artifacts' agentic_power_timezone_offset.txt), else in this host's timezone.
//
// The forms read are those of datetime.isoformat(), which aiperf writes:
//   YYYY-MM-DD[<any one character>HH[:MM[:SS[(.|,)digits]]][Z|(+|-)HH[:]MM]]
// A stamp Python refuses is refused (an impossible date such as 2026-02-31, year 0, hour 24,
// minute or second 60, an offset of a day or more); a few forms Python also reads are refused
// on purpose, as more likely damage than a stamp: ISO 8601's basic form (20260101T1230),
// week dates, an hour-only offset (+05) or one with seconds, fractions of an hour or minute,
// and a space before the zone. Digits past the sixth of a fraction are truncated, as Python
// does. tests/fixtures/report/iso_time/ holds the cases, checked against Python 3.11.

#include <optional>
#include <string>
#include <string_view>

#include "common/result.hpp"

namespace cpupower::report {

// Seconds since the epoch (exact microseconds / 1e6), or why `stamp` is not one (Python's
// words where it has them: "day is out of range for month").
Result<double> iso_to_unix(std::string_view stamp, std::optional<int> naive_offset_min);

// "+05:30", "-0700" -> minutes east of UTC, strictly inside a day (minutes past 59 carry into
// the hours, as in Python: "+05:60" is +06:00).
Result<int> parse_utc_offset(std::string_view text);

// The offset recorded next to an aiperf_artifacts directory: the directory itself, then its
// parent, then its grandparent. nullopt when there is no such file; an error naming the file
// when the first one found holds no offset (the stamps would otherwise be read in this host's
// timezone, silently).
Result<std::optional<int>> recorded_utc_offset(const std::string& aiperf_artifacts_dir);

}  // namespace cpupower::report
