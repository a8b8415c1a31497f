#include <cmath>

#include "report/parallel.hpp"
#include "report/render.hpp"

namespace cpupower::report {
namespace {

Json opt(const std::optional<double>& v) {
  return v ? Json(*v) : Json(nullptr);
}

Json breakdown(const Breakdown& b) {
  const PowerStats& s = b.stats;
  Json j = Json::object();
  j["label"] = b.label;
  j["joules"] = s.joules;
  j["avg_power_w"] = s.avg_power_w;
  j["sample_start_unix"] = s.sample_start_unix;
  j["sample_end_unix"] = s.sample_end_unix;
  j["samples"] = s.samples;
  j["mean_w"] = s.mean_w;
  j["min_w"] = s.min_w;
  j["p5_w"] = s.p5_w;
  j["p50_w"] = s.p50_w;
  j["p95_w"] = s.p95_w;
  j["p99_w"] = s.p99_w;
  j["max_w"] = s.max_w;
  return j;
}

Json breakdowns(const std::vector<Breakdown>& rows) {
  Json j = Json::array();
  for (const auto& row : rows) j.push_back(breakdown(row));
  return j;
}

Json utilization(const std::vector<UtilRow>& rows) {
  Json j = Json::array();
  for (const auto& r : rows) {
    Json u = Json::object();
    u["label"] = r.label;
    u["column"] = r.column;
    u["mean"] = r.mean;
    u["max"] = r.max;
    u["samples"] = r.samples;
    j.push_back(u);
  }
  return j;
}

Json node_power(const std::vector<NodePower>& nodes) {
  Json j = Json::array();
  for (const auto& n : nodes) {
    Json e = Json::object();
    e["hostname"] = n.host;
    e["gpu_w"] = opt(n.gpu_w);
    e["cpu_w"] = opt(n.cpu_w);
    Json rails = Json::object();
    for (const auto& [name, w] : n.cpu_rails_w) rails[name] = w;
    e["cpu_rails_w"] = rails;
    e["gpu_count"] = n.gpu_count;
    e["socket_count"] = n.socket_count;
    e["roles"] = n.roles;
    j.push_back(e);
  }
  return j;
}

Json timing(const WindowReport& r) {
  const Window& w = r.window;
  Json computed = Json::object();
  computed["start_unix"] = w.start_json;
  computed["end_unix"] = w.end_json;
  const bool ints = w.start_json.is_number_integer() && w.end_json.is_number_integer();
  computed["duration_seconds"] =
      ints ? Json(w.end_json.get<long long>() - w.start_json.get<long long>())
           : Json(w.duration_s());
  Json reported = Json::object();
  reported["source"] = w.reported.source;
  reported["start_unix"] = opt(w.reported.start_unix);
  reported["end_unix"] = opt(w.reported.end_unix);
  reported["duration_seconds"] = opt(w.reported.duration_seconds);
  reported["note"] = w.reported.note ? Json(*w.reported.note) : Json(nullptr);
  Json coverage = Json::object();
  const auto& c = r.coverage;
  coverage["sample_start_unix"] = c ? Json(c->start_unix) : Json(nullptr);
  coverage["sample_end_unix"] = c ? Json(c->end_unix) : Json(nullptr);
  coverage["duration_seconds"] = c ? Json(c->end_unix - c->start_unix) : Json(nullptr);
  Json t = Json::object();
  t["computed"] = computed;
  t["reported"] = reported;
  t["coverage"] = coverage;
  return t;
}

Json perf(const PerfPerWatt& p) {
  Json j = Json::object();
  j["output_tokens_per_second"] = opt(p.output_tps);
  j["total_tokens_per_second"] = opt(p.total_tps);
  j["num_gpus"] = p.num_gpus;
  j["output_tokens_per_second_per_gpu"] = opt(p.output_tps_per_gpu);
  j["gpu_avg_power_w"] = opt(p.gpu_w);
  j["cpu_avg_power_w"] = opt(p.cpu_w);
  j["combined_avg_power_w"] = opt(p.combined_w);
  j["output_tokens_per_second_per_gpu_watt"] = opt(p.o_gpu);
  j["output_tokens_per_second_per_cpu_watt"] = opt(p.o_cpu);
  j["output_tokens_per_second_per_combined_watt"] = opt(p.o_comb);
  j["total_tokens_per_second_per_gpu_watt"] = opt(p.t_gpu);
  j["total_tokens_per_second_per_cpu_watt"] = opt(p.t_cpu);
  j["total_tokens_per_second_per_combined_watt"] = opt(p.t_comb);
  return j;
}

Json identity(const Window& w) {
  Json j = Json::object();
  j["benchmark_type"] = w.benchmark_type;
  j["source"] = w.source;
  j["concurrency"] = w.concurrency ? Json(*w.concurrency) : Json(nullptr);
  return j;
}

}  // namespace

Json window_json(const WindowReport& r) {
  const Window& w = r.window;
  Json j = identity(w);
  if (!r.error.empty()) {
    j["error"] = r.error;
    j["edges"] = std::string(edges_name(r.edges));
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
  j["cpu_per_socket"] = breakdowns(r.cpu_per_socket);
  j["cpu_per_node"] = breakdowns(r.cpu_per_node);
  j["cpu_total_joules"] = r.cpu_total_joules;
  j["node_power"] = node_power(r.node_power);
  Json sensors = Json::array();
  for (const auto& s : r.cpu_sensors) {
    sensors.push_back(
        Json{{"label", s.label}, {"sensor", s.sensor}, {"other_sensors", s.other_sensors}});
  }
  j["cpu_sensors"] = sensors;
  j["gpu_per_device"] = breakdowns(r.gpu_per_device);
  j["gpu_per_role"] = breakdowns(r.gpu_per_role);
  j["gpu_per_node"] = breakdowns(r.gpu_per_node);
  j["gpu_total_joules"] = r.gpu_total_joules;
  const bool int_zero =
      r.cpu_total_joules.is_number_integer() && r.gpu_total_joules.is_number_integer();
  j["combined_total_joules"] = int_zero ? Json(0) : Json(r.combined_total_joules);
  j["joules_per_output_token"] = opt(r.joules_per_output_token);
  j["joules_per_total_token"] = opt(r.joules_per_total_token);
  j["timing"] = timing(r);
  j["perf_per_watt"] = perf(r.perf);
  j["cpu_utilization"] = utilization(r.cpu_utilization);
  j["gpu_utilization"] = utilization(r.gpu_utilization);
  j["warnings"] = r.warnings;
  // Additions, after every established key, so that existing consumers read those unchanged.
  j["edges"] = std::string(edges_name(r.edges));
  j["module_per_socket"] = breakdowns(r.module_per_socket);
  j["module_per_node"] = breakdowns(r.module_per_node);
  for (const WindowFigure& f : kWindowFigures) j[std::string(f.key)] = opt(r.*f.value);
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
