#include "sources/acpi_reader.hpp"

#include <map>

#include "common/log.hpp"
#include "expo/writer.hpp"
#include "sources/sysfs_read.hpp"

namespace cpupower::sources {

using Clock = std::chrono::steady_clock;

namespace {

std::vector<Sensor> sensors_of(const std::vector<AcpiChannel>& channels) {
  std::vector<Sensor> out;
  for (const auto& c : channels) {
    Sensor s;
    s.name = c.sensor;
    s.kind = c.cls.kind;
    s.socket = rails::socket_index(c.cls.socket);
    s.primary = c.cls.kind == rails::Kind::total && s.socket.has_value();
    s.label_text = c.label_text;
    s.self_label_text = "sensor=\"" + expo::escape_label_value(c.sensor) + "\"";
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<std::string> names_of(const std::vector<AcpiChannel>& channels) {
  std::vector<std::string> out;
  for (const auto& c : channels) out.push_back(c.sensor);
  return out;
}

}  // namespace

AcpiReader::AcpiReader(std::vector<AcpiChannel> channels, std::chrono::milliseconds read_interval,
                       std::chrono::milliseconds max_age)
    : sensors_(std::make_shared<const std::vector<Sensor>>(sensors_of(channels))),
      table_(std::make_shared<SampleTable>(names_of(channels), max_age, "cpu_power_exporter::acpi",
                                           "ACPI reading")),
      interval_(read_interval) {
  channels_ = std::make_shared<const std::vector<AcpiChannel>>(std::move(channels));
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
    threads_.spawn(
        interval_, [channels = channels_, table = table_, indices = indices, last_problem] {
          for (std::size_t k = 0; k < indices.size(); ++k) {
            const auto i = indices[k];
            const auto t0 = Clock::now();
            auto r = read_power_file((*channels)[i].value_path);
            table->record(i, r.watts, t0, Clock::now(), r.problem);
            if (!r.watts && r.problem != (*last_problem)[k]) {
              // DEBUG, and only on change: a dead channel would otherwise log forever.
              common::logger("cpu_power_exporter::acpi")
                  ->debug("unreadable channel; skipping sample path={} problem={}",
                          common::quoted((*channels)[i].value_path), common::quoted(r.problem));
            }
            (*last_problem)[k] = r.problem;
          }
          return true;
        });
  }
}

void AcpiReader::stop(std::chrono::milliseconds grace) {
  threads_.stop(grace);
  table_->stop();
}

Snapshot AcpiReader::snapshot(SteadyTime now) const {
  return {sensors_, table_->snapshot(now), true};
}

}  // namespace cpupower::sources
