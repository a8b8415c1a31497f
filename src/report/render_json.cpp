#include <cmath>

#include "report/parallel.hpp"
#include "report/render.hpp"

namespace cpupower::report {
namespace {

template <class T>
Json opt(const std::optional<T>& v) {
  return v ? Json(*v) : Json(nullptr);
}

// A JSON list of to_json(item) for every item.
template <class T, class F>
Json list(const std::vector<T>& items, F to_json) {
  Json j = Json::array();
  for (const auto& item : items) j.push_back(to_json(item));
  return j;
}

Json breakdown(const Breakdown& b) {
  const PowerStats& s = b.stats;
  return {{"label", b.label},
          {"joules", s.joules},
          {"avg_power_w", s.avg_power_w},
          {"sample_start_unix", s.sample_start_unix},
          {"sample_end_unix", s.sample_end_unix},
          {"samples", s.samples},
          {"mean_w", s.mean_w},
          {"min_w", s.min_w},
          {"p5_w", s.p5_w},
          {"p50_w", s.p50_w},
          {"p95_w", s.p95_w},
          {"p99_w", s.p99_w},
          {"max_w", s.max_w},
          {"coverage", opt(s.coverage)},
          {"uncertainty_j", s.uncertainty_j},
          {"uncertainty_pct", opt(uncertainty_pct(s.uncertainty_j, s.joules))}};
}

Json total_error(const TotalError& e, double joules) {
  return {{"uncertainty_j", e.uncertainty_j},
          {"uncertainty_pct", opt(uncertainty_pct(e.uncertainty_j, joules))},
          {"coverage", opt(e.coverage)}};
}

Json per_token_error(const std::optional<double>& u, const std::optional<double>& value) {
  if (!u || !value) return nullptr;
  return {{"uncertainty", *u}, {"uncertainty_pct", opt(uncertainty_pct(*u, *value))}};
}

// The window's error bars: the totals', the per-token figures' and perf/W's (whose relative
// uncertainty is the combined energy's: the token counts are exact).
Json uncertainty(const WindowReport& r) {
  const double cpu = r.cpu_total_joules.get<double>();
  const double gpu = r.gpu_total_joules.get<double>();
  return {{"cpu_total", total_error(r.cpu_total_error, cpu)},
          {"gpu_total", total_error(r.gpu_total_error, gpu)},
          {"combined_total", total_error(r.combined_total_error, r.combined_total_joules)},
          {"module_total", r.module_total_error && r.module_total_joules
                               ? total_error(*r.module_total_error, *r.module_total_joules)
                               : Json(nullptr)},
          {"joules_per_output_token",
           per_token_error(r.joules_per_output_token_uncertainty, r.joules_per_output_token)},
          {"joules_per_total_token",
           per_token_error(r.joules_per_total_token_uncertainty, r.joules_per_total_token)},
          {"perf_per_watt_pct",
           opt(uncertainty_pct(r.combined_total_error.uncertainty_j, r.combined_total_joules))}};
}

Json utilization(const UtilRow& r) {
  return {{"label", r.label},
          {"column", r.column},
          {"mean", r.mean},
          {"max", r.max},
          {"samples", r.samples}};
}

Json node_power(const NodePower& n) {
  Json rails = Json::object();
  for (const auto& [name, w] : n.cpu_rails_w) rails[name] = w;
  return {{"hostname", n.host},   {"gpu_w", opt(n.gpu_w)},    {"cpu_w", opt(n.cpu_w)},
          {"cpu_rails_w", rails}, {"gpu_count", n.gpu_count}, {"socket_count", n.socket_count},
          {"roles", n.roles}};
}

Json timing(const WindowReport& r) {
  const Window& w = r.window;
  const ReportedTiming& rep = w.reported;
  const auto& c = r.coverage;
  const bool ints = w.start_json.is_number_integer() && w.end_json.is_number_integer();
  return {{"computed",
           {{"start_unix", w.start_json},
            {"end_unix", w.end_json},
            {"duration_seconds",
             ints ? Json(w.end_json.get<long long>() - w.start_json.get<long long>())
                  : Json(w.duration_s())}}},
          {"reported",
           {{"source", rep.source},
            {"start_unix", opt(rep.start_unix)},
            {"end_unix", opt(rep.end_unix)},
            {"duration_seconds", opt(rep.duration_seconds)},
            {"note", opt(rep.note)}}},
          {"coverage",
           {{"sample_start_unix", c ? Json(c->start_unix) : Json(nullptr)},
            {"sample_end_unix", c ? Json(c->end_unix) : Json(nullptr)},
            {"duration_seconds", c ? Json(c->end_unix - c->start_unix) : Json(nullptr)}}}};
}

Json perf(const PerfPerWatt& p) {
  return {{"output_tokens_per_second", opt(p.output_tps)},
          {"total_tokens_per_second", opt(p.total_tps)},
          {"num_gpus", p.num_gpus},
          {"output_tokens_per_second_per_gpu", opt(p.output_tps_per_gpu)},
          {"gpu_avg_power_w", opt(p.gpu_w)},
          {"cpu_avg_power_w", opt(p.cpu_w)},
          {"combined_avg_power_w", opt(p.combined_w)},
          {"output_tokens_per_second_per_gpu_watt", opt(p.o_gpu)},
          {"output_tokens_per_second_per_cpu_watt", opt(p.o_cpu)},
          {"output_tokens_per_second_per_combined_watt", opt(p.o_comb)},
          {"total_tokens_per_second_per_gpu_watt", opt(p.t_gpu)},
          {"total_tokens_per_second_per_cpu_watt", opt(p.t_cpu)},
          {"total_tokens_per_second_per_combined_watt", opt(p.t_comb)}};
}

// Where the energy came from, when not the run's samples files (a metrics store).
void energy_source(const WindowReport& r, Json& j) {
  if (!r.energy_source) return;
  j["energy_source"] = r.energy_source->kind;
  j["store_url"] = r.energy_source->url;
}

}  // namespace

Json window_json(const WindowReport& r) {
  const Window& w = r.window;
  Json j{{"benchmark_type", w.benchmark_type},
         {"source", w.source},
         {"concurrency", opt(w.concurrency)}};
  if (!r.error.empty()) {
    j["error"] = r.error;
    j["edges"] = std::string(edges_name(r.edges));
    energy_source(r, j);
    return j;
  }
  j["start_unix"] = w.start_json;
  j["end_unix"] = w.end_json;
  j["output_tokens"] = w.output_tokens_json;
  j["input_tokens"] = w.input_tokens_json;
  j["tpot_p50_ms"] = opt(w.tpot_p50_ms);
  j["tpot_p90_ms"] = opt(w.tpot_p90_ms);
  j["warmup_start_unix"] = opt(w.warmup_start_unix);
  j["warmup_end_unix"] = opt(w.warmup_end_unix);
  j["drain_end_unix"] = opt(w.drain_end_unix);
  j["cpu_per_socket"] = list(r.cpu_per_socket, breakdown);
  j["cpu_per_node"] = list(r.cpu_per_node, breakdown);
  j["cpu_total_joules"] = r.cpu_total_joules;
  j["node_power"] = list(r.node_power, node_power);
  j["cpu_sensors"] = list(r.cpu_sensors, [](const SensorInfo& s) {
    return Json{{"label", s.label}, {"sensor", s.sensor}, {"other_sensors", s.other_sensors}};
  });
  j["gpu_per_device"] = list(r.gpu_per_device, breakdown);
  j["gpu_per_role"] = list(r.gpu_per_role, breakdown);
  j["gpu_per_node"] = list(r.gpu_per_node, breakdown);
  j["gpu_total_joules"] = r.gpu_total_joules;
  const bool int_zero =
      r.cpu_total_joules.is_number_integer() && r.gpu_total_joules.is_number_integer();
  j["combined_total_joules"] = int_zero ? Json(0) : Json(r.combined_total_joules);
  j["joules_per_output_token"] = opt(r.joules_per_output_token);
  j["joules_per_total_token"] = opt(r.joules_per_total_token);
  j["timing"] = timing(r);
  j["perf_per_watt"] = perf(r.perf);
  j["cpu_utilization"] = list(r.cpu_utilization, utilization);
  j["gpu_utilization"] = list(r.gpu_utilization, utilization);
  j["warnings"] = r.warnings;
  // Additions, after every established key, so that existing consumers read those unchanged.
  j["edges"] = std::string(edges_name(r.edges));
  j["module_per_socket"] = list(r.module_per_socket, breakdown);
  j["module_per_node"] = list(r.module_per_node, breakdown);
  for (const WindowFigure& f : kWindowFigures) j[std::string(f.key)] = opt(r.*f.value);
  j["uncertainty"] = uncertainty(r);
  energy_source(r, j);
  return j;
}

std::string render_json(const std::vector<WindowReport>& reports) {
  if (reports.empty()) return "[]\n";
  // What dump(2) of the whole list writes, built window by window on every core: each
  // window's own dump, its lines indented by one level, between "[" and "]" (a JSON string
  // never holds a raw line break, so every line break is one of the layout's).
  std::vector<std::string> parts(reports.size());
  parallel_for(reports.size(), default_threads(), [&](std::size_t i) {
    const std::string dumped =
        window_json(reports[i]).dump(2, ' ', true, Json::error_handler_t::replace);
    // Built locally: the neighbouring slots are another thread's, and a
    // string's size field changes with every character.
    std::string out;
    out.reserve(dumped.size() + dumped.size() / 8);
    out += "  ";
    for (const char c : dumped) {
      out += c;
      if (c == '\n') out += "  ";
    }
    parts[i] = std::move(out);
  });
  std::size_t size = 4;
  for (const auto& p : parts) size += p.size() + 2;
  std::string out;
  out.reserve(size);
  out += "[\n";
  for (std::size_t i = 0; i < parts.size(); ++i) {
    out += parts[i];
    out += i + 1 < parts.size() ? ",\n" : "\n";
  }
  out += "]\n";
  return out;
}

}  // namespace cpupower::report
