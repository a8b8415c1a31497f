// The report's JSON readers for benchmark results (report/json_value parse_json, the sa-bench
// window of report/sa_bench_window, the cpu-power run session of report/session_window): any
// bytes as results_concurrency_4_gpus_1.json and as session.json. A window either has an error
// or a span.

#include <cmath>
#include <cstdio>
#include <string>

#include "fuzz_util.hpp"
#include "report/json_value.hpp"
#include "report/window.hpp"
#include "window_checks.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace report = cpupower::report;
  const std::string_view text = cpupower::fuzz::as_text(data, size);
  const auto json = report::parse_json(text, "fuzz.json");
  if (json) {
    (void)report::json_number(*json);
    if (json->is_object()) {
      for (const auto& [key, value] : json->items()) {
        (void)report::json_member_number(*json, key.c_str());
        (void)report::json_number(value);
      }
    }
  }
  const std::string dir = cpupower::fuzz::scratch_dir() + "/sa_bench";
  const std::string results = dir + "/results_concurrency_4_gpus_1.json";
  cpupower::fuzz::write_file(results, text);
  cpupower::fuzz::check_window(report::load_sa_bench_window(results, 4));
  const std::string session = dir + "/session.json";
  cpupower::fuzz::write_file(session, text);
  cpupower::fuzz::check_window(report::load_session_window(session));
  return 0;
}
