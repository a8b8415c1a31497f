#include "report/cpu_chunk.hpp"

#include <algorithm>
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
  if (!col.present) {
    double v = kNaN;
    if (!artifacts::parse_number(text, &v)) return;
    col.present = true;
    col.v.reserve_address_space(bound);
    col.v.append_fill(row, kNaN);
    col.v.push_back(v);
    return;
  }
  col.v.push_text(text);
}

// Socket ids are single digits in practice; anything else takes Python int()'s rules.
bool parse_socket(std::string_view text, long long* out) {
  if (text.size() == 1 && static_cast<unsigned>(text[0] - '0') < 10) {
    *out = text[0] - '0';
    return true;
  }
  const auto v = artifacts::parse_cell_int(text);
  if (v) *out = *v;
  return v.has_value();
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

// Moves a block's pairs behind this chunk's and empties them, keeping their memory.
void absorb_pairs(Pairs& into, Pairs& from) {
  into.t.append(std::span<const double>(from.t.data(), from.t.size()));
  into.w.append(std::span<const double>(from.w.data(), from.w.size()));
  from.t.truncate(0);
  from.w.truncate(0);
}

// The same for an optional column; `before` rows precede the block's `rows` rows.
void absorb_column(Column& into, Column& from, std::size_t before, std::size_t rows,
                   std::size_t bound) {
  if (from.present) {
    if (!into.present) {
      into.present = true;
      into.v.reserve_address_space(bound);
      into.v.append_fill(before, kNaN);
    }
    into.v.append(from.v);
  } else if (into.present) {
    into.v.append_fill(rows, kNaN);
  }
  from.present = false;
  from.v.truncate(0);
}

}  // namespace

std::size_t CpuChunk::global_socket(CpuChunk& block, std::size_t index) {
  std::size_t& known = block.sockets[index].absorbed_into;
  if (known == SIZE_MAX) {
    const std::size_t host = host_id(block.hosts[block.sockets[index].host].name);
    known = socket_id(host, block.sockets[index].socket);
  }
  return known;
}

void CpuChunk::absorb(CpuChunk& block) {
  rows += block.rows;
  skipped += block.skipped;
  block.rows = block.skipped = 0;
  for (auto& h : block.hosts) absorb_pairs(hosts[host_id(h.name)].totals, h.totals);
  for (std::size_t i = 0; i < block.sockets.size(); ++i) {
    const std::size_t index = global_socket(block, i);
    ChunkSocket& into = sockets[index];
    ChunkSocket& from = block.sockets[i];
    if (c_->wide) {
      const std::size_t before = into.t.size();
      const std::size_t n = from.t.size();
      into.t.append(std::span<const double>(from.t.data(), n));
      into.power.append(from.power);
      from.t.truncate(0);
      from.power.truncate(0);
      for (std::size_t k = 0; k < 3; ++k)
        absorb_column(into.rails[k], from.rails[k], before, n, row_bound_);
      absorb_column(into.module, from.module, before, n, row_bound_);
    } else {
      for (auto& sensor : from.sensors) {
        auto it = std::find_if(into.sensors.begin(), into.sensors.end(),
                               [&](const ChunkSensor& s) { return s.name == sensor.name; });
        if (it == into.sensors.end()) {
          into.sensors.push_back(ChunkSensor{sensor.name, sensor.kind, {}});
          it = into.sensors.end() - 1;
        }
        absorb_pairs(it->samples, sensor.samples);
      }
      for (std::size_t k = 0; k < 3; ++k) absorb_pairs(into.long_rails[k], from.long_rails[k]);
      absorb_pairs(into.long_module, from.long_module);
    }
    for (std::size_t k = 0; k < 5; ++k) absorb_pairs(into.util[k], from.util[k]);
    if (!into.has_first_sensor && from.has_first_sensor) {
      into.has_first_sensor = true;
      into.first_sensor = from.first_sensor;
    }
    from.has_first_sensor = false;
    for (const auto& source : from.sources) note_source(into, source);
    from.sources.clear();
  }
}

std::size_t CpuChunk::host_id(std::string_view name) {
  // Rows come host after host in the same order every scrape: the last row's host, then the
  // host that followed it last time, almost always match. Otherwise a scan of the known
  // names beats hashing (and never allocates); the map only serves files with many hosts.
  if (last_host_ != SIZE_MAX) {
    if (hosts[last_host_].name == name) return last_host_;
    const std::size_t next = hosts[last_host_].next;
    if (next != SIZE_MAX && hosts[next].name == name) return last_host_ = next;
  }
  std::size_t found = SIZE_MAX;
  if (hosts.size() <= kLinearHosts) {
    for (std::size_t i = 0; i < hosts.size(); ++i) {
      if (hosts[i].name == name) {
        found = i;
        break;
      }
    }
  } else if (const auto it = host_index_.find(name); it != host_index_.end()) {
    found = it->second;
  }
  if (found == SIZE_MAX) {
    found = hosts.size();
    hosts.push_back(ChunkHost{std::string(name), {}, {}, {}});
    hosts.back().totals.t.reserve_address_space(row_bound_);
    hosts.back().totals.w.reserve_address_space(row_bound_);
    if (hosts.size() > kLinearHosts) {
      for (std::size_t i = host_index_.size(); i < hosts.size(); ++i) {
        host_index_.emplace(hosts[i].name, i);
      }
    }
  }
  if (last_host_ != SIZE_MAX) hosts[last_host_].next = found;
  last_host_ = found;
  return found;
}

std::size_t CpuChunk::socket_id(std::size_t host, long long socket) {
  for (const auto& [id, index] : hosts[host].sockets) {
    if (id == socket) return index;
  }
  const std::size_t index = sockets.size();
  hosts[host].sockets.emplace_back(socket, index);
  sockets.emplace_back();
  sockets.back().host = host;
  sockets.back().socket = socket;
  if (c_->wide) {
    sockets.back().t.reserve_address_space(row_bound_);
    sockets.back().power.reserve_address_space(row_bound_);
  }
  return index;
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
  s.power.push_text(cell(cells, c_->power_w));
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
  double power = 0;
  if (!artifacts::parse_number(cell(cells, c_->power_w), &power)) return;
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
  sensor.samples.w.push_back(power);
  const int slot = rail_slot(sensor.kind);
  Pairs* extra = slot >= 0                           ? &s.long_rails[static_cast<std::size_t>(slot)]
                 : sensor.kind == SensorKind::module ? &s.long_module
                                                     : nullptr;
  if (extra != nullptr) {
    extra->t.push_back(t);
    extra->w.push_back(power);
  }
}

void CpuChunk::add(const artifacts::CsvRecord& record) {
  const auto cells = record.cells;
  ++rows;
  const std::string_view time_text = cell(cells, c_->timestamp_unix);
  double t = 0;
  if (!last_time_.lookup(time_text, &t)) {
    if (!artifacts::parse_number(time_text, &t)) {
      ++skipped;
      return;
    }
    last_time_.store(time_text, t);
  }
  const std::size_t host = host_id(cell(cells, c_->hostname));
  const std::string_view socket_text = cell(cells, c_->socket_id);
  if (!socket_text.empty()) {
    long long socket = 0;
    if (!parse_socket(socket_text, &socket)) {
      ++skipped;
      return;
    }
    ChunkSocket& s = sockets[socket_id(host, socket)];
    if (c_->wide) {
      add_wide(s, cells, t);
    } else {
      add_long(s, cells, t);
    }
    note_source(s, cell(cells, c_->source));
    for (std::size_t i = 0; i < 5 && any_util_; ++i) {
      double u = 0;
      if (!artifacts::parse_number(cell(cells, c_->util[i]), &u)) continue;
      s.util[i].t.push_back(t);
      s.util[i].w.push_back(u);
    }
  }
  const std::string_view total_text = cell(cells, c_->total_power_w);
  if (total_text.empty()) return;  // a scrape without a node total: skipped, never a zero
  ChunkHost& h = hosts[host];
  Pairs& totals = h.totals;
  // Every socket row of a scrape repeats the node total; collapse the repeats as they come
  // so that memory follows scrapes, not rows (the last row wins, as in the reference).
  const bool same_time = !totals.t.empty() && totals.t.back() == t;
  double total = 0;
  if (same_time && h.last_total.lookup(total_text, &total)) return;  // the same value again
  if (!artifacts::parse_number(total_text, &total)) return;
  h.last_total.store(total_text, total);
  if (same_time) {
    totals.w.back() = total;
    return;
  }
  totals.t.push_back(t);
  totals.w.push_back(total);
}

}  // namespace cpupower::report
