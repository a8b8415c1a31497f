#pragma once
// A simulated NVIDIA dcgm-exporter: serves over HTTP the exposition dcgm-exporter serves for N
// GPUs (sim/gpu_exposition.hpp), with board power from the host's CPU load, a constant or a
// trace (sim/gpu_power.hpp), refreshed every collection interval like the exporter's DCGM
// watches, and endpoint faults (sim/gpu_faults.hpp). Tests and demos of the GPU leg use it in
// place of a real exporter.

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "exporter/http_server.hpp"
#include "sim/gpu_exposition.hpp"
#include "sim/gpu_faults.hpp"
#include "sim/gpu_power.hpp"

namespace cpupower::sim {

struct SimGpuOptions {
  std::string bind_ip = "0.0.0.0";  // dcgm-exporter's default address is ":9400"
  std::uint16_t port = 9400;        // 0: the kernel picks one
  std::uint32_t gpus = 4;
  std::string hostname;        // the Hostname label and the UUIDs' seed; empty: this host's
  bool hostname_label = true;  // false: no Hostname label (dcgm-exporter -n)
  std::string model_name = "NVIDIA GH200 480GB";
  std::string driver_version = "570.133.20";  // DCGM_FI_DRIVER_VERSION label; empty: none
  GpuPowerSpec power;
  double idle_w = kGpuIdleWatts;
  double max_w = kGpuMaxWatts;
  std::chrono::milliseconds collect_interval{1000};
  bool profiling = false;               // serve DCGM_FI_PROF_* (opt-in, as in real deployments)
  std::vector<std::uint32_t> mig_gpus;  // GPUs in MIG mode: their instances are served instead
  bool kubernetes = false;              // container, namespace, pod labels on every GPU
  std::vector<GpuFault> faults;
  std::string proc_stat = "/proc/stat";  // CPU time source of the load model
  std::uint64_t seed = 1;                // noise of the load model
  bool noise = true;                     // load model only
  // Another exporter's family and label names (sim/gpu_exposition.hpp); unset: dcgm-exporter.
  std::optional<ExporterNames> names;
};

class SimGpu {
 public:
  explicit SimGpu(SimGpuOptions options);
  ~SimGpu();  // stops

  // Loads the trace (trace power), takes the first CPU-time reading (load power), makes the
  // first collection, binds and starts serving. An error for a bad trace, an unreadable
  // proc_stat, a fault naming a GPU that does not exist, or a failed bind.
  Status start();

  // Idempotent. Releases requests held by hang or slow faults and stops serving.
  void stop();

  // The bound address (ip:port, [ip]:port for IPv6) and port; valid once start() succeeded.
  const std::string& address() const;
  std::uint16_t port() const;
  // The host name the exposition names and the UUIDs derive from.
  const std::string& hostname() const;

  // The /metrics body as of `elapsed` from start: the latest collection, with the GPU faults
  // (vanish, uuid-change) active at that time applied; the endpoint faults are not.
  std::string exposition_at(std::chrono::milliseconds elapsed) const;

  // Answers one request as the HTTP server does, faults included (blocking for slow and hang
  // faults). Public for tests.
  exporter::HttpResponse respond(std::string_view method, std::string_view path);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace cpupower::sim
