#include "sources/nvml.hpp"

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>

#include "common/dynamic_library.hpp"
#include "common/log.hpp"
#include "common/text.hpp"
#include "sources/nvidia_abi.hpp"

namespace cpupower::sources {

using namespace nvidia;
using Clock = std::chrono::steady_clock;

std::optional<std::uint32_t> socket_of_bus_id(const std::string& pci_root,
                                              const std::string& bus_id) {
  const auto text =
      common::read_small_file(pci_root + "/" + common::to_lower(bus_id) + "/numa_node");
  if (!text) return std::nullopt;
  const auto v = common::parse_u64(common::trim(*text));
  if (!v || *v > 0xffffffffu) return std::nullopt;
  return static_cast<std::uint32_t>(*v);
}

std::optional<double> agreeing_mean(const std::vector<double>& watts, double max_disagreement) {
  if (watts.empty()) return std::nullopt;
  double sum = 0;
  for (double w : watts) sum += w;
  const double mean = sum / static_cast<double>(watts.size());
  const auto [lo, hi] = std::minmax_element(watts.begin(), watts.end());
  if (*hi - *lo > max_disagreement * mean) return std::nullopt;
  return mean;
}

namespace {

struct Gpu {
  unsigned index;
  nvmlDevice_t handle;
  std::uint32_t socket;
};

struct SocketState {
  std::vector<unsigned> gpus;   // GPUs that answered in the last cycle
  std::optional<double> watts;  // agreeing mean of the last cycle
  Clock::time_point read_at{};  // last cycle with any GPU answer
  bool ever = false;
  bool disagree_logged = false;
  bool stale_logged = false;
};

}  // namespace

struct NvmlModuleReader::Shared {
  NvmlOptions options;
  mutable std::mutex mutex;
  std::condition_variable wake;
  bool stopping = false;
  bool available = true;
  bool initialized = false;
  bool slow_init_logged = false;
  Clock::time_point started_at{};
  std::map<std::uint32_t, SocketState> sockets;
  int running = 0;
};

namespace {

std::optional<double> module_watts(const nvmlFieldValue_t& v) {
  if (v.nvmlReturn != NVML_SUCCESS) return std::nullopt;
  double mw;
  switch (v.valueType) {
    case NVML_VALUE_TYPE_DOUBLE:
      mw = v.value.dVal;
      break;
    case NVML_VALUE_TYPE_UNSIGNED_INT:
      mw = v.value.uiVal;
      break;
    case NVML_VALUE_TYPE_UNSIGNED_LONG:
      mw = static_cast<double>(v.value.ulVal);
      break;
    case NVML_VALUE_TYPE_UNSIGNED_LONG_LONG:
      mw = static_cast<double>(v.value.ullVal);
      break;
    case NVML_VALUE_TYPE_SIGNED_LONG_LONG:
      mw = static_cast<double>(v.value.sllVal);
      break;
    case NVML_VALUE_TYPE_SIGNED_INT:
      mw = v.value.siVal;
      break;
    default:
      return std::nullopt;
  }
  if (!std::isfinite(mw) || mw <= 0) return std::nullopt;
  return mw / 1000.0;
}

std::string join(const std::vector<unsigned>& v) {
  std::string out;
  for (auto x : v) out += (out.empty() ? "" : ",") + std::to_string(x);
  return out;
}

void unavailable(const std::shared_ptr<NvmlModuleReader::Shared>& sh, const std::string& reason) {
  common::logger("cpu_power_exporter::nvml")
      ->info("NVML module power unavailable; module series not exported reason={}",
             common::quoted(reason));
  std::lock_guard lock(sh->mutex);
  sh->available = false;
}

void poll_loop(std::shared_ptr<NvmlModuleReader::Shared> sh) {
  auto log = common::logger("cpu_power_exporter::nvml");
  const auto& o = sh->options;
  common::DynamicLibrary lib;
  std::string err;
  std::vector<std::string> names = {"libnvidia-ml.so.1", "libnvidia-ml.so"};
  if (!o.library.empty()) names = {o.library};
  std::string missing;
  nvmlInit_v2_fn init = nullptr;
  nvmlShutdown_fn shutdown = nullptr;
  nvmlDeviceGetCount_v2_fn count_fn = nullptr;
  nvmlDeviceGetHandleByIndex_v2_fn handle_fn = nullptr;
  nvmlDeviceGetPciInfo_v3_fn pci_fn = nullptr;
  nvmlDeviceGetFieldValues_fn fields_fn = nullptr;
  std::vector<Gpu> gpus;
  if (!lib.open(names, &err)) {
    unavailable(sh, "libnvidia-ml not found: " + err);
  } else {
    init = lib.symbol<nvmlInit_v2_fn>("nvmlInit_v2", &missing);
    shutdown = lib.symbol<nvmlShutdown_fn>("nvmlShutdown", &missing);
    count_fn = lib.symbol<nvmlDeviceGetCount_v2_fn>("nvmlDeviceGetCount_v2", &missing);
    handle_fn =
        lib.symbol<nvmlDeviceGetHandleByIndex_v2_fn>("nvmlDeviceGetHandleByIndex_v2", &missing);
    pci_fn = lib.symbol<nvmlDeviceGetPciInfo_v3_fn>("nvmlDeviceGetPciInfo_v3", &missing);
    fields_fn = lib.symbol<nvmlDeviceGetFieldValues_fn>("nvmlDeviceGetFieldValues", &missing);
    if (!missing.empty()) unavailable(sh, lib.name() + ": " + missing);
  }
  bool ok = lib.name().size() && missing.empty();
  if (ok) {
    const auto t0 = Clock::now();
    const auto rc = init();
    const double took_s = std::chrono::duration<double>(Clock::now() - t0).count();
    {
      std::lock_guard lock(sh->mutex);
      sh->initialized = true;
      if (sh->slow_init_logged) log->info("NVML initialization completed after_s={:.3f}", took_s);
    }
    if (rc != NVML_SUCCESS) {
      unavailable(sh, "nvmlInit_v2: NVML error " + std::to_string(rc));
      ok = false;
    }
  }
  if (ok) {
    unsigned count = 0;
    if (const auto rc = count_fn(&count); rc != NVML_SUCCESS) {
      unavailable(sh, "nvmlDeviceGetCount_v2: NVML error " + std::to_string(rc));
      ok = false;
    }
    for (unsigned i = 0; ok && i < count; ++i) {
      nvmlDevice_t h = nullptr;
      nvmlPciInfo_t pci{};
      if (handle_fn(i, &h) != NVML_SUCCESS || pci_fn(h, &pci) != NVML_SUCCESS) {
        log->warn("GPU not addressable; module power skips it gpu={}", i);
        continue;
      }
      const std::string bus(pci.busIdLegacy, strnlen(pci.busIdLegacy, sizeof pci.busIdLegacy));
      const auto socket = socket_of_bus_id(o.pci_root, bus);
      if (!socket) {
        log->warn("GPU has no known NUMA socket; module power skips it gpu={} bus_id={}", i, bus);
        continue;
      }
      gpus.push_back({i, h, *socket});
    }
    if (ok && gpus.empty()) {
      unavailable(sh, "no GPU maps to a NUMA socket");
      ok = false;
    }
  }
  if (ok) {
    std::set<std::uint32_t> module_sockets;
    for (const auto& g : gpus) module_sockets.insert(g.socket);
    std::string list;
    for (auto s : module_sockets) {
      list += (list.empty() ? "" : ", ") + std::to_string(s);
      if (!o.cpu_sockets.count(s)) {
        log->warn(
            "module power socket has no CPU socket in the base source; the collector will not "
            "attach it socket={}",
            s);
      }
    }
    log->info("NVML module reader initialised gpu_count={} sockets=[{}]", gpus.size(), list);
  }
  while (ok) {
    const auto t0 = Clock::now();
    std::map<std::uint32_t, std::pair<std::vector<unsigned>, std::vector<double>>> by_socket;
    for (const auto& g : gpus) {
      nvmlFieldValue_t v{};
      v.fieldId = NVML_FI_DEV_POWER_AVERAGE;
      v.scopeId = NVML_POWER_SCOPE_MODULE;
      if (fields_fn(g.handle, 1, &v) != NVML_SUCCESS) continue;
      if (const auto w = module_watts(v)) {
        by_socket[g.socket].first.push_back(g.index);
        by_socket[g.socket].second.push_back(*w);
      }
    }
    const auto t1 = Clock::now();
    {
      std::lock_guard lock(sh->mutex);
      for (auto& [socket, readings] : by_socket) {
        auto& s = sh->sockets[socket];
        s.gpus = readings.first;
        s.watts = agreeing_mean(readings.second, o.max_disagreement);
        s.read_at = t0 + (t1 - t0) / 2;
        s.ever = true;
        if (!s.watts && !s.disagree_logged) {
          s.disagree_logged = true;
          std::string w;
          for (double x : readings.second) w += (w.empty() ? "" : ", ") + fmt::format("{:.3f}", x);
          log->warn(
              "GPU module power readings of a socket disagree by more than {:.0f}% of their mean; "
              "withholding the socket socket={} gpus={} readings_w=[{}]",
              o.max_disagreement * 100, socket, join(s.gpus), w);
        } else if (s.watts && s.disagree_logged) {
          s.disagree_logged = false;
          log->info("GPU module power readings of a socket agree again; publishing it socket={}",
                    socket);
        }
      }
    }
    std::unique_lock lock(sh->mutex);
    if (sh->wake.wait_until(lock, t0 + o.poll_interval, [&] { return sh->stopping; })) break;
  }
  if (ok && shutdown) shutdown();
  std::lock_guard lock(sh->mutex);
  sh->running--;
  sh->wake.notify_all();
}

void watchdog_loop(std::shared_ptr<NvmlModuleReader::Shared> sh) {
  auto log = common::logger("cpu_power_exporter::nvml");
  std::unique_lock lock(sh->mutex);
  while (!sh->wake.wait_for(lock, std::chrono::milliseconds(250), [&] { return sh->stopping; })) {
    if (!sh->available) continue;
    const auto now = Clock::now();
    if (!sh->initialized) {
      if (!sh->slow_init_logged && now - sh->started_at > sh->options.slow_init) {
        sh->slow_init_logged = true;
        log->warn(
            "NVML initialization is taking longer than {:.0f} s; module series withheld until it "
            "completes",
            std::chrono::duration<double>(sh->options.slow_init).count());
      }
      continue;
    }
    for (auto& [socket, s] : sh->sockets) {
      const bool stale = now - s.read_at > sh->options.max_age;
      if (stale && !s.stale_logged) {
        s.stale_logged = true;
        log->warn(
            "NVML module readings missing or stale; withholding the socket socket={} age_s={:.3f}",
            socket, std::chrono::duration<double>(now - s.read_at).count());
      } else if (!stale && s.stale_logged) {
        s.stale_logged = false;
        log->info("NVML module readings fresh again; publishing the socket socket={}", socket);
      }
    }
  }
  sh->running--;
  sh->wake.notify_all();
}

}  // namespace

NvmlModuleReader::NvmlModuleReader(NvmlOptions options) : shared_(std::make_shared<Shared>()) {
  shared_->options = std::move(options);
}

NvmlModuleReader::~NvmlModuleReader() {
  stop();
}

void NvmlModuleReader::start() {
  {
    std::lock_guard lock(shared_->mutex);
    shared_->started_at = Clock::now();
    shared_->running = 2;
  }
  std::thread(poll_loop, shared_).detach();
  std::thread(watchdog_loop, shared_).detach();
}

void NvmlModuleReader::stop(std::chrono::milliseconds grace) {
  std::unique_lock lock(shared_->mutex);
  if (shared_->stopping) return;
  shared_->stopping = true;
  shared_->wake.notify_all();
  shared_->wake.wait_for(lock, grace, [&] { return shared_->running == 0; });
}

bool NvmlModuleReader::available() const {
  std::lock_guard lock(shared_->mutex);
  return shared_->available;
}

std::vector<ModuleSample> NvmlModuleReader::snapshot(Clock::time_point now) const {
  std::vector<ModuleSample> out;
  std::lock_guard lock(shared_->mutex);
  for (const auto& [socket, s] : shared_->sockets) {
    if (!s.watts || now - s.read_at > shared_->options.max_age) continue;
    out.push_back({socket, s.gpus, *s.watts,
                   std::max(0.0, std::chrono::duration<double>(now - s.read_at).count())});
  }
  return out;
}

}  // namespace cpupower::sources
