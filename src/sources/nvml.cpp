#include "sources/nvml.hpp"

#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>

#include "artifacts/limits.hpp"
#include "common/dynamic_library.hpp"
#include "common/log.hpp"
#include "common/text.hpp"
#include "expo/writer.hpp"
#include "sources/energy_counter.hpp"
#include "sources/nvidia_abi.hpp"

namespace cpupower::sources {

using namespace nvidia;
using Clock = std::chrono::steady_clock;

namespace {
constexpr double kModuleAverageS = rails::kNvmlModuleAverageS;
}  // namespace

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
  double read_duration_s = 0;
  double read_at_unix = 0;  // read_at on the wall clock, fixed when read
  bool ever = false;
  bool disagree_logged = false;
  bool stale_logged = false;
  EnergyCounter energy;  // agreeing readings only: a withheld one is never integrated
};

}  // namespace

struct NvmlModuleReader::Shared {
  NvmlOptions options;
  mutable std::mutex mutex;
  bool available = true;
  bool initialized = false;
  bool slow_init_logged = false;
  Clock::time_point started_at{};
  std::map<std::uint32_t, SocketState> sockets;
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
  // Above the bound on one module's power (the collectors' and the report's): an error.
  if (mw / 1000.0 > artifacts::kMaxSocketWatts) return std::nullopt;
  return mw / 1000.0;
}

// Logs why module power is off for good; false, to end the NVML thread.
bool unavailable(const std::shared_ptr<NvmlModuleReader::Shared>& sh, const std::string& reason) {
  common::logger("cpu_power_exporter::nvml")
      ->info("NVML module power unavailable; module series not exported reason={}",
             common::quoted(reason));
  std::lock_guard lock(sh->mutex);
  sh->available = false;
  return false;
}

// The NVML thread's own state: the library, its functions and the GPUs. The first cycle
// loads and initializes; every later one reads. Destroyed with the thread, which shuts NVML
// down.
class Poller {
 public:
  explicit Poller(std::shared_ptr<NvmlModuleReader::Shared> sh) : sh_(std::move(sh)) {}
  ~Poller() {
    if (initialized_ && shutdown_) shutdown_();
  }

  bool cycle() { return gpus_.empty() ? init() : read(); }

 private:
  bool init() {
    auto log = common::logger("cpu_power_exporter::nvml");
    const auto& o = sh_->options;
    std::vector<std::string> names = {"libnvidia-ml.so.1", "libnvidia-ml.so"};
    if (!o.library.empty()) names = {o.library};
    if (const Status opened = lib_.open(names); !opened) {
      return unavailable(sh_, "libnvidia-ml not found: " + opened.error());
    }
    common::SymbolBinder symbols(lib_);
    const nvmlInit_v2_fn init = symbols("nvmlInit_v2");
    shutdown_ = symbols("nvmlShutdown");
    const nvmlDeviceGetCount_v2_fn count_fn = symbols("nvmlDeviceGetCount_v2");
    const nvmlDeviceGetHandleByIndex_v2_fn handle_fn = symbols("nvmlDeviceGetHandleByIndex_v2");
    const nvmlDeviceGetPciInfo_v3_fn pci_fn = symbols("nvmlDeviceGetPciInfo_v3");
    fields_fn_ = symbols("nvmlDeviceGetFieldValues");
    if (const Status bound = symbols.status(); !bound) {
      return unavailable(sh_, lib_.name() + ": " + bound.error());
    }

    const auto t0 = Clock::now();
    const auto rc = init();
    const double took_s = std::chrono::duration<double>(Clock::now() - t0).count();
    {
      std::lock_guard lock(sh_->mutex);
      sh_->initialized = true;
      if (sh_->slow_init_logged) log->info("NVML initialization completed after_s={:.3f}", took_s);
    }
    if (rc != NVML_SUCCESS) {
      return unavailable(sh_, "nvmlInit_v2: NVML error " + std::to_string(rc));
    }
    initialized_ = true;
    unsigned count = 0;
    if (const auto crc = count_fn(&count); crc != NVML_SUCCESS) {
      return unavailable(sh_, "nvmlDeviceGetCount_v2: NVML error " + std::to_string(crc));
    }
    for (unsigned i = 0; i < count; ++i) {
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
      gpus_.push_back({i, h, *socket});
    }
    if (gpus_.empty()) return unavailable(sh_, "no GPU maps to a NUMA socket");

    std::set<std::uint32_t> module_sockets;
    for (const auto& g : gpus_) module_sockets.insert(g.socket);
    for (auto socket : module_sockets) {
      if (!o.cpu_sockets.count(socket)) {
        log->warn(
            "module power socket has no CPU socket in the base source; the collector will not "
            "attach it socket={}",
            socket);
      }
    }
    log->info("NVML module reader initialised gpu_count={} sockets=[{}]", gpus_.size(),
              fmt::join(module_sockets, ", "));
    return read();
  }

  bool read() {
    auto log = common::logger("cpu_power_exporter::nvml");
    const auto& o = sh_->options;
    const auto t0 = Clock::now();
    std::map<std::uint32_t, std::pair<std::vector<unsigned>, std::vector<double>>> by_socket;
    for (const auto& g : gpus_) {
      nvmlFieldValue_t v{};
      v.fieldId = NVML_FI_DEV_POWER_AVERAGE;
      v.scopeId = NVML_POWER_SCOPE_MODULE;
      if (fields_fn_(g.handle, 1, &v) != NVML_SUCCESS) continue;
      if (const auto w = module_watts(v)) {
        by_socket[g.socket].first.push_back(g.index);
        by_socket[g.socket].second.push_back(*w);
      }
    }
    const auto t1 = Clock::now();
    std::lock_guard lock(sh_->mutex);
    for (auto& [socket, readings] : by_socket) {
      auto& st = sh_->sockets[socket];
      st.gpus = readings.first;
      st.watts = agreeing_mean(readings.second, o.max_disagreement);
      st.read_at = t0 + (t1 - t0) / 2;
      st.read_at_unix =
          std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
              .count() -
          std::chrono::duration<double>(Clock::now() - st.read_at).count();
      st.read_duration_s = std::chrono::duration<double>(t1 - t0).count();
      st.ever = true;
      if (st.watts) {
        const auto centre = st.read_at - std::chrono::duration_cast<Clock::duration>(
                                             std::chrono::duration<double>(kModuleAverageS / 2));
        st.energy.add(*st.watts, centre, kModuleAverageS,
                      std::chrono::duration<double>(o.max_age).count());
      }
      if (!st.watts && !st.disagree_logged) {
        st.disagree_logged = true;
        log->warn(
            "GPU module power readings of a socket disagree by more than {:.0f}% of their mean; "
            "withholding the socket socket={} gpus={} readings_w=[{:.3f}]",
            o.max_disagreement * 100, socket, fmt::join(st.gpus, ","),
            fmt::join(readings.second, ", "));
      } else if (st.watts && st.disagree_logged) {
        st.disagree_logged = false;
        log->info("GPU module power readings of a socket agree again; publishing it socket={}",
                  socket);
      }
    }
    return true;
  }

  std::shared_ptr<NvmlModuleReader::Shared> sh_;
  common::DynamicLibrary lib_;
  nvmlShutdown_fn shutdown_ = nullptr;
  nvmlDeviceGetFieldValues_fn fields_fn_ = nullptr;
  bool initialized_ = false;
  std::vector<Gpu> gpus_;
};

// One watchdog pass: slow initialization, then missing or stale sockets (WARN once each,
// INFO on recovery), whether or not anyone reads a snapshot. Returns when to look next:
// nullopt once NVML gave up for good (nothing more to watch); `period` from now while
// initializing or while a socket is stale; else just after the first socket's reading can go
// stale (about once per max_age while NVML answers), never sooner than `period` from now.
std::optional<SteadyTime> check_health(NvmlModuleReader::Shared& sh,
                                       std::chrono::milliseconds period) {
  auto log = common::logger("cpu_power_exporter::nvml");
  std::lock_guard lock(sh.mutex);
  if (!sh.available) return std::nullopt;
  const auto now = Clock::now();
  if (!sh.initialized) {
    if (!sh.slow_init_logged && now - sh.started_at > sh.options.slow_init) {
      sh.slow_init_logged = true;
      log->warn(
          "NVML initialization is taking longer than {:.0f} s; module series withheld until it "
          "completes",
          std::chrono::duration<double>(sh.options.slow_init).count());
    }
    return now + period;
  }
  for (auto& [socket, st] : sh.sockets) {
    const bool stale = now - st.read_at > sh.options.max_age;
    if (stale && !st.stale_logged) {
      st.stale_logged = true;
      log->warn(
          "NVML module readings missing or stale; withholding the socket socket={} age_s={:.3f}",
          socket, std::chrono::duration<double>(now - st.read_at).count());
    } else if (!stale && st.stale_logged) {
      st.stale_logged = false;
      log->info("NVML module readings fresh again; publishing the socket socket={}", socket);
    }
  }
  auto next = SteadyTime::max();
  for (const auto& [socket, st] : sh.sockets) {
    if (st.stale_logged) return now + period;
    next = std::min(next, st.read_at + sh.options.max_age);
  }
  return look_again(next, now, period);
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
  }
  auto poller = std::make_shared<Poller>(shared_);
  threads_.spawn(shared_->options.poll_interval, [poller] { return poller->cycle(); });
  threads_.spawn_at([sh = shared_] { return check_health(*sh, std::chrono::milliseconds(250)); });
}

void NvmlModuleReader::stop(std::chrono::milliseconds grace) {
  threads_.stop(grace);
}

Snapshot NvmlModuleReader::snapshot(SteadyTime now) const {
  auto sensors = std::make_shared<std::vector<Sensor>>();
  Snapshot out;
  std::lock_guard lock(shared_->mutex);
  out.available = shared_->available;
  for (const auto& [socket, st] : shared_->sockets) {
    const bool stale = now - st.read_at > shared_->options.max_age;
    out.modules.push_back({socket, stale, !stale && !st.watts});
    if (!st.watts || stale) continue;
    Sensor sensor;
    sensor.name = "nvml/socket" + std::to_string(socket);
    sensor.kind = rails::Kind::module;
    sensor.socket = socket;
    sensor.label_text = expo::label_text(
        expo::kNvmlWatts,
        {"module", std::to_string(socket), fmt::format("{}", fmt::join(st.gpus, ",")), "nvml"});
    sensors->push_back(std::move(sensor));
    ChannelReading r;
    const double age_s = std::max(0.0, std::chrono::duration<double>(now - st.read_at).count());
    r.watts = st.watts;
    r.age_s = age_s;
    r.read_at_unix = st.read_at_unix;
    r.read_duration_s = st.read_duration_s;
    // Field 185 is the mean over the second before the read: its centre is half a second
    // earlier than the read.
    r.average_interval_s = kModuleAverageS;
    r.centre_offset_s = kModuleAverageS / 2;
    r.energy_j = st.energy.joules;
    r.covered_s = st.energy.covered_s;
    r.bridged_s = st.energy.bridged_s;
    out.readings.push_back(r);
  }
  out.sensors = std::move(sensors);
  return out;
}

}  // namespace cpupower::sources
