#pragma once
// One benchmark window's report: every breakdown row, totals, per-token and per-watt
// figures, timing, utilization and warnings. Plain data; rendering lives in render_*.cpp.

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "report/cpu_data.hpp"
#include "report/expected.hpp"
#include "report/gpu_data.hpp"
#include "report/integrate.hpp"
#include "report/json_value.hpp"
#include "report/window.hpp"

namespace cpupower::report {

// A host's superchip power: the sum of its sockets' module_w at the instants where every
// one of them has a reading, so a missing socket never shows as a dip. Windows sum just the
// stretch they integrate; the whole series is built once, when something needs it.
class ModuleNode {
 public:
  ModuleNode(std::string host, std::vector<const Track*> sockets)
      : host_(std::move(host)), sockets_(std::move(sockets)) {}
  const std::string& host() const { return host_; }
  // The summed samples in [lo, hi], at most `limit` of them.
  Series samples(double lo, double hi, std::size_t limit = SIZE_MAX) const;
  const Track& whole() const;  // thread-safe

 private:
  std::string host_;
  std::vector<const Track*> sockets_;  // the sockets' module_w tracks, in RunData::cpu
  mutable std::once_flag once_;
  mutable Track whole_;
};

// Everything the windows share: the legs, loaded once.
struct RunData {
  std::optional<CpuData> cpu;
  std::optional<GpuData> gpu;
  RunExpectations expected;  // what the manifests say the files should hold
  // Hosts whose module sum has at least one instant; they point into `cpu`, so RunData is
  // filled in place and never copied.
  std::vector<std::unique_ptr<ModuleNode>> module_nodes;
};

// Finds the hosts whose sockets' module_w sums to a series (see ModuleNode).
void build_module_nodes(RunData& run);

struct UtilRow {
  std::string label;
  std::string column;
  double mean = 0;
  double max = 0;
  std::size_t samples = 0;
};

struct NodePower {
  std::string host;
  std::optional<double> gpu_w, cpu_w;
  std::vector<std::pair<std::string, double>> cpu_rails_w;  // cpu_rail, soc, dram
  std::size_t gpu_count = 0, socket_count = 0;
  std::vector<std::string> roles;
};

struct SensorInfo {
  std::string label;
  std::string sensor;
  std::vector<std::string> other_sensors;
};

struct PerfPerWatt {
  std::optional<double> output_tps, total_tps;
  long long num_gpus = 0;
  std::optional<double> output_tps_per_gpu;
  std::optional<double> gpu_w, cpu_w, combined_w;
  std::optional<double> o_gpu, o_cpu, o_comb, t_gpu, t_cpu, t_comb;
};

struct Coverage {
  double start_unix = 0, end_unix = 0;
};

// A total's error bar: the sum of its rows' uncertainties (the rows of one window measure one
// benchmark, so their errors are not taken as independent) and the lowest of their coverages
// (unset when a row's is unknown).
struct TotalError {
  double uncertainty_j = 0;
  std::optional<double> coverage;
};

// Where a window's energy comes from when it is not the run's samples files: a metrics
// store's counters (store/), said in the JSON (`energy_source`, `store_url`) and the text.
struct EnergySource {
  std::string kind;  // "prometheus"
  std::string url;   // the store's base URL, never with credentials
};

struct WindowReport {
  Window window;
  Edges edges = Edges::interpolate;
  std::string error;  // the window failed; only `window`'s identity is valid then
  std::vector<Breakdown> cpu_per_socket, cpu_per_node;
  Json cpu_total_joules = 0.0;
  std::vector<NodePower> node_power;
  std::vector<SensorInfo> cpu_sensors;
  std::vector<Breakdown> gpu_per_device, gpu_per_role, gpu_per_node;
  Json gpu_total_joules = 0.0;
  double combined_total_joules = 0;
  std::optional<double> joules_per_output_token, joules_per_total_token;
  std::optional<Coverage> coverage;
  PerfPerWatt perf;
  std::vector<UtilRow> cpu_utilization, gpu_utilization;
  std::vector<std::string> warnings;
  std::vector<Breakdown> module_per_socket, module_per_node;
  std::optional<double> module_total_joules;
  // Sockets without a sample in the window while their node's others have some (warned).
  std::vector<std::pair<std::string, long long>> missing_sockets;
  // The totals' error bars (report/uncertainty.hpp); module_total's when there is one.
  TotalError cpu_total_error, gpu_total_error, combined_total_error;
  std::optional<TotalError> module_total_error;
  // combined_total_error over the tokens, beside joules_per_output_token and _total_token;
  // perf/W carries combined_total_error's share (the token counts are exact).
  std::optional<double> joules_per_output_token_uncertainty, joules_per_total_token_uncertainty;
  std::optional<EnergySource> energy_source;  // unset: the run's samples files
};

WindowReport build_window_report(const Window& window, const RunData& run, Edges edges);

// The legs' utilization rows of r's window (utilization.cpp), plus the no-coverage warnings.
void summarize_utilization(const RunData& run, WindowReport& r,
                           std::vector<std::string>* cpu_warnings,
                           std::vector<std::string>* gpu_warnings);

// perf/W, J/token and coverage from the totals (perf.cpp): the GPUs counted are the run's
// devices with samples, or `num_gpus` where the window's rows come from elsewhere.
void derive_figures(const RunData& run, WindowReport& r);
void derive_figures(long long num_gpus, WindowReport& r);

// The totals' error bars from their rows (cpu, gpu, combined, module) and the per-token
// figures' uncertainties; needs derive_figures' J/token first.
void total_error_bars(WindowReport& r);

// What the CPU boundaries of the sockets mean for the figures: `CPU rail only` for DCGM
// sockets, `CPU package boundary` for RAPL ones, and `CPU boundaries differ across nodes`
// when the nodes measure more than one (docs/formats.md, JSON warnings). Only the sockets'
// host, socket, dcgm and rapl are read.
void cpu_scope_warnings(const CpuData& cpu, WindowReport& r);

}  // namespace cpupower::report
