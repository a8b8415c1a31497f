#pragma once
// aiperf's start_time / end_time stamps: Python's datetime.fromisoformat(...).timestamp().
// A naive stamp is local time: in the run's recorded UTC offset when there is one (the
// aiperf artifacts' agentic_power_timezone_offset.txt), else in this host's timezone.

#include <optional>
#include <string>
#include <string_view>

namespace cpupower::report {

// Seconds since the epoch (exact microseconds / 1e6), or nullopt when not ISO 8601.
std::optional<double> iso_to_unix(std::string_view stamp, std::optional<int> naive_offset_min);

// "+05:30", "-0700" -> minutes east of UTC.
std::optional<int> parse_utc_offset(std::string_view text);

// The offset recorded next to an aiperf_artifacts directory: the directory itself, then its
// parent, then its grandparent.
std::optional<int> recorded_utc_offset(const std::string& aiperf_artifacts_dir);

}  // namespace cpupower::report
