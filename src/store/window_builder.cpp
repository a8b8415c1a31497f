#include "store/window_builder.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <tuple>

#include "rails/rails.hpp"
#include "report/numeric.hpp"
#include "report/uncertainty.hpp"

namespace cpupower::store {
namespace {

using report::Breakdown;
using report::PowerStats;

constexpr double kMilli = 1e-3;  // dcgm-exporter's energy counter counts millijoules

// The CPU power sources whose counters give a socket's energy, in the order a node's is
// chosen when the store holds several (an exporter restarted with another source).
enum class Base { acpi, dcgm, rapl };
struct BaseSpec {
  Base base;
  Family joules;
  std::optional<Family> covered;
  const char* name;
};
constexpr BaseSpec kBases[] = {{Base::acpi, Family::acpi_joules, Family::acpi_covered, "ACPI"},
                               {Base::dcgm, Family::dcgm_joules, std::nullopt, "DCGM"},
                               {Base::rapl, Family::rapl_joules, Family::rapl_covered, "RAPL"}};

std::optional<long long> socket_of(const Labels& labels) {
  const auto id = rails::socket_index(label(labels, "socket"));
  if (!id) return std::nullopt;
  return static_cast<long long>(*id);
}

// The sensor whose self metrics (age, averaging interval) belong to a counter series.
std::string sensor_of(Base base, const Labels& l) {
  if (base == Base::dcgm) {
    return fmt::format("dcgm/cpu{}/{}", label(l, "socket"), label(l, "field_id"));
  }
  return std::string(label(l, "sensor"));
}

// The labels that say which series a series is, without its name: a covered-seconds series
// and its energy series have the same.
Labels identity(const Labels& l) {
  Labels out = l;
  out.erase("__name__");
  return out;
}

// The exporter's per-sensor self metrics from the exporter_self query.
struct SelfMetrics {
  // An age dates the counter samples of the same scrape: by target (job, instance) and sensor.
  std::map<std::tuple<std::string, std::string, std::string>, const Samples*> age;
  std::set<std::pair<std::string, std::string>> interval_known;  // (node, sensor)
  std::map<std::string, std::set<long long>> sockets_up;         // node -> sockets
};

std::tuple<std::string, std::string, std::string> target_sensor(const Labels& l,
                                                                std::string sensor) {
  return {std::string(label(l, "job")), std::string(label(l, "instance")), std::move(sensor)};
}

SelfMetrics self_metrics(const FamilyData& f) {
  SelfMetrics out;
  for (const auto& s : f.series) {
    const auto name = label(s.metric, "__name__");
    const std::string sensor(label(s.metric, "sensor"));
    if (name == kSampleAge) {
      out.age[target_sensor(s.metric, sensor)] = &s.samples;
    } else if (name == kAverageInterval) {
      if (!s.samples.empty()) out.interval_known.emplace(node_of(s.metric), sensor);
    } else if (name == kSocketUp) {
      if (const auto id = socket_of(s.metric)) out.sockets_up[node_of(s.metric)].insert(*id);
    }
  }
  return out;
}

// The mean, percentiles and extremes of `w`, and the largest step between `t`s (ascending).
void describe(const std::vector<double>& w, const std::vector<double>& t, PowerStats& s) {
  if (w.empty()) {
    s.mean_w = s.min_w = s.p5_w = s.p50_w = s.p95_w = s.p99_w = s.max_w = s.avg_power_w;
    return;
  }
  const auto p = report::numpy_percentiles(w);
  s.mean_w = report::numpy_sum(w) / static_cast<double>(w.size());
  s.min_w = p.min;
  s.p5_w = p.p5;
  s.p50_w = p.p50;
  s.p95_w = p.p95;
  s.p99_w = p.p99;
  s.max_w = p.max;
  for (std::size_t i = 1; i < t.size(); ++i) {
    if (t[i] - t[i - 1] > s.largest_gap_s) {
      s.largest_gap_s = t[i] - t[i - 1];
      s.largest_gap_at_unix = t[i - 1];
    }
  }
}

struct CounterIn {
  const RawSeries* joules = nullptr;
  const RawSeries* covered = nullptr;
  const Samples* age = nullptr;  // dates the samples (the exporter's sensors)
  bool interval_known = false;
  double scale = 1;
  std::string label;
};

// One row's outcome, with its power over the whole span fetched (scrape times, for the charts
// and the node sums' statistics).
struct RowOut {
  std::optional<Breakdown> row;
  std::string error;
  std::vector<std::string> warnings;
  std::vector<double> pt, pw;
};

struct Span {
  double start = 0, end = 0, lookback = 0;
  double duration() const { return end - start; }
};

RowOut counter_row(const CounterIn& in, const Span& w) {
  RowOut out;
  const Unwrapped raw = unwrap(in.joules->samples);
  const IntervalRates all = interval_rates(raw, 0, raw.size() ? raw.size() - 1 : 0);
  out.pt = all.mid;
  for (const double rate : all.rate) out.pw.push_back(rate * in.scale);
  const Unwrapped c = in.age ? unwrap(redate(in.joules->samples, *in.age).samples) : raw;
  const auto inc = increase(c, w.start, w.end, w.lookback, series_name(in.joules->metric));
  if (!inc) {
    out.error = in.label + ": " + inc.error();
    return out;
  }
  Breakdown b;
  b.label = in.label;
  PowerStats& s = b.stats;
  s.joules = inc->gain * in.scale;
  s.avg_power_w = s.joules / w.duration();
  s.sample_start_unix = c.t[inc->start.before];
  s.sample_end_unix = c.t[inc->end.after];
  s.samples = inc->end.after - inc->start.before + 1;
  const IntervalRates rates = interval_rates(c, inc->start.before, inc->end.after);
  std::vector<double> rw;
  for (const double rate : rates.rate) rw.push_back(rate * in.scale);
  std::vector<double> times(c.t.begin() + static_cast<std::ptrdiff_t>(inc->start.before),
                            c.t.begin() + static_cast<std::ptrdiff_t>(inc->end.after) + 1);
  describe(rw, times, s);
  s.uncertainty_j = inc->error_bound * in.scale;
  if (inc->resets > 0) {
    out.warnings.push_back(fmt::format(
        "{}: the counter restarted (an exporter restart or a reboot) between {:.3f} and "
        "{:.3f}{}; what it counted there before the restart is lost ({:.1f} s of the window "
        "inside such stretches; the coverage counts them as uncovered)",
        in.label, inc->lost_from, inc->lost_to,
        inc->resets > 1 ? fmt::format(" and {} more times", inc->resets - 1) : "", inc->lost_s));
  }
  if (in.covered && in.interval_known) {
    const Samples cov = in.age ? redate(in.covered->samples, *in.age).samples : in.covered->samples;
    const auto ci =
        increase(unwrap(cov), w.start, w.end, w.lookback, series_name(in.covered->metric));
    if (ci) {
      s.coverage = std::clamp(ci->gain / w.duration(), 0.0, 1.0);
    } else {
      out.warnings.push_back(in.label + ": coverage not stated: " + ci.error());
    }
  }
  out.row = std::move(b);
  return out;
}

// A GPU's power gauge integrated (no energy counter in the store).
RowOut gauge_row(const RawSeries& series, const std::string& row_label, const Span& w) {
  RowOut out;
  out.pt = series.samples.t;
  out.pw = series.samples.v;
  const auto g =
      gauge_integral(series.samples, w.start, w.end, w.lookback, series_name(series.metric));
  if (!g) {
    out.error = row_label + ": " + g.error();
    return out;
  }
  Breakdown b;
  b.label = row_label;
  PowerStats& s = b.stats;
  const auto& t = series.samples.t;
  const auto& v = series.samples.v;
  s.joules = g->joules;
  s.avg_power_w = s.joules / w.duration();
  s.sample_start_unix = t[g->first];
  s.sample_end_unix = t[g->last];
  s.samples = g->last - g->first + 1;
  const auto first = static_cast<std::ptrdiff_t>(g->first);
  const auto last = static_cast<std::ptrdiff_t>(g->last) + 1;
  describe({v.begin() + first, v.begin() + last}, {t.begin() + first, t.begin() + last}, s);
  const report::Series points{t, v};
  s.uncertainty_j =
      report::error_bar(points, g->first, g->last, w.start, w.end, false, {}).uncertainty_j;
  out.row = std::move(b);
  return out;
}

// A node's row from its members' rows: the energies and error bounds added, the lowest
// coverage (unknown when one is), and statistics of the members' power summed where every one
// has a point at the same time (a target's series share each scrape's time).
Breakdown sum_row(const std::string& row_label, const std::vector<const RowOut*>& members,
                  const Span& w) {
  Breakdown b;
  b.label = row_label;
  PowerStats& s = b.stats;
  s.sample_start_unix = INFINITY;
  s.sample_end_unix = -INFINITY;
  bool coverage_known = true;
  double lowest = 1;
  for (const RowOut* m : members) {
    const PowerStats& ms = m->row->stats;
    s.joules += ms.joules;
    s.uncertainty_j += ms.uncertainty_j;
    s.sample_start_unix = std::min(s.sample_start_unix, ms.sample_start_unix);
    s.sample_end_unix = std::max(s.sample_end_unix, ms.sample_end_unix);
    coverage_known = coverage_known && ms.coverage.has_value();
    if (ms.coverage) lowest = std::min(lowest, *ms.coverage);
  }
  if (coverage_known && !members.empty()) s.coverage = lowest;
  s.avg_power_w = s.joules / w.duration();
  std::vector<double> t, sum;
  const RowOut& lead = *members.front();
  for (std::size_t i = 0; i < lead.pt.size(); ++i) {
    const double at = lead.pt[i];
    if (at < s.sample_start_unix || at > s.sample_end_unix) continue;
    double total = lead.pw[i];
    bool all = true;
    for (std::size_t k = 1; k < members.size() && all; ++k) {
      const auto& pt = members[k]->pt;
      const auto j = std::lower_bound(pt.begin(), pt.end(), at);
      all = j != pt.end() && *j == at;
      if (all) total += members[k]->pw[static_cast<std::size_t>(j - pt.begin())];
    }
    if (!all) continue;
    t.push_back(at);
    sum.push_back(total);
  }
  s.samples = t.size();
  describe(sum, t, s);
  return b;
}

// Hostname may be the full name where the run knows its nodes by their short names.
std::string gpu_host(const Labels& l, const std::optional<ExpectedNodes>& expected) {
  std::string host = gpu_node_of(l);
  if (expected && !expected->nodes.contains(host)) {
    const std::string short_name = host.substr(0, host.find('.'));
    if (expected->nodes.contains(short_name)) return short_name;
  }
  return host;
}

std::string join(const std::vector<std::string>& items, std::string_view sep = ", ") {
  std::string out;
  for (const auto& i : items) out += (out.empty() ? "" : std::string(sep)) + i;
  return out;
}

class Builder {
 public:
  Builder(const WindowData& data, const BuildOptions& options, Charts* charts,
          report::WindowReport& r)
      : d_(data),
        o_(options),
        charts_(charts),
        r_(r),
        w_{r.window.start_unix, r.window.end_unix, options.lookback_s},
        self_(self_metrics(data[Family::exporter_self])) {}

  void build() {
    const bool cpu = cpu_rows();
    const bool gpu = gpu_rows();
    if (!cpu && !gpu) {
      fail(
          fmt::format("no energy counters in the store for this window: {}, {}, {} and {} "
                      "returned no series",
                      expr(Family::acpi_joules), expr(Family::dcgm_joules),
                      expr(Family::rapl_joules), expr(Family::gpu_energy)));
    }
    if (!errors_.empty()) {
      r_.error = errors_.front();
      if (errors_.size() > 1)
        r_.error += fmt::format(" (and {} more failures)", errors_.size() - 1);
      return;
    }
    if (cpu) module_rows();
    if (!cpu) {
      warnings_.push_back(fmt::format(
          "CPU: no energy counters in the store for this window ({}, {} and {} returned no "
          "series); cpu_total_joules is 0 and leaves the CPUs out",
          expr(Family::acpi_joules), expr(Family::dcgm_joules), expr(Family::rapl_joules)));
    }
    if (!gpu) {
      warnings_.push_back(fmt::format(
          "GPU: no GPU energy or power in the store for this window ({}{} returned no series); "
          "gpu_total_joules is 0 and leaves the GPUs out",
          expr(Family::gpu_energy),
          d_[Family::gpu_power].queried ? " and " + expr(Family::gpu_power) : ""));
    }
    r_.cpu_total_joules = sum(r_.cpu_per_node);
    r_.gpu_total_joules = sum(r_.gpu_per_node);
    report::derive_figures(static_cast<long long>(r_.gpu_per_device.size()), r_);
    report::total_error_bars(r_);
    node_power();
    r_.warnings = std::move(warnings_);
    report::cpu_scope_warnings(cpu_view_, r_);
    unknown_coverage_warnings();
    r_.warnings.insert(r_.warnings.end(), d_.store_warnings.begin(), d_.store_warnings.end());
    r_.warnings.insert(r_.warnings.end(), r_.window.warnings.begin(), r_.window.warnings.end());
  }

 private:
  const WindowData& d_;
  const BuildOptions& o_;
  Charts* charts_;
  report::WindowReport& r_;
  Span w_;
  SelfMetrics self_;
  std::vector<std::string> errors_, warnings_;
  report::CpuData cpu_view_;  // the sockets' boundaries, for cpu_scope_warnings
  // Each node's sockets (node_rows), for the comparison between nodes.
  std::vector<std::pair<std::string, std::vector<long long>>> node_sockets_;
  // Per node: each rail's power summed over the node's sockets (node_power).
  std::map<std::string, std::vector<std::pair<std::string, double>>> rails_w_;

  std::string expr(Family f) const { return d_[f].expr; }
  void fail(std::string why) { errors_.push_back(std::move(why)); }

  static double sum(const std::vector<Breakdown>& rows) {
    double total = 0;
    for (const auto& row : rows) total += row.stats.joules;
    return total;
  }

  void chart(Charts::Kind kind, const std::string& host, long long index, const RowOut& out) {
    if (charts_) charts_->add(kind, host, index, out.pt, out.pw);
  }

  // The covered-seconds series of each energy series, by identity.
  std::map<Labels, const RawSeries*> by_identity(const std::vector<RawSeries>& series) const {
    std::map<Labels, const RawSeries*> out;
    for (const auto& s : series) out.emplace(identity(s.metric), &s);
    return out;
  }

  // The series of one socket: the first by name, the rest said and listed.
  const RawSeries* pick(std::vector<const RawSeries*>& candidates, const std::string& row_label,
                        std::vector<std::string>* others) {
    std::sort(candidates.begin(), candidates.end(), [](const RawSeries* a, const RawSeries* b) {
      return series_name(a->metric) < series_name(b->metric);
    });
    for (std::size_t i = 1; i < candidates.size(); ++i) {
      others->push_back(series_name(candidates[i]->metric));
    }
    if (!others->empty()) {
      warnings_.push_back(fmt::format("{}: {} series in the store ({}); the first is used",
                                      row_label, candidates.size(),
                                      series_name(candidates[0]->metric) + ", " + join(*others)));
    }
    return candidates.front();
  }

  // Returns whether the store holds CPU energy counters of any node.
  bool cpu_rows() {
    // Each node's source: the first of ACPI, DCGM, RAPL with a socket total for it.
    std::map<std::string, const BaseSpec*> base_of;
    std::map<std::string, std::set<std::string>> also;
    for (const auto& spec : kBases) {
      for (const auto& s : d_[spec.joules].series) {
        if (spec.base == Base::acpi && label(s.metric, "type") != "total") continue;
        const auto [it, added] = base_of.emplace(node_of(s.metric), &spec);
        if (!added && it->second != &spec) also[it->first].insert(spec.name);
      }
    }
    for (const auto& [node, names] : also) {
      warnings_.push_back(fmt::format(
          "cpu/{}: the store holds {} energy counters of this node beside {} ones in this "
          "window (an exporter restarted with another source?); the {} ones are used",
          node, join({names.begin(), names.end()}, " and "), base_of[node]->name,
          base_of[node]->name));
    }
    if (o_.expected) {
      for (const auto& node : o_.expected->nodes) {
        if (base_of.contains(node)) continue;
        warnings_.push_back(fmt::format(
            "cpu/{}: expected by {} but the store has no energy counters of it for this "
            "window; cpu_total_joules leaves this node out",
            node, o_.expected->source));
      }
    }
    for (const auto& [node, sockets] : self_.sockets_up) {
      if (base_of.contains(node) || (o_.expected && o_.expected->nodes.contains(node))) continue;
      warnings_.push_back(fmt::format(
          "cpu/{}: its exporter is in the store ({}) but serves no energy counters (an exporter "
          "older than them?); cpu_total_joules leaves this node out",
          node, kSocketUp));
    }
    for (const auto& [node, spec] : base_of) node_rows(node, *spec);
    for (auto& w : report::uneven_socket_warnings(node_sockets_)) warnings_.push_back(std::move(w));
    return !base_of.empty();
  }

  void node_rows(const std::string& node, const BaseSpec& spec) {
    std::map<long long, std::vector<const RawSeries*>> sockets;
    std::map<std::pair<long long, std::string>, std::vector<const RawSeries*>> rails;
    for (const auto& s : d_[spec.joules].series) {
      if (node_of(s.metric) != node) continue;
      const auto id = socket_of(s.metric);
      const auto type = label(s.metric, "type");
      if (!id) {
        if (spec.base != Base::acpi || type == "total") {
          warnings_.push_back(fmt::format("{}: no socket number; left out", series_name(s.metric)));
        }
        continue;
      }
      if (spec.base == Base::acpi && type != "total") {
        rails[{*id, std::string(type)}].push_back(&s);
      } else {
        sockets[*id].push_back(&s);
      }
    }
    // The node's sockets: those with a counter, those its exporter found (socket_up) and
    // those the run's manifest expects.
    std::set<long long> expected;
    for (const auto& [id, list] : sockets) expected.insert(id);
    if (const auto up = self_.sockets_up.find(node); up != self_.sockets_up.end()) {
      expected.insert(up->second.begin(), up->second.end());
    }
    if (o_.expected) {
      if (const auto x = o_.expected->sockets.find(node); x != o_.expected->sockets.end()) {
        expected.insert(x->second.begin(), x->second.end());
      }
    }
    node_sockets_.emplace_back(node, std::vector<long long>(expected.begin(), expected.end()));
    const std::map<Labels, const RawSeries*> covered =
        spec.covered ? by_identity(d_[*spec.covered].series) : std::map<Labels, const RawSeries*>{};
    std::vector<RowOut> outs;
    outs.reserve(expected.size());
    std::vector<std::string> missing;
    bool socket_failed = false;
    for (const long long id : expected) {
      const std::string row_label = fmt::format("cpu/{}/socket{}", node, id);
      report::CpuSocket view;
      view.host = node;
      view.socket = id;
      view.dcgm = spec.base == Base::dcgm;
      view.rapl = spec.base == Base::rapl;
      cpu_view_.sockets.push_back(view);
      const auto found = sockets.find(id);
      if (found == sockets.end()) {
        missing.push_back(row_label);
        continue;
      }
      report::SensorInfo info;
      info.label = row_label;
      const auto index = static_cast<std::uint32_t>(id);
      info.sensor = spec.base == Base::dcgm   ? rails::dcgm_sensor_name(index)
                    : spec.base == Base::rapl ? rails::rapl_sensor_name(index)
                                              : rails::acpi_sensor_name(rails::Kind::total, index);
      const RawSeries* series = pick(found->second, row_label, &info.other_sensors);
      r_.cpu_sensors.push_back(std::move(info));
      CounterIn in;
      in.joules = series;
      in.label = row_label;
      const std::string sensor = sensor_of(spec.base, series->metric);
      if (const auto c = covered.find(identity(series->metric)); c != covered.end()) {
        in.covered = c->second;
      }
      if (const auto a = self_.age.find(target_sensor(series->metric, sensor));
          a != self_.age.end()) {
        in.age = a->second;
      }
      in.interval_known = self_.interval_known.contains({node, sensor});
      RowOut out = counter_row(in, w_);
      warnings_.insert(warnings_.end(), out.warnings.begin(), out.warnings.end());
      chart(Charts::Kind::cpu, node, id, out);
      if (!out.row) {
        fail(out.error);
        socket_failed = true;
        continue;
      }
      r_.cpu_per_socket.push_back(*out.row);
      outs.push_back(std::move(out));
    }
    if (!missing.empty()) {
      for (const auto& m : missing) {
        warnings_.push_back(fmt::format(
            "{}: no {} series in the store for this window while the node's other sockets "
            "have them",
            m, spec.name));
      }
      fail(
          fmt::format("cpu/{}: no node total: {} {} no energy counter in the store for this "
                      "window ({}), and a node total without {} would not be the node's",
                      node, join(missing), missing.size() > 1 ? "have" : "has", expr(spec.joules),
                      missing.size() > 1 ? "them" : "it"));
      return;
    }
    if (socket_failed || outs.empty()) return;
    std::vector<const RowOut*> members;
    for (const auto& o : outs) members.push_back(&o);
    r_.cpu_per_node.push_back(sum_row("cpu/" + node, members, w_));
    rail_power(node, rails);
  }

  // The node's rails (ACPI cpu_rail, soc, dram) as average power over the window, for
  // node_power; a rail whose counter does not cover the window is left out.
  void rail_power(
      const std::string& node,
      std::map<std::pair<long long, std::string>, std::vector<const RawSeries*>>& rails) {
    for (const char* rail : {"cpu_rail", "soc", "dram"}) {
      double watts = 0;
      bool any = false;
      for (auto& [key, list] : rails) {
        if (key.second != rail) continue;
        std::sort(list.begin(), list.end(), [](const RawSeries* a, const RawSeries* b) {
          return series_name(a->metric) < series_name(b->metric);
        });
        CounterIn in;
        in.joules = list.front();
        in.label = "rail";
        const std::string sensor = sensor_of(Base::acpi, in.joules->metric);
        if (const auto a = self_.age.find(target_sensor(in.joules->metric, sensor));
            a != self_.age.end()) {
          in.age = a->second;
        }
        const RowOut out = counter_row(in, w_);
        if (!out.row) continue;
        watts += out.row->stats.avg_power_w;
        any = true;
      }
      if (any) rails_w_[node].emplace_back(rail, watts);
    }
  }

  // Superchip module rows (NVML): reported apart, never added; a failure only warns.
  void module_rows() {
    const std::vector<RawSeries> joules = merge_ignoring(d_[Family::nvml_joules].series, "gpus");
    const std::vector<RawSeries> covered_all =
        merge_ignoring(d_[Family::nvml_covered].series, "gpus");
    const auto covered = by_identity(covered_all);
    std::map<std::string, std::map<long long, std::vector<const RawSeries*>>> by_node;
    for (const auto& s : joules) {
      const auto id = socket_of(s.metric);
      if (id) by_node[node_of(s.metric)][*id].push_back(&s);
    }
    for (auto& [node, sockets] : by_node) {
      std::vector<RowOut> outs;
      std::vector<std::string> failed;
      for (auto& [id, list] : sockets) {
        const std::string row_label = fmt::format("cpu/{}/socket{}/module", node, id);
        std::vector<std::string> others;
        CounterIn in;
        in.joules = pick(list, row_label, &others);
        in.label = row_label;
        if (const auto c = covered.find(identity(in.joules->metric)); c != covered.end()) {
          in.covered = c->second;
        }
        in.interval_known = self_.interval_known.contains({node, fmt::format("nvml/socket{}", id)});
        RowOut out = counter_row(in, w_);
        warnings_.insert(warnings_.end(), out.warnings.begin(), out.warnings.end());
        chart(Charts::Kind::module, node, id, out);
        if (!out.row) {
          warnings_.push_back("module_w: " + out.error);
          failed.push_back(row_label);
          continue;
        }
        r_.module_per_socket.push_back(*out.row);
        outs.push_back(std::move(out));
      }
      if (!failed.empty()) {
        warnings_.push_back(
            fmt::format("module_w: module/{}: no node figure, {} {} not cover the window", node,
                        join(failed), failed.size() > 1 ? "do" : "does"));
        continue;
      }
      std::vector<const RowOut*> members;
      for (const auto& o : outs) members.push_back(&o);
      r_.module_per_node.push_back(sum_row("module/" + node, members, w_));
    }
    if (!r_.module_per_node.empty()) r_.module_total_joules = sum(r_.module_per_node);
  }

  // Returns whether the store holds GPU energy or power of any device.
  bool gpu_rows() {
    const bool counters = !d_[Family::gpu_energy].series.empty();
    const auto& series = d_[counters ? Family::gpu_energy : Family::gpu_power].series;
    std::map<std::string, std::map<long long, std::vector<const RawSeries*>>> by_node;
    for (const auto& s : series) {
      const auto index = rails::socket_index(label(s.metric, "gpu"));
      if (!index) {
        warnings_.push_back(fmt::format("{}: no gpu index; left out", series_name(s.metric)));
        continue;
      }
      by_node[gpu_host(s.metric, o_.expected)][*index].push_back(&s);
    }
    if (by_node.empty()) return false;
    if (!counters) {
      std::vector<std::string> spacing;
      for (auto& [node, devices] : by_node) {
        for (auto& [index, list] : devices) {
          spacing.push_back(fmt::format("{:.3g}", median_spacing(list.front()->samples.t)));
        }
      }
      std::sort(spacing.begin(), spacing.end());
      spacing.erase(std::unique(spacing.begin(), spacing.end()), spacing.end());
      warnings_.push_back(fmt::format(
          "GPU energy from the power gauge: the store has no DCGM_FI_DEV_TOTAL_ENERGY_"
          "CONSUMPTION ({} returned no series), so each GPU's energy is the trapezoid over "
          "the scrapes of {} (median scrape interval {} s): power changes between scrapes are "
          "not seen",
          expr(Family::gpu_energy), expr(Family::gpu_power), join(spacing, " / ")));
    }
    for (auto& [node, devices] : by_node) {
      std::vector<RowOut> outs;
      bool failed = false;
      for (auto& [index, list] : devices) {
        const std::string row_label = fmt::format("gpu/{}/gpu{}", node, index);
        std::vector<std::string> others;
        const RawSeries* s = pick(list, row_label, &others);
        RowOut out;
        if (counters) {
          CounterIn in;
          in.joules = s;
          in.scale = kMilli;
          in.label = row_label;
          out = counter_row(in, w_);
        } else {
          out = gauge_row(*s, row_label, w_);
        }
        warnings_.insert(warnings_.end(), out.warnings.begin(), out.warnings.end());
        chart(Charts::Kind::gpu, node, index, out);
        if (!out.row) {
          fail(out.error);
          failed = true;
          continue;
        }
        r_.gpu_per_device.push_back(*out.row);
        outs.push_back(std::move(out));
      }
      if (failed || outs.empty()) continue;
      std::vector<const RowOut*> members;
      for (const auto& o : outs) members.push_back(&o);
      r_.gpu_per_node.push_back(sum_row("gpu/" + node, members, w_));
    }
    return true;
  }

  void node_power() {
    std::map<std::string, report::NodePower> hosts;
    for (const auto& row : r_.cpu_per_node)
      hosts[row.label.substr(4)].cpu_w = row.stats.avg_power_w;
    for (const auto& row : r_.gpu_per_node)
      hosts[row.label.substr(4)].gpu_w = row.stats.avg_power_w;
    for (auto& [host, np] : hosts) {
      np.host = host;
      const std::string cpu_prefix = "cpu/" + host + "/", gpu_prefix = "gpu/" + host + "/";
      for (const auto& row : r_.cpu_per_socket)
        np.socket_count += row.label.starts_with(cpu_prefix);
      for (const auto& row : r_.gpu_per_device) np.gpu_count += row.label.starts_with(gpu_prefix);
      if (const auto rails = rails_w_.find(host); rails != rails_w_.end()) {
        np.cpu_rails_w = rails->second;
      }
      r_.node_power.push_back(std::move(np));
    }
  }

  void unknown_coverage_warnings() {
    std::string unknown;
    for (const auto& row : r_.cpu_per_node) {
      if (!row.stats.coverage) unknown += (unknown.empty() ? "" : ", ") + row.label;
    }
    if (!unknown.empty()) {
      r_.warnings.push_back(
          "CPU power: the store has no averaging interval (cpu_power_exporter_average_interval_"
          "seconds) or no covered-seconds counter for the sensors of " +
          unknown + " (a DCGM source, or a meter without an interval); coverage is not stated");
    }
    if (!r_.gpu_per_node.empty()) {
      r_.warnings.push_back(
          "GPU power: dcgm-exporter publishes no averaging interval; the GPU rows' coverage is "
          "not stated");
    }
  }
};

}  // namespace

void Charts::add(Kind kind, const std::string& host, long long index, const std::vector<double>& t,
                 const std::vector<double>& w) {
  auto& series = (kind == Kind::cpu ? cpu_ : kind == Kind::module ? module_ : gpu_)[{host, index}];
  for (std::size_t i = 0; i < t.size() && i < w.size(); ++i) series.emplace(t[i], w[i]);
}

namespace {

report::Track track_of(const std::map<double, double>& points) {
  std::vector<double> t, v;
  for (const auto& [at, w] : points) {
    t.push_back(at);
    v.push_back(w);
  }
  return report::make_track(std::move(t), std::move(v));
}

// The sum of a host's series where every one of them has a point at the same time.
report::Track node_sum(const std::vector<const std::map<double, double>*>& members) {
  std::map<double, double> out;
  for (const auto& [at, w] : *members.front()) {
    double total = w;
    bool all = true;
    for (std::size_t k = 1; k < members.size() && all; ++k) {
      const auto it = members[k]->find(at);
      all = it != members[k]->end();
      if (all) total += it->second;
    }
    if (all) out.emplace(at, total);
  }
  return track_of(out);
}

}  // namespace

void Charts::fill(report::RunData& data) const {
  if (!cpu_.empty() || !module_.empty()) {
    report::CpuData& cpu = data.cpu.emplace();
    cpu.layout = "metrics store";
    std::set<Key> keys;
    for (const auto& [key, points] : cpu_) keys.insert(key);
    for (const auto& [key, points] : module_) keys.insert(key);
    for (const auto& key : keys) {
      report::CpuSocket s;
      s.host = key.first;
      s.socket = key.second;
      if (const auto p = cpu_.find(key); p != cpu_.end()) s.power = track_of(p->second);
      if (const auto m = module_.find(key); m != module_.end()) s.module = track_of(m->second);
      cpu.sockets.push_back(std::move(s));
      if (cpu.hosts.empty() || cpu.hosts.back() != key.first) cpu.hosts.push_back(key.first);
    }
    std::map<std::string, std::vector<const std::map<double, double>*>> by_host;
    for (const auto& [key, points] : cpu_) by_host[key.first].push_back(&points);
    for (const auto& [host, members] : by_host) {
      report::Track total = node_sum(members);
      if (total.size() > 0) cpu.nodes.push_back({host, std::move(total)});
    }
  }
  if (!gpu_.empty()) {
    report::GpuData& gpu = data.gpu.emplace();
    std::map<std::string, std::vector<const std::map<double, double>*>> by_host;
    for (const auto& [key, points] : gpu_) {
      report::GpuDevice d;
      d.host = key.first;
      d.index = key.second;
      d.power = track_of(points);
      gpu.devices.push_back(std::move(d));
      by_host[key.first].push_back(&points);
    }
    for (const auto& [host, members] : by_host) {
      report::GpuSum n;
      n.host = host;
      n.power = node_sum(members);
      if (n.power.size() > 0) gpu.nodes.push_back(std::move(n));
    }
  }
  report::build_module_nodes(data);
}

report::WindowReport build_window(const report::Window& window, const WindowData& data,
                                  const BuildOptions& options, Charts* charts) {
  report::WindowReport r;
  r.window = window;
  r.edges = report::Edges::interpolate;
  r.energy_source = report::EnergySource{"prometheus", options.store_url};
  if (!window.error.empty()) {
    r.error = window.error;
    return r;
  }
  if (!(window.end_unix > window.start_unix)) {
    r.error = fmt::format("the window ends ({:.3f}) before it starts ({:.3f})", window.end_unix,
                          window.start_unix);
    return r;
  }
  Builder(data, options, charts, r).build();
  if (!r.error.empty()) {
    // A failed window carries only its identity and its error, as on the samples-file path.
    report::WindowReport failed;
    failed.window = window;
    failed.edges = r.edges;
    failed.error = std::move(r.error);
    failed.energy_source = r.energy_source;
    return failed;
  }
  return r;
}

}  // namespace cpupower::store
