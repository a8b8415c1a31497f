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

namespace {

void check_window(const cpupower::report::Window& w) {
  if (cpupower::fuzz::verbose()) {
    std::fprintf(stderr, "window %s: %s\n", w.source.c_str(),
                 w.error.empty() ? "ok" : w.error.c_str());
  }
  if (!w.error.empty()) return;
  // No error: the span is what the arithmetic uses.
  FUZZ_CHECK(std::isfinite(w.start_unix) && std::isfinite(w.end_unix),
             "a window without an error has a non-finite edge (%s)", w.source.c_str());
  (void)w.duration_s();
}

}  // namespace

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
  check_window(report::load_sa_bench_window(results, 4));
  const std::string session = dir + "/session.json";
  cpupower::fuzz::write_file(session, text);
  check_window(report::load_session_window(session));
  return 0;
}
