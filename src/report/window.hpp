#pragma once
// Benchmark windows: the spans the report integrates over, one per concurrency point (or
// one for the whole command of a `cpu-power run` session), with the benchmark's own timing
// account kept beside them for comparison.

#include <nlohmann/json.hpp>

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace cpupower::report {

struct ReportedTiming {
  std::string source = "unavailable";  // sa-bench-json | aiperf-json | aiperf-phase-log | ...
  std::optional<double> start_unix, end_unix, duration_seconds;
  std::optional<std::string> note;
};

struct Window {
  Window() = default;
  Window(std::string type, std::string from, std::optional<long long> n = std::nullopt)
      : benchmark_type(std::move(type)), source(std::move(from)), concurrency(n) {}

  std::string benchmark_type;  // sa-bench | aiperf | session
  std::string source;          // the artifact the window came from
  std::optional<long long> concurrency;
  // Echoed into the JSON as the artifact wrote them (an int stays an int); the doubles are
  // what the arithmetic uses.
  nlohmann::ordered_json start_json, end_json, output_tokens_json, input_tokens_json;
  double start_unix = 0, end_unix = 0;
  std::optional<double> output_tokens, input_tokens;
  std::optional<double> tpot_p50_ms, tpot_p90_ms;
  std::optional<double> warmup_start_unix, warmup_end_unix, drain_end_unix;
  ReportedTiming reported;
  // Said about the window's inputs without failing it (the report's warnings, after ours).
  std::vector<std::string> warnings;
  std::string error;  // set when the window could not be derived; nothing else is valid then

  double duration_s() const { return end_unix - start_unix; }
  double lo() const { return std::min(start_unix, end_unix); }  // the earlier bound
  double hi() const { return std::max(start_unix, end_unix); }  // the later bound
};

// sa-bench results_concurrency_<N>_*.json.
Window load_sa_bench_window(const std::string& path, long long concurrency);

// aiperf conc_<N>/aiperf_artifacts/profile_export.jsonl with its aggregate alongside.
Window load_aiperf_records_window(const std::string& jsonl, long long concurrency,
                                  const std::string& benchmark_out);

// aiperf aggregate only (profile_export_aiperf.json), with the recorded timezone offset.
Window load_aiperf_aggregate_window(const std::string& aggregate, long long concurrency,
                                    const std::string& benchmark_out);

// <log_dir>/session.json written by `cpu-power run`: one window for the whole command.
Window load_session_window(const std::string& path);

}  // namespace cpupower::report
