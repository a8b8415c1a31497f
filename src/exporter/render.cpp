#include "exporter/render.hpp"

#include "expo/writer.hpp"

namespace cpupower::exporter {

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

void render_dcgm_family(std::string& out, const std::vector<sources::DcgmRow>& rows,
                        const std::vector<sources::ChannelReading>& readings) {
  expo::append_family_header(out, kDcgmFamily, kDcgmHelp, "gauge");
  for (std::size_t i = 0; i < rows.size() && i < readings.size(); ++i) {
    if (!readings[i].watts) continue;
    out += kDcgmFamily;
    out += "{socket=\"" + std::to_string(rows[i].entity) + "\",field_id=\"" +
           std::to_string(rows[i].field) + "\",source=\"dcgm\"} ";
    expo::append_fixed6(out, *readings[i].watts);
    out += '\n';
  }
}

void render_nvml_family(std::string& out, const std::vector<sources::ModuleSample>& samples) {
  expo::append_family_header(out, kNvmlFamily, kNvmlHelp, "gauge");
  for (const auto& m : samples) {
    std::string gpus;
    for (auto g : m.gpus) gpus += (gpus.empty() ? "" : ",") + std::to_string(g);
    out += kNvmlFamily;
    out += "{type=\"module\",socket=\"" + std::to_string(m.socket) + "\",gpus=\"" + gpus +
           "\",source=\"nvml\"} ";
    expo::append_fixed6(out, m.watts);
    out += '\n';
  }
}

namespace {

void row_prefix(std::string& out, std::string_view family, const SelfRow& row) {
  out += family;
  out += '{';
  out += row.label_text;
  out += "} ";
}

template <class Value>
void each_row(std::string& out, std::string_view family, std::string_view help,
              std::string_view type, const std::vector<SelfRow>& rows, Value value) {
  expo::append_family_header(out, family, help, type);
  for (const auto& row : rows) value(out, family, row);
}

}  // namespace

void render_self_metrics(std::string& out, const std::vector<SelfRow>& rows,
                         const SelfStats& stats) {
  expo::append_family_header(out, "cpu_power_exporter_info",
                             "Exporter version and the CPU power source resolved at startup.",
                             "gauge");
  out += "cpu_power_exporter_info{version=\"" + expo::escape_label_value(stats.version) +
         "\",source=\"" + expo::escape_label_value(stats.source) + "\"} 1\n";

  auto optional_gauge = [](auto member) {
    return [member](std::string& out, std::string_view family, const SelfRow& row) {
      if (const auto v = row.reading.*member) {
        row_prefix(out, family, row);
        expo::append_fixed6(out, *v);
        out += '\n';
      }
    };
  };
  auto count = [](auto member) {
    return [member](std::string& out, std::string_view family, const SelfRow& row) {
      row_prefix(out, family, row);
      expo::append_uint(out, row.reading.*member);
      out += '\n';
    };
  };
  using R = sources::ChannelReading;
  each_row(out, "cpu_power_exporter_sample_age_seconds",
           "Age of each sensor's last good reading when this scrape was served (s).", "gauge", rows,
           optional_gauge(&R::age_s));
  each_row(out, "cpu_power_exporter_read_duration_seconds",
           "Duration of each sensor's last completed read (s).", "gauge", rows,
           optional_gauge(&R::read_duration_s));
  each_row(out, "cpu_power_exporter_stale",
           "1 when a sensor's reading is withheld because it is older than --max-age-s or never "
           "arrived, else 0.",
           "gauge", rows, [](std::string& out, std::string_view family, const SelfRow& row) {
             row_prefix(out, family, row);
             out += row.reading.stale ? "1\n" : "0\n";
           });
  each_row(out, "cpu_power_exporter_reads_total", "Sensor reads completed.", "counter", rows,
           count(&R::reads_total));
  each_row(out, "cpu_power_exporter_read_errors_total",
           "Sensor reads that gave no value (failed, empty, invalid, zero or negative).", "counter",
           rows, count(&R::read_errors_total));
  expo::append_family_header(out, "cpu_power_exporter_scrapes_total",
                             "Requests for /metrics served, this one included.", "counter");
  out += "cpu_power_exporter_scrapes_total ";
  expo::append_uint(out, stats.scrapes_total);
  out += '\n';
}

}  // namespace cpupower::exporter
