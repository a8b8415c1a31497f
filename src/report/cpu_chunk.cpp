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

// Makes `v` `n` values long (NaN for the missing ones), when it is shorter.
void pad(Values& v, std::size_t n) {
  if (v.size() < n) v.append_fill(n - v.size(), kNaN);
}

// A column that only materialises at its first value, so that files without rails or
// module_w cost nothing for them.
void materialise(Column& col, std::size_t bound) {
  if (col.present) return;
  col.present = true;
  col.v.reserve_address_space(bound);
}

// Puts this row's value (or NaN) at `entry`, the last entry of the host's times so far.
void push_column(Column& col, std::size_t entry, std::string_view text, std::size_t bound) {
  if (!col.present) {
    double v = kNaN;
    if (!artifacts::parse_number(text, &v)) return;
    materialise(col, bound);
    pad(col.v, entry);
    col.v.push_back(v);
    return;
  }
  pad(col.v, entry);
  col.v.push_text(text);
}

// A later row at the same time: its cell replaces the value at `entry` unless it is blank
// (the last row wins, and a blank cell is no value).
void overwrite_column(Column& col, std::size_t entry, std::string_view text, std::size_t bound) {
  double v = kNaN;
  if (!artifacts::parse_number(text, &v) || std::isnan(v)) return;
  materialise(col, bound);
  if (col.v.size() > entry) {
    col.v.set(entry, v);
    return;
  }
  pad(col.v, entry);
  col.v.push_back(v);
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

// Where a block's host times land in the absorbing chunk's: block entry j at entry base + j.
// When the block's first time repeats the chunk's last one (a scrape whose rows straddle
// the blocks), that entry is shared: `shared` is true and base is the chunk's last entry.
struct Landing {
  std::size_t base = 0;
  bool shared = false;
};

// Moves the values of a block's column behind this chunk's, per `at`, and empties it.
void absorb_values(Values& into, Values& from, Landing at) {
  std::size_t j = 0;
  if (at.shared && from.size() > 0) {
    const double v = from[0];
    if (into.size() > at.base) {
      if (!std::isnan(v)) into.set(at.base, v);
    } else {
      pad(into, at.base);
      into.push_back(v);
    }
    j = 1;
  }
  if (from.size() > j) {
    pad(into, at.base + j);
    into.append(from, j);
  }
  from.truncate(0);
}

void absorb_column(Column& into, Column& from, Landing at, std::size_t bound) {
  if (!from.present) return;
  materialise(into, bound);
  absorb_values(into.v, from.v, at);
  from.present = false;
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
  if (skipped == 0) first_skipped = std::move(block.first_skipped);
  skipped += block.skipped;
  block.rows = block.skipped = 0;
  block.first_skipped.clear();
  std::vector<Landing> landing(block.hosts.size());
  for (std::size_t i = 0; i < block.hosts.size(); ++i) {
    ChunkHost& from = block.hosts[i];
    ChunkHost& into = hosts[host_id(from.name)];
    const std::size_t n = into.t.size();
    const bool shared = n > 0 && !from.t.empty() && from.t[0] == into.t.back();
    landing[i] = {n - (shared ? 1 : 0), shared};
    absorb_column(into.total, from.total, landing[i], row_bound_);
    const std::size_t skip = shared ? 1 : 0;
    into.t.append(std::span<const double>(from.t.data() + skip, from.t.size() - skip));
    from.t.truncate(0);
  }
  for (std::size_t i = 0; i < block.sockets.size(); ++i) {
    const std::size_t index = global_socket(block, i);
    ChunkSocket& into = sockets[index];
    ChunkSocket& from = block.sockets[i];
    if (c_->wide) {
      const Landing at = landing[from.host];
      absorb_values(into.power, from.power, at);
      for (std::size_t k = 0; k < 3; ++k)
        absorb_column(into.rails[k], from.rails[k], at, row_bound_);
      absorb_column(into.module, from.module, at, row_bound_);
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
    hosts.push_back(ChunkHost{std::string(name), {}, {}, {}, {}});
    hosts.back().t.reserve_address_space(row_bound_);
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
  if (c_->wide) sockets.back().power.reserve_address_space(row_bound_);
  return index;
}

void CpuChunk::note_source(ChunkSocket& s, std::string_view source) {
  if (!s.sources.empty() && s.sources.back() == source) return;
  for (const auto& known : s.sources) {
    if (known == source) return;
  }
  s.sources.emplace_back(source);
}

void CpuChunk::add_wide(ChunkSocket& s, std::span<const std::string_view> cells,
                        std::size_t entry) {
  if (s.power.size() > entry) {  // this socket's second row at the same time
    overwrite_wide(s, cells, entry);
    return;
  }
  pad(s.power, entry);
  s.power.push_text(cell(cells, c_->power_w));
  for (std::size_t i = 0; i < 3; ++i) {
    push_column(s.rails[i], entry, cell(cells, c_->rails[i]), row_bound_);
  }
  push_column(s.module, entry, cell(cells, c_->module_w), row_bound_);
  if (!s.has_first_sensor) {
    s.has_first_sensor = true;
    const std::string_view sensor = cell(cells, c_->sensor);
    s.first_sensor = sensor.empty() ? "power_w" : std::string(sensor);
  }
}

void CpuChunk::overwrite_wide(ChunkSocket& s, std::span<const std::string_view> cells,
                              std::size_t entry) {
  double v = kNaN;
  if (artifacts::parse_number(cell(cells, c_->power_w), &v) && !std::isnan(v)) {
    s.power.set(entry, v);
  }
  for (std::size_t i = 0; i < 3; ++i) {
    overwrite_column(s.rails[i], entry, cell(cells, c_->rails[i]), row_bound_);
  }
  overwrite_column(s.module, entry, cell(cells, c_->module_w), row_bound_);
}

void CpuChunk::add_total(ChunkHost& h, std::string_view text, std::size_t entry) {
  Column& total = h.total;
  if (total.v.size() > entry) {  // an earlier row at this time had a total
    // Every socket row of a scrape repeats the node total: the same text again changes
    // nothing; another value replaces it (the last row wins, as in the reference).
    if (h.last_total.same(text)) return;
    double v = kNaN;
    if (!artifacts::parse_number(text, &v)) return;
    h.last_total.store(text);
    total.v.set(entry, v);
    return;
  }
  double v = kNaN;
  if (!total.present) {
    if (!artifacts::parse_number(text, &v)) return;
    materialise(total, row_bound_);
    pad(total.v, entry);
    total.v.push_back(v);
  } else {
    pad(total.v, entry);
    total.v.push_text(text);
  }
  h.last_total.store(text);
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

void CpuChunk::skip(std::string_view column, std::string_view cell, std::string_view wanted) {
  if (skipped++ == 0) first_skipped = artifacts::describe_bad_cell(column, cell, wanted);
}

void CpuChunk::skip_short(std::size_t cells) {
  if (skipped++ == 0) {
    first_skipped = "a row of " + std::to_string(cells) + " cell" + (cells == 1 ? "" : "s") +
                    ", without timestamp_unix";
  }
}

void CpuChunk::add(const artifacts::CsvRecord& record) {
  const auto cells = record.cells;
  ++rows;
  const std::string_view time_text = cell(cells, c_->timestamp_unix);
  double t = 0;
  if (!last_time_.lookup(time_text, &t)) {
    if (!artifacts::parse_number(time_text, &t)) {
      if (*c_->timestamp_unix < cells.size()) {
        skip("timestamp_unix", time_text);
      } else {
        skip_short(cells.size());
      }
      return;
    }
    last_time_.store(time_text, t);
  }
  const std::size_t host = host_id(cell(cells, c_->hostname));
  const std::string_view socket_text = cell(cells, c_->socket_id);
  long long socket = 0;
  if (!socket_text.empty() && !parse_socket(socket_text, &socket)) {
    skip("socket_id", socket_text, "an integer");
    return;
  }
  ChunkHost& h = hosts[host];
  if (h.t.empty() || h.t.back() != t) h.t.push_back(t);
  const std::size_t entry = h.t.size() - 1;
  if (!socket_text.empty()) {
    ChunkSocket& s = sockets[socket_id(host, socket)];
    if (c_->wide) {
      add_wide(s, cells, entry);
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
  // A scrape without a node total is skipped, never read as a zero.
  if (!total_text.empty()) add_total(h, total_text, entry);
}

}  // namespace cpupower::report
