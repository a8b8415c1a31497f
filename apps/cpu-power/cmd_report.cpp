// cpu-power report LOG_DIR: the energy report of a benchmark run - joules, J/token and
// perf/W per benchmark window - as a text table on stdout, and optionally JSON and an SVG
// plot. Exit 1 when the run cannot be reported or any window failed; 2 on usage errors.

#include <iostream>

#include "apps/cpu-power/commands.hpp"
#include "common/text.hpp"
#include "report/render.hpp"
#include "report/run_report.hpp"

namespace cpupower::app {
namespace {

struct ReportArgs {
  std::string log_dir;
  std::string cpu_samples;
  std::string json_out;
  std::string plot;
  std::string edges = "interpolate";
};

bool write_output(const std::string& path, const std::string& content) {
  std::string error;
  if (common::write_file_atomic(path, content, &error)) return true;
  std::cerr << "error: " << path << ": " << error << "\n";
  return false;
}

int report_or_fail(const ReportArgs& args) {
  report::ReportOptions options;
  if (!args.cpu_samples.empty()) options.cpu_samples = args.cpu_samples;
  options.edges = *report::parse_edges(args.edges);  // CLI11 checked the choice
  const report::ReportRun run = report::build_reports(args.log_dir, options);
  if (!run.error.empty()) {
    std::cerr << "error: " << common::escape_untrusted(run.error) << "\n";  // paths from outside
    return 1;
  }
  std::cout << report::render_text(run.windows, options.edges) << std::flush;
  bool ok = !run.any_window_failed();
  if (!args.json_out.empty())
    ok = write_output(args.json_out, report::render_json(run.windows)) && ok;
  if (!args.plot.empty())
    ok = write_output(args.plot, report::render_svg(run.data, run.windows)) && ok;
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
  cmd->add_option("LOG_DIR", args->log_dir, "The run's log directory")->required();
  cmd->add_option("--cpu-samples", args->cpu_samples,
                  "CPU samples.csv to use (required when both power/cpu/ and cpu_power/ exist)");
  cmd->add_option("--json-out", args->json_out, "Also write the JSON report here");
  cmd->add_option("--plot", args->plot, "Also write an SVG plot of power over time here");
  cmd->add_option("--edges", args->edges,
                  "Window edges: interpolate (exact window, default) or snap (the reference's "
                  "nearest-sample behaviour)")
      ->check(CLI::IsMember({"interpolate", "snap"}));
  cmd->callback([args, &action] { action = [args] { return run_report(*args); }; });
}

}  // namespace cpupower::app
