#include "report/cpu_chunk.hpp"

#include <cmath>
#include <limits>

namespace cpupower::report {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::string_view cell(std::span<const std::string_view> cells,
                      const std::optional<std::size_t>& index) {
  // A short row lacks its last cells; they read as blank.
  return index && *index < cells.size() ? cells[*index] : std::string_view{};
}

// Appends this row's value (or NaN) to a column that only materialises at its first value,
// so that files without rails or module_w cost nothing for them.
void push_column(Column& col, std::size_t row, std::string_view text, std::size_t bound) {
  const auto v = artifacts::parse_cell_double(text);
  if (!col.present) {
    if (!v) return;
    col.present = true;
    col.v.reserve_address_space(bound);
    col.v.append_fill(row, kNaN);
  }
  col.v.push_back(v ? *v : kNaN);
}

int rail_slot(SensorKind kind) {
  switch (kind) {
    case SensorKind::cpu_rail:
      return 0;
    case SensorKind::soc:
      return 1;
    case SensorKind::dram:
      return 2;
    default:
      return -1;
  }
}

}  // namespace

std::size_t CpuChunk::host_id(std::string_view name) {
  if (last_host_ != SIZE_MAX && hosts[last_host_].name == name) return last_host_;
  const auto [it, inserted] = host_index_.try_emplace(std::string(name), hosts.size());
  if (inserted) {
    hosts.push_back(ChunkHost{std::string(name), {}});
    hosts.back().totals.t.reserve_address_space(row_bound_);
    hosts.back().totals.w.reserve_address_space(row_bound_);
  }
  last_host_ = it->second;
  return last_host_;
}

std::size_t CpuChunk::socket_id(std::size_t host, long long socket) {
  if (last_socket_ != SIZE_MAX && sockets[last_socket_].host == host &&
      sockets[last_socket_].socket == socket) {
    return last_socket_;
  }
  const auto [it, inserted] = socket_index_.try_emplace({host, socket}, sockets.size());
  if (inserted) {
    sockets.emplace_back();
    sockets.back().host = host;
    sockets.back().socket = socket;
    if (c_->wide) {
      sockets.back().t.reserve_address_space(row_bound_);
      sockets.back().power.reserve_address_space(row_bound_);
    }
  }
  last_socket_ = it->second;
  return last_socket_;
}

void CpuChunk::note_source(ChunkSocket& s, std::string_view source) {
  if (!s.sources.empty() && s.sources.back() == source) return;
  for (const auto& known : s.sources) {
    if (known == source) return;
  }
  s.sources.emplace_back(source);
}

void CpuChunk::add_wide(ChunkSocket& s, std::span<const std::string_view> cells, double t) {
  const std::size_t row = s.t.size();
  s.t.push_back(t);
  const auto power = artifacts::parse_cell_double(cell(cells, c_->power_w));
  s.power.push_back(power ? *power : kNaN);
  for (std::size_t i = 0; i < 3; ++i) {
    push_column(s.rails[i], row, cell(cells, c_->rails[i]), row_bound_);
  }
  push_column(s.module, row, cell(cells, c_->module_w), row_bound_);
  if (!s.has_first_sensor) {
    s.has_first_sensor = true;
    const std::string_view sensor = cell(cells, c_->sensor);
    s.first_sensor = sensor.empty() ? "power_w" : std::string(sensor);
  }
}

void CpuChunk::add_long(ChunkSocket& s, std::span<const std::string_view> cells, double t) {
  const auto power = artifacts::parse_cell_double(cell(cells, c_->power_w));
  if (!power) return;
  const std::string_view name = cell(cells, c_->sensor);
  if (s.last_sensor >= s.sensors.size() || s.sensors[s.last_sensor].name != name) {
    s.last_sensor = s.sensors.size();
    for (std::size_t i = 0; i < s.sensors.size(); ++i) {
      if (s.sensors[i].name == name) s.last_sensor = i;
    }
    if (s.last_sensor == s.sensors.size()) {
      s.sensors.push_back(ChunkSensor{std::string(name), classify_sensor(name), {}});
    }
  }
  ChunkSensor& sensor = s.sensors[s.last_sensor];
  sensor.samples.t.push_back(t);
  sensor.samples.w.push_back(*power);
  const int slot = rail_slot(sensor.kind);
  Pairs* extra = slot >= 0                           ? &s.long_rails[static_cast<std::size_t>(slot)]
                 : sensor.kind == SensorKind::module ? &s.long_module
                                                     : nullptr;
  if (extra != nullptr) {
    extra->t.push_back(t);
    extra->w.push_back(*power);
  }
}

void CpuChunk::add(const artifacts::CsvRecord& record) {
  const auto cells = record.cells;
  ++rows;
  const auto t = artifacts::parse_cell_double(cell(cells, c_->timestamp_unix));
  if (!t) {
    ++skipped;
    return;
  }
  const std::size_t host = host_id(cell(cells, c_->hostname));
  const std::string_view socket_text = cell(cells, c_->socket_id);
  if (!socket_text.empty()) {
    const auto socket = artifacts::parse_cell_int(socket_text);
    if (!socket) {
      ++skipped;
      return;
    }
    ChunkSocket& s = sockets[socket_id(host, *socket)];
    if (c_->wide) {
      add_wide(s, cells, *t);
    } else {
      add_long(s, cells, *t);
    }
    note_source(s, cell(cells, c_->source));
    for (std::size_t i = 0; i < 5; ++i) {
      const auto u = artifacts::parse_cell_double(cell(cells, c_->util[i]));
      if (!u) continue;
      s.util[i].t.push_back(*t);
      s.util[i].w.push_back(*u);
    }
  }
  const std::string_view total_text = cell(cells, c_->total_power_w);
  if (total_text.empty()) return;  // a scrape without a node total: skipped, never a zero
  const auto total = artifacts::parse_cell_double(total_text);
  if (!total) return;
  Pairs& totals = hosts[host].totals;
  // Every socket row of a scrape repeats the node total; collapse the repeats as they come
  // so that memory follows scrapes, not rows (the last row wins, as in the reference).
  if (!totals.t.empty() && totals.t.back() == *t) {
    totals.w.back() = *total;
    return;
  }
  totals.t.push_back(*t);
  totals.w.push_back(*total);
}

}  // namespace cpupower::report
