#pragma once
// benchmark.out: which benchmark ran (aiperf's phase NOTICE lines vs sa-bench's result
// banner), and aiperf's own account of its phases when no aggregate timing exists.

#include <optional>
#include <string>
#include <string_view>

#include "report/window.hpp"

namespace cpupower::report {

// `Phase <word> (profiling) started|complete` anywhere in the line.
bool has_aiperf_marker(std::string_view line);
// `Serving Benchmark Result` or `Successful requests:` anywhere in the line.
bool has_sa_bench_marker(std::string_view line);

// A `HH:MM:SS.mmm NOTICE  Phase <word> (<kind>) started|complete...` line.
struct PhaseLine {
  std::string stamp;  // HH:MM:SS.mmm
  std::string kind;   // profiling | warmup
  bool started = false;
  std::string rest;  // after started/complete
};
std::optional<PhaseLine> parse_phase_line(std::string_view line);

// Seconds between two time-of-day stamps, wrapping at midnight.
double stamp_difference_s(std::string_view from, std::string_view to);
// The `elapsed=<s>s` value of a complete line's rest, if any (and finite).
std::optional<double> elapsed_seconds(std::string_view rest);

// The profiling phase's duration from its NOTICE pair, when exactly one phase ran.
ReportedTiming phase_log_timing(const std::string& benchmark_out);

// The warmup that ran right before the profiling phase starting at `start_hms` (HH:MM:SS):
// (start_unix - warmup elapsed, start_unix), from the NOTICE lines.
std::optional<std::pair<double, double>> warmup_span_from_log(const std::string& benchmark_out,
                                                              std::string_view start_hms,
                                                              double start_unix);

}  // namespace cpupower::report
