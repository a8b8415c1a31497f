#include "sources/acpi_reader.hpp"

#include <algorithm>
#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>

#include "common/log.hpp"
#include "sources/sysfs_read.hpp"

namespace cpupower::sources {

using Clock = std::chrono::steady_clock;

struct ChannelState {
  std::optional<double> watts;
  SteadyTime read_at{};     // midpoint of the read that produced `watts`
  SteadyTime last_start{};  // start of the last completed read
  bool completed_any = false;
  std::optional<double> read_duration_s;
  std::uint64_t reads_total = 0;
  std::uint64_t read_errors_total = 0;
  std::string last_problem;
  bool stale_logged = false;
};

struct AcpiReader::Shared {
  std::vector<AcpiChannel> channels;
  std::chrono::milliseconds interval;
  std::chrono::milliseconds max_age;
  SteadyTime started_at{};

  mutable std::mutex mutex;
  mutable std::condition_variable changed;  // a read completed, or stop was asked
  std::vector<ChannelState> states;
  bool stopping = false;
  std::size_t running_threads = 0;

  bool is_stale(const ChannelState& s, SteadyTime now) const {
    if (s.watts) return now - s.read_at > max_age;
    return now - started_at > max_age;  // never had a value although it should have by now
  }
};

namespace {

void reader_loop(std::shared_ptr<AcpiReader::Shared> sh, std::vector<std::size_t> indices) {
  auto log = common::logger("cpu_power_exporter::acpi");
  while (true) {
    const auto cycle_start = Clock::now();
    for (auto i : indices) {
      {
        std::lock_guard lock(sh->mutex);
        if (sh->stopping) break;
      }
      const auto t0 = Clock::now();
      auto r = read_power_file(sh->channels[i].value_path);
      const auto t1 = Clock::now();
      std::lock_guard lock(sh->mutex);
      auto& s = sh->states[i];
      s.reads_total++;
      s.completed_any = true;
      s.last_start = t0;
      s.read_duration_s = std::chrono::duration<double>(t1 - t0).count();
      if (r.watts) {
        s.watts = r.watts;
        s.read_at = t0 + (t1 - t0) / 2;
      } else {
        s.read_errors_total++;
        if (r.problem != s.last_problem) {
          log->debug("unreadable channel; skipping sample path={} problem={}",
                     common::quoted(sh->channels[i].value_path), common::quoted(r.problem));
        }
      }
      s.last_problem = r.problem;
      sh->changed.notify_all();
    }
    std::unique_lock lock(sh->mutex);
    if (sh->changed.wait_until(lock, cycle_start + sh->interval, [&] { return sh->stopping; })) {
      break;
    }
  }
  std::lock_guard lock(sh->mutex);
  sh->running_threads--;
  sh->changed.notify_all();
}

void watchdog_loop(std::shared_ptr<AcpiReader::Shared> sh) {
  auto log = common::logger("cpu_power_exporter::acpi");
  const auto period =
      std::min<std::chrono::milliseconds>(sh->interval, std::chrono::milliseconds(250));
  std::unique_lock lock(sh->mutex);
  while (!sh->changed.wait_for(lock, period, [&] { return sh->stopping; })) {
    const auto now = Clock::now();
    for (std::size_t i = 0; i < sh->states.size(); ++i) {
      auto& s = sh->states[i];
      const bool stale = sh->is_stale(s, now);
      const auto& sensor = sh->channels[i].sensor;
      if (stale && !s.stale_logged) {
        s.stale_logged = true;
        if (s.watts) {
          log->warn(
              "ACPI reading is stale; withholding it sensor={} age_s={:.3f} max_age_s={:.3f} "
              "last_problem={}",
              sensor, std::chrono::duration<double>(now - s.read_at).count(),
              std::chrono::duration<double>(sh->max_age).count(),
              common::quoted(s.completed_any ? s.last_problem : "read still in progress"));
        } else {
          log->warn(
              "no ACPI reading yet; withholding the sensor sensor={} waited_s={:.3f} "
              "last_problem={}",
              sensor, std::chrono::duration<double>(now - sh->started_at).count(),
              common::quoted(s.completed_any ? s.last_problem : "read still in progress"));
        }
      } else if (!stale && s.stale_logged) {
        s.stale_logged = false;
        log->info("ACPI reading fresh again; publishing it sensor={}", sensor);
      }
    }
  }
  sh->running_threads--;
  sh->changed.notify_all();
}

}  // namespace

AcpiReader::AcpiReader(std::vector<AcpiChannel> channels, std::chrono::milliseconds read_interval,
                       std::chrono::milliseconds max_age)
    : shared_(std::make_shared<Shared>()) {
  shared_->channels = std::move(channels);
  shared_->interval = read_interval;
  shared_->max_age = max_age;
  shared_->states.resize(shared_->channels.size());
}

AcpiReader::~AcpiReader() {
  stop();
}

void AcpiReader::start() {
  std::map<std::string, std::vector<std::size_t>> by_node;
  for (std::size_t i = 0; i < shared_->channels.size(); ++i) {
    by_node[shared_->channels[i].hwmon].push_back(i);
  }
  {
    std::lock_guard lock(shared_->mutex);
    shared_->started_at = Clock::now();
    shared_->running_threads = by_node.size() + 1;
  }
  for (auto& [node, indices] : by_node) {
    std::thread(reader_loop, shared_, indices).detach();
  }
  std::thread(watchdog_loop, shared_).detach();
}

void AcpiReader::stop(std::chrono::milliseconds grace) {
  std::unique_lock lock(shared_->mutex);
  if (shared_->stopping) return;
  shared_->stopping = true;
  shared_->changed.notify_all();
  shared_->changed.wait_for(lock, grace, [&] { return shared_->running_threads == 0; });
}

const std::vector<AcpiChannel>& AcpiReader::channels() const {
  return shared_->channels;
}

std::vector<ChannelReading> AcpiReader::snapshot(SteadyTime now) const {
  std::vector<ChannelReading> out(shared_->channels.size());
  std::lock_guard lock(shared_->mutex);
  for (std::size_t i = 0; i < out.size(); ++i) {
    const auto& s = shared_->states[i];
    auto& r = out[i];
    r.reads_total = s.reads_total;
    r.read_errors_total = s.read_errors_total;
    r.read_duration_s = s.read_duration_s;
    r.stale = shared_->is_stale(s, now);
    if (s.watts) {
      r.age_s = std::max(0.0, std::chrono::duration<double>(now - s.read_at).count());
      if (!r.stale) r.watts = s.watts;
    }
  }
  return out;
}

std::size_t AcpiReader::wait_live(const std::vector<std::size_t>& indices, SteadyTime since,
                                  SteadyTime deadline) const {
  std::unique_lock lock(shared_->mutex);
  auto done = [&] {
    return std::all_of(indices.begin(), indices.end(), [&](std::size_t i) {
      const auto& s = shared_->states[i];
      return s.completed_any && s.last_start >= since;
    });
  };
  shared_->changed.wait_until(lock, deadline, done);
  std::size_t live = 0;
  for (auto i : indices) {
    const auto& s = shared_->states[i];
    if (s.watts && s.read_at >= since) live++;
  }
  return live;
}

}  // namespace cpupower::sources
