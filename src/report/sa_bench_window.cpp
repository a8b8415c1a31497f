// sa-bench windows: the result JSON's own wall-clock start and end, verbatim.

#include <fmt/core.h>

#include <cstdlib>

#include "report/json_value.hpp"
#include "report/window.hpp"

namespace cpupower::report {
namespace {

// Python's float() of a percentile label: a number or a numeric string.
std::optional<double> as_float(const Json& v) {
  if (v.is_number()) return v.get<double>();
  if (!v.is_string()) return std::nullopt;
  const std::string s = v.get<std::string>();
  char* end = nullptr;
  const double d = std::strtod(s.c_str(), &end);
  if (end == s.c_str() || *end != '\0') return std::nullopt;
  return d;
}

// TPOT p90 in either spelling: the 90th entry of a `percentiles_tpot_ms` list of [p, v] pairs
// (the spelling upstream's report reads), else the scalar `p90_tpot_ms` that sa-bench's
// benchmark_serving.py writes with --metric-percentiles including 90 (real sa-bench results
// have no list, so reading the list alone left p90 always n/a).
std::optional<double> tpot_p90(const Json& result) {
  if (const auto it = result.find("percentiles_tpot_ms"); it != result.end() && it->is_array()) {
    for (const auto& entry : *it) {
      if (!entry.is_array() || entry.size() < 2) continue;
      const auto p = as_float(entry[0]);
      if (p && *p == 90.0) return json_number(entry[1]);
    }
  }
  return json_member_number(result, "p90_tpot_ms");
}

}  // namespace

Window load_sa_bench_window(const std::string& path, long long concurrency) {
  Window w("sa-bench", path, concurrency);
  const auto result = read_json_file(path);
  if (!result) return w.error = result.error(), w;
  if (!result->is_object()) return w.error = path + ": not a JSON object", w;
  for (const char* key : {"benchmark_start_time_unix", "benchmark_end_time_unix",
                          "total_input_tokens", "total_output_tokens"}) {
    if (!result->contains(key)) {
      w.error = fmt::format("{}: missing required field '{}'", path, key);
      return w;
    }
  }
  w.start_json = (*result)["benchmark_start_time_unix"];
  w.end_json = (*result)["benchmark_end_time_unix"];
  const auto start = json_number(w.start_json);
  const auto end = json_number(w.end_json);
  if (!start || !end) {
    w.error = path + ": benchmark_start_time_unix and benchmark_end_time_unix must be numbers";
    return w;
  }
  w.start_unix = *start;
  w.end_unix = *end;
  w.output_tokens_json = (*result)["total_output_tokens"];
  w.input_tokens_json = (*result)["total_input_tokens"];
  const auto output = json_token_count(w.output_tokens_json, path, "total_output_tokens");
  if (!output) return w.error = output.error(), w;
  const auto input = json_token_count(w.input_tokens_json, path, "total_input_tokens");
  if (!input) return w.error = input.error(), w;
  w.output_tokens = *output;
  w.input_tokens = *input;
  w.reported.source = "sa-bench-json";
  w.reported.start_unix = *start;
  w.reported.end_unix = *end;
  if (result->contains("duration")) {
    w.reported.duration_seconds = json_number((*result)["duration"]);
    if (!w.reported.duration_seconds) w.reported.note = "result JSON 'duration' is not a number";
  } else {
    w.reported.note = "result JSON has no 'duration' field";
  }
  w.tpot_p50_ms = json_member_number(*result, "median_tpot_ms");
  w.tpot_p90_ms = tpot_p90(*result);
  return w;
}

}  // namespace cpupower::report
