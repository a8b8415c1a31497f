#include "report/window_report.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <limits>
#include <map>
#include <set>

#include "rails/rails.hpp"
#include "report/numeric.hpp"

namespace cpupower::report {
namespace {

// Integrates one track into `rows`, or says why the window does not cover it.
Status add_row(const Track& track, const std::string& label, const WindowReport& r,
               std::vector<Breakdown>* rows, const Averaging& averaging = {}) {
  Integration in = integrate_window(track, r.window.start_unix, r.window.end_unix, r.edges, label,
                                    true, averaging);
  if (!in.row) return Error{in.error};
  rows->push_back(std::move(*in.row));
  return Ok{};
}

// Keeps the first error of several rows: a coverage error fails the window.
void keep_first(Status s, Status* first) {
  if (!s && first->ok()) *first = std::move(s);
}

double sum_joules(const std::vector<Breakdown>& rows) {
  double total = 0;  // Python's sum(): left to right
  for (const auto& row : rows) total += row.stats.joules;
  return total;
}

// Whether the track has a value at some time in [lo, hi].
bool any_value_in(const Track& track, double lo, double hi) {
  const auto& t = *track.t;
  for (auto i = static_cast<std::size_t>(std::lower_bound(t.begin(), t.end(), lo) - t.begin());
       i < t.size() && t[i] <= hi; ++i) {
    if (track.has(i)) return true;
  }
  return false;
}

// What a host's CPU readings average, as its leg's manifest recorded it.
Averaging cpu_averaging(const RunExpectations& expected, const std::string& host) {
  const auto node = expected.cpu_node.find(host);
  return node == expected.cpu_node.end() ? Averaging{} : node->second.averaging;
}

Status cpu_rows(const CpuData& cpu, const RunExpectations& expected, WindowReport& r) {
  Status first = Ok{};
  // Sockets come by host: a socket without a sample in the window while another socket of its
  // node has some is missing from the window (a dead socket), said in a warning, not a
  // coverage failure of the whole window.
  for (std::size_t b = 0; b < cpu.sockets.size();) {
    std::size_t e = b;
    while (e < cpu.sockets.size() && cpu.sockets[e].host == cpu.sockets[b].host) ++e;
    std::vector<char> present(e - b);
    bool any_present = false;
    for (std::size_t i = b; i < e; ++i) {
      present[i - b] = any_value_in(cpu.sockets[i].power, r.window.lo(), r.window.hi());
      any_present = any_present || present[i - b];
    }
    for (std::size_t i = b; i < e; ++i) {
      const CpuSocket& s = cpu.sockets[i];
      if (s.power.any_value()) {
        if (any_present && !present[i - b]) {
          r.missing_sockets.emplace_back(s.host, s.socket);
        } else {
          keep_first(
              add_row(s.power, s.label(), r, &r.cpu_per_socket, cpu_averaging(expected, s.host)),
              &first);
        }
      }
      r.cpu_sensors.push_back({s.label(), s.sensor, s.other_sensors});
    }
    b = e;
  }
  for (const auto& n : cpu.nodes) {
    keep_first(
        add_row(n.total, "cpu/" + n.host, r, &r.cpu_per_node, cpu_averaging(expected, n.host)),
        &first);
  }
  r.cpu_total_joules = r.cpu_per_node.empty() ? Json(0) : Json(sum_joules(r.cpu_per_node));
  return first;
}

Status gpu_rows(const GpuData& gpu, WindowReport& r) {
  Status first = Ok{};
  for (const auto& d : gpu.devices) {
    if (d.power.size() > 0) keep_first(add_row(d.power, d.label(), r, &r.gpu_per_device), &first);
  }
  for (const auto& role : gpu.roles) {
    keep_first(add_row(role.power, role.label(), r, &r.gpu_per_role), &first);
  }
  for (const auto& n : gpu.nodes)
    keep_first(add_row(n.power, n.label(), r, &r.gpu_per_node), &first);
  r.gpu_total_joules = r.gpu_per_node.empty() ? Json(0) : Json(sum_joules(r.gpu_per_node));
  return first;
}

// module_w is NVML's module power, a 1 s average (rails/rails.hpp).
constexpr Averaging kModuleAveraging{rails::kNvmlModuleAverageS, rails::kNvmlModuleAverageS};

// Module energy is reported, never summed with GPU energy: the GPUs are inside it. A
// module series without coverage is a warning, not a failed window.
void module_rows(const RunData& run, WindowReport& r) {
  for (const auto& s : run.cpu->sockets) {
    if (!s.module || !s.module->any_value()) continue;
    const Status added =
        add_row(*s.module, s.label() + "/module", r, &r.module_per_socket, kModuleAveraging);
    if (!added) r.warnings.push_back("module_w: " + added.error());
  }
  for (const auto& node : run.module_nodes) {
    // Only the window's own stretch is summed; a failure is redone on the whole series,
    // whose error text tells how far the nearest sample is.
    const std::string label = "module/" + node->host();
    Integration in = integrate_samples(
        node->samples(r.window.lo() - kWindowMargin, r.window.hi() + kWindowMargin),
        r.window.start_unix, r.window.end_unix, r.edges, label, true, kModuleAveraging);
    if (!in.row) {
      in = integrate_window(node->whole(), r.window.start_unix, r.window.end_unix, r.edges, label,
                            true, kModuleAveraging);
    }
    if (in.row) {
      r.module_per_node.push_back(std::move(*in.row));
    } else {
      r.warnings.push_back("module_w: " + in.error);
    }
  }
  if (!r.module_per_node.empty()) r.module_total_joules = sum_joules(r.module_per_node);
}

void node_power(const RunData& run, WindowReport& r) {
  std::map<std::string, NodePower> hosts;
  for (const auto& row : r.cpu_per_node) hosts[row.label.substr(4)].cpu_w = row.stats.avg_power_w;
  for (const auto& row : r.gpu_per_node) hosts[row.label.substr(4)].gpu_w = row.stats.avg_power_w;
  static const char* kRailNames[] = {"cpu_rail", "soc", "dram"};
  for (auto& [host, np] : hosts) {
    np.host = host;
    std::set<std::string> roles;
    if (run.gpu) {
      // Devices are sorted by (host, index): the host's are one range.
      for (const GpuDevice& d : of_host(run.gpu->devices, host)) {
        if (d.power.size() == 0) continue;
        ++np.gpu_count;
        roles.insert(d.roles.begin(), d.roles.end());
      }
    }
    np.roles.assign(roles.begin(), roles.end());
    if (!run.cpu) continue;
    std::array<double, artifacts::kRails> sums{};
    std::array<bool, artifacts::kRails> any{};
    // Sockets are sorted by (host, socket).
    for (const CpuSocket& s : of_host(run.cpu->sockets, host)) {
      ++np.socket_count;
      for (std::size_t i = 0; i < artifacts::kRails; ++i) {
        if (!s.rails[i]) continue;
        const Integration in = integrate_window(*s.rails[i], r.window.start_unix, r.window.end_unix,
                                                r.edges, "rail", false);
        if (!in.row) continue;  // a rail without coverage is left out, not counted as 0 W
        sums[i] += in.row->stats.avg_power_w;
        any[i] = true;
      }
    }
    for (std::size_t i = 0; i < artifacts::kRails; ++i) {
      if (any[i]) np.cpu_rails_w.emplace_back(kRailNames[i], sums[i]);
    }
  }
  for (auto& [host, np] : hosts) r.node_power.push_back(std::move(np));
}

void reference_warnings(const RunData& run, WindowReport& r,
                        const std::vector<std::string>& cpu_util_warnings,
                        const std::vector<std::string>& gpu_util_warnings) {
  const double node = r.cpu_total_joules.get<double>();
  if (node > 0 && !r.cpu_per_socket.empty()) {
    const double sock = sum_joules(r.cpu_per_socket);
    const double rel = std::abs(sock - node) / node;
    if (rel > 0.02) {
      r.warnings.push_back(fmt::format(
          "CPU energy mismatch: per-socket sum {} J vs node total {} J ({:.1f}% apart) -- socket "
          "series may be using the wrong sensor channel",
          py_fixed_commas(sock, 0), py_fixed_commas(node, 0), rel * 100));
    }
  }
  r.warnings.insert(r.warnings.end(), cpu_util_warnings.begin(), cpu_util_warnings.end());
  if (run.gpu && r.gpu_per_role.empty()) {
    // The text existing consumers know, unless the leg has no GPU samples at all (an empty
    // file): then the manifest is not what is missing.
    const bool any_samples = std::any_of(run.gpu->devices.begin(), run.gpu->devices.end(),
                                         [](const GpuDevice& d) { return d.power.size() > 0; });
    r.warnings.push_back(
        any_samples ? "GPU role breakdown unavailable (no manifest.json / expected_devices)"
                    : "GPU role breakdown unavailable (no GPU samples)");
  }
  r.warnings.insert(r.warnings.end(), gpu_util_warnings.begin(), gpu_util_warnings.end());
  if (run.gpu && !run.cpu) {
    r.warnings.push_back(
        "combined perf/W unavailable: no CPU power leg in this run (GPU-only figures reported)");
  }
}

// The CPU boundary each socket's power_w measures: the Grace socket envelope (ACPI socket
// totals), the CPU rail (DCGM field 1130) or an x86 package (RAPL).
std::string_view cpu_boundary(const CpuSocket& s) {
  return s.dcgm ? "Grace CPU rail (DCGM)" : s.rapl ? "x86 package (RAPL)" : "Grace socket envelope";
}

// RAPL sockets: what a package boundary covers and what it leaves out, so that x86 joules are
// not read as a Grace socket's. A report whose sockets measure different boundaries (a mixed
// cluster: Grace and x86 nodes) says which node has which, since its totals add them up.
void boundary_warnings(const CpuData& cpu, WindowReport& r) {
  std::string rapl;
  // Each boundary and its hosts, in first-seen order; sockets are sorted by host.
  std::vector<std::pair<std::string_view, std::vector<std::string>>> by_boundary;
  for (const auto& s : cpu.sockets) {
    if (s.rapl) rapl += (rapl.empty() ? "" : ", ") + s.label();
    const auto boundary = cpu_boundary(s);
    auto it = std::find_if(by_boundary.begin(), by_boundary.end(),
                           [&](const auto& b) { return b.first == boundary; });
    if (it == by_boundary.end()) it = by_boundary.insert(it, {boundary, {}});
    const std::string host = "cpu/" + s.host;
    if (it->second.empty() || it->second.back() != host) it->second.push_back(host);
  }
  if (!rapl.empty()) {
    r.warnings.push_back(
        "CPU package boundary: " + rapl +
        " report x86 RAPL package energy (cores, caches, uncore and memory controller; DRAM is "
        "dram_w, outside power_w; no regulator losses), not a Grace socket envelope (which also "
        "covers the socket's memory and regulators); compare these CPU joules, J/token or "
        "perf/W with Grace runs only as package against envelope");
  }
  if (by_boundary.size() > 1) {
    std::string list;
    for (const auto& [boundary, hosts] : by_boundary) {
      std::string names;
      for (const auto& h : hosts) names += (names.empty() ? "" : ", ") + h;
      list += (list.empty() ? "" : "; ") + std::string(boundary) + ": " + names;
    }
    r.warnings.push_back("CPU boundaries differ across nodes (" + list +
                         "); cpu_total_joules adds figures of different scope, and each node's "
                         "CPU joules are comparable only with nodes of its own boundary");
  }
}

// Warnings for what would otherwise pass in silence, added after the ones above so that the
// leading warnings stay as existing consumers read them.
void our_warnings(const RunData& run, WindowReport& r) {
  if (run.cpu) {
    for (const auto& s : run.cpu->sockets) {
      if (s.sources.size() > 1) {
        std::string list;
        for (const auto& src : s.sources) list += (list.empty() ? "" : " -> ") + src;
        r.warnings.push_back(fmt::format(
            "{}: power_w switches source ({}) within the run; the series mixes readings of "
            "different scope",
            s.label(), list));
      }
    }
    cpu_scope_warnings(*run.cpu, r);
    for (const auto& host : run.cpu->hosts) {
      // Nodes are sorted by host.
      if (std::ranges::binary_search(run.cpu->nodes, host, {}, &CpuNode::host)) continue;
      r.warnings.push_back("cpu/" + host +
                           ": no total_power_w samples; this node is not in cpu_total_joules");
    }
  }
  for (const auto* rows : {&r.cpu_per_socket, &r.cpu_per_node, &r.gpu_per_device, &r.gpu_per_role,
                           &r.gpu_per_node, &r.module_per_socket, &r.module_per_node}) {
    for (const auto& row : *rows) {
      if (row.stats.largest_gap_s <= kMaxSampleGapS) continue;
      r.warnings.push_back(fmt::format(
          "{}: samples {:.3f}s apart inside the window (from {:.3f}); the trapezoid bridges the "
          "gap linearly",
          row.label, row.stats.largest_gap_s, row.stats.largest_gap_at_unix));
    }
  }
}

// What the manifests expected and the files lack, in this window: CPU nodes, sockets and GPU
// devices. Each is named; the figures leave it out, and the warning says so.
void expectation_warnings(const RunData& run, WindowReport& r) {
  const RunExpectations& x = run.expected;
  if (run.cpu) {
    const CpuData& cpu = *run.cpu;
    if (x.cpu_nodes) {
      for (const auto& host : *x.cpu_nodes) {
        if (std::binary_search(cpu.hosts.begin(), cpu.hosts.end(), host)) continue;
        r.warnings.push_back("cpu/" + host + ": expected by " + x.cpu_manifest +
                             " but has no rows in " + cpu.path +
                             "; cpu_total_joules leaves this node out");
      }
    }
    std::set<std::pair<std::string, long long>> said;
    for (const auto& [host, node] : x.cpu_node) {
      for (const SocketGap& g : node.sockets_missing) {
        const double from = g.first_unix.value_or(-std::numeric_limits<double>::infinity());
        const double to = g.last_unix.value_or(std::numeric_limits<double>::infinity());
        if (to < r.window.lo() || from > r.window.hi()) continue;
        said.emplace(host, g.socket);
        r.warnings.push_back(fmt::format(
            "cpu/{}/socket{}: missing from {} to {} ({} rows, {} sockets_missing), within this "
            "window; the node total is used only where every socket has a reading",
            host, g.socket, g.first_unix ? fmt::format("{:.3f}", *g.first_unix) : "?",
            g.last_unix ? fmt::format("{:.3f}", *g.last_unix) : "?", g.rows, x.cpu_manifest));
      }
      if (!node.sockets_expected || !std::binary_search(cpu.hosts.begin(), cpu.hosts.end(), host)) {
        continue;
      }
      for (const long long id : *node.sockets_expected) {
        const CpuSocket* s = cpu.find_socket(host, id);
        if ((s && s->power.any_value()) || said.contains({host, id})) continue;
        said.emplace(host, id);
        r.warnings.push_back(fmt::format(
            "cpu/{}/socket{}: expected by {} (sockets_expected) but has no samples in {}; the "
            "node total is used only where every socket has a reading",
            host, id, x.cpu_manifest, cpu.path));
      }
    }
    for (const auto& [host, id] : r.missing_sockets) {
      if (said.contains({host, id})) continue;
      r.warnings.push_back(fmt::format(
          "cpu/{}/socket{}: no samples in the window while the node's other sockets have them; "
          "its socket figure is left out and the node total is used only where every socket "
          "has a reading",
          host, id));
    }
  }
  if (run.gpu && x.gpu_devices) {
    for (const auto& [host, index] : *x.gpu_devices) {
      // Devices are sorted by (host, index): the host's are one range.
      // (The index by value: clang 14 cannot capture a structured binding.)
      if (std::ranges::any_of(of_host(run.gpu->devices, host), [i = index](const GpuDevice& d) {
            return d.index == i && d.power.size() > 0;
          })) {
        continue;
      }
      r.warnings.push_back(
          fmt::format("gpu/{}/gpu{}: expected by {} (expected_devices) but has no samples in {}; "
                      "gpu_total_joules, gpu/{} and its role leave this device out",
                      host, index, x.gpu_manifest, run.gpu->path, host));
    }
  }
}

TotalError total_error(const std::vector<Breakdown>& rows) {
  TotalError out;
  bool known = !rows.empty();
  double lowest = 1.0;
  for (const auto& row : rows) {
    out.uncertainty_j += row.stats.uncertainty_j;
    known = known && row.stats.coverage.has_value();
    if (row.stats.coverage) lowest = std::min(lowest, *row.stats.coverage);
  }
  if (known) out.coverage = lowest;
  return out;
}

// A warning where a leg's averaging interval is unknown (its rows then have no coverage, and
// their uncertainty takes the samples as instantaneous).
void unknown_averaging_warnings(WindowReport& r) {
  const std::pair<const char*, const std::vector<Breakdown>*> legs[] = {{"CPU", &r.cpu_per_node},
                                                                        {"GPU", &r.gpu_per_node}};
  for (const auto& [leg, rows] : legs) {
    std::string unknown;
    for (const auto& row : *rows) {
      if (!row.stats.coverage) unknown += (unknown.empty() ? "" : ", ") + row.label;
    }
    if (unknown.empty()) continue;
    r.warnings.push_back(fmt::format(
        "{} power: the run's files do not record the averaging interval of {} (an older "
        "collector, a DCGM source, or the GPU leg); coverage is not stated, and the "
        "uncertainty takes each sample as instantaneous",
        leg, unknown));
  }
}

}  // namespace

void cpu_scope_warnings(const CpuData& cpu, WindowReport& r) {
  std::string dcgm;
  for (const auto& s : cpu.sockets) {
    if (s.dcgm) dcgm += (dcgm.empty() ? "" : ", ") + s.label();
  }
  if (!dcgm.empty()) {
    r.warnings.push_back(
        "CPU rail only: " + dcgm +
        " report DCGM field 1130 (the CPU rail, about half the Grace socket envelope); do not "
        "compare these CPU joules, J/token or perf/W with ACPI-sourced runs");
  }
  boundary_warnings(cpu, r);
}

void total_error_bars(WindowReport& r) {
  r.cpu_total_error = total_error(r.cpu_per_node);
  r.gpu_total_error = total_error(r.gpu_per_node);
  r.combined_total_error.uncertainty_j =
      r.cpu_total_error.uncertainty_j + r.gpu_total_error.uncertainty_j;
  std::vector<const Breakdown*> both;
  for (const auto* rows : {&r.cpu_per_node, &r.gpu_per_node}) {
    for (const auto& row : *rows) both.push_back(&row);
  }
  if (!both.empty() && std::all_of(both.begin(), both.end(), [](const Breakdown* b) {
        return b->stats.coverage.has_value();
      })) {
    double lowest = 1.0;
    for (const auto* b : both) lowest = std::min(lowest, *b->stats.coverage);
    r.combined_total_error.coverage = lowest;
  }
  if (r.module_total_joules) r.module_total_error = total_error(r.module_per_node);
  const double u = r.combined_total_error.uncertainty_j;
  const auto& O = r.window.output_tokens;
  const auto& I = r.window.input_tokens;
  if (r.joules_per_output_token) r.joules_per_output_token_uncertainty = u / *O;
  if (r.joules_per_total_token) r.joules_per_total_token_uncertainty = u / (*O + *I);
}

Series ModuleNode::samples(double lo, double hi, std::size_t limit) const {
  // Walk the sockets' sorted times together; keep the instants every socket has a value for.
  // The sockets of a host usually share its time column (cpu_load.cpp): then row i is the
  // same instant in every socket and no walk is needed.
  const Track& lead = *sockets_[0];
  const bool shared =
      std::all_of(sockets_.begin(), sockets_.end(), [&](const Track* s) { return s->t == lead.t; });
  std::vector<std::size_t> pos;
  for (const Track* s : sockets_) {
    pos.push_back(
        static_cast<std::size_t>(std::lower_bound(s->t->begin(), s->t->end(), lo) - s->t->begin()));
  }
  Series out;
  for (std::size_t i = pos[0]; i < lead.size() && out.size() < limit; ++i) {
    const double at = lead.time(i);
    if (at > hi) break;
    double sum = lead.v[i];
    bool all = !std::isnan(sum);
    for (std::size_t k = 1; k < sockets_.size() && all; ++k) {
      const Track& tk = *sockets_[k];
      if (shared) {
        pos[k] = i;
      } else {
        while (pos[k] < tk.size() && tk.time(pos[k]) < at) ++pos[k];
      }
      all = pos[k] < tk.size() && tk.time(pos[k]) == at && tk.has(pos[k]);
      if (all) sum += tk.v[pos[k]];
    }
    if (!all) continue;
    out.t.push_back(at);
    out.w.push_back(sum);
  }
  return out;
}

const Track& ModuleNode::whole() const {
  std::call_once(once_, [&] {
    Series all =
        samples(-std::numeric_limits<double>::infinity(), std::numeric_limits<double>::infinity());
    whole_ = make_track(all.t, all.w);
  });
  return whole_;
}

void build_module_nodes(RunData& run) {
  if (!run.cpu) return;
  std::map<std::string, std::vector<const Track*>> by_host;
  for (const auto& s : run.cpu->sockets) {
    if (s.module && s.module->any_value()) by_host[s.host].push_back(&*s.module);
  }
  for (auto& [host, tracks] : by_host) {
    auto node = std::make_unique<ModuleNode>(host, std::move(tracks));
    const double inf = std::numeric_limits<double>::infinity();
    if (!node->samples(-inf, inf, 1).empty()) run.module_nodes.push_back(std::move(node));
  }
}

WindowReport build_window_report(const Window& window, const RunData& run, Edges edges) {
  WindowReport r;
  r.window = window;
  r.edges = edges;
  if (!window.error.empty()) {
    r.error = window.error;
    return r;
  }
  Status rows = Ok{};
  if (run.cpu) keep_first(cpu_rows(*run.cpu, run.expected, r), &rows);
  if (run.gpu) keep_first(gpu_rows(*run.gpu, r), &rows);
  if (!rows) {
    WindowReport failed;
    failed.window = window;
    failed.edges = edges;
    failed.error = rows.error();
    // A node total left without coverage by a dead socket: the error says which.
    if (!r.missing_sockets.empty()) {
      std::string list;
      for (const auto& [host, id] : r.missing_sockets) {
        list += fmt::format("{}cpu/{}/socket{}", list.empty() ? "" : ", ", host, id);
      }
      failed.error += " (no samples in the window from " + list +
                      ", whose node totals without it are not the node's)";
    }
    return failed;
  }
  if (!run.cpu) r.cpu_total_joules = 0.0;
  if (!run.gpu) r.gpu_total_joules = 0.0;
  node_power(run, r);
  std::vector<std::string> cpu_util_warnings, gpu_util_warnings;
  summarize_utilization(run, r, &cpu_util_warnings, &gpu_util_warnings);
  derive_figures(run, r);
  reference_warnings(run, r, cpu_util_warnings, gpu_util_warnings);
  if (run.cpu) module_rows(run, r);
  our_warnings(run, r);
  expectation_warnings(run, r);
  total_error_bars(r);
  unknown_averaging_warnings(r);
  r.warnings.insert(r.warnings.end(), window.warnings.begin(), window.warnings.end());
  return r;
}

}  // namespace cpupower::report
