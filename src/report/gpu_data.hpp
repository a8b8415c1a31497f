#pragma once
// The GPU (DCGM) leg of a run as the report sees it: per-device lists, per-node and per-role
// sums keyed by the exact timestamp (all GPUs of one host share a scrape's stamp).

#include <array>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "artifacts/gpu_samples.hpp"
#include "report/track.hpp"

namespace cpupower::report {

struct GpuDevice {
  std::string host;
  long long index = 0;
  Track power;  // every row, stable-sorted (the reader drops repeated instants)
  std::array<std::optional<Track>, artifacts::kGpuUtils> util;  // kGpuUtilColumns order
  std::set<std::string> roles;

  std::string label() const { return "gpu/" + host + "/gpu" + std::to_string(index); }
};

struct GpuSum {
  std::string host;
  std::string role;  // empty for node sums
  Track power;       // per timestamp, the sum of every row with exactly that timestamp

  std::string label() const { return "gpu/" + host + (role.empty() ? "" : "/" + role); }
};

struct GpuData {
  std::string path;
  std::vector<GpuDevice> devices;  // by (host, index)
  std::vector<GpuSum> nodes;       // by host
  std::vector<GpuSum> roles;       // by (role, host)
};

GpuData build_gpu_data(const artifacts::GpuSamplesFile& file, const artifacts::GpuRoles& roles);

}  // namespace cpupower::report
