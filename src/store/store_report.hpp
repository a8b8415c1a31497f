#pragma once
// `cpu-power report --prometheus URL`: the energy report of a run's windows (or of one
// `--window START END`) from the exporters' energy counters in a metrics store that serves the
// Prometheus HTTP API, instead of the run's samples files. Each window is asked for on its
// own (queries.hpp), read into rows (window_builder.hpp) and rendered by the report's own
// renderers, which see a report::ReportRun as from the files.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.hpp"
#include "report/run_report.hpp"
#include "report/window.hpp"
#include "store/prom_api.hpp"
#include "store/selector.hpp"
#include "store/window_builder.hpp"

namespace cpupower::store {

inline constexpr double kDefaultLookbackS = 300;

struct StoreReportOptions {
  ClientOptions client;
  std::optional<std::string> log_dir;    // the run: its windows, and its nodes for the selector
  std::optional<report::Window> window;  // --window: reported instead of the run's windows
  std::optional<std::vector<Matcher>> match;  // --match: instead of the run's nodes
  double lookback_s = kDefaultLookbackS;
};

// --window's bounds: seconds since the epoch, or an ISO 8601 stamp as report/iso_time.hpp
// reads aiperf's (one without a zone is this host's local time). The end must come after the
// start. The window's type is `window`, its source `--window`.
Result<report::Window> window_from_args(std::string_view start, std::string_view end);

// The run's nodes and their sockets, from every cpu_manifest.json below the run (the exporter
// leg's `nodes`, with `sockets_expected`), the host leg's manifest.json (`expected_nodes`)
// and prometheus_sd.json (each target's `node`, while the run lasts). No file: nullopt.
// A file that cannot be read is a warning, and the others still count.
struct RunNodes {
  std::optional<ExpectedNodes> expected;
  std::vector<std::string> warnings;
};
RunNodes run_nodes(const std::string& log_dir);

// The report. Its `error` (nothing is reported) when the run's windows cannot be found, no
// selector can be made (no --match and no nodes), the options are refused, or the store
// cannot be used at all (unreachable, TLS, credentials refused, no Prometheus API at the
// URL); a query the store refuses fails only its window.
report::ReportRun build_store_reports(const StoreReportOptions& options);

}  // namespace cpupower::store
