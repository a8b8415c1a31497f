// The host leg's merge (hostleg/merge), the reader of every node's nodes/<host>.csv (host
// schema v1-v5, torn last lines, damage): any bytes as one node's file. Whatever it accepts it
// writes as the merged v5 samples.csv, and the report must read that file back completely:
// every merged row, none skipped, none read as damaged.

#include <cstdio>
#include <string>

#include "common/log.hpp"
#include "fuzz_util.hpp"
#include "hostleg/merge.hpp"
#include "report/cpu_data.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const bool quiet = [] {
    cpupower::common::init_logging(spdlog::level::off);
    return true;
  }();
  (void)quiet;
  const std::string dir = cpupower::fuzz::scratch_dir() + "/merge";
  cpupower::fuzz::write_file(dir + "/nodes/n1.csv", cpupower::fuzz::as_text(data, size));

  cpupower::hostleg::MergeSettings settings;
  settings.cpu_dir = dir;
  const auto outcome = cpupower::hostleg::merge_host_samples(settings);
  if (cpupower::fuzz::verbose()) {
    std::fprintf(stderr, "%s\n", cpupower::hostleg::summary_line(outcome).c_str());
    for (const auto& p : outcome.problems) std::fprintf(stderr, "  %s\n", p.c_str());
  }
  FUZZ_CHECK(outcome.error.empty(), "%s", outcome.error.c_str());
  FUZZ_CHECK(outcome.publication_valid == outcome.reason_codes.empty());
  (void)cpupower::hostleg::summary_line(outcome);

  const auto merged = cpupower::report::load_cpu_samples(dir + "/samples.csv", 1);
  FUZZ_CHECK(merged.ok(), "the report cannot read the merged file: %s", merged.error().c_str());
  FUZZ_CHECK(merged->rows == outcome.sample_row_count, "merged %llu rows, the report reads %zu",
             static_cast<unsigned long long>(outcome.sample_row_count), merged->rows);
  const auto warnings = merged->issues.warnings("samples.csv", merged->rows);
  FUZZ_CHECK(warnings.empty(), "the report finds fault with the merged file: %s",
             warnings.front().c_str());
  return 0;
}
