#include "exporter/render.hpp"

#include <utility>

#include "expo/parser.hpp"
#include "expo/writer.hpp"

namespace cpupower::exporter {

Family family_of(std::string_view mode) {
  static constexpr std::pair<std::string_view, Family> kFamilies[] = {
      {"acpi", {kAcpiFamily, kAcpiHelp}},
      {"dcgm", {kDcgmFamily, kDcgmHelp}},
      {"nvml", {kNvmlFamily, kNvmlHelp}},
  };
  for (const auto& [m, family] : kFamilies) {
    if (m == mode) return family;
  }
  return {};
}

void render_family(std::string& out, const Family& family, const sources::Snapshot& snapshot) {
  expo::append_family_header(out, family.name, family.help, "gauge");
  const auto& sensors = *snapshot.sensors;
  for (std::size_t i = 0; i < sensors.size() && i < snapshot.readings.size(); ++i) {
    const auto& watts = snapshot.readings[i].watts;
    if (!watts || !sensors[i].power) continue;
    expo::append_sample_prefix(out, family.name, sensors[i].label_text);
    expo::append_fixed6(out, *watts);
    out += '\n';
  }
}

namespace {

// The self-metric families with one sample per sensor (render_self_metrics).
constexpr std::string_view kPerSensorFamilies[] = {
    "cpu_power_exporter_sample_age_seconds",    "cpu_power_exporter_average_interval_seconds",
    "cpu_power_exporter_read_duration_seconds", "cpu_power_exporter_stale",
    "cpu_power_exporter_reads_total",           "cpu_power_exporter_read_errors_total",
};
static_assert(kMaxChannelBytes + 256 * 1024 <= expo::kMaxBodyBytes,
              "the collector's cap must hold the channels and the rest of a body");
// The widest value text: a uint64 counter (20 digits), or a %.6f number of a few days' age.
constexpr std::size_t kWidestValue = 24;

}  // namespace

std::size_t acpi_channel_bytes_bound(std::string_view label_text,
                                     std::string_view self_label_text) {
  // name{labels} value\n
  std::size_t n = kAcpiFamily.size() + 1 + label_text.size() + 2 + kWidestValue + 1;
  for (const auto family : kPerSensorFamilies) {
    n += family.size() + 1 + self_label_text.size() + 2 + kWidestValue + 1;
  }
  // cpu_power_exporter_socket_up{socket="4294967295"} 1\n, should the channel be a total.
  return n + 56;
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
  for (const auto& row : rows) {
    if (!row.interval_only) value(out, family, row);
  }
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
           "Age of each sensor's last good reading when this scrape was served, counted from the "
           "centre of the interval the reading averages (read time minus half the averaging "
           "interval) (s).",
           "gauge", rows, [](std::string& out, std::string_view family, const SelfRow& row) {
             if (const auto age = row.reading.age_s) {
               row_prefix(out, family, row);
               expo::append_fixed6(out, *age + row.reading.centre_offset_s);
               out += '\n';
             }
           });
  constexpr std::string_view kIntervalFamily = "cpu_power_exporter_average_interval_seconds";
  expo::append_family_header(out, kIntervalFamily,
                             "Averaging interval of each sensor's readings (s): ACPI "
                             "power*_average_interval, NVML's 1 s; each value is the mean power "
                             "over this interval before it was read.",
                             "gauge");
  for (const auto& row : rows) {
    if (const auto v = row.reading.average_interval_s) {
      row_prefix(out, kIntervalFamily, row);
      expo::append_fixed6(out, *v);
      out += '\n';
    }
  }
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
  if (!stats.modules.empty()) {
    constexpr std::string_view kWithheld = "cpu_power_exporter_module_withheld";
    expo::append_family_header(
        out, kWithheld,
        "1 when a socket's superchip module power is withheld for this reason, else 0: "
        "reason=\"stale\" (its latest NVML reading is older than 3 s), reason=\"disagree\" "
        "(its GPUs' readings differ by more than 5 % of their mean).",
        "gauge");
    for (const auto& m : stats.modules) {
      for (const auto& [reason, set] : {std::pair{"stale", m.stale}, {"disagree", m.disagree}}) {
        out += kWithheld;
        out += "{socket=\"";
        expo::append_uint(out, m.socket);
        out += "\",reason=\"";
        out += reason;
        out += set ? "\"} 1\n" : "\"} 0\n";
      }
    }
  }
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
  if (!stats.sockets.empty()) {
    constexpr std::string_view kSocketUp = "cpu_power_exporter_socket_up";
    expo::append_family_header(
        out, kSocketUp,
        "1 while the socket's primary power reading (ACPI socket total, DCGM field 1130) is "
        "served, 0 while it is withheld or missing; one sample per socket found at discovery.",
        "gauge");
    for (const auto& s : stats.sockets) {
      out += kSocketUp;
      out += "{socket=\"";
      expo::append_uint(out, s.socket);
      out += s.up ? "\"} 1\n" : "\"} 0\n";
    }
  }
}

}  // namespace cpupower::exporter
