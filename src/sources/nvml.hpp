#pragma once
// Superchip module power from NVML: field 185 (NVML_FI_DEV_POWER_AVERAGE, a 1 s average) at
// module scope, the value nvidia-smi prints as module.power.draw.average. Each GPU of a
// module reports the whole module (Grace + its GPUs + the rest), so a socket's value is the
// mean of its GPUs' readings, withheld when they disagree by more than 5 % of that mean.
//
// Loading, initialization and reads all run on a background thread: NVML calls can block,
// and scrapes must not wait for them. An independent watchdog warns once when
// initialization takes longer than 3 s or readings go missing or stale, and logs recovery
// at INFO, whether or not anyone scrapes.

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "sources/reader_threads.hpp"
#include "sources/source.hpp"

namespace cpupower::sources {

struct NvmlOptions {
  std::string library;  // empty: libnvidia-ml.so.1, then libnvidia-ml.so
  std::string pci_root = "/sys/bus/pci/devices";
  std::chrono::milliseconds poll_interval{500};
  std::chrono::milliseconds max_age{3000};
  std::chrono::milliseconds slow_init{3000};
  double max_disagreement = 0.05;       // of the mean
  std::set<std::uint32_t> cpu_sockets;  // sockets of the base source, for the startup check
};

// The Grace socket of a GPU: <pci_root>/<bus id in lower case>/numa_node, a non-negative
// integer. nullopt when missing, unparsable or -1.
std::optional<std::uint32_t> socket_of_bus_id(const std::string& pci_root,
                                              const std::string& bus_id);

// The mean of one socket's GPU readings, or nullopt when they disagree by more than
// `max_disagreement` of that mean (max - min > max_disagreement * mean).
std::optional<double> agreeing_mean(const std::vector<double>& watts, double max_disagreement);

class NvmlModuleReader final : public Source {
 public:
  explicit NvmlModuleReader(NvmlOptions options);
  ~NvmlModuleReader() override;

  std::string_view mode() const override { return "nvml"; }
  const expo::Family& family() const override { return expo::kNvmlWatts; }
  expo::CounterFamilies counters() const override { return expo::kNvmlCounters; }
  void start() override;
  void stop(std::chrono::milliseconds grace = std::chrono::milliseconds(1000)) override;
  // One row per socket with a fresh, agreeing reading, ascending; labels type="module",
  // socket, gpus (the GPUs that answered) and source="nvml". `available` turns false once
  // NVML was found unusable (library, init, or no GPU on a socket): the family is then
  // omitted for the process lifetime. `modules` says, for every socket read so far, whether
  // it is withheld as stale or for disagreement.
  Snapshot snapshot(SteadyTime now = std::chrono::steady_clock::now()) const override;
  // Its threads running now: the poller and the health watch, none once NVML gave up.
  int threads() const { return threads_.running(); }

  struct Shared;

 private:
  std::shared_ptr<Shared> shared_;
  ReaderThreads threads_;
};

}  // namespace cpupower::sources
