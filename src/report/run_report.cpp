#include "report/run_report.hpp"

#include <fmt/core.h>

#include <algorithm>

#include "artifacts/gpu_samples.hpp"
#include "common/text.hpp"
#include "report/clock_check.hpp"
#include "report/discovery.hpp"
#include "report/parallel.hpp"
#include "report/render.hpp"

namespace cpupower::report {
namespace {

Window load_window(const WindowSource& s, const std::string& benchmark_out) {
  switch (s.kind) {
    case SourceKind::sa_bench:
      return load_sa_bench_window(s.path, s.concurrency);
    case SourceKind::aiperf_records:
      return load_aiperf_records_window(s.path, s.concurrency, benchmark_out);
    case SourceKind::aiperf_aggregate:
      return load_aiperf_aggregate_window(s.path, s.concurrency, benchmark_out);
    case SourceKind::session:
      break;
  }
  return load_session_window(s.path);
}

unsigned scan_threads(unsigned requested) {
  if (requested > 0) return requested;
  return default_threads();
}

// Loads both legs; an error text when a leg cannot be read at all.
std::string load_legs(const RunInputs& in, const ReportOptions& options, RunData& data,
                      std::vector<std::string>* run_warnings) {
  if (in.cpu_samples) {
    auto cpu = load_cpu_samples(*in.cpu_samples, scan_threads(options.threads));
    if (!cpu) return cpu.error();
    // Rows a leg could not use are dropped, never read as zeros, and said once per file and
    // reason for the whole run.
    if (cpu->empty) {
      run_warnings->push_back(*in.cpu_samples + ": empty file, no CPU samples");
    } else if (cpu->rows == 0) {
      run_warnings->push_back(*in.cpu_samples + ": a header without rows, no CPU samples");
    }
    for (auto& w : cpu->issues.warnings(*in.cpu_samples, cpu->rows)) {
      run_warnings->push_back(std::move(w));
    }
    data.cpu = std::move(cpu.value());
  }
  if (in.gpu_samples) {
    const auto file = artifacts::read_gpu_samples(*in.gpu_samples);
    if (!file) return file.error();
    artifacts::GpuRoles roles;
    if (in.gpu_manifest) {
      artifacts::GpuManifestRoles m = artifacts::read_gpu_manifest_roles(*in.gpu_manifest);
      if (!m.ok) run_warnings->push_back(m.error + "; GPU roles not available");
      roles = std::move(m.roles);
    }
    data.gpu = build_gpu_data(*file, roles);
    data.gpu->path = *in.gpu_samples;
    if (file->rows_read == 0) {
      run_warnings->push_back(*in.gpu_samples + ": a header without rows, no GPU samples");
    }
    for (auto& w : file->issues.warnings(*in.gpu_samples, file->rows_read)) {
      run_warnings->push_back(std::move(w));
    }
  }
  build_module_nodes(data);
  return "";
}

}  // namespace

bool ReportRun::any_window_failed() const {
  return std::any_of(windows.begin(), windows.end(),
                     [](const WindowReport& w) { return !w.error.empty(); });
}

ReportRun build_reports(const std::string& log_dir, const ReportOptions& options) {
  ReportRun run;
  const Discovery found = discover_run(log_dir, options.cpu_samples);
  if (!found.run) {
    run.error = found.error;
    return run;
  }
  std::vector<Window> windows;
  for (const auto& s : found.run->sources)
    windows.push_back(load_window(s, found.run->benchmark_out));
  std::vector<std::string> run_warnings;
  run.error = load_legs(*found.run, options, run.data, &run_warnings);
  if (!run.error.empty()) return run;
  // Windows only read the loaded data: report them on every core, each into its own slot.
  run.windows.resize(windows.size());
  // Wall-clock steps the run recorded fail the windows they touch (report/clock_check.hpp).
  const auto clock_steps = load_clock_steps(*found.run, &run_warnings);
  parallel_for(windows.size(), scan_threads(options.threads), [&](std::size_t i) {
    run.windows[i] = build_window_report(windows[i], run.data, options.edges);
    check_clock_steps(clock_steps, run.windows[i]);
    run.windows[i].warnings.insert(run.windows[i].warnings.end(), run_warnings.begin(),
                                   run_warnings.end());
  });
  return run;
}

RunReportStatus write_run_report(const std::string& log_dir, const ReportOptions& options) {
  RunReportStatus status;
  try {
    const ReportRun run = build_reports(log_dir, options);
    if (!run.error.empty()) {
      status.message = run.error;
      return status;
    }
    status.windows = run.windows.size();
    for (const auto& w : run.windows) status.failed_windows += w.error.empty() ? 0 : 1;
    const std::string base = python_path_str(log_dir) + "/power_energy_report";
    const std::pair<std::string, std::string> files[] = {
        {base + ".json", render_json(run.windows)},
        {base + ".txt", render_text(run.windows, options.edges)},
        {base + ".svg", render_svg(run.data, run.windows)}};
    for (const auto& [path, content] : files) {
      std::string error;
      if (!common::write_file_atomic(path, content, &error)) {
        status.message = path + ": " + error;
        return status;
      }
      status.written.push_back(path);
    }
    // The HTML report is best effort on top: if it cannot be rendered or written, the three
    // files above stand and the message says why.
    std::string html_error;
    try {
      std::string error;
      const std::string path = python_path_str(log_dir) + "/power_report.html";
      if (common::write_file_atomic(path, render_html({{log_dir, &run.data, &run.windows}}),
                                    &error)) {
        status.written.push_back(path);
      } else {
        html_error = path + ": " + error;
      }
    } catch (const std::exception& e) {
      html_error = std::string("HTML report failed: ") + e.what();
    }
    status.ok = status.failed_windows == 0 && html_error.empty();
    if (!html_error.empty()) {
      status.message = html_error;
      return status;
    }
    if (!status.ok) status.message = std::to_string(status.failed_windows) + " window(s) failed";
  } catch (const std::exception& e) {
    status.message = std::string("energy report failed: ") + e.what();
  } catch (...) {
    status.message = "energy report failed";
  }
  return status;
}

}  // namespace cpupower::report
