#include "sim/gpu_power.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include "common/text.hpp"
#include "sim/power_model.hpp"

namespace cpupower::sim {
namespace {

// GH200 96 GB HBM3, as nvidia-smi reports it: total and driver-reserved framebuffer.
constexpr std::int64_t kFbTotalMib = 97871;
constexpr std::int64_t kFbReservedMib = 566;

}  // namespace

Result<GpuPowerSpec> parse_gpu_power_spec(std::string_view text) {
  GpuPowerSpec spec;
  if (text == "load") return spec;
  if (text.starts_with("constant:")) {
    const auto watts = common::parse_double(text.substr(9));
    if (!watts || !std::isfinite(*watts) || *watts < 0) {
      return Error{"constant power '" + std::string(text.substr(9)) +
                   "' is not a number of watts >= 0, e.g. constant:350"};
    }
    spec.mode = GpuPowerSpec::Mode::constant;
    spec.constant_w = *watts;
    return spec;
  }
  if (text.starts_with("trace:")) {
    if (text.size() == 6) return Error{"trace needs a file, e.g. trace:power.csv"};
    spec.mode = GpuPowerSpec::Mode::trace;
    spec.trace_path = std::string(text.substr(6));
    return spec;
  }
  return Error{"power source '" + std::string(text) + "' is not load, constant:W or trace:FILE"};
}

double gpu_load_watts(double utilisation, double idle_w, double max_w) {
  return idle_w + (max_w - idle_w) * std::clamp(utilisation, 0.0, 1.0);
}

Result<GpuTrace> GpuTrace::parse(std::string_view text, const std::string& name,
                                 std::uint32_t gpus) {
  std::optional<std::size_t> all_column;
  std::map<std::uint32_t, std::size_t> gpu_columns;
  auto table =
      parse_trace(text, name, [&](const std::string& key, std::size_t index) -> std::string {
        if (key == "all") {
          all_column = index;
          return "";
        }
        const auto n = key.starts_with("gpu") ? common::parse_u64(key.substr(3)) : std::nullopt;
        if (!n || *n >= UINT32_MAX) return "column '" + key + "' is not all or gpu<N>";
        if (!gpu_columns.emplace(static_cast<std::uint32_t>(*n), index).second) {
          return "column '" + key + "' repeated";
        }
        return "";
      });
  if (!table) return Error{table.error()};
  GpuTrace trace;
  trace.times_s_ = std::move(table->times_s);
  trace.rows_ = std::move(table->rows);
  for (std::uint32_t g = 0; g < gpus; ++g) {
    const auto it = gpu_columns.find(g);
    if (it != gpu_columns.end()) {
      trace.column_of_gpu_.push_back(it->second);
    } else if (all_column) {
      trace.column_of_gpu_.push_back(*all_column);
    } else {
      return Error{"trace " + name + ": no column for gpu " + std::to_string(g) + " (add gpu" +
                   std::to_string(g) + " or all)"};
    }
  }
  return trace;
}

Result<GpuTrace> GpuTrace::load(const std::string& path, std::uint32_t gpus) {
  const auto text = read_trace_file(path);
  if (!text) return Error{text.error()};
  return parse(*text, path, gpus);
}

double GpuTrace::watts_at(std::uint32_t gpu, double elapsed_s) const {
  if (gpu >= column_of_gpu_.size() || rows_.empty()) return 0.0;
  const std::size_t c = column_of_gpu_[gpu];
  const auto after = std::upper_bound(times_s_.begin(), times_s_.end(), elapsed_s);
  if (after == times_s_.begin()) return rows_.front()[c];
  if (after == times_s_.end()) return rows_.back()[c];
  const auto i = static_cast<std::size_t>(after - times_s_.begin());
  const double t0 = times_s_[i - 1], t1 = times_s_[i];
  const double w0 = rows_[i - 1][c], w1 = rows_[i][c];
  return w0 + (w1 - w0) * ((elapsed_s - t0) / (t1 - t0));
}

GpuReadout derive_gpu_readout(double power_w, double idle_w, double max_w) {
  const double span = max_w - idle_w;
  const double f = span > 0 ? std::clamp((power_w - idle_w) / span, 0.0, 1.0) : 0.0;
  GpuReadout r;
  r.power_w = power_w;
  r.sm_clock_mhz = f < 0.02 ? 345 : 1980;
  r.mem_clock_mhz = 2619;
  r.gpu_temp_c = std::lround(32.0 + 43.0 * f);
  r.memory_temp_c = std::lround(35.0 + 40.0 * f);
  r.gpu_util_pct = std::lround(100.0 * f);
  r.mem_copy_util_pct = std::lround(45.0 * f);
  r.fb_used_mib = std::lround(1.0 + 80000.0 * f);
  r.fb_free_mib = kFbTotalMib - kFbReservedMib - r.fb_used_mib;
  r.gr_engine_active = 0.95 * f;
  r.sm_active = 0.92 * f;
  r.tensor_active = 0.6 * f;
  r.dram_active = 0.45 * f;
  return r;
}

}  // namespace cpupower::sim
