// Where the energy report's time goes on one run directory, each in a fresh process:
//   report_phases_bench RUN_DIR load                the CPU samples loaded once
//   report_phases_bench RUN_DIR windows             every window reported again on the
//                                                   loaded data, 5 times, on one thread and
//                                                   on one per core (the windows phase alone)
//   report_phases_bench RUN_DIR                     the whole report build (discovery,
//                                                   windows, loading, every window), the
//                                                   text and JSON renderers, and the window
//                                                   statistics' percentiles on their own
// RUN_DIR as kept by `KEEP=1 bash bench/report_bench.sh ...`. Threads: the report's own
// choice (one per core, at most 8).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "report/discovery.hpp"
#include "report/numeric.hpp"
#include "report/parallel.hpp"
#include "report/render.hpp"
#include "report/run_report.hpp"

namespace report = cpupower::report;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point a) {
  return std::chrono::duration<double>(Clock::now() - a).count();
}

int load(const std::string& dir) {
  const report::Discovery found = report::discover_run(dir, std::nullopt);
  if (!found.run || !found.run->cpu_samples) {
    std::fprintf(stderr, "%s: no run with CPU samples (%s)\n", dir.c_str(), found.error.c_str());
    return 1;
  }
  const unsigned threads = report::default_threads();
  const auto t0 = Clock::now();
  const auto loaded = report::load_cpu_samples(*found.run->cpu_samples, threads);
  std::printf("load CPU samples: %.3f s (%zu rows)\n", seconds_since(t0),
              loaded ? loaded->rows : 0);
  return loaded ? 0 : 1;
}

int windows(const std::string& dir) {
  report::ReportOptions options;
  options.edges = report::Edges::snap;
  const report::ReportRun run = report::build_reports(dir, options);
  if (!run.error.empty()) {
    std::fprintf(stderr, "%s: %s\n", dir.c_str(), run.error.c_str());
    return 1;
  }
  const unsigned cores = report::default_threads();
  for (const unsigned threads : {1u, cores}) {
    std::vector<double> times;
    for (int round = 0; round < 5; ++round) {
      std::vector<report::WindowReport> out(run.windows.size());
      const auto t0 = Clock::now();
      report::parallel_for(out.size(), threads, [&](std::size_t i) {
        out[i] = report::build_window_report(run.windows[i].window, run.data, options.edges);
      });
      times.push_back(seconds_since(t0));
    }
    std::sort(times.begin(), times.end());
    std::printf("windows phase, %u thread%s: median %.3f s [%.3f..%.3f] (%zu windows)\n", threads,
                threads == 1 ? "" : "s", times[2], times[0], times[4], run.windows.size());
  }
  return 0;
}

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s RUN_DIR [load|windows]\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  const std::string mode = argc > 2 ? argv[2] : "";
  if (mode == "load") return load(dir);
  if (mode == "windows") return windows(dir);
  report::ReportOptions options;
  options.edges = report::Edges::snap;
  auto t0 = Clock::now();
  const report::ReportRun run = report::build_reports(dir, options);
  std::printf("build_reports: %.3f s (%zu windows)\n", seconds_since(t0), run.windows.size());
  t0 = Clock::now();
  const std::string text = report::render_text(run.windows, options.edges);
  std::printf("render_text:   %.3f s (%zu bytes)\n", seconds_since(t0), text.size());
  t0 = Clock::now();
  const std::string json = report::render_json(run.windows);
  std::printf("render_json:   %.3f s (%zu bytes)\n", seconds_since(t0), json.size());
  std::mt19937_64 rng(1);
  std::vector<std::vector<double>> series(2000, std::vector<double>(5000));
  for (auto& s : series) {
    for (auto& x : s) x = 100 + static_cast<double>(rng() % 100000) / 1000.0;
  }
  double sink = 0;
  t0 = Clock::now();
  for (const auto& s : series) sink += report::numpy_percentiles(s).p99;
  std::printf("percentiles:   %.1f us per series of 5,000 watts (%g)\n",
              seconds_since(t0) / static_cast<double>(series.size()) * 1e6, sink);
  return run.error.empty() ? 0 : 1;
}
