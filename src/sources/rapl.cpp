#include "sources/rapl.hpp"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>

#include "artifacts/limits.hpp"
#include "common/log.hpp"
#include "common/text.hpp"
#include "expo/writer.hpp"
#include "sources/sysfs_read.hpp"

namespace cpupower::sources {

using Clock = std::chrono::steady_clock;

namespace {

std::shared_ptr<spdlog::logger> rapl_log() {
  return common::logger("cpu_power_exporter::rapl");
}

double seconds(Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

// "intel-rapl:N" -> {N}, "intel-rapl:N:M" -> {N, M}; empty for any other name.
std::vector<std::uint64_t> zone_path(std::string_view entry) {
  if (!entry.starts_with(kRaplZonePrefix)) return {};
  std::vector<std::uint64_t> out;
  for (const auto& part : common::split(entry.substr(kRaplZonePrefix.size()), ':')) {
    const auto n = common::parse_u64(part);
    if (!n) return {};
    out.push_back(*n);
  }
  return out.size() <= 2 ? out : std::vector<std::uint64_t>{};
}

// "package-3" -> 3; nullopt for anything else ("package-0-die-1" included).
std::optional<std::uint32_t> package_id(std::string_view name) {
  if (!name.starts_with(kRaplPackagePrefix)) return std::nullopt;
  const auto n = common::parse_u64(name.substr(kRaplPackagePrefix.size()));
  if (!n || *n > 0xffffffffu) return std::nullopt;
  return static_cast<std::uint32_t>(*n);
}

std::optional<RaplType> subzone_type(std::string_view name) {
  if (name == "core") return RaplType::core;
  if (name == "uncore") return RaplType::uncore;
  if (name == "dram") return RaplType::dram;
  return std::nullopt;
}

Result<std::string> read_trimmed(const std::string& path) {
  auto text = common::read_small_file(path);
  if (!text) return Error{text.error()};
  return std::string(common::trim(*text));
}

std::string describe_errno(int e) {
  return e == EACCES ? "permission denied" : std::strerror(e);
}

}  // namespace

std::string_view rapl_type_name(RaplType type) {
  static constexpr std::string_view kNames[] = {"total", "core", "uncore", "dram"};
  return kNames[static_cast<int>(type)];
}

rails::Kind rapl_kind(RaplType type) {
  static constexpr rails::Kind kKinds[] = {rails::Kind::total, rails::Kind::cpu_rail,
                                           rails::Kind::soc, rails::Kind::dram};
  return kKinds[static_cast<int>(type)];
}

RaplDiscovery discover_rapl(const std::string& powercap_root) {
  RaplDiscovery out;
  DIR* d = ::opendir(powercap_root.c_str());
  if (!d) {
    out.error = "no RAPL: cannot list " + powercap_root + " (" + std::strerror(errno) +
                "); not an x86 node with the intel_rapl powercap driver";
    return out;
  }
  // Entries by their zone path, so that packages come in numeric order and each one's
  // subzones after it.
  std::map<std::vector<std::uint64_t>, std::string> entries;
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (auto path = zone_path(name); !path.empty()) entries.emplace(std::move(path), name);
  }
  ::closedir(d);

  std::map<std::uint64_t, std::uint32_t> package_of;  // zone N -> package id
  for (const auto& [path, entry] : entries) {
    const std::string dir = powercap_root + "/" + entry;
    const auto name = read_trimmed(dir + "/" + std::string(kRaplNameFile));
    if (!name) {
      out.warnings.push_back("RAPL zone without a readable name; left out zone=" + entry +
                             " error=" + common::quoted(name.error()));
      continue;
    }
    RaplZone z;
    z.sensor = entry;
    z.zone_name = *name;
    if (path.size() == 1) {
      if (*name == "psys") continue;  // the platform domain: more than the packages
      const auto id = package_id(*name);
      if (!id) {
        out.warnings.push_back(
            std::string(name->starts_with(kRaplPackagePrefix)
                            ? "RAPL package zone split by die is not supported; left out"
                            : "RAPL zone of an unknown kind; left out") +
            " zone=" + entry + " name=" + common::quoted(*name));
        continue;
      }
      z.type = RaplType::total;
      z.socket = *id;
      package_of[path[0]] = *id;
    } else {
      const auto parent = package_of.find(path[0]);
      const auto type = subzone_type(*name);
      if (parent == package_of.end() || !type) {
        out.warnings.push_back(
            std::string(parent == package_of.end()
                            ? "RAPL subzone of a zone that is not a package; left out"
                            : "RAPL subzone of an unknown kind; left out") +
            " zone=" + entry + " name=" + common::quoted(*name));
        continue;
      }
      z.type = *type;
      z.socket = parent->second;
    }
    z.energy_path = dir + "/" + std::string(kRaplEnergyFile);
    if (::access(z.energy_path.c_str(), F_OK) != 0) {
      out.warnings.push_back("RAPL zone without " + std::string(kRaplEnergyFile) +
                             "; left out zone=" + entry);
      continue;
    }
    const auto max = read_trimmed(dir + "/" + std::string(kRaplMaxEnergyFile));
    const auto max_uj = max ? common::parse_u64(*max) : std::nullopt;
    if (max_uj && *max_uj > 0) {
      z.max_energy_range_uj = *max_uj;
    } else {
      out.warnings.push_back(
          "RAPL zone without a usable " + std::string(kRaplMaxEnergyFile) +
          "; its counter's wraps will read as resets (one interval without power each) zone=" +
          entry);
    }
    z.label_text = expo::label_text(expo::kRaplWatts,
                                    {std::to_string(z.socket), rapl_type_name(z.type), z.sensor});
    out.zones.push_back(std::move(z));
  }
  // By socket (package ids need not follow zone numbers), each package before its subzones.
  std::stable_sort(out.zones.begin(), out.zones.end(),
                   [](const RaplZone& a, const RaplZone& b) { return a.socket < b.socket; });
  return out;
}

namespace {

EnergyRead interpret_energy_text(const ValueText& v) {
  if (v.error_number != 0) {
    return {std::nullopt, std::string("read failed: ") + describe_errno(v.error_number),
            v.error_number};
  }
  if (v.too_long) return {std::nullopt, "value longer than 63 bytes", 0};
  const auto text = common::trim(v.text);
  if (text.empty()) return {std::nullopt, "empty", 0};
  const auto uj = common::parse_u64(text);
  if (!uj) return {std::nullopt, "unparsable value " + std::string(text.substr(0, 32)), 0};
  return {*uj, {}, 0};
}

// A counter's text: a 64-bit count of microjoules, 20 digits at most.
constexpr std::size_t kEnergyTextLimit = 63;

}  // namespace

EnergyRead read_energy_file(const std::string& path) {
  return interpret_energy_text(read_value_text(path, kEnergyTextLimit));
}

EnergyRead read_energy_file(ValueFile& file, const std::string& path) {
  return interpret_energy_text(file.read(path, kEnergyTextLimit));
}

std::string rapl_permission_error(const std::string& path) {
  return "cannot read " + path +
         ": permission denied (energy_uj is readable by root only, mode 0400); run as root, or "
         "grant the exporter's group read access with the packaged udev rule "
         "(60-cpu-power-exporter-rapl.rules), or give the process CAP_DAC_READ_SEARCH "
         "(docs/operations.md, RAPL permissions)";
}

CounterStep counter_step(std::uint64_t previous_uj, std::uint64_t current_uj,
                         std::uint64_t max_energy_range_uj, double seconds) {
  if (current_uj >= previous_uj) return {current_uj - previous_uj, false};
  if (max_energy_range_uj == 0 || previous_uj > max_energy_range_uj ||
      current_uj > max_energy_range_uj) {
    return {};  // no known range to wrap in: a reset
  }
  // The counter holds 0..max, so a wrap passes from max to 0.
  const std::uint64_t wrapped = (max_energy_range_uj - previous_uj) + current_uj + 1;
  if (!(seconds > 0) || static_cast<double>(wrapped) / 1e6 / seconds > artifacts::kMaxSocketWatts) {
    return {};  // more energy than any package draws in the interval: a reset
  }
  return {wrapped, true};
}

// Per zone, the counter as last read and the energy counted; guarded by `mutex`.
struct RaplReader::Live {
  struct Zone {
    bool have_baseline = false;
    std::uint64_t last_uj = 0;
    Clock::time_point last_mid{};
    double energy_j = 0;
    std::optional<double> window_s;  // the interval of the last value
    bool reset_logged = false;
    std::string last_problem;
  };
  std::mutex mutex;
  std::vector<Zone> zones;
};

namespace {

std::vector<Sensor> sensors_of(const std::vector<RaplZone>& zones) {
  std::vector<Sensor> out;
  for (const auto& z : zones) {
    Sensor s;
    s.name = z.sensor;
    s.kind = rapl_kind(z.type);
    s.socket = z.socket;
    s.primary = z.type == RaplType::total;
    s.label_text = z.label_text;
    s.self_label_text = expo::label_text(expo::kSampleAge, {z.sensor});
    out.push_back(std::move(s));
  }
  return out;
}

// One read of zone i: the counter's step since the last read into the table, or the baseline.
void read_zone(const RaplZone& zone, std::size_t i, RaplReader::Live& live, SampleTable& table,
               const EnergyReadFn& read) {
  const auto t0 = Clock::now();
  const auto r = read(zone.energy_path);
  const auto t1 = Clock::now();
  const auto mid = t0 + (t1 - t0) / 2;
  std::optional<double> watts;
  std::optional<double> window_s;
  std::string problem =
      r.error_number == EACCES ? rapl_permission_error(zone.energy_path) : r.problem;
  {
    std::lock_guard lock(live.mutex);
    auto& z = live.zones[i];
    if (r.uj) {
      if (!z.have_baseline) {
        // The baseline: a counter's first read measures nothing.
        z.have_baseline = true;
        z.last_uj = *r.uj;
        z.last_mid = mid;
        return;
      }
      const double dt = seconds(mid - z.last_mid);
      const auto step = counter_step(z.last_uj, *r.uj, zone.max_energy_range_uj, dt);
      const auto from = z.last_uj;
      z.last_uj = *r.uj;
      z.last_mid = mid;
      if (!step.delta_uj) {
        problem = "counter reset: went back from " + std::to_string(from) + " to " +
                  std::to_string(*r.uj) + " uJ, less than a wrap";
        if (!z.reset_logged) {
          z.reset_logged = true;
          rapl_log()->warn(
              "RAPL energy counter went back by less than a wrap; taking it as a reset: no power "
              "for this interval, no energy added zone={} from_uj={} to_uj={} "
              "max_energy_range_uj={}",
              zone.sensor, from, *r.uj, zone.max_energy_range_uj);
        }
      } else if (*step.delta_uj == 0) {
        problem = "counter did not advance";
      } else {
        const double w = static_cast<double>(*step.delta_uj) / 1e6 / dt;
        if (w > artifacts::kMaxSocketWatts) {
          problem = "above the physical bound of " +
                    std::to_string(static_cast<long>(artifacts::kMaxSocketWatts)) +
                    " W: " + std::to_string(*step.delta_uj) + " uJ in " + std::to_string(dt) + " s";
        } else {
          watts = w;
          window_s = dt;
          z.energy_j += static_cast<double>(*step.delta_uj) / 1e6;
          z.window_s = dt;
          if (step.wrapped) {
            rapl_log()->debug("RAPL energy counter wrapped zone={} max_energy_range_uj={}",
                              zone.sensor, zone.max_energy_range_uj);
          }
        }
      }
    }
    if (!watts && problem != z.last_problem) {
      // DEBUG, and only on change: a dead zone would otherwise log forever.
      rapl_log()->debug("no RAPL power this read zone={} problem={}", zone.sensor,
                        common::quoted(problem));
    }
    z.last_problem = watts ? std::string() : problem;
  }
  table.record(i, watts, t0, t1, watts ? std::string() : problem, window_s);
}

}  // namespace

RaplReader::RaplReader(std::vector<RaplZone> zones, std::chrono::milliseconds read_interval,
                       std::chrono::milliseconds max_age, EnergyReadFn read)
    : zones_(std::make_shared<const std::vector<RaplZone>>(std::move(zones))),
      sensors_(std::make_shared<const std::vector<Sensor>>(sensors_of(*zones_))),
      table_(std::make_shared<SampleTable>(sensor_names(*sensors_), max_age,
                                           "cpu_power_exporter::rapl", "RAPL reading")),
      live_(std::make_shared<Live>()),
      interval_(read_interval),
      read_(std::move(read)) {
  live_->zones.resize(zones_->size());
}

RaplReader::~RaplReader() {
  stop();
}

void RaplReader::start() {
  table_->start_watchdog(std::chrono::milliseconds(250));
  // One thread for every zone: a counter read is a register read, microseconds, and reading
  // the zones of a node back to back keeps their intervals alike.
  auto read = read_;
  if (!read) {
    // Each zone's counter file, kept open between cycles (this thread alone reads them).
    auto files = std::make_shared<std::map<std::string, ValueFile>>();
    read = [files](const std::string& path) { return read_energy_file((*files)[path], path); };
  }
  threads_.spawn(interval_, [zones = zones_, live = live_, table = table_, read] {
    for (std::size_t i = 0; i < zones->size(); ++i) read_zone((*zones)[i], i, *live, *table, read);
    return true;
  });
}

void RaplReader::stop(std::chrono::milliseconds grace) {
  threads_.stop(grace);
  table_->stop();
}

Snapshot RaplReader::snapshot(SteadyTime now) const {
  auto readings = table_->snapshot(now);
  {
    std::lock_guard lock(live_->mutex);
    for (std::size_t i = 0; i < readings.size() && i < live_->zones.size(); ++i) {
      readings[i].average_interval_s = live_->zones[i].window_s;
      // The hardware counter's energy, in place of the table's trapezoid of its differences.
      readings[i].energy_j = live_->zones[i].energy_j;
    }
  }
  return {sensors_, std::move(readings), true, {}};
}

RaplRung try_rapl(const RaplOptions& options) {
  RaplRung rung;
  auto discovery = discover_rapl(options.root);
  rung.warnings = discovery.warnings;
  if (!discovery.error.empty()) {
    rung.reason = discovery.error;
    return rung;
  }
  if (discovery.zones.empty()) {
    rung.reason = "no RAPL: no intel-rapl package zones under " + options.root;
    return rung;
  }
  // Every counter once: a refused read is the rung's reason (naming the file and the remedy),
  // never a zone quietly missing.
  std::vector<RaplZone> readable;
  std::string unreadable_packages;
  for (auto& z : discovery.zones) {
    const auto r = options.read ? options.read(z.energy_path) : read_energy_file(z.energy_path);
    if (r.error_number == EACCES) {
      rung.reason = rapl_permission_error(z.energy_path);
      return rung;
    }
    if (!r.uj) {
      rung.warnings.push_back(
          "RAPL zone's energy counter cannot be read; left out zone=" + z.sensor +
          " path=" + common::quoted(z.energy_path) + " problem=" + common::quoted(r.problem));
      if (z.type == RaplType::total) {
        unreadable_packages += (unreadable_packages.empty() ? "" : ", ") + z.sensor;
      }
      continue;
    }
    readable.push_back(std::move(z));
  }
  std::vector<std::size_t> packages;
  for (std::size_t i = 0; i < readable.size(); ++i) {
    if (readable[i].type == RaplType::total) packages.push_back(i);
  }
  if (packages.empty()) {
    rung.reason = "no RAPL package zone under " + options.root + " can be read" +
                  (unreadable_packages.empty() ? "" : " (" + unreadable_packages + ")");
    return rung;
  }

  auto reader = std::make_unique<RaplReader>(std::move(readable), options.read_interval,
                                             options.max_age, options.read);
  const auto started = Clock::now();
  reader->start();
  // The first read of each zone is its baseline; the probe waits for the second.
  std::size_t live = reader->table().wait_live(packages, started, started + options.max_age);
  constexpr int kProbes = 2;
  if (live == 0) {
    rapl_log()->debug("no RAPL package counter advanced; retrying probe attempt=1");
    std::this_thread::sleep_for(options.probe_retry_delay);
    const auto retry = Clock::now();
    live = reader->table().wait_live(packages, retry, retry + options.max_age);
  }
  if (live == 0) {
    reader->stop(std::chrono::milliseconds(200));
    rung.reason = "no RAPL package energy counter under " + options.root + " advanced across " +
                  std::to_string(kProbes) + " probe(s) (" + std::to_string(packages.size()) +
                  " packages)";
    return rung;
  }
  auto log = rapl_log();
  if (live < packages.size()) {
    log->warn(
        "RAPL package counters advance on some packages only; using RAPL, and the node's power "
        "is incomplete while the others give none live={} total={}",
        live, packages.size());
  } else {
    log->info("RAPL package energy counters advance; using RAPL live={} total={}", live,
              packages.size());
  }
  rung.reader = std::move(reader);
  return rung;
}

}  // namespace cpupower::sources
