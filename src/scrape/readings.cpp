#include "scrape/readings.hpp"

#include <algorithm>
#include <array>
#include <cmath>

#include "artifacts/limits.hpp"
#include "common/text.hpp"
#include "expo/families.hpp"
#include "rails/rails.hpp"

namespace cpupower::scrape {
namespace {

// Zero is missing: a sensor that reads 0 W is not reporting, a Grace socket never idles at 0.
// Above the physical bound a reading is an error, and so is no reading either (two sockets at
// 1e308 W would make an infinite node total).
bool usable_watts(double value) {
  return std::isfinite(value) && value > 0 && value <= artifacts::kMaxSocketWatts;
}

std::optional<std::uint32_t> socket_label(const expo::Sample& sample) {
  return rails::socket_index(sample.label("socket").value_or(""));
}

// The rail of the DCGM field a sample carries; Kind::other when the field_id is unreadable
// or not one we publish.
rails::Kind dcgm_kind(const expo::Sample& sample) {
  const auto text = sample.label("field_id").value_or("");
  const auto field = text.empty() ? rails::kDcgmCpuPowerField : common::parse_u64(text);
  if (!field || *field > 0xffff) return rails::Kind::other;
  return rails::dcgm_field_kind(static_cast<std::uint16_t>(*field)).value_or(rails::Kind::other);
}

// Indexed by Kind; `other` included so that every Kind is a valid index.
constexpr std::size_t kKinds = 6;
std::size_t kind_slot(rails::Kind kind) {
  return static_cast<std::size_t>(kind);
}

// Everything one socket's samples said; the first reading per kind wins.
struct SocketReadings {
  std::uint32_t socket_id = 0;
  std::array<std::optional<double>, kKinds> watts;
  std::string_view primary_sensor_label;  // ACPI `sensor` label of the total that won
  std::optional<double> nvml_module_w;
};

class SocketTable {
 public:
  SocketReadings& at(std::uint32_t socket_id) {
    const auto it = std::ranges::find(sockets_, socket_id, &SocketReadings::socket_id);
    if (it != sockets_.end()) return *it;
    auto& added = sockets_.emplace_back();
    added.socket_id = socket_id;
    return added;
  }
  std::vector<SocketReadings>& sorted() {
    std::ranges::sort(sockets_, {}, &SocketReadings::socket_id);
    return sockets_;
  }

 private:
  std::vector<SocketReadings> sockets_;
};

// The first reading of each kind per socket wins; a socket total's sensor label is kept to
// match its age and averaging interval.
void keep_first(const expo::Sample& sample, std::uint32_t socket, rails::Kind kind,
                SocketTable& table) {
  auto& readings = table.at(socket);
  auto& slot = readings.watts[kind_slot(kind)];
  if (slot) return;
  slot = sample.value;
  if (kind == rails::Kind::total) {
    readings.primary_sensor_label = sample.label("sensor").value_or("");
  }
}

// Returns true when the sample became (or would have become) an ACPI reading.
bool add_acpi(const expo::Sample& sample, SocketTable& table) {
  if (!usable_watts(sample.value)) return false;
  const auto type = sample.label("type");
  auto kind = rails::parse_kind(type.value_or("")).value_or(rails::Kind::other);
  // module_w comes from NVML alone: an ACPI module meter (type="module" from exporters that
  // classified "Module Power Socket N") is unclassified here, like any other meter.
  if (kind == rails::Kind::module) return false;
  auto socket = socket_label(sample);
  if (kind == rails::Kind::other || !socket) {
    // Older exporters sent type="other", socket="" and left the meaning in the OEM label.
    const auto oem = rails::classify_oem(sample.label("oem_info").value_or(""));
    if (oem.kind == rails::Kind::other) return false;
    kind = oem.kind;
    socket = rails::socket_index(oem.socket);
    if (!socket) return false;
  }
  keep_first(sample, *socket, kind, table);
  return true;
}

// A cpu_power_rapl_watts sample: type total (the package), core, uncore or dram.
bool add_rapl(const expo::Sample& sample, SocketTable& table) {
  if (!usable_watts(sample.value)) return false;
  const auto type = sample.label("type").value_or("");
  const auto kind = type == "total"    ? rails::Kind::total
                    : type == "core"   ? rails::Kind::cpu_rail
                    : type == "uncore" ? rails::Kind::soc
                    : type == "dram"   ? rails::Kind::dram
                                       : rails::Kind::other;
  const auto socket = socket_label(sample);
  if (kind == rails::Kind::other || !socket) return false;
  keep_first(sample, *socket, kind, table);
  return true;
}

bool add_dcgm(const expo::Sample& sample, SocketTable& table) {
  if (!usable_watts(sample.value)) return false;
  const auto socket = socket_label(sample);
  const auto kind = dcgm_kind(sample);
  if (!socket || kind == rails::Kind::other) return false;
  auto& slot = table.at(*socket).watts[kind_slot(kind)];
  if (!slot) slot = sample.value;
  return true;
}

void add_nvml(const expo::Sample& sample, SocketTable& table) {
  const auto socket = socket_label(sample);
  if (sample.label("type") != "module" || !usable_watts(sample.value) || !socket) return;
  auto& slot = table.at(*socket).nvml_module_w;
  if (!slot) slot = sample.value;
}

// The values of `family` for `keys`: for each key, the first finite, non-negative sample that
// `matches` it. Empty when no key has one.
template <class Keys, class Match>
std::vector<double> values_for(const std::vector<expo::Sample>& samples, std::string_view family,
                               const Keys& keys, Match matches) {
  std::vector<double> out;
  for (const auto& key : keys) {
    for (const auto& sample : samples) {
      if (sample.name != family || !std::isfinite(sample.value) || sample.value < 0 ||
          !matches(sample, key)) {
        continue;
      }
      out.push_back(sample.value);
      break;
    }
  }
  return out;
}

std::optional<double> mean_of(const std::vector<double>& v) {
  if (v.empty()) return std::nullopt;
  double sum = 0;
  for (const double x : v) sum += x;
  return sum / static_cast<double>(v.size());
}

// The age (its mean) and averaging interval (its range) of the sensors behind `keys`.
template <class Keys, class Match>
void sensor_timing(const std::vector<expo::Sample>& samples, const Keys& keys, Match matches,
                   Readings& out) {
  out.total_age_s = mean_of(values_for(samples, expo::kSampleAge.name, keys, matches));
  const auto intervals = values_for(samples, expo::kAverageInterval.name, keys, matches);
  if (intervals.empty()) return;
  const auto [lo, hi] = std::minmax_element(intervals.begin(), intervals.end());
  out.average_interval_min_s = *lo;
  out.average_interval_max_s = *hi;
}

// The exporter's socket_up samples, sockets ascending, the first per socket winning. A value
// other than exactly 0 or 1 says nothing and is left out.
std::vector<Readings::SocketUp> socket_up_of(const std::vector<expo::Sample>& samples) {
  std::vector<Readings::SocketUp> out;
  for (const auto& sample : samples) {
    if (sample.name != expo::kSocketUp.name) continue;
    const auto socket = socket_label(sample);
    if (!socket || (sample.value != 0 && sample.value != 1)) continue;
    if (!std::ranges::count(out, *socket, &Readings::SocketUp::socket)) {
      out.push_back({*socket, sample.value == 1});
    }
  }
  std::ranges::sort(out, {}, &Readings::SocketUp::socket);
  return out;
}

std::uint64_t fingerprint_of(Mode mode, const std::vector<SocketRow>& rows,
                             const std::vector<Readings::SocketUp>& socket_up = {}) {
  Fingerprint f;
  f.add(socket_up.size());
  for (const auto& s : socket_up) f.add(std::uint64_t{s.socket} * 2 + (s.up ? 1 : 0));
  f.add(static_cast<std::uint64_t>(mode));
  f.add(rows.size());
  for (const auto& row : rows) {
    f.add(row.socket_id);
    f.add(std::optional(row.power_w));
    f.add(row.cpu_rail_w);
    f.add(row.soc_w);
    f.add(row.dram_w);
    f.add(row.module_w);
  }
  return f.value();
}

}  // namespace

std::string_view mode_name(Mode mode) {
  return mode == Mode::acpi   ? "acpi"
         : mode == Mode::rapl ? "rapl"
         : mode == Mode::dcgm ? "dcgm"
                              : "unknown";
}

Readings readings_from_samples(const std::vector<expo::Sample>& samples) {
  SocketTable acpi, rapl, dcgm, nvml;
  bool any_acpi = false;
  for (const auto& sample : samples) {
    if (sample.name == expo::kAcpiWatts.name) any_acpi = add_acpi(sample, acpi) || any_acpi;
    if (sample.name == expo::kNvmlWatts.name) add_nvml(sample, nvml);
  }
  bool any_rapl = false;
  if (!any_acpi) {
    for (const auto& sample : samples) {
      if (sample.name == expo::kRaplWatts.name) any_rapl = add_rapl(sample, rapl) || any_rapl;
    }
  }
  bool any_dcgm = false;
  if (!any_acpi && !any_rapl) {
    for (const auto& sample : samples) {
      if (sample.name == expo::kDcgmWatts.name) any_dcgm = add_dcgm(sample, dcgm) || any_dcgm;
    }
  }

  Readings out;
  out.mode = any_acpi ? Mode::acpi : any_rapl ? Mode::rapl : any_dcgm ? Mode::dcgm : Mode::unknown;
  out.socket_up = socket_up_of(samples);
  if (out.mode == Mode::unknown) {
    for (const auto& s : out.socket_up) out.sockets_missing.push_back(s.socket);
    out.fingerprint = fingerprint_of(out.mode, out.rows, out.socket_up);
    return out;
  }

  // ACPI and RAPL pivot alike: the socket's total (envelope or package) is power_w, its
  // rails fill the rail columns, and ages are matched by the total's `sensor` label.
  const bool by_total = out.mode == Mode::acpi || out.mode == Mode::rapl;
  const auto primary = by_total ? rails::Kind::total : rails::Kind::cpu_rail;
  std::vector<std::string_view> primary_sensor_labels;
  auto& table = out.mode == Mode::acpi ? acpi : out.mode == Mode::rapl ? rapl : dcgm;
  for (const auto& s : table.sorted()) {
    const auto& power_w = s.watts[kind_slot(primary)];
    if (!power_w) continue;  // a component or module never stands in for socket power
    SocketRow row;
    row.socket_id = s.socket_id;
    row.source = mode_name(out.mode);
    row.power_w = *power_w;
    row.cpu_rail_w = s.watts[kind_slot(rails::Kind::cpu_rail)];
    row.soc_w = s.watts[kind_slot(rails::Kind::soc)];
    if (by_total) {
      row.sensor = out.mode == Mode::rapl
                       ? rails::rapl_sensor_name(s.socket_id)
                       : rails::acpi_sensor_name(rails::Kind::total, s.socket_id);
      row.dram_w = s.watts[kind_slot(rails::Kind::dram)];
      primary_sensor_labels.push_back(s.primary_sensor_label);
    } else {
      row.sensor = rails::dcgm_sensor_name(s.socket_id);
    }
    row.module_w = nvml.at(s.socket_id).nvml_module_w;
    out.rows.push_back(std::move(row));
  }

  double total_w = 0;
  for (const auto& row : out.rows) total_w += row.power_w;
  for (auto& row : out.rows) row.total_power_w = total_w;

  for (const auto& s : out.socket_up) {
    if (!s.up || !std::ranges::count(out.rows, s.socket, &SocketRow::socket_id)) {
      out.sockets_missing.push_back(s.socket);
    }
  }

  if (by_total) {
    sensor_timing(
        samples, primary_sensor_labels,
        [](const auto& s, auto sensor) {
          return !sensor.empty() && s.label("sensor") == std::optional(sensor);
        },
        out);
  } else {
    // The DCGM field 1130 age (field_id absent or 1130) of each row's socket.
    sensor_timing(
        samples, out.rows,
        [](const auto& s, const SocketRow& row) {
          const auto source = s.label("source");
          return socket_label(s) == std::optional(row.socket_id) &&
                 (!source || *source == "dcgm") && dcgm_kind(s) == rails::Kind::cpu_rail;
        },
        out);
  }
  out.fingerprint = fingerprint_of(out.mode, out.rows, out.socket_up);
  return out;
}

Readings readings_from_body(std::string_view body, expo::ParseResult& scratch) {
  // The families read above; every other line is still checked (expo::ParseOptions).
  static constexpr std::array<std::string_view, 7> kFamilies = {
      expo::kAcpiWatts.name, expo::kRaplWatts.name, expo::kDcgmWatts.name,
      expo::kNvmlWatts.name, expo::kSampleAge.name, expo::kAverageInterval.name,
      expo::kSocketUp.name};
  expo::ParseOptions options;
  options.only_names = kFamilies;
  expo::parse_into(body, scratch, options);
  if (!scratch.ok()) {
    Readings out;
    out.error = expo::describe(*scratch.error);
    out.fingerprint = fingerprint_of(out.mode, out.rows);
    return out;
  }
  auto out = readings_from_samples(scratch.samples);
  out.duplicate_series = scratch.duplicate_series;
  out.first_duplicate = scratch.first_duplicate;
  return out;
}

Readings readings_from_body(std::string_view body) {
  expo::ParseResult scratch;
  return readings_from_body(body, scratch);
}

}  // namespace cpupower::scrape
