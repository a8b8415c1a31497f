#include "exporter/render.hpp"

#include "expo/writer.hpp"

namespace cpupower::exporter {
namespace {

void sensor_prefix(std::string& out, std::string_view family, std::string_view sensor_escaped) {
  out += family;
  out += "{sensor=\"";
  out += sensor_escaped;
  out += "\"} ";
}

void sensor_sample(std::string& out, std::string_view family, std::string_view sensor_escaped,
                   double value) {
  sensor_prefix(out, family, sensor_escaped);
  expo::append_fixed6(out, value);
  out += '\n';
}

// Counters print as integers.
void sensor_count(std::string& out, std::string_view family, std::string_view sensor_escaped,
                  std::uint64_t value) {
  sensor_prefix(out, family, sensor_escaped);
  expo::append_uint(out, value);
  out += '\n';
}

}  // namespace

void render_acpi_family(std::string& out, const std::vector<sources::AcpiChannel>& channels,
                        const std::vector<sources::ChannelReading>& readings) {
  expo::append_family_header(out, kAcpiFamily, kAcpiHelp, "gauge");
  for (std::size_t i = 0; i < channels.size() && i < readings.size(); ++i) {
    if (!readings[i].watts) continue;
    expo::append_sample_prefix(out, kAcpiFamily, channels[i].label_text);
    expo::append_fixed6(out, *readings[i].watts);
    out += '\n';
  }
}

void render_self_metrics(std::string& out, const std::vector<sources::AcpiChannel>& channels,
                         const std::vector<sources::ChannelReading>& readings,
                         const SelfStats& stats) {
  expo::append_family_header(out, "cpu_power_exporter_info",
                             "Exporter version and the CPU power source resolved at startup.",
                             "gauge");
  out += "cpu_power_exporter_info{version=\"" + expo::escape_label_value(stats.version) +
         "\",source=\"" + expo::escape_label_value(stats.source) + "\"} 1\n";

  std::vector<std::string> sensors;
  sensors.reserve(channels.size());
  for (const auto& c : channels) sensors.push_back(expo::escape_label_value(c.sensor));
  const auto n = std::min(channels.size(), readings.size());

  expo::append_family_header(
      out, "cpu_power_exporter_sample_age_seconds",
      "Age of each sensor's last good reading when this scrape was served (s).", "gauge");
  for (std::size_t i = 0; i < n; ++i) {
    if (readings[i].age_s) {
      sensor_sample(out, "cpu_power_exporter_sample_age_seconds", sensors[i], *readings[i].age_s);
    }
  }
  expo::append_family_header(out, "cpu_power_exporter_read_duration_seconds",
                             "Duration of each sensor's last completed read (s).", "gauge");
  for (std::size_t i = 0; i < n; ++i) {
    if (readings[i].read_duration_s) {
      sensor_sample(out, "cpu_power_exporter_read_duration_seconds", sensors[i],
                    *readings[i].read_duration_s);
    }
  }
  expo::append_family_header(out, "cpu_power_exporter_stale",
                             "1 when a sensor's reading is withheld because it is older than "
                             "--max-age-s or never arrived, else 0.",
                             "gauge");
  for (std::size_t i = 0; i < n; ++i) {
    sensor_count(out, "cpu_power_exporter_stale", sensors[i], readings[i].stale ? 1 : 0);
  }
  expo::append_family_header(out, "cpu_power_exporter_reads_total", "Sensor reads completed.",
                             "counter");
  for (std::size_t i = 0; i < n; ++i) {
    sensor_count(out, "cpu_power_exporter_reads_total", sensors[i], readings[i].reads_total);
  }
  expo::append_family_header(
      out, "cpu_power_exporter_read_errors_total",
      "Sensor reads that gave no value (failed, empty, invalid, zero or negative).", "counter");
  for (std::size_t i = 0; i < n; ++i) {
    sensor_count(out, "cpu_power_exporter_read_errors_total", sensors[i],
                 readings[i].read_errors_total);
  }
  expo::append_family_header(out, "cpu_power_exporter_scrapes_total",
                             "Requests for /metrics served, this one included.", "counter");
  out += "cpu_power_exporter_scrapes_total ";
  expo::append_uint(out, stats.scrapes_total);
  out += '\n';
}

}  // namespace cpupower::exporter
