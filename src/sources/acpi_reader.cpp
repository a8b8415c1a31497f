#include "sources/acpi_reader.hpp"

#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>

#include "common/log.hpp"
#include "sources/sysfs_read.hpp"

namespace cpupower::sources {

using Clock = std::chrono::steady_clock;

struct AcpiReader::Shared {
  std::vector<AcpiChannel> channels;
  std::chrono::milliseconds interval;
  SampleTable table;

  std::mutex mutex;
  std::condition_variable wake;
  bool stopping = false;
  std::size_t running_threads = 0;

  Shared(std::vector<AcpiChannel> c, std::chrono::milliseconds i, std::vector<std::string> sensors,
         std::chrono::milliseconds max_age)
      : channels(std::move(c)),
        interval(i),
        table(std::move(sensors), max_age, "cpu_power_exporter::acpi", "ACPI reading") {}
};

namespace {

std::vector<std::string> sensor_names(const std::vector<AcpiChannel>& channels) {
  std::vector<std::string> out;
  for (const auto& c : channels) out.push_back(c.sensor);
  return out;
}

void reader_loop(std::shared_ptr<AcpiReader::Shared> sh, std::vector<std::size_t> indices) {
  auto log = common::logger("cpu_power_exporter::acpi");
  std::vector<std::string> last_problem(indices.size());
  while (true) {
    const auto cycle_start = Clock::now();
    for (std::size_t k = 0; k < indices.size(); ++k) {
      const auto i = indices[k];
      const auto t0 = Clock::now();
      auto r = read_power_file(sh->channels[i].value_path);
      sh->table.record(i, r.watts, t0, Clock::now(), r.problem);
      if (!r.watts && r.problem != last_problem[k]) {
        // DEBUG, and only on change: a dead channel would otherwise log forever.
        log->debug("unreadable channel; skipping sample path={} problem={}",
                   common::quoted(sh->channels[i].value_path), common::quoted(r.problem));
      }
      last_problem[k] = r.problem;
    }
    std::unique_lock lock(sh->mutex);
    if (sh->wake.wait_until(lock, cycle_start + sh->interval, [&] { return sh->stopping; })) break;
  }
  std::lock_guard lock(sh->mutex);
  sh->running_threads--;
  sh->wake.notify_all();
}

}  // namespace

AcpiReader::AcpiReader(std::vector<AcpiChannel> channels, std::chrono::milliseconds read_interval,
                       std::chrono::milliseconds max_age) {
  auto sensors = sensor_names(channels);
  shared_ =
      std::make_shared<Shared>(std::move(channels), read_interval, std::move(sensors), max_age);
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
    shared_->running_threads = by_node.size();
  }
  shared_->table.start_watchdog(
      std::min<std::chrono::milliseconds>(shared_->interval, std::chrono::milliseconds(250)));
  for (auto& [node, indices] : by_node) std::thread(reader_loop, shared_, indices).detach();
}

void AcpiReader::stop(std::chrono::milliseconds grace) {
  {
    std::unique_lock lock(shared_->mutex);
    if (shared_->stopping) return;
    shared_->stopping = true;
    shared_->wake.notify_all();
    shared_->wake.wait_for(lock, grace, [&] { return shared_->running_threads == 0; });
  }
  shared_->table.stop();
}

const std::vector<AcpiChannel>& AcpiReader::channels() const {
  return shared_->channels;
}

std::vector<ChannelReading> AcpiReader::snapshot(SteadyTime now) const {
  return shared_->table.snapshot(now);
}

const SampleTable& AcpiReader::table() const {
  return shared_->table;
}

}  // namespace cpupower::sources
