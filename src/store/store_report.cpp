#include "store/store_report.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "common/text.hpp"
#include "report/discovery.hpp"
#include "report/iso_time.hpp"
#include "report/json_value.hpp"
#include "store/queries.hpp"

namespace cpupower::store {
namespace {

namespace fs = std::filesystem;

Result<double> time_arg(std::string_view text, const char* which) {
  if (const auto v = common::parse_double(text)) {
    if (!std::isfinite(*v)) return Error{fmt::format("--window {}: {} is not a time", which, text)};
    return *v;
  }
  auto iso = report::iso_to_unix(text, std::nullopt);
  if (!iso) {
    return Error{
        fmt::format("--window {}: {} is neither seconds since the epoch nor an ISO 8601 "
                    "time ({})",
                    which, text, iso.error())};
  }
  return *iso;
}

// The nodes (and sockets) one manifest or discovery file names; false when it names none.
bool add_nodes(const fs::path& path, ExpectedNodes& x, std::vector<std::string>* warnings) {
  const auto doc = report::read_json_file(path.string());
  if (!doc) {
    warnings->push_back(doc.error() + "; the run's nodes it names are not used");
    return false;
  }
  bool any = false;
  const std::string name = path.filename().string();
  if (name == "cpu_manifest.json" && doc->is_object()) {
    const auto nodes = doc->find("nodes");
    if (nodes == doc->end() || !nodes->is_object()) return false;
    for (const auto& item : nodes->items()) {
      x.nodes.insert(item.key());
      any = true;
      const auto& node = item.value();
      if (!node.is_object()) continue;
      const auto se = node.find("sockets_expected");
      if (se == node.end() || !se->is_array()) continue;
      auto& sockets = x.sockets[item.key()];
      for (const auto& id : *se) {
        if (id.is_number_integer() && id.get<long long>() >= 0)
          sockets.push_back(id.get<long long>());
      }
    }
  } else if (name == "manifest.json" && doc->is_object()) {
    const auto nodes = doc->find("expected_nodes");
    if (nodes == doc->end() || !nodes->is_array()) return false;
    for (const auto& n : *nodes) {
      if (!n.is_string()) continue;
      x.nodes.insert(n.get<std::string>());
      any = true;
    }
  } else if (name == "prometheus_sd.json" && doc->is_array()) {
    for (const auto& group : *doc) {
      if (!group.is_object()) continue;
      const auto labels = group.find("labels");
      if (labels == group.end() || !labels->is_object()) continue;
      const auto node = labels->find("node");
      if (node == labels->end() || !node->is_string()) continue;
      x.nodes.insert(node->get<std::string>());
      any = true;
    }
  }
  return any;
}

// Asks the store for one window's families. The error of a query the store refused, for the
// window; `fatal` when the store cannot be used at all.
struct Fetched {
  WindowData data;
  std::string error;
  bool fatal = false;
};

Fetched fetch(const Client& client, const Selectors& selectors, const report::Window& w,
              double lookback_s) {
  Fetched out;
  const QuerySpan span = query_span(w.start_unix, w.end_unix, lookback_s);
  for (std::size_t i = 0; i < kFamilies; ++i) {
    const auto family = static_cast<Family>(i);
    FamilyData& f = out.data.families[i];
    f.expr = family_query(family, selectors, span.range_s);
    // The gauge only where there is no energy counter (an older dcgm-exporter or GPU).
    if (family == Family::gpu_power && !out.data[Family::gpu_energy].series.empty()) continue;
    const QueryOutcome answer = client.query(f.expr, span.at_unix);
    if (answer.failure != Failure::none) {
      out.error = answer.error;
      out.fatal = answer.failure == Failure::store;
      return out;
    }
    f.queried = true;
    f.series = std::move(answer.result->series);
    for (const auto& warning : answer.result->warnings) {
      out.data.store_warnings.push_back(
          fmt::format("the store warns: {} (query {})", warning, f.expr));
    }
    if (answer.result->skipped_values > 0) {
      out.data.store_warnings.push_back(
          fmt::format("{}: {} samples whose value is not a finite number are left out", f.expr,
                      answer.result->skipped_values));
    }
  }
  return out;
}

}  // namespace

Result<report::Window> window_from_args(std::string_view start, std::string_view end) {
  const auto s = time_arg(start, "START");
  if (!s) return Error{s.error()};
  const auto e = time_arg(end, "END");
  if (!e) return Error{e.error()};
  if (!(*e > *s)) {
    return Error{fmt::format("--window: END ({:.3f}) is not after START ({:.3f})", *e, *s)};
  }
  report::Window w("window", "--window");
  w.start_unix = *s;
  w.end_unix = *e;
  w.start_json = *s;
  w.end_json = *e;
  return w;
}

RunNodes run_nodes(const std::string& log_dir) {
  RunNodes out;
  ExpectedNodes x;
  std::vector<std::string> sources;
  std::error_code ec;
  std::vector<fs::path> files;
  fs::recursive_directory_iterator it(log_dir, fs::directory_options::skip_permission_denied, ec);
  for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    const fs::path& p = it->path();
    const std::string name = p.filename().string();
    const bool wanted = name == "cpu_manifest.json" ||
                        (name == "manifest.json" && p.parent_path().filename() == "cpu_power") ||
                        (name == "prometheus_sd.json" && it.depth() == 0);
    if (wanted && report::is_file(p)) files.push_back(p);
  }
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    if (add_nodes(f, x, &out.warnings)) sources.push_back(f.string());
  }
  if (!x.nodes.empty()) {
    for (const auto& s : sources) x.source += (x.source.empty() ? "" : ", ") + s;
    out.expected = std::move(x);
  }
  return out;
}

report::ReportRun build_store_reports(const StoreReportOptions& options) {
  report::ReportRun run;
  std::vector<report::Window> windows;
  if (options.window) {
    windows.push_back(*options.window);
  } else if (options.log_dir) {
    const report::Discovery found = report::discover_windows(*options.log_dir);
    if (!found.run) {
      run.error = found.error;
      return run;
    }
    windows = report::load_windows(*found.run);
  } else {
    run.error = "no window: give LOG_DIR or --window START END";
    return run;
  }
  BuildOptions build;
  build.lookback_s = options.lookback_s;
  std::vector<std::string> run_warnings;
  if (options.log_dir) {
    RunNodes nodes = run_nodes(*options.log_dir);
    build.expected = std::move(nodes.expected);
    run_warnings = std::move(nodes.warnings);
  }
  Selectors selectors;
  if (options.match) {
    selectors = selectors_for(options.match, {});
  } else if (build.expected) {
    selectors =
        selectors_for(std::nullopt, {build.expected->nodes.begin(), build.expected->nodes.end()});
  } else {
    run.error = fmt::format(
        "{}: no cpu_manifest.json, cpu_power/manifest.json or prometheus_sd.json below it names "
        "the run's nodes; give --match SELECTOR (e.g. '{{job=\"cpu_power\"}}')",
        options.log_dir.value_or("no LOG_DIR"));
    return run;
  }
  if (!(options.lookback_s > 0)) {
    run.error = "--lookback must be above 0 seconds";
    return run;
  }
  auto client = Client::open(options.client);
  if (!client) {
    run.error = client.error();
    return run;
  }
  build.store_url = client->url();
  Charts charts;
  for (const auto& window : windows) {
    if (!window.error.empty()) {
      run.windows.push_back(build_window(window, {}, build, nullptr));
      continue;
    }
    Fetched fetched = fetch(*client, selectors, window, options.lookback_s);
    if (fetched.fatal) {
      run.error = fetched.error;
      run.windows.clear();
      return run;
    }
    report::Window w = window;
    if (!fetched.error.empty()) w.error = fetched.error;
    run.windows.push_back(build_window(w, fetched.data, build, &charts));
    auto& warnings = run.windows.back().warnings;
    warnings.insert(warnings.end(), run_warnings.begin(), run_warnings.end());
  }
  charts.fill(run.data);
  return run;
}

}  // namespace cpupower::store
