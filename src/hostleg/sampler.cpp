#include "hostleg/sampler.hpp"

#include <utility>

#include "artifacts/host_samples.hpp"
#include "hostleg/socket_rows.hpp"

namespace cpupower::hostleg {

Sampler::Sampler(const sources::Source& source, const sources::NvmlModuleReader* nvml,
                 std::string mode, std::string host, double interval_s)
    : source_(source),
      nvml_(nvml),
      mode_(std::move(mode)),
      host_(std::move(host)),
      interval_s_(interval_s) {}

void Sampler::take() {
  Taken t{source_.snapshot(), std::nullopt};
  if (nvml_) t.module = nvml_->snapshot();
  std::lock_guard lock(mutex_);
  if (taken_.size() >= kMaxPendingSamples) {
    dropped_++;
    return;
  }
  taken_.push_back(std::move(t));
}

Sampler::Batch Sampler::rows() {
  std::vector<Taken> taken;
  Batch out;
  {
    std::lock_guard lock(mutex_);
    taken.swap(taken_);
    out.dropped_samples = std::exchange(dropped_, 0);
  }
  for (const auto& t : taken) {
    const auto* module = t.module ? &*t.module : nullptr;
    const auto sample = socket_rows(t.base, mode_, module, host_);
    if (sample.rows.empty()) {
      out.read_failures++;
      continue;
    }
    if (sample.timestamp_unix == last_time_ || sample.timestamp_unix == passed_time_) continue;
    if (sample.read_spread_s > interval_s_ / 2 && !passed_last_) {
      passed_last_ = true;
      passed_time_ = sample.timestamp_unix;
      out.half_cycles++;
      continue;
    }
    passed_last_ = false;
    last_time_ = sample.timestamp_unix;
    for (const auto& row : sample.rows) {
      out.text += artifacts::format_host_row(row);
      if (!module) continue;
      for (const auto& m : module->modules) {
        if (m.socket != row.socket_id) continue;
        out.withheld_stale += m.stale;
        out.withheld_disagree += m.disagree;
      }
    }
    out.rows += sample.rows.size();
  }
  return out;
}

}  // namespace cpupower::hostleg
