// The report's aiperf readers (report/aiperf_window: the per-record profile_export.jsonl, the
// aggregate profile_export_aiperf.json, the recorded UTC offset, and benchmark.out's phase
// lines through report/phase_log). One input holds up to four files, separated by a line
// "#FILE#": the JSONL, the aggregate, benchmark.out, agentic_power_timezone_offset.txt; a
// file the input does not reach is absent. Both windows (records, aggregate only) are built.

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "fuzz_util.hpp"
#include "report/phase_log.hpp"
#include "report/window.hpp"
#include "window_checks.hpp"

namespace {

std::vector<std::string_view> split_files(std::string_view text) {
  constexpr std::string_view kSep = "\n#FILE#\n";
  std::vector<std::string_view> parts;
  while (parts.size() < 3) {
    const auto at = text.find(kSep);
    if (at == std::string_view::npos) break;
    parts.push_back(text.substr(0, at));
    text.remove_prefix(at + kSep.size());
  }
  parts.push_back(text);
  return parts;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace report = cpupower::report;
  const auto parts = split_files(cpupower::fuzz::as_text(data, size));
  const std::string dir = cpupower::fuzz::scratch_dir() + "/aiperf";
  const std::string artifacts = dir + "/conc_4/aiperf_artifacts";
  const std::string paths[] = {artifacts + "/profile_export.jsonl",
                               artifacts + "/profile_export_aiperf.json", dir + "/benchmark.out",
                               artifacts + "/agentic_power_timezone_offset.txt"};
  for (std::size_t i = 0; i < std::size(paths); ++i) {
    if (i < parts.size()) {
      cpupower::fuzz::write_file(paths[i], parts[i]);
    } else {
      cpupower::fuzz::remove_file(paths[i]);
    }
  }
  cpupower::fuzz::check_window(report::load_aiperf_records_window(paths[0], 4, paths[2]));
  cpupower::fuzz::check_window(report::load_aiperf_aggregate_window(paths[1], 4, paths[2]));
  (void)report::phase_log_timing(paths[2]);
  if (parts.size() > 2) {
    std::string_view log = parts[2];
    while (!log.empty()) {
      const auto nl = log.find('\n');
      const std::string_view line = log.substr(0, nl);
      (void)report::has_aiperf_marker(line);
      (void)report::has_sa_bench_marker(line);
      if (const auto p = report::parse_phase_line(line)) (void)report::elapsed_seconds(p->rest);
      log.remove_prefix(nl == std::string_view::npos ? log.size() : nl + 1);
    }
  }
  return 0;
}
