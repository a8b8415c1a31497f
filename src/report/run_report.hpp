#pragma once
// The energy report end to end: discover a run's inputs, derive its windows, load the
// power legs once, and report every window on its own (a failing window reports its error
// and the others still report).

#include <optional>
#include <string>
#include <vector>

#include "report/discovery.hpp"
#include "report/integrate.hpp"
#include "report/window_report.hpp"

namespace cpupower::report {

struct ReportOptions {
  std::optional<std::string> cpu_samples;  // --cpu-samples
  Edges edges = Edges::interpolate;
  unsigned threads = 0;  // CSV scan and window threads; 0 = one per core, at most 8
};

struct ReportRun {
  std::string error;  // discovery or loading failed: no window was reported
  RunData data;
  std::vector<WindowReport> windows;

  bool any_window_failed() const;
};

ReportRun build_reports(const std::string& log_dir, const ReportOptions& options);

// The windows of a discovered run, one per source, in its order (a window that cannot be
// derived carries its error).
std::vector<Window> load_windows(const RunInputs& run);

// What `cpu-power run` calls after the benchmark: writes power_energy_report.json, .txt and
// .svg into the log directory, then power_report.html (best effort: the others are written
// first). Never throws; the job's exit status must not depend on it.
struct RunReportStatus {
  bool ok = false;  // every file written and every window reported
  std::size_t windows = 0;
  std::size_t failed_windows = 0;
  std::vector<std::string> written;  // paths
  std::string message;               // why not ok
};

RunReportStatus write_run_report(const std::string& log_dir, const ReportOptions& options);

}  // namespace cpupower::report
