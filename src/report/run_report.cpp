#include "report/run_report.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <filesystem>

#include "artifacts/csv.hpp"
#include "artifacts/gpu_samples.hpp"
#include "artifacts/gpu_samples_check.hpp"
#include "common/text.hpp"
#include "report/clock_check.hpp"
#include "report/discovery.hpp"
#include "report/json_value.hpp"
#include "report/parallel.hpp"
#include "report/render.hpp"

namespace cpupower::report {
namespace {

Window load_one_window(const WindowSource& s, const std::string& benchmark_out) {
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
  return requested > 0 ? requested : default_threads();
}

namespace fs = std::filesystem;

// The averaging interval of a host-leg node's socket totals: its metadata's sensors of
// domain_kind "total", each with average_interval_ms. Unknown unless every one says.
std::optional<Averaging> host_averaging(const Json& metadata) {
  const auto sensors = metadata.is_object() ? metadata.find("sensors") : metadata.end();
  if (!metadata.is_object() || sensors == metadata.end() || !sensors->is_array()) {
    return std::nullopt;
  }
  Averaging a;
  for (const auto& s : *sensors) {
    if (!s.is_object() || s.value("domain_kind", Json()) != "total") continue;
    const auto ms = json_member_number(s, "average_interval_ms");
    if (!ms || *ms < 0) return std::nullopt;
    a.min_s = std::min(a.min_s.value_or(INFINITY), *ms / 1000);
    a.max_s = std::max(a.max_s.value_or(-INFINITY), *ms / 1000);
  }
  if (!a.known()) return std::nullopt;
  return a;
}

// The CPU leg's manifest beside its samples: cpu_manifest.json (exporter leg: `nodes`, and
// per node `sockets_expected` and `sockets_missing`) or manifest.json (host leg:
// `expected_nodes`). Older manifests lack the socket keys; a manifest that cannot be read is
// a warning, and the nodes are then not checked.
void load_cpu_expectations(const std::string& samples, RunExpectations& e,
                           std::vector<std::string>* warnings) {
  const fs::path dir = fs::path(samples).parent_path();
  std::string path = (dir / "cpu_manifest.json").string();
  if (!is_file(path)) path = (dir / "manifest.json").string();
  if (!is_file(path)) return;
  const auto doc = read_json_file(path);
  if (!doc || !doc->is_object()) {
    warnings->push_back((doc ? path + ": not a JSON object" : doc.error()) +
                        "; the CPU leg's nodes are not checked against it");
    return;
  }
  e.cpu_manifest = path;
  const auto ignored = [&](const std::string& key, const char* want) {
    warnings->push_back(path + ": " + key + " is not " + want + "; ignored");
  };
  if (const auto nodes = doc->find("nodes"); nodes != doc->end() && nodes->is_object()) {
    e.cpu_nodes.emplace();
    for (const auto& item : nodes->items()) {
      const std::string host = item.key();
      const Json& node = item.value();
      e.cpu_nodes->insert(host);
      if (!node.is_object()) continue;
      CpuNodeExpect& x = e.cpu_node[host];
      if (const auto a = node.find("average_interval_s"); a != node.end() && a->is_object()) {
        const auto lo = json_member_number(*a, "min"), hi = json_member_number(*a, "max");
        if (lo && hi && *lo >= 0 && *hi >= *lo) x.averaging = {lo, hi};
      }
      if (const auto se = node.find("sockets_expected"); se != node.end()) {
        if (se->is_array() && std::all_of(se->begin(), se->end(), [](const Json& id) {
              return id.is_number_integer() && id.get<long long>() >= 0;
            })) {
          x.sockets_expected = se->get<std::vector<long long>>();
        } else {
          ignored("nodes." + host + ".sockets_expected", "a list of socket ids");
        }
      }
      if (const auto sm = node.find("sockets_missing"); sm != node.end()) {
        if (!sm->is_object()) {
          ignored("nodes." + host + ".sockets_missing", "an object");
          continue;
        }
        for (const auto& entry : sm->items()) {
          const std::string socket = entry.key();
          const Json& gap = entry.value();
          const auto id = artifacts::parse_int(socket);
          if (!id || *id < 0 || !gap.is_object()) {
            ignored("nodes." + host + ".sockets_missing." + socket,
                    "a socket id with {rows, first_unix, last_unix}");
            continue;
          }
          SocketGap g;
          g.socket = *id;
          if (const auto n = gap.find("rows"); n != gap.end() && n->is_number_unsigned()) {
            g.rows = n->get<std::uint64_t>();
          }
          g.first_unix = json_member_number(gap, "first_unix");
          g.last_unix = json_member_number(gap, "last_unix");
          x.sockets_missing.push_back(g);
        }
      }
    }
  } else if (const auto expected = doc->find("expected_nodes");
             expected != doc->end() && expected->is_array()) {
    e.cpu_nodes.emplace();
    for (const auto& host : *expected) {
      if (host.is_string()) e.cpu_nodes->insert(host.get<std::string>());
    }
    if (const auto meta = doc->find("node_metadata"); meta != doc->end() && meta->is_object()) {
      for (const auto& item : meta->items()) {
        if (auto a = host_averaging(item.value())) e.cpu_node[item.key()].averaging = *a;
      }
    }
  }
}

// The GPU samples against the manifest's own account of them: the rows the strict reader
// kept and the finalized file's SHA-256. A difference means the file is not the one the run
// published (rows lost, added or repeated), whatever the rows themselves look like.
void check_gpu_manifest(const artifacts::GpuManifestRoles& m, const artifacts::GpuSamplesFile& file,
                        const std::string& samples, const std::string& manifest,
                        std::vector<std::string>* warnings) {
  if (m.sample_row_count && *m.sample_row_count != file.rows.size() + file.repeated_rows) {
    warnings->push_back(samples + ": " + std::to_string(file.rows.size() + file.repeated_rows) +
                        " rows read where " + manifest + " says sample_row_count " +
                        std::to_string(*m.sample_row_count));
  }
  if (m.samples_sha256) {
    const auto sha = artifacts::sha256_file_hex(samples);
    if (!sha) {
      warnings->push_back(samples + ": SHA-256 not computed (" + sha.error() + "); " + manifest +
                          " samples_sha256 not checked");
    } else if (*sha != *m.samples_sha256) {
      warnings->push_back(samples + ": SHA-256 " + *sha + " differs from " + manifest +
                          " samples_sha256 " + *m.samples_sha256 +
                          ": the file is not the one the run finalized");
    }
  }
  if (m.publication_valid && !*m.publication_valid) {
    std::string codes;
    for (const auto& c : m.reason_codes) codes += (codes.empty() ? "" : ",") + c;
    warnings->push_back(manifest + ": publication_valid is false (reason_codes: " +
                        (codes.empty() ? "none" : codes) +
                        "): the GPU package is not publishable; its figures are not vouched for");
  }
}

// Rows a leg could not use are dropped, never read as zeros, and said once per file and
// reason for the whole run.
void file_warnings(const std::string& path, bool empty, std::size_t rows,
                   const artifacts::RowIssues& issues, const std::string& leg,
                   std::vector<std::string>* out) {
  if (empty || rows == 0) {
    out->push_back(path + (empty ? ": empty file" : ": a header without rows") + ", no " + leg +
                   " samples");
  }
  for (auto& w : issues.warnings(path, rows)) out->push_back(std::move(w));
}

// Loads both legs; an error text when a leg cannot be read at all.
std::string load_legs(const RunInputs& in, const ReportOptions& options, RunData& data,
                      std::vector<std::string>* run_warnings) {
  if (in.cpu_samples) {
    auto cpu = load_cpu_samples(*in.cpu_samples, scan_threads(options.threads));
    if (!cpu) return cpu.error();
    file_warnings(*in.cpu_samples, cpu->empty, cpu->rows, cpu->issues, "CPU", run_warnings);
    if (cpu->repeated_rows > 0) {
      run_warnings->push_back(*in.cpu_samples + ": " + std::to_string(cpu->repeated_rows) +
                              " rows repeat an instant already read for their host and socket "
                              "(hostname, socket_id, timestamp_unix); each instant counts once");
    }
    load_cpu_expectations(*in.cpu_samples, data.expected, run_warnings);
    for (auto& w : uneven_socket_counts(*cpu, data.expected)) run_warnings->push_back(std::move(w));
    for (auto& w : drop_partial_totals(*cpu, data.expected)) run_warnings->push_back(std::move(w));
    data.cpu = std::move(cpu.value());
  }
  if (in.gpu_samples) {
    const auto file = artifacts::read_gpu_samples(*in.gpu_samples);
    if (!file) return file.error();
    artifacts::GpuRoles roles;
    if (in.gpu_manifest) {
      artifacts::GpuManifestRoles m = artifacts::read_gpu_manifest_roles(*in.gpu_manifest);
      if (!m.ok) {
        run_warnings->push_back(m.error + "; GPU roles and expected devices not available");
      } else {
        data.expected.gpu_manifest = *in.gpu_manifest;
        data.expected.gpu_devices = std::move(m.expected_devices);
        check_gpu_manifest(m, *file, *in.gpu_samples, *in.gpu_manifest, run_warnings);
      }
      roles = std::move(m.roles);
    }
    data.gpu = build_gpu_data(*file, roles);
    data.gpu->path = *in.gpu_samples;
    file_warnings(*in.gpu_samples, file->empty, file->rows_read, file->issues, "GPU", run_warnings);
  }
  build_module_nodes(data);
  return "";
}

}  // namespace

std::vector<Window> load_windows(const RunInputs& run) {
  std::vector<Window> windows;
  for (const auto& s : run.sources) windows.push_back(load_one_window(s, run.benchmark_out));
  return windows;
}

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
  const std::vector<Window> windows = load_windows(*found.run);
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
      if (const auto written = common::write_file_atomic(path, content); !written) {
        status.message = path + ": " + written.error();
        return status;
      }
      status.written.push_back(path);
    }
    // The HTML report is best effort on top: if it cannot be rendered or written, the three
    // files above stand and the message says why.
    std::string html_error;
    try {
      const std::string path = python_path_str(log_dir) + "/power_report.html";
      if (const auto written =
              common::write_file_atomic(path, render_html({{log_dir, &run.data, &run.windows}}));
          written) {
        status.written.push_back(path);
      } else {
        html_error = path + ": " + written.error();
      }
    } catch (const std::exception& e) {
      html_error = std::string("HTML report failed: ") + e.what();
    }
    status.ok = status.failed_windows == 0 && html_error.empty();
    if (!status.ok) {
      status.message = !html_error.empty()
                           ? html_error
                           : std::to_string(status.failed_windows) + " window(s) failed";
    }
  } catch (const std::exception& e) {
    status.message = std::string("energy report failed: ") + e.what();
  } catch (...) {
    status.message = "energy report failed";
  }
  return status;
}

}  // namespace cpupower::report
