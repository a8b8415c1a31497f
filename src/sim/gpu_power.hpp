#pragma once
// Where a simulated GPU's board power comes from (`cpu-power sim-gpu --power`), and the other
// readings derived from it. Pure apart from Trace::load reading its file.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.hpp"
#include "sim/gpu_exposition.hpp"

namespace cpupower::sim {

// GH200/GB200-like board power: a Hopper/Blackwell GPU of a superchip idles near 90 W and is
// capped at 700 W by default (GH200 lets the module budget go higher; 700 W is the H100 SXM
// board limit, a figure both platforms reach under load).
inline constexpr double kGpuIdleWatts = 90.0;
inline constexpr double kGpuMaxWatts = 700.0;

struct GpuPowerSpec {
  enum class Mode { load, constant, trace };
  Mode mode = Mode::load;
  double constant_w = 0;   // constant
  std::string trace_path;  // trace
};

// "load", "constant:W" (W finite, >= 0) or "trace:FILE". An error otherwise.
Result<GpuPowerSpec> parse_gpu_power_spec(std::string_view text);

// The load model: idle + (max - idle) * u, u clamped to 0..1.
double gpu_load_watts(double utilisation, double idle_w, double max_w);

// A power trace for simulated GPUs: CSV, header `time_s,<col>,...`, where each column is
// `all` (every GPU without a column of its own) or `gpu<N>`; rows ascending in time_s
// (seconds from start), watts >= 0. Blank lines and lines starting with '#' are ignored.
// Values between rows are interpolated linearly; before the first row the first value
// holds, after the last row the last.
class GpuTrace {
 public:
  // Every one of `gpus` GPUs must have a column (its own or `all`). Errors name the source
  // (`name`) and the line.
  static Result<GpuTrace> parse(std::string_view text, const std::string& name, std::uint32_t gpus);
  static Result<GpuTrace> load(const std::string& path, std::uint32_t gpus);

  double watts_at(std::uint32_t gpu, double elapsed_s) const;

 private:
  std::vector<std::size_t> column_of_gpu_;  // index into rows_[r]
  std::vector<double> times_s_;
  std::vector<std::vector<double>> rows_;
};

// The readings a GPU at `power_w` shows besides its power: utilisation, SM activity,
// temperatures, clocks and memory follow the load fraction (power - idle) / (max - idle).
// The energy counter is not touched (the caller integrates it).
GpuReadout derive_gpu_readout(double power_w, double idle_w, double max_w);

}  // namespace cpupower::sim
