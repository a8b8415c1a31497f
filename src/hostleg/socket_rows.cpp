#include "hostleg/socket_rows.hpp"

#include <algorithm>
#include <limits>
#include <map>

#include "hostleg/local_time.hpp"
#include "rails/rails.hpp"
#include "sources/dcgm.hpp"
#include "sources/rapl.hpp"

namespace cpupower::hostleg {

namespace {

std::optional<std::size_t> util_column(const sources::Sensor& s) {
  if (s.power || !s.field_id) return std::nullopt;
  for (std::size_t k = 0; k < std::size(rails::kDcgmCpuUtilFields); ++k) {
    if (rails::kDcgmCpuUtilFields[k] == *s.field_id) return k;
  }
  return std::nullopt;
}

// The first fresh value of a kind per socket wins, as discovery orders the channels.
void fill(std::optional<double>& cell, const std::optional<double>& value) {
  if (!cell && value) cell = value;
}

}  // namespace

Sample socket_rows(const sources::Snapshot& base, std::string_view mode,
                   const sources::Snapshot* module, const std::string& hostname) {
  std::map<std::uint32_t, artifacts::HostSampleRow> by_socket;
  bool every_primary = true;
  double time_sum = 0;
  std::size_t time_count = 0;
  double earliest = std::numeric_limits<double>::infinity();
  double latest = -std::numeric_limits<double>::infinity();
  const auto& sensors = *base.sensors;
  for (std::size_t i = 0; i < sensors.size() && i < base.readings.size(); ++i) {
    const auto& s = sensors[i];
    const auto& r = base.readings[i];
    if (!s.primary || !s.socket) continue;
    if (!r.watts || !r.read_at_unix) {
      every_primary = false;
      continue;
    }
    if (by_socket.count(*s.socket)) continue;
    auto& row = by_socket[*s.socket];
    row.power_w = *r.watts;
    row.socket_id = *s.socket;
    // The centre of what the value measured: an averaging meter's value describes the
    // interval before its read (docs/formats.md, host leg row time).
    const double at = *r.read_at_unix - r.centre_offset_s;
    time_sum += at;
    time_count++;
    // When the reads happened, not what they describe: sockets averaging over different
    // intervals read together are one cycle.
    earliest = std::min(earliest, *r.read_at_unix);
    latest = std::max(latest, *r.read_at_unix);
  }
  Sample out;
  if (by_socket.empty()) return out;

  for (std::size_t i = 0; i < sensors.size() && i < base.readings.size(); ++i) {
    const auto& s = sensors[i];
    if (!s.socket) continue;
    const auto it = by_socket.find(*s.socket);
    if (it == by_socket.end()) continue;
    auto& row = it->second;
    const auto& value = base.readings[i].watts;
    if (const auto k = util_column(s)) {
      fill(row.cpu_util[*k], value);
    } else if (s.power && s.kind == rails::Kind::cpu_rail) {
      fill(row.cpu_rail_w, value);
    } else if (s.power && s.kind == rails::Kind::soc) {
      fill(row.soc_w, value);
    } else if (s.power && s.kind == rails::Kind::dram) {
      fill(row.dram_w, value);
    }
  }
  if (module) {
    for (std::size_t i = 0; i < module->sensors->size() && i < module->readings.size(); ++i) {
      const auto& s = (*module->sensors)[i];
      if (!s.socket || s.kind != rails::Kind::module) continue;
      if (const auto it = by_socket.find(*s.socket); it != by_socket.end()) {
        fill(it->second.module_w, module->readings[i].watts);
      }
    }
  }

  out.timestamp_unix = time_sum / static_cast<double>(time_count);
  out.read_spread_s = latest - earliest;
  std::optional<double> total;
  if (every_primary) {
    total = 0.0;
    for (const auto& [socket, row] : by_socket) *total += row.power_w;
  }
  const auto local = iso_local(out.timestamp_unix);
  for (auto& [socket, row] : by_socket) {
    row.timestamp_unix = out.timestamp_unix;
    row.timestamp_local = local;
    row.hostname = hostname;
    row.source = std::string(mode);
    row.sensor = mode == sources::DcgmReader::kMode ? rails::dcgm_sensor_name(socket)
                 : mode == sources::RaplReader::kMode
                     ? rails::rapl_sensor_name(socket)
                     : rails::acpi_sensor_name(rails::Kind::total, socket);
    row.total_power_w = total;
    out.rows.push_back(std::move(row));
  }
  return out;
}

}  // namespace cpupower::hostleg
