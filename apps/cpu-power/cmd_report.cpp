// cpu-power report LOG_DIR [LOG_DIR ...]: the energy report of benchmark runs - joules,
// J/token and perf/W per benchmark window - as a text table on stdout, and optionally JSON,
// an SVG plot (one run) and the HTML report (any number of runs, compared in one Pareto
// view). With --prometheus URL the energy comes from the exporters' counters in a metrics
// store instead of the run's samples files (store/store_report.hpp), for the run's windows
// or one --window START END. Exit 1 when a run cannot be reported or any window failed; 2 on
// usage errors.

#include <iostream>
#include <string>
#include <vector>

#include "apps/cpu-power/commands.hpp"
#include "common/text.hpp"
#include "report/render.hpp"
#include "report/run_report.hpp"
#include "store/store_report.hpp"

namespace cpupower::app {
namespace {

struct ReportArgs {
  std::vector<std::string> log_dirs;
  std::string cpu_samples;
  std::string json_out;
  std::string plot;
  std::string html;
  std::string edges = "interpolate";
  // The metrics store (--prometheus and the options that only it takes).
  std::string prometheus;
  std::string match;
  std::vector<std::string> window;  // START END
  double lookback_s = store::kDefaultLookbackS;
  std::string bearer_token_file, basic_auth_file, ca_file, cert_file, key_file;
  double store_timeout_s = 30;
  int store_retries = 2;
};

// The options that only --prometheus takes, as given.
std::vector<std::string> store_only_options(const CLI::App& cmd) {
  std::vector<std::string> given;
  for (const char* name : {"--match", "--window", "--lookback", "--store-bearer-token-file",
                           "--store-basic-auth-file", "--store-ca-file", "--store-cert-file",
                           "--store-key-file", "--store-timeout-s", "--store-retries"}) {
    if (cmd.count(name) > 0) given.emplace_back(name);
  }
  return given;
}

bool write_output(const std::string& path, const std::string& content) {
  const auto written = common::write_file_atomic(path, content);
  if (written) return true;
  std::cerr << "error: " << path << ": " << written.error() << "\n";
  return false;
}

// Prints every run's table and writes the files asked for; 1 when a window failed or a file
// could not be written. `names` name the runs (their LOG_DIRs) in the tables and the HTML.
int emit(const ReportArgs& args, const std::vector<report::ReportRun>& runs,
         const std::vector<std::string>& names, report::Edges edges) {
  bool ok = true;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    // Several runs: each table under a line naming its directory; one run: the table alone.
    if (runs.size() > 1) {
      std::cout << (i ? "\n" : "") << "== " << common::escape_untrusted(names[i]) << "\n";
    }
    std::cout << report::render_text(runs[i].windows, edges) << std::flush;
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
      html_runs.push_back({names[i], &runs[i].data, &runs[i].windows});
    }
    ok = write_output(args.html, report::render_html(html_runs)) && ok;
  }
  return ok ? 0 : 1;
}

// --prometheus: one run's windows (or --window's) from the store's counters.
int store_report_or_fail(const ReportArgs& args) {
  const auto usage = [](const std::string& why) {
    std::cerr << "error: " << common::escape_untrusted(why) << "\n";
    return 2;
  };
  if (args.log_dirs.size() > 1) {
    return usage("--prometheus reports one run (one LOG_DIR, or none with --window)");
  }
  if (!args.cpu_samples.empty()) return usage("--cpu-samples has no place with --prometheus");
  if (args.edges != "interpolate") {
    return usage(
        "--prometheus interpolates the counters at the window's edges; --edges snap "
        "belongs to the samples files");
  }
  store::StoreReportOptions options;
  if (!args.log_dirs.empty()) options.log_dir = args.log_dirs.front();
  if (!args.window.empty()) {
    auto window = store::window_from_args(args.window[0], args.window[1]);
    if (!window) return usage(window.error());
    options.window = std::move(*window);
  } else if (!options.log_dir) {
    return usage("give LOG_DIR (the run's windows) or --window START END");
  }
  if (!args.match.empty()) {
    auto matchers = store::parse_matchers(args.match);
    if (!matchers) return usage(matchers.error());
    options.match = std::move(*matchers);
  } else if (!options.log_dir) {
    return usage(
        "--window without LOG_DIR needs --match SELECTOR (the run's nodes come from "
        "its cpu_manifest.json)");
  }
  options.lookback_s = args.lookback_s;
  store::ClientOptions& c = options.client;
  c.url = args.prometheus;
  const auto set = [](std::optional<std::string>& to, const std::string& from) {
    if (!from.empty()) to = from;
  };
  set(c.bearer_token_file, args.bearer_token_file);
  set(c.basic_auth_file, args.basic_auth_file);
  set(c.ca_file, args.ca_file);
  set(c.cert_file, args.cert_file);
  set(c.key_file, args.key_file);
  c.timeout_s = args.store_timeout_s;
  c.retries = args.store_retries;
  std::vector<report::ReportRun> runs;
  runs.push_back(store::build_store_reports(options));
  if (!runs.back().error.empty()) {
    std::cerr << "error: " << common::escape_untrusted(runs.back().error) << "\n";
    return 1;
  }
  return emit(args, runs, {options.log_dir.value_or(args.prometheus)}, report::Edges::interpolate);
}

int report_or_fail(const ReportArgs& args) {
  if (!args.prometheus.empty()) return store_report_or_fail(args);
  if (args.log_dirs.empty()) {
    std::cerr << "error: LOG_DIR is required (without it, --prometheus URL with --window)\n";
    return 2;
  }
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
  return emit(args, runs, args.log_dirs, options.edges);
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
                  "The run's log directory; several runs are compared in the HTML report "
                  "(required unless --prometheus with --window)");
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
  cmd->add_option("--prometheus", args->prometheus,
                  "Energy from the exporters' counters in this metrics store (Prometheus HTTP "
                  "API: Prometheus, VictoriaMetrics; http(s)://host:port[/prefix]) instead of the "
                  "run's samples files");
  cmd->add_option("--match", args->match,
                  "With --prometheus: label matchers every query carries, e.g. "
                  "'{job=\"cpu_power\"}' (default: the run's nodes, from its cpu_manifest.json)");
  cmd->add_option("--window", args->window,
                  "With --prometheus: report this one window instead of the run's: START END in "
                  "seconds since the epoch or ISO 8601; LOG_DIR is then optional")
      ->expected(2);
  cmd->add_option("--lookback", args->lookback_s,
                  "With --prometheus: how far from a window edge a counter's sample may be "
                  "(seconds, default 300)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--store-bearer-token-file", args->bearer_token_file,
                  "With --prometheus: send the bearer token on this file's first line");
  cmd->add_option("--store-basic-auth-file", args->basic_auth_file,
                  "With --prometheus: Basic authentication from this file's first line, "
                  "user:password");
  cmd->add_option("--store-ca-file", args->ca_file,
                  "With an https store: trust this CA (PEM) instead of the system's");
  cmd->add_option("--store-cert-file", args->cert_file,
                  "With an https store: client certificate (PEM), with --store-key-file");
  cmd->add_option("--store-key-file", args->key_file,
                  "With an https store: the client certificate's key (PEM)");
  cmd->add_option("--store-timeout-s", args->store_timeout_s,
                  "With --prometheus: seconds each query may take, connection included "
                  "(default 30)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--store-retries", args->store_retries,
                  "With --prometheus: tries again after a connection error or HTTP 5xx/429, with "
                  "a short backoff (default 2)")
      ->check(CLI::NonNegativeNumber);
  cmd->callback([args, cmd, &action] {
    // The store's options without the store are a usage error (exit 2), found at parse time.
    if (args->prometheus.empty()) {
      const auto given = store_only_options(*cmd);
      if (!given.empty()) {
        std::string list;
        for (const auto& g : given) list += (list.empty() ? "" : ", ") + g;
        throw CLI::ValidationError(list, "needs --prometheus URL");
      }
    }
    action = [args] { return run_report(*args); };
  });
}

}  // namespace cpupower::app
