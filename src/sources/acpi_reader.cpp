#include "sources/acpi_reader.hpp"

#include <algorithm>
#include <map>
#include <mutex>

#include "common/log.hpp"
#include "expo/writer.hpp"
#include "sources/sysfs_read.hpp"

namespace cpupower::sources {

using Clock = std::chrono::steady_clock;

struct AcpiReader::Live {
  std::string root;               // empty: no rediscovery
  std::vector<std::string> keys;  // stable_keys() of the first discovery; fixed
  mutable std::mutex mutex;
  std::vector<AcpiChannel> current;  // guarded: where each channel is now
  std::vector<bool> lost_logged;     // guarded: "gone and not found" was logged
  std::vector<std::optional<Clock::time_point>> lost_since;  // guarded: first scan missing it
  bool scanning = false;                                     // guarded
  Clock::time_point last_scan{};                             // guarded
};

namespace {

constexpr auto kRescanGap = std::chrono::milliseconds(100);
// A re-registration leaves a gap between the old node's removal and the new one's arrival;
// a channel still missing after this long is worth a WARN.
constexpr auto kLostWarnAfter = std::chrono::seconds(1);
constexpr auto kIntervalRecheck = std::chrono::seconds(10);

std::shared_ptr<spdlog::logger> acpi_log() {
  return common::logger("cpu_power_exporter::acpi");
}

std::optional<double> interval_s(const AcpiChannel& c) {
  if (!c.average_interval) return std::nullopt;
  return std::chrono::duration<double>(*c.average_interval).count();
}

std::string interval_text(const AcpiChannel& c) {
  return c.average_interval ? std::to_string(c.average_interval->count()) : std::string("unknown");
}

struct Target {
  std::string path;
  std::optional<double> window_s;
};

Target target_of(const AcpiReader::Live& live, std::size_t i) {
  std::lock_guard lock(live.mutex);
  const auto& c = live.current[i];
  return {c.value_path, interval_s(c)};
}

// After row i's read of `failed_path` found its device gone: discovers again and moves every
// row whose channel is back under another path. True when row i now has a new path.
bool relocate(AcpiReader::Live& live, std::size_t i, const std::string& failed_path,
              const std::string& problem) {
  {
    std::lock_guard lock(live.mutex);
    if (live.current[i].value_path != failed_path) return true;  // another thread found it
    if (live.root.empty() || live.scanning || Clock::now() - live.last_scan < kRescanGap) {
      return false;
    }
    live.scanning = true;
  }
  // Unlocked: a scan reads sysfs, and the other threads keep reading meanwhile.
  const auto found = discover_acpi(live.root);
  const auto found_keys = stable_keys(found.channels);
  std::map<std::string, std::size_t> by_key;
  for (std::size_t k = 0; k < found.channels.size(); ++k) by_key.emplace(found_keys[k], k);

  auto log = acpi_log();
  std::lock_guard lock(live.mutex);
  live.scanning = false;
  live.last_scan = Clock::now();
  for (std::size_t j = 0; j < live.current.size(); ++j) {
    const auto it = by_key.find(live.keys[j]);
    if (it == by_key.end()) continue;
    const auto& f = found.channels[it->second];
    auto& cur = live.current[j];
    if (f.value_path == cur.value_path) continue;
    cur.hwmon = f.hwmon;
    cur.value_path = f.value_path;
    cur.interval_path = f.interval_path;
    cur.device = f.device;
    cur.average_interval = f.average_interval;
    live.lost_logged[j] = false;
    live.lost_since[j].reset();
    log->info(
        "sensor's hwmon device re-registered; reading it at its new path, series unchanged "
        "sensor={} oem_info={} hwmon={} path={} average_interval_ms={}",
        cur.sensor, common::quoted(cur.oem_info), cur.hwmon, common::quoted(cur.value_path),
        interval_text(cur));
  }
  const bool moved = live.current[i].value_path != failed_path;
  if (!moved && !live.lost_since[i]) live.lost_since[i] = live.last_scan;
  if (!moved && !live.lost_logged[i] && live.last_scan - *live.lost_since[i] >= kLostWarnAfter) {
    live.lost_logged[i] = true;
    log->warn(
        "sensor's hwmon device is gone and was not found again for 1 s; looking for it after "
        "each failed read sensor={} oem_info={} path={} problem={}",
        live.current[i].sensor, common::quoted(live.current[i].oem_info),
        common::quoted(failed_path), common::quoted(problem));
  }
  return moved;
}

// Older kernels change the interval in place, with no re-registration to notice.
void recheck_intervals(AcpiReader::Live& live, const std::vector<std::size_t>& rows) {
  for (const auto i : rows) {
    std::string path;
    {
      std::lock_guard lock(live.mutex);
      path = live.current[i].interval_path;
    }
    if (path.empty()) continue;
    const auto interval = read_average_interval(path);
    std::lock_guard lock(live.mutex);
    auto& c = live.current[i];
    if (!interval || c.interval_path != path || c.average_interval == interval) continue;
    c.average_interval = interval;
    acpi_log()->info("sensor's averaging interval changed sensor={} average_interval_ms={}",
                     c.sensor, interval_text(c));
  }
}

std::vector<Sensor> sensors_of(const std::vector<AcpiChannel>& channels) {
  std::vector<Sensor> out;
  for (const auto& c : channels) {
    Sensor s;
    s.name = c.sensor;
    s.kind = c.cls.kind;
    s.socket = rails::socket_index(c.cls.socket);
    s.primary = c.cls.kind == rails::Kind::total && s.socket.has_value();
    s.label_text = c.label_text;
    s.self_label_text = expo::label_text(expo::kSampleAge, {c.sensor});
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace

AcpiReader::AcpiReader(std::vector<AcpiChannel> channels, std::chrono::milliseconds read_interval,
                       std::chrono::milliseconds max_age, std::string hwmon_root)
    : live_(std::make_shared<Live>()),
      sensors_(std::make_shared<const std::vector<Sensor>>(sensors_of(channels))),
      table_(std::make_shared<SampleTable>(sensor_names(*sensors_), max_age,
                                           "cpu_power_exporter::acpi", "ACPI reading")),
      interval_(read_interval),
      threads_(kMaxReaderThreads, std::max<std::chrono::milliseconds>(
                                      2 * read_interval, std::chrono::milliseconds(500))) {
  live_->root = std::move(hwmon_root);
  live_->keys = stable_keys(channels);
  live_->current = channels;
  live_->lost_logged.assign(channels.size(), false);
  live_->lost_since.assign(channels.size(), std::nullopt);
  channels_ = std::make_shared<const std::vector<AcpiChannel>>(std::move(channels));
}

std::vector<AcpiChannel> AcpiReader::current_channels() const {
  std::lock_guard lock(live_->mutex);
  return live_->current;
}

AcpiReader::~AcpiReader() {
  stop();
}

void AcpiReader::start() {
  std::map<std::string, std::vector<std::size_t>> by_node;
  for (std::size_t i = 0; i < channels_->size(); ++i) by_node[(*channels_)[i].hwmon].push_back(i);
  table_->start_watchdog(std::chrono::milliseconds(250));
  for (auto& [node, indices] : by_node) {
    auto last_problem = std::make_shared<std::vector<std::string>>(indices.size());
    auto next_recheck = std::make_shared<Clock::time_point>(Clock::now() + kIntervalRecheck);
    // The channels' value files, kept open between cycles; a job runs on one thread at a time.
    auto files = std::make_shared<std::vector<ValueFile>>(indices.size());
    threads_.add(interval_, [live = live_, table = table_, indices = indices, last_problem,
                             next_recheck, files] {
      if (Clock::now() >= *next_recheck) {
        recheck_intervals(*live, indices);
        *next_recheck = Clock::now() + kIntervalRecheck;
      }
      for (std::size_t k = 0; k < indices.size(); ++k) {
        const auto i = indices[k];
        auto target = target_of(*live, i);
        auto t0 = Clock::now();
        auto r = read_power_file((*files)[k], target.path);
        if (!r.watts && device_gone(r.error_number) && relocate(*live, i, target.path, r.problem)) {
          // Found again: this cycle's value comes from the new path.
          target = target_of(*live, i);
          t0 = Clock::now();
          r = read_power_file((*files)[k], target.path);
        }
        table->record(i, r.watts, t0, Clock::now(), r.problem, target.window_s);
        if (!r.watts && r.problem != (*last_problem)[k]) {
          // DEBUG, and only on change: a dead channel would otherwise log forever.
          acpi_log()->debug("unreadable channel; skipping sample path={} problem={}",
                            common::quoted(target.path), common::quoted(r.problem));
        }
        (*last_problem)[k] = r.problem;
      }
    });
  }
  threads_.start();
}

bool AcpiReader::run_on_read_cycle(std::function<void()> sink) {
  threads_.add_observer(interval_, std::move(sink));
  return true;
}

void AcpiReader::stop(std::chrono::milliseconds grace) {
  threads_.stop(grace);
  table_->stop();
}

Snapshot AcpiReader::snapshot(SteadyTime now) const {
  auto readings = table_->snapshot(now);
  {
    std::lock_guard lock(live_->mutex);
    for (std::size_t i = 0; i < readings.size() && i < live_->current.size(); ++i) {
      readings[i].average_interval_s = interval_s(live_->current[i]);
    }
  }
  return {sensors_, std::move(readings), true, {}};
}

}  // namespace cpupower::sources
