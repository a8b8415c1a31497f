#include "sim/sim_rapl.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <mutex>

#include "common/log.hpp"
#include "sim/power_model.hpp"
#include "sim/ticker.hpp"
#include "sim/tree_writer.hpp"

namespace cpupower::sim {
namespace {

using std::chrono::milliseconds;

// The control type's directory below the root, and its class entry's name.
constexpr std::string_view kControlTypeDir = "devices/virtual/powercap/intel-rapl";
constexpr std::string_view kControlType = "intel-rapl";
constexpr mode_t kReadOnly = 0444;
constexpr mode_t kRootOnly = 0400;
constexpr mode_t kRootWritable = 0644;

std::string line(std::uint64_t n) {
  return std::to_string(n) + "\n";
}

Status link(const std::string& target, const std::string& at) {
  ::unlink(at.c_str());
  if (::symlink(target.c_str(), at.c_str()) != 0) {
    return Error{"symlink " + at + ": " + std::strerror(errno)};
  }
  return Ok{};
}

}  // namespace

std::uint64_t hardware_max_energy_range_uj(Profile profile) {
  return profile == Profile::x86_amd ? kAmdMaxEnergyRangeUj : kIntelMaxEnergyRangeUj;
}

struct SimRaplNode::Impl {
  struct Zone {
    RaplZoneInfo info;
    std::string dir_rel;  // the zone's directory, relative to the root
    bool package = false;
    // Update thread only: the underlying power, how far the trace's steps were fed into it,
    // and the energy integrated up to last_t_s.
    PowerHistory history;
    double trace_until_s = 0.0;
    double energy_uj = 0.0;
    double last_t_s = 0.0;
    std::atomic<std::uint64_t> written_uj{0};
    std::atomic<std::uint64_t> unwrapped_uj{0};
  };

  explicit Impl(SimOptions o) : options(std::move(o)), noise_source(options.seed) {}

  SimOptions options;
  std::uint64_t max_uj = 0;
  std::string abs_root;
  std::vector<std::unique_ptr<Zone>> zones;
  std::optional<LoadTracker> tracker;
  std::optional<Trace> trace;
  Noise noise_source;
  Clock::time_point started_at{};
  double started_unix = 0;
  std::shared_ptr<spdlog::logger> log = common::logger("cpu_power::sim");
  bool failing = false;  // a write error was logged

  mutable std::mutex mutex;  // lifecycle flags
  bool started = false;
  bool stopped = false;
  Ticker ticker;
  Clock::time_point next_update{}, next_sample{};

  const Zone* find(const std::string& key) const {
    for (const auto& z : zones) {
      if (z->info.key == key) return z.get();
    }
    return nullptr;
  }

  Status validate() const {
    if (options.root.empty()) return Error{"no root directory given"};
    if (!is_rapl_profile(options.profile)) {
      return Error{"profile " + std::string(profile_name(options.profile)) +
                   " has no RAPL zones (SimNode writes its hwmon meters)"};
    }
    if (options.update_interval.count() <= 0) return Error{"update interval must be > 0 ms"};
    if (options.sample_step.count() <= 0) return Error{"sample step must be > 0 ms"};
    if (!(options.load >= 0.0 && options.load <= 1.0)) return Error{"load must be within 0..1"};
    if (options.model == Model::trace && options.trace_path.empty()) {
      return Error{"the trace model needs a trace file"};
    }
    if (!options.faults.empty()) return Error{"the x86 profiles take no faults"};
    if (options.energy_start_uj > max_uj) {
      return Error{"energy start " + std::to_string(options.energy_start_uj) +
                   " uJ is above max_energy_range_uj " + std::to_string(max_uj)};
    }
    return Ok{};
  }

  // Zones by socket: intel-rapl:<S> for the package, intel-rapl:<S>:<M> for its subzones.
  void build_zones(const std::string& root) {
    const auto specs = profile_channels(options.profile);
    std::uint32_t socket = 0;
    int sub = 0;
    for (const auto& spec : specs) {
      auto z = std::make_unique<Zone>();
      static_cast<ChannelSpec&>(z->info) = spec;
      // The history must reach back over one update interval, the span each update integrates.
      z->history = PowerHistory(std::max(2.0, 2 * seconds(options.update_interval)));
      z->package = spec.kind == rails::Kind::total;
      if (z->package) {
        socket = spec.socket;
        sub = 0;
        z->info.zone = std::string(kControlType) + ":" + std::to_string(socket);
        z->dir_rel = std::string(kControlTypeDir) + "/" + z->info.zone;
      } else {
        const std::string parent = std::string(kControlType) + ":" + std::to_string(socket);
        z->info.zone = parent + ":" + std::to_string(sub++);
        z->dir_rel = std::string(kControlTypeDir) + "/" + parent + "/" + z->info.zone;
      }
      z->info.energy_path = root + "/" + z->info.zone + "/energy_uj";
      zones.push_back(std::move(z));
    }
  }

  // Every attribute but energy_uj, with its mode, as the kernel has them.
  std::vector<std::tuple<std::string, std::string, mode_t>> attributes(const Zone& z) const {
    std::vector<std::tuple<std::string, std::string, mode_t>> out = {
        {"name", z.info.oem_info + "\n", kReadOnly},
        {"max_energy_range_uj", line(max_uj), kReadOnly},
        {"enabled", "1\n", kRootWritable},
        {"constraint_0_name", "long_term\n", kReadOnly},
    };
    const bool intel = options.profile == Profile::x86_intel;
    if (z.package) {
      const std::uint64_t tdp_uw = intel ? 350'000'000 : 360'000'000;
      out.insert(out.end(), {{"constraint_0_power_limit_uw", line(tdp_uw), kRootWritable},
                             {"constraint_0_time_window_us", line(999'424), kRootWritable},
                             {"constraint_0_max_power_uw", line(tdp_uw), kReadOnly}});
      if (intel) {
        out.insert(out.end(), {{"constraint_1_name", "short_term\n", kReadOnly},
                               {"constraint_1_power_limit_uw", line(tdp_uw * 6 / 5), kRootWritable},
                               {"constraint_1_time_window_us", line(2'440), kRootWritable}});
      }
    } else {
      out.insert(out.end(), {{"constraint_0_power_limit_uw", line(0), kRootWritable},
                             {"constraint_0_time_window_us", line(976), kRootWritable}});
    }
    return out;
  }

  Status write_counter(Zone& z) {
    const double whole = std::floor(z.energy_uj);
    const std::uint64_t unwrapped = options.energy_start_uj + static_cast<std::uint64_t>(whole);
    const std::uint64_t value = unwrapped % (max_uj + 1);
    const std::string path = abs_root + "/" + z.dir_rel + "/energy_uj";
    if (Status s = write_atomic(path, line(value), options.root_only ? kRootOnly : kReadOnly); !s) {
      return s;
    }
    z.written_uj = value;
    z.unwrapped_uj = unwrapped;
    return Ok{};
  }

  Status write_tree() {
    if (Status prepared = prepare_root(options.root); !prepared) return prepared;
    std::error_code ec;
    const auto canonical = std::filesystem::canonical(options.root, ec);
    if (ec) return Error{"cannot resolve root " + options.root + ": " + ec.message()};
    abs_root = canonical.string();
    zones.clear();
    build_zones(abs_root);

    if (options.model == Model::load) {
      tracker.emplace(options.proc_stat, profile_sockets(options.profile));
      if (Status primed = tracker->prime(Clock::now()); !primed) return primed;
    }
    if (options.model == Model::trace) {
      auto loaded = Trace::load(options.trace_path, profile_channels(options.profile));
      if (!loaded) return Error{loaded.error()};
      trace = std::move(*loaded);
    }

    const std::string control = abs_root + "/" + std::string(kControlTypeDir);
    std::filesystem::create_directories(control, ec);
    if (ec) return Error{"mkdir " + control + ": " + ec.message()};
    if (Status s = write_atomic(control + "/enabled", "1\n", kRootWritable); !s) return s;
    for (auto& z : zones) {
      const std::string dir = abs_root + "/" + z->dir_rel;
      std::filesystem::create_directories(dir, ec);
      if (ec) return Error{"mkdir " + dir + ": " + ec.message()};
      for (const auto& [name, content, mode] : attributes(*z)) {
        if (Status s = write_atomic(dir + "/" + name, content, mode); !s) return s;
      }
    }
    started_at = Clock::now();
    started_unix =
        std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    sample_models(started_at, true);
    for (auto& z : zones) {
      if (Status s = write_counter(*z); !s) return s;
    }
    // The class entries last: a scan of the root never finds a zone without its files.
    if (Status s = link(std::string(kControlTypeDir), abs_root + "/" + std::string(kControlType));
        !s) {
      return s;
    }
    for (const auto& z : zones) {
      if (Status s = link(z->dir_rel, abs_root + "/" + z->info.zone); !s) return s;
    }
    return Ok{};
  }

  double underlying(const Zone& z, double t_s) const {
    switch (options.model) {
      case Model::load:
        return model_watts(options.profile, z.info.kind,
                           tracker ? tracker->utilisation(z.info.socket) : 0.0);
      case Model::trace:
        if (trace) {
          if (const auto v = trace->value_at(z.info.key, t_s)) return *v;
        }
        [[fallthrough]];
      case Model::constant:
        break;
    }
    return model_watts(options.profile, z.info.kind, options.load);
  }

  // Feeds every zone's underlying power up to `now`: a trace's steps at their own times, the
  // model's value (with noise, for the load model) from now on.
  void sample_models(Clock::time_point now, bool first = false) {
    if (tracker && !first) tracker->sample(now);
    const double t_s = seconds(now - started_at);
    for (auto& z : zones) {
      if (trace) {
        for (const auto& [at_s, watts] : trace->steps(z->info.key, z->trace_until_s, t_s)) {
          z->history.set(at_s, watts);
        }
        z->trace_until_s = t_s;
      }
      double w = underlying(*z, t_s);
      if (options.model == Model::load && options.noise) {
        w = std::max(0.0, w + noise_source.next(kNoiseAmplitudeW));
      }
      z->history.set(t_s, w);
    }
  }

  // The hardware's integration: each counter gains the energy of its power since the last
  // update, then the new value is written.
  void update(Clock::time_point now) {
    sample_models(now);
    const double t_s = seconds(now - started_at);
    for (auto& z : zones) {
      if (t_s > z->last_t_s) {
        z->energy_uj += z->history.mean(z->last_t_s, t_s) * (t_s - z->last_t_s) * 1e6;
        z->last_t_s = t_s;
      }
      if (const Status s = write_counter(*z); !s && !failing) {
        failing = true;
        log->warn("cannot update zone={} error={}", z->info.zone, common::quoted(s.error()));
      } else if (s) {
        failing = false;
      }
    }
  }

  Clock::time_point tick(Clock::time_point at) {
    if (at >= next_update) {
      next_update = next_tick(next_update, options.update_interval, at);
      update(at);
      if (at >= next_sample) next_sample = next_tick(next_sample, options.sample_step, at);
    } else if (at >= next_sample) {
      next_sample = next_tick(next_sample, options.sample_step, at);
      sample_models(at);
    }
    return std::min(next_update, next_sample);
  }
};

SimRaplNode::SimRaplNode(SimOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {
  auto& d = *impl_;
  d.max_uj = d.options.max_energy_range_uj > 0 ? d.options.max_energy_range_uj
                                               : hardware_max_energy_range_uj(d.options.profile);
  std::error_code ec;
  auto root = std::filesystem::weakly_canonical(d.options.root, ec);
  if (ec) root = std::filesystem::absolute(d.options.root, ec).lexically_normal();
  if (is_rapl_profile(d.options.profile)) d.build_zones(root.string());
}

SimRaplNode::~SimRaplNode() {
  stop();
}

Status SimRaplNode::start() {
  {
    std::lock_guard lock(impl_->mutex);
    if (impl_->started) return Error{"simulated node already started"};
    impl_->started = true;
  }
  auto& d = *impl_;
  if (Status valid = d.validate(); !valid) return valid;
  if (Status written = d.write_tree(); !written) return written;
  if (!d.options.once) {
    d.next_update = d.started_at + d.options.update_interval;
    d.next_sample = d.options.model == Model::load ? d.started_at + d.options.sample_step
                                                   : Clock::time_point::max();
    d.ticker.start(std::min(d.next_update, d.next_sample),
                   [&d](Clock::time_point at) { return d.tick(at); });
  }
  return Ok{};
}

void SimRaplNode::stop() {
  {
    std::lock_guard lock(impl_->mutex);
    if (!impl_->started || impl_->stopped) return;
    impl_->stopped = true;
  }
  impl_->ticker.stop();
}

std::vector<RaplZoneInfo> SimRaplNode::zones() const {
  std::vector<RaplZoneInfo> out;
  for (const auto& z : impl_->zones) out.push_back(z->info);
  return out;
}

std::optional<std::uint64_t> SimRaplNode::energy_uj(const std::string& key) const {
  {
    std::lock_guard lock(impl_->mutex);
    if (!impl_->started) return std::nullopt;
  }
  const auto* z = impl_->find(key);
  if (!z) return std::nullopt;
  return z->written_uj.load();
}

std::optional<double> SimRaplNode::energy_j(const std::string& key) const {
  {
    std::lock_guard lock(impl_->mutex);
    if (!impl_->started) return std::nullopt;
  }
  const auto* z = impl_->find(key);
  if (!z) return std::nullopt;
  return static_cast<double>(z->unwrapped_uj.load() - impl_->options.energy_start_uj) / 1e6;
}

double SimRaplNode::started_unix() const {
  return impl_->started_unix;
}

}  // namespace cpupower::sim
