#include "exporter/render.hpp"

#include <utility>

#include "expo/parser.hpp"
#include "expo/writer.hpp"

namespace cpupower::exporter {

void render_family(std::string& out, const expo::Family& family,
                   const sources::Snapshot& snapshot) {
  expo::append_family_header(out, family);
  const auto& sensors = *snapshot.sensors;
  for (std::size_t i = 0; i < sensors.size() && i < snapshot.readings.size(); ++i) {
    const auto& watts = snapshot.readings[i].watts;
    if (!watts || !sensors[i].power) continue;
    expo::append_sample_prefix(out, family.name, sensors[i].label_text);
    expo::append_fixed6(out, *watts);
    out += '\n';
  }
}

void render_counter_families(std::string& out, const expo::CounterFamilies& families,
                             const sources::Snapshot& snapshot) {
  using R = sources::ChannelReading;
  const auto& sensors = *snapshot.sensors;
  for (const auto& [family, member] : {std::pair{families.joules, &R::energy_j},
                                       {families.covered, &R::covered_s},
                                       {families.bridged, &R::bridged_s}}) {
    expo::append_family_header(out, *family);
    for (std::size_t i = 0; i < sensors.size() && i < snapshot.readings.size(); ++i) {
      const auto& value = snapshot.readings[i].*member;
      if (!value || !sensors[i].power) continue;
      expo::append_sample_prefix(out, family->name, sensors[i].label_text);
      expo::append_fixed6(out, *value);
      out += '\n';
    }
  }
}

namespace {

static_assert(kMaxChannelBytes + 256 * 1024 <= expo::kMaxBodyBytes,
              "the collector's cap must hold the channels and the rest of a body");
// The widest value text: a uint64 counter (20 digits), or a %.6f number of a few days' age.
constexpr std::size_t kWidestValue = 24;

}  // namespace

std::size_t acpi_channel_bytes_bound(std::string_view label_text,
                                     std::string_view self_label_text) {
  // name{labels} value\n
  std::size_t n = expo::kAcpiWatts.name.size() + 1 + label_text.size() + 2 + kWidestValue + 1;
  for (const auto* family : expo::kPerSensorFamilies) {
    n += family->name.size() + 1 + self_label_text.size() + 2 + kWidestValue + 1;
  }
  const auto& counters = expo::kAcpiCounters;
  for (const auto* family : {counters.joules, counters.covered, counters.bridged}) {
    n += family->name.size() + 1 + label_text.size() + 2 + kWidestValue + 1;
  }
  // cpu_power_exporter_socket_up{socket="4294967295"} 1\n, should the channel be a total.
  return n + 56;
}

namespace {

// HELP and TYPE, then value(out, family, row) for every row; rows that carry only an
// averaging interval are in that family alone.
template <class Value>
void each_row(std::string& out, const expo::Family& family, const std::vector<SelfRow>& rows,
              Value value, bool interval_only_rows = false) {
  expo::append_family_header(out, family);
  for (const auto& row : rows) {
    if (interval_only_rows || !row.interval_only) value(out, family, row);
  }
}

}  // namespace

void render_self_metrics(std::string& out, const std::vector<SelfRow>& rows,
                         const SelfStats& stats) {
  expo::append_family_header(out, expo::kInfo);
  expo::append_sample_prefix(out, expo::kInfo.name,
                             expo::label_text(expo::kInfo, {stats.version, stats.source}));
  out += "1\n";

  auto optional_gauge = [](auto member, bool centred = false) {
    return [member, centred](std::string& out, const expo::Family& family, const SelfRow& row) {
      if (const auto v = row.reading.*member) {
        expo::append_sample_prefix(out, family.name, row.label_text);
        expo::append_fixed6(out, centred ? *v + row.reading.centre_offset_s : *v);
        out += '\n';
      }
    };
  };
  auto count = [](auto member) {
    return [member](std::string& out, const expo::Family& family, const SelfRow& row) {
      expo::append_sample_prefix(out, family.name, row.label_text);
      expo::append_uint(out, row.reading.*member);
      out += '\n';
    };
  };
  using R = sources::ChannelReading;
  // The age counts from the centre of the interval the reading averages.
  each_row(out, expo::kSampleAge, rows, optional_gauge(&R::age_s, true));
  each_row(out, expo::kAverageInterval, rows, optional_gauge(&R::average_interval_s), true);
  each_row(out, expo::kReadDuration, rows, optional_gauge(&R::read_duration_s));
  each_row(out, expo::kStale, rows,
           [](std::string& out, const expo::Family& family, const SelfRow& row) {
             expo::append_sample_prefix(out, family.name, row.label_text);
             out += row.reading.stale ? "1\n" : "0\n";
           });
  if (!stats.modules.empty()) {
    expo::append_family_header(out, expo::kModuleWithheld);
    for (const auto& m : stats.modules) {
      for (const auto& [reason, set] : {std::pair{"stale", m.stale}, {"disagree", m.disagree}}) {
        out += expo::kModuleWithheld.name;
        out += "{socket=\"";
        expo::append_uint(out, m.socket);
        out += "\",reason=\"";
        out += reason;
        out += set ? "\"} 1\n" : "\"} 0\n";
      }
    }
  }
  each_row(out, expo::kReadsTotal, rows, count(&R::reads_total));
  each_row(out, expo::kReadErrorsTotal, rows, count(&R::read_errors_total));
  expo::append_family_header(out, expo::kScrapesTotal);
  out += expo::kScrapesTotal.name;
  out += ' ';
  expo::append_uint(out, stats.scrapes_total);
  out += '\n';
  if (!stats.sockets.empty()) {
    expo::append_family_header(out, expo::kSocketUp);
    for (const auto& s : stats.sockets) {
      out += expo::kSocketUp.name;
      out += "{socket=\"";
      expo::append_uint(out, s.socket);
      out += s.up ? "\"} 1\n" : "\"} 0\n";
    }
  }
}

}  // namespace cpupower::exporter
