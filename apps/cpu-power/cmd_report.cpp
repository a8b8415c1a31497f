// cpu-power report LOG_DIR [LOG_DIR ...]: the energy report of benchmark runs - joules,
// J/token and perf/W per benchmark window - as a text table on stdout, and optionally JSON,
// an SVG plot (one run) and the HTML report (any number of runs, compared in one Pareto
// view). Exit 1 when a run cannot be reported or any window failed; 2 on usage errors.

#include <iostream>
#include <string>
#include <vector>

#include "apps/cpu-power/commands.hpp"
#include "common/text.hpp"
#include "report/render.hpp"
#include "report/run_report.hpp"

namespace cpupower::app {
namespace {

struct ReportArgs {
  std::vector<std::string> log_dirs;
  std::string cpu_samples;
  std::string json_out;
  std::string plot;
  std::string html;
  std::string edges = "interpolate";
};

bool write_output(const std::string& path, const std::string& content) {
  const auto written = common::write_file_atomic(path, content);
  if (written) return true;
  std::cerr << "error: " << path << ": " << written.error() << "\n";
  return false;
}

int report_or_fail(const ReportArgs& args) {
  // The JSON list and the plot are one run's; only the HTML report compares several.
  if (args.log_dirs.size() > 1 &&
      (!args.json_out.empty() || !args.plot.empty() || !args.cpu_samples.empty())) {
    std::cerr << "error: --json-out, --plot and --cpu-samples take one LOG_DIR; several are "
                 "compared with --html\n";
    return 2;
  }
  report::ReportOptions options;
  if (!args.cpu_samples.empty()) options.cpu_samples = args.cpu_samples;
  options.edges = *report::parse_edges(args.edges);  // CLI11 checked the choice
  // Every run is built before anything is written: a run that cannot be reported leaves
  // stdout and every file untouched, as with one run.
  std::vector<report::ReportRun> runs;
  bool failed = false;
  for (const auto& dir : args.log_dirs) {
    runs.push_back(report::build_reports(dir, options));
    if (!runs.back().error.empty()) {
      // paths from outside
      std::cerr << "error: " << common::escape_untrusted(runs.back().error) << "\n";
      failed = true;
    }
  }
  if (failed) return 1;
  bool ok = true;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    // Several runs: each table under a line naming its directory; one run: the table alone.
    if (runs.size() > 1) {
      std::cout << (i ? "\n" : "") << "== " << common::escape_untrusted(args.log_dirs[i]) << "\n";
    }
    std::cout << report::render_text(runs[i].windows, options.edges) << std::flush;
    ok = ok && !runs[i].any_window_failed();
  }
  const report::ReportRun& first = runs.front();
  if (!args.json_out.empty())
    ok = write_output(args.json_out, report::render_json(first.windows)) && ok;
  if (!args.plot.empty())
    ok = write_output(args.plot, report::render_svg(first.data, first.windows)) && ok;
  if (!args.html.empty()) {
    std::vector<report::HtmlRun> html_runs;
    for (std::size_t i = 0; i < runs.size(); ++i) {
      html_runs.push_back({args.log_dirs[i], &runs[i].data, &runs[i].windows});
    }
    ok = write_output(args.html, report::render_html(html_runs)) && ok;
  }
  return ok ? 0 : 1;
}

// The report module returns errors as values; this only catches what cannot be, such as
// running out of memory on a huge samples file.
int run_report(const ReportArgs& args) {
  try {
    return report_or_fail(args);
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace

void add_report_command(CLI::App& app, Action& action) {
  auto args = std::make_shared<ReportArgs>();
  CLI::App* cmd = app.add_subcommand(
      "report", "Energy report of a run: joules, J/token and perf/W per benchmark window");
  cmd->add_option("LOG_DIR", args->log_dirs,
                  "The run's log directory; several runs are compared in the HTML report")
      ->required();
  cmd->add_option("--cpu-samples", args->cpu_samples,
                  "CPU samples.csv to use (required when both power/cpu/ and cpu_power/ exist)");
  cmd->add_option("--json-out", args->json_out, "Also write the JSON report here");
  cmd->add_option("--plot", args->plot, "Also write an SVG plot of power over time here");
  cmd->add_option("--html", args->html,
                  "Also write the HTML report here: every run's windows in one Pareto view, "
                  "power over time, a sortable table (one self-contained file)");
  cmd->add_option("--edges", args->edges,
                  "Window edges: interpolate (exact window, default) or snap (the reference's "
                  "nearest-sample behaviour)")
      ->check(CLI::IsMember({"interpolate", "snap"}));
  cmd->callback([args, &action] { action = [args] { return run_report(*args); }; });
}

}  // namespace cpupower::app
