// Per-token and per-watt figures and the sample coverage of one window. Every rate and
// average divides by the computed window's duration, never by the sampled span.

#include "report/window_report.hpp"

namespace cpupower::report {
namespace {

std::optional<double> ratio(const std::optional<double>& rate, const std::optional<double>& watts) {
  if (!rate || !watts || *watts == 0) return std::nullopt;
  return *rate / *watts;
}

void coverage(WindowReport& r) {
  std::optional<Coverage> c;
  for (const auto* rows : {&r.cpu_per_node, &r.gpu_per_node}) {
    for (const auto& row : *rows) {
      if (!c) c = Coverage{row.stats.sample_start_unix, row.stats.sample_end_unix};
      c->start_unix = std::min(c->start_unix, row.stats.sample_start_unix);
      c->end_unix = std::max(c->end_unix, row.stats.sample_end_unix);
    }
  }
  r.coverage = c;
}

}  // namespace

void derive_figures(const RunData& run, WindowReport& r) {
  long long num_gpus = 0;
  if (run.gpu) {
    for (const auto& d : run.gpu->devices) num_gpus += d.power.size() > 0 ? 1 : 0;
  }
  derive_figures(num_gpus, r);
}

void derive_figures(long long num_gpus, WindowReport& r) {
  const double cpu = r.cpu_total_joules.get<double>();
  const double gpu = r.gpu_total_joules.get<double>();
  r.combined_total_joules = cpu + gpu;
  const double C = r.combined_total_joules;
  const auto& O = r.window.output_tokens;
  const auto& I = r.window.input_tokens;
  if (O && *O != 0) r.joules_per_output_token = C / *O;
  if (O && I && *O + *I != 0) r.joules_per_total_token = C / (*O + *I);

  PerfPerWatt& p = r.perf;
  const double D = r.window.duration_s();
  const bool has_gpu = !r.gpu_per_node.empty();
  const bool has_cpu = !r.cpu_per_node.empty();
  if (D > 0) {
    if (O) p.output_tps = *O / D;
    if (O && I) p.total_tps = (*O + *I) / D;
    if (has_gpu) p.gpu_w = gpu / D;
    if (has_cpu) p.cpu_w = cpu / D;
    if (has_gpu && has_cpu) p.combined_w = C / D;
  }
  p.num_gpus = num_gpus;
  if (p.num_gpus > 0 && p.output_tps) p.output_tps_per_gpu = *p.output_tps / p.num_gpus;
  p.o_gpu = ratio(p.output_tps, p.gpu_w);
  p.o_cpu = ratio(p.output_tps, p.cpu_w);
  p.o_comb = ratio(p.output_tps, p.combined_w);
  p.t_gpu = ratio(p.total_tps, p.gpu_w);
  p.t_cpu = ratio(p.total_tps, p.cpu_w);
  p.t_comb = ratio(p.total_tps, p.combined_w);
  coverage(r);
}

}  // namespace cpupower::report
