// Loading a CPU samples file of any layout into tracks. A large file is read in as many byte
// ranges as there are threads, each into its own Part; the parts are then joined in file
// order, and every host gets its sorted time column with its sockets' and node's tracks on it.
//
// Every host has one time column: the times of its rows in file order, a time repeated by the
// next row of that host kept once (the socket rows of one scrape share their timestamp). The
// node total and, in the one-row-per-socket layouts, every column of the host's sockets hold
// one value per entry of it (NaN where a row lacks the cell or the socket has no row), so a
// large file stores its times once per scrape, not once per socket and again for the node.

#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <map>
#include <mutex>
#include <numeric>
#include <thread>
#include <unordered_map>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "artifacts/csv.hpp"
#include "artifacts/host_samples.hpp"
#include "artifacts/row_issues.hpp"
#include "rails/rails.hpp"
#include "report/cpu_data.hpp"
#include "report/parallel.hpp"

namespace cpupower::report {
namespace {

using artifacts::CsvRecord;
using artifacts::RowIssues;
namespace col = artifacts::host_column;
using Column = std::vector<double>;  // empty until the first value: absent columns cost nothing

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr std::size_t kMinBytesPerThread = 8u << 20;  // smaller files are read on one thread

struct Pairs {
  std::vector<double> t, w;
  void push(double time, double value) {
    t.push_back(time);
    w.push_back(value);
  }
  void append(Pairs& from) {
    t.insert(t.end(), from.t.begin(), from.t.end());
    w.insert(w.end(), from.w.begin(), from.w.end());
    from = {};
  }
};

void pad(Column& c, std::size_t n) {
  if (c.size() < n) c.resize(n, kNaN);
}

// Puts v at `entry` (the host's last entry so far): a later row at the same time replaces the
// value unless its cell is missing (the last row wins; a blank cell is no value).
void put(Column& c, std::size_t entry, double v) {
  if (c.size() > entry) {
    if (!std::isnan(v)) c[entry] = v;
    return;
  }
  if (c.empty() && std::isnan(v)) return;
  pad(c, entry);
  c.push_back(v);
}

// Appends a later part's column whose entry 0 lands at `base` (shared with this column's last
// entry when the part starts inside a scrape).
void append_column(Column& into, Column& from, std::size_t base, bool shared) {
  if (from.empty()) return;
  std::size_t j = 0;
  if (shared) {
    put(into, base, from[0]);
    j = 1;
  }
  if (from.size() > j) {
    pad(into, base + j);
    into.insert(into.end(), from.begin() + static_cast<std::ptrdiff_t>(j), from.end());
  }
  from = {};
}

struct Socket {
  long long id = 0;
  Column power;                                 // wide layouts: one value per host entry
  std::array<Column, artifacts::kRails> rails;  // cpu_rail, soc, dram
  Column module;
  std::vector<std::pair<std::string, Pairs>> sensors;  // long layouts, first-seen order
  std::array<Pairs, artifacts::kRails> long_rails;
  Pairs long_module;
  std::array<Pairs, artifacts::kUtils> util;
  std::optional<std::string> first_sensor;
  std::vector<std::string> sources;

  Pairs& sensor(std::string_view name) {
    for (auto& [n, pairs] : sensors) {
      if (n == name) return pairs;
    }
    return sensors.emplace_back(std::string(name), Pairs{}).second;
  }
  void note_source(std::string_view s) {
    if (!sources.empty() && sources.back() == s) return;
    if (std::find(sources.begin(), sources.end(), s) == sources.end()) sources.emplace_back(s);
  }
};

struct Host {
  std::string name;
  std::vector<double> t;
  Column total;
  std::vector<Socket> sockets;
  std::size_t next = SIZE_MAX;  // the host whose row last followed one of this host's
  std::size_t repeats = 0;      // socket rows at an instant this socket already had

  Socket& socket(long long id) {
    for (auto& s : sockets) {
      if (s.id == id) return s;
    }
    sockets.push_back(Socket{});
    sockets.back().id = id;
    return sockets.back();
  }
};

// What one byte range of the file holds, in file order.
struct Part {
  std::vector<Host> hosts;
  std::size_t rows = 0;
  RowIssues issues;
  std::size_t lines = 0;  // physical lines of the range
  std::size_t first_offset = 0, stop_offset = 0;
  bool saw_quote = false;
  std::string error;

  struct Hash {  // finds a host by string_view without building a string
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, std::size_t, Hash, std::equal_to<>> index;

  // Room for `factor` times what every column holds now (plus a little).
  void reserve(double factor) {
    const auto more = [&](std::size_t n) {
      return static_cast<std::size_t>(static_cast<double>(n) * factor * 1.02) + 64;
    };
    for (Host& h : hosts) {
      const std::size_t n = more(h.t.size());
      h.t.reserve(n);
      if (!h.total.empty()) h.total.reserve(n);
      for (Socket& s : h.sockets) {
        if (!s.power.empty()) s.power.reserve(n);
        for (Column& rail : s.rails) {
          if (!rail.empty()) rail.reserve(n);
        }
        if (!s.module.empty()) s.module.reserve(n);
        for (auto& [name, pairs] : s.sensors) {
          pairs.t.reserve(more(pairs.t.size()));
          pairs.w.reserve(more(pairs.w.size()));
        }
      }
    }
  }
  std::size_t last_host = SIZE_MAX;

  // Rows come host after host in the same order every scrape: the last row's host, or the
  // one that followed it last time, almost always match without a hash.
  Host& host(std::string_view name) {
    if (last_host < hosts.size()) {
      if (hosts[last_host].name == name) return hosts[last_host];
      const std::size_t next = hosts[last_host].next;
      if (next < hosts.size() && hosts[next].name == name) return hosts[last_host = next];
    }
    std::size_t found = 0;
    if (const auto it = index.find(name); it != index.end()) {
      found = it->second;
    } else {
      found = hosts.size();
      index.emplace(name, found);
      hosts.push_back(Host{std::string(name), {}, {}, {}, SIZE_MAX, 0});
    }
    if (last_host < hosts.size()) hosts[last_host].next = found;
    return hosts[last_host = found];
  }
};

// A rail's index in kCpuRailColumns (cpu_rail, soc, dram: consecutive kinds), or -1.
int rail_slot(SensorKind kind) {
  const int slot = static_cast<int>(kind) - static_cast<int>(SensorKind::cpu_rail);
  return slot >= 0 && slot < static_cast<int>(artifacts::kRails) ? slot : -1;
}

// Reads records into a Part by the columns' names.
class RowReader {
 public:
  RowReader(const artifacts::CpuCsvColumns& c, std::size_t header_cells, Part& part)
      : c_(c), header_cells_(header_cells), part_(part) {}

  void add(const CsvRecord& r) {
    ++part_.rows;
    if (!artifacts::whole_record(r, header_cells_, part_.issues)) return;
    const auto cell = [&](std::size_t column) { return c_.cell(r.cells, column); };
    const std::string_view time_text = cell(col::kTimestampUnix);
    double t = 0;
    if (!last_time_.lookup(time_text, &t)) {
      if (!artifacts::read_time(time_text, r.line, part_.issues, &t)) return;
      last_time_.store(time_text, t);
    }
    const std::string_view host_name = cell(col::kHostname);
    std::uint32_t socket = 0;
    if (!artifacts::read_hostname(host_name, r.line, part_.issues) ||
        !artifacts::read_socket_id(cell(col::kSocketId), r.line, part_.issues, &socket)) {
      return;
    }
    // Every reading first: a reading above its physical bound skips the whole row.
    double power = 0, total = 0, module = 0;
    std::array<double, artifacts::kRails> rails{};
    const auto watts = [&](std::size_t column, double* out) {
      return artifacts::read_watts(cell(column), artifacts::kHostColumns[column], r.line,
                                   part_.issues, out);
    };
    const std::string_view total_text = cell(col::kTotalPowerW);
    if (!last_total_.lookup(total_text, &total)) {
      if (!watts(col::kTotalPowerW, &total)) return;
      if (!std::isnan(total)) last_total_.store(total_text, total);
    }
    if (!watts(col::kPowerW, &power) || !watts(col::kModuleW, &module)) return;
    for (std::size_t k = 0; k < artifacts::kRails; ++k) {
      if (!watts(col::kRail + k, &rails[k])) return;
    }
    Host& h = part_.host(host_name);
    if (h.t.empty() || h.t.back() != t) h.t.push_back(t);
    const std::size_t entry = h.t.size() - 1;
    Socket& s = h.socket(socket);
    if (c_.wide) {
      if (s.power.size() > entry) ++h.repeats;  // this socket already has a row at this time
      put(s.power, entry, power);
      if (s.power.size() <= entry) pad(s.power, entry + 1);  // a row, even without a value
      for (std::size_t k = 0; k < artifacts::kRails; ++k) put(s.rails[k], entry, rails[k]);
      put(s.module, entry, module);
      if (!s.first_sensor) {
        const std::string_view sensor = cell(col::kSensor);
        s.first_sensor = sensor.empty() ? "power_w" : std::string(sensor);
      }
    } else if (!std::isnan(power)) {
      h.repeats += add_long(s, cell(col::kSensor), t, power) ? 1 : 0;
    }
    s.note_source(cell(col::kSource));
    for (std::size_t k = 0; k < artifacts::kUtils; ++k) {
      const std::string_view text = cell(col::kUtil + k);
      double u = 0;
      if (!text.empty() && artifacts::parse_double(text, &u) && std::isfinite(u)) {
        s.util[k].push(t, u);
      }
    }
    put(h.total, entry, total);  // a scrape without a node total is no zero
  }

 private:
  // True when the sensor already had a reading at `t` (the row repeats one read before).
  static bool add_long(Socket& s, std::string_view name, double t, double power) {
    Pairs& pairs = s.sensor(name);
    const bool repeat = !pairs.t.empty() && pairs.t.back() == t;
    pairs.push(t, power);
    const SensorKind kind = classify_sensor(name);
    if (const int slot = rail_slot(kind); slot >= 0) {
      s.long_rails[static_cast<std::size_t>(slot)].push(t, power);
    } else if (kind == SensorKind::module) {
      s.long_module.push(t, power);
    }
    return repeat;
  }

  // The text of the last number parsed from one column and its value. The rows of one scrape
  // repeat its timestamp and node total, so comparing a few bytes replaces most of their
  // parses (a 17-digit timestamp is the costliest cell of a row; docs/performance.md).
  struct LastNumber {
    std::string text;
    double value = 0;
    bool lookup(std::string_view cell, double* out) const {
      if (cell.empty() || cell != text) return false;
      *out = value;
      return true;
    }
    void store(std::string_view cell, double v) {
      text.assign(cell);
      value = v;
    }
  };

  const artifacts::CpuCsvColumns& c_;
  std::size_t header_cells_;
  Part& part_;
  LastNumber last_time_, last_total_;
};

// Reads records until the reader ends; `skip_header` drops the first one (the header). Once
// the first rows show each host's share and the bytes a row takes, the columns reserve room
// for the `plan_bytes` this part is expected to hold: a column written once into memory it
// owns costs half the time of one that doubles its way up (docs/performance.md).
template <typename Reader>
void read_part(Reader& reader, const artifacts::CpuCsvColumns& c, std::size_t header_cells,
               bool skip_header, std::size_t plan_bytes, Part& part) {
  RowReader rows(c, header_cells, part);
  CsvRecord r;
  std::vector<artifacts::CsvDamage> damage;
  const std::size_t start = reader.offset();
  constexpr std::size_t kSampleRows = 1u << 16;
  while (reader.next(r, damage)) {
    if (skip_header) {
      skip_header = false;
      continue;
    }
    rows.add(r);
    if (part.rows == kSampleRows && plan_bytes > 0 && reader.offset() > start) {
      part.reserve(static_cast<double>(plan_bytes) / static_cast<double>(reader.offset() - start));
    }
  }
  part.issues.add_damage(damage);
  part.saw_quote = reader.saw_quote();
}

// Appends `from` (the part after `into` in the file) to `into`.
void join(Part& into, Part& from) {
  into.issues.append(from.issues, into.lines);
  into.rows += from.rows;
  into.lines += from.lines;
  for (Host& f : from.hosts) {
    Host& h = into.host(f.name);
    const std::size_t n = h.t.size();
    const bool shared = n > 0 && !f.t.empty() && f.t.front() == h.t.back();
    const std::size_t base = n - (shared ? 1 : 0);
    append_column(h.total, f.total, base, shared);
    for (Socket& fs : f.sockets) {
      Socket& s = h.socket(fs.id);
      append_column(s.power, fs.power, base, shared);
      for (std::size_t k = 0; k < artifacts::kRails; ++k)
        append_column(s.rails[k], fs.rails[k], base, shared);
      append_column(s.module, fs.module, base, shared);
      for (auto& [name, pairs] : fs.sensors) s.sensor(name).append(pairs);
      for (std::size_t k = 0; k < artifacts::kRails; ++k) s.long_rails[k].append(fs.long_rails[k]);
      s.long_module.append(fs.long_module);
      for (std::size_t k = 0; k < artifacts::kUtils; ++k) s.util[k].append(fs.util[k]);
      if (!s.first_sensor) s.first_sensor = fs.first_sensor;
      for (const auto& src : fs.sources) s.note_source(src);
    }
    h.t.insert(h.t.end(), f.t.begin() + (shared ? 1 : 0), f.t.end());
    h.repeats += f.repeats;
    f = {};
  }
}

// Sorts a host's entries by time (stable) and collapses equal times, each column keeping its
// last value (a missing one does not overwrite), as upstream's report keeps one value per time
// and column. Entries of one time apart in the file are that instant read again: each value of
// a `rows` column (a socket's power_w) met twice is one repeated row, added to *repeats.
void sort_and_collapse(std::vector<double>& t, const std::vector<Column*>& cols,
                       const std::vector<Column*>& rows, std::size_t* repeats) {
  if (!std::is_sorted(t.begin(), t.end())) {
    std::vector<std::size_t> order(t.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return t[a] < t[b]; });
    const auto permute = [&](std::vector<double>& v) {
      std::vector<double> out(v.size());
      for (std::size_t i = 0; i < order.size(); ++i) out[i] = v[order[i]];
      v = std::move(out);
    };
    permute(t);
    for (Column* c : cols) permute(*c);
  }
  if (std::adjacent_find(t.begin(), t.end()) == t.end()) return;
  std::size_t out = 0;
  for (std::size_t i = 0; i < t.size(); ++i) {
    if (out > 0 && t[out - 1] == t[i]) {
      for (const Column* c : rows) {
        if (!std::isnan((*c)[i]) && !std::isnan((*c)[out - 1])) ++*repeats;
      }
      for (Column* c : cols) {
        if (!std::isnan((*c)[i])) (*c)[out - 1] = (*c)[i];
      }
      continue;
    }
    t[out] = t[i];
    for (Column* c : cols) (*c)[out] = (*c)[i];
    ++out;
  }
  t.resize(out);
  for (Column* c : cols) c->resize(out);
}

Track pairs_track(Pairs& p, bool keep_last) {
  stable_sort_by_time(p.t, p.w, keep_last);
  return make_track(std::move(p.t), std::move(p.w));
}

CpuSocket socket_tracks(const std::string& host, Socket& s, const Times& times, bool wide) {
  CpuSocket out;
  out.host = host;
  out.socket = s.id;
  out.sources = s.sources;
  if (wide) {
    out.power = Track(times, std::move(s.power));
    for (std::size_t k = 0; k < artifacts::kRails; ++k) {
      if (!s.rails[k].empty()) out.rails[k] = Track(times, std::move(s.rails[k]));
    }
    if (!s.module.empty()) out.module = Track(times, std::move(s.module));
    out.sensor = s.first_sensor.value_or("power_w");
    out.dcgm = std::find(out.sources.begin(), out.sources.end(), "dcgm") != out.sources.end();
    out.rapl = std::find(out.sources.begin(), out.sources.end(), "rapl") != out.sources.end();
  } else {
    // One sensor per socket for the whole file: the first of total, DCGM, cpu_rail, soc,
    // dram, module, other; ties by name.
    std::sort(s.sensors.begin(), s.sensors.end(), [](const auto& a, const auto& b) {
      return std::pair(classify_sensor(a.first), a.first) <
             std::pair(classify_sensor(b.first), b.first);
    });
    if (!s.sensors.empty()) {
      out.sensor = s.sensors.front().first;
      out.dcgm = classify_sensor(out.sensor) == SensorKind::dcgm;
      const auto named = rails::parse_sensor_name(out.sensor);
      out.rapl = named && named->rapl;
      out.power = pairs_track(s.sensors.front().second, true);
      std::vector<std::string> others;
      for (std::size_t i = 1; i < s.sensors.size(); ++i) others.push_back(s.sensors[i].first);
      std::sort(others.begin(), others.end());
      out.other_sensors = std::move(others);
    }
    for (std::size_t k = 0; k < artifacts::kRails; ++k) {
      if (!s.long_rails[k].t.empty()) out.rails[k] = pairs_track(s.long_rails[k], true);
    }
    if (!s.long_module.t.empty()) out.module = pairs_track(s.long_module, true);
  }
  for (std::size_t k = 0; k < artifacts::kUtils; ++k) {
    if (!s.util[k].t.empty()) out.util[k] = pairs_track(s.util[k], false);
  }
  return out;
}

// One host's tracks: its columns made as long as its times, sorted and collapsed together
// when the file is out of order, on one shared time column.
void host_tracks(Host& h, bool wide, std::vector<CpuSocket>& sockets, std::optional<CpuNode>& node,
                 std::size_t* repeats) {
  std::sort(h.sockets.begin(), h.sockets.end(),
            [](const Socket& a, const Socket& b) { return a.id < b.id; });
  const std::size_t n = h.t.size();
  std::vector<Column*> cols;
  const auto add = [&](Column& c) {
    if (c.empty()) return;
    pad(c, n);
    cols.push_back(&c);
  };
  add(h.total);
  std::vector<Column*> rows;
  if (wide) {
    for (Socket& s : h.sockets) {
      if (s.power.empty()) s.power.assign(n, kNaN);
      add(s.power);
      rows.push_back(&s.power);
      for (auto& rail : s.rails) add(rail);
      add(s.module);
    }
  }
  *repeats = h.repeats;
  sort_and_collapse(h.t, cols, rows, repeats);
  if (!wide) {
    // One-row-per-rail layouts: a sensor's reading at a time it already had, out of order.
    for (Socket& s : h.sockets) {
      for (auto& [name, pairs] : s.sensors) {
        if (std::is_sorted(pairs.t.begin(), pairs.t.end())) continue;  // all counted as read
        std::vector<double> times = pairs.t;
        std::sort(times.begin(), times.end());
        std::size_t adjacent = 0;
        for (std::size_t i = 1; i < pairs.t.size(); ++i) adjacent += pairs.t[i] == pairs.t[i - 1];
        std::size_t equal = 0;
        for (std::size_t i = 1; i < times.size(); ++i) equal += times[i] == times[i - 1];
        *repeats += equal - adjacent;  // the adjacent ones were counted as they were read
      }
    }
  }
  const Times times = std::make_shared<const std::vector<double>>(std::move(h.t));
  for (Socket& s : h.sockets) sockets.push_back(socket_tracks(h.name, s, times, wide));
  if (!h.total.empty()) node = CpuNode{h.name, Track(times, std::move(h.total))};
}

CpuData finish(Part& all, const artifacts::CpuCsvColumns& c, const std::vector<std::string>& header,
               unsigned threads) {
  CpuData data;
  data.wide = c.wide;
  data.layout = artifacts::describe_cpu_header(header);
  data.rows = all.rows;
  data.issues = std::move(all.issues);
  std::sort(all.hosts.begin(), all.hosts.end(),
            [](const Host& a, const Host& b) { return a.name < b.name; });
  struct Out {
    std::vector<CpuSocket> sockets;
    std::optional<CpuNode> node;
    std::size_t repeats = 0;
  };
  std::vector<Out> out(all.hosts.size());
  parallel_for(all.hosts.size(), threads, [&](std::size_t i) {
    host_tracks(all.hosts[i], c.wide, out[i].sockets, out[i].node, &out[i].repeats);
  });
  for (std::size_t i = 0; i < out.size(); ++i) {
    data.repeated_rows += out[i].repeats;
    data.hosts.push_back(all.hosts[i].name);
    for (auto& s : out[i].sockets) data.sockets.push_back(std::move(s));
    if (out[i].node) data.nodes.push_back(std::move(*out[i].node));
  }
  return data;
}

// The header's columns, or an error naming the first required one that is missing.
Result<artifacts::CpuCsvColumns> columns_of(const std::vector<std::string>& header,
                                            const std::string& where) {
  auto c = artifacts::CpuCsvColumns::from_header(header);
  const std::string missing = c.missing_required();
  if (!missing.empty()) return Error{where + "no '" + missing + "' column"};
  return c;
}

// Reads [begin, end) of the file into a part (the header is in the first range).
Part read_range(const std::string& path, const artifacts::CpuCsvColumns& c,
                std::size_t header_cells, std::size_t begin, std::size_t end) {
  Part part;
  auto reader = artifacts::CsvFileReader::open(path, begin, end);
  if (!reader) {
    part.error = reader.error();
    return part;
  }
  // The first part plans for the whole file, so that the later parts are appended in place.
  const std::size_t plan = begin == 0 ? reader->size() : std::min(end, reader->size()) - begin;
  read_part(*reader, c, header_cells, begin == 0, plan, part);
  part.error = reader->error();
  part.lines = reader->lines();
  part.first_offset = reader->first_offset();
  part.stop_offset = reader->stop_offset();
  return part;
}

}  // namespace

SensorKind classify_sensor(std::string_view sensor) {
  // rails::Kind order; a firmware "Module Power Socket N" label is other (module power is
  // NVML's alone: a file names it CPU<n>:modulePowerUsageW or carries it in module_w).
  constexpr SensorKind kOf[] = {SensorKind::total, SensorKind::cpu_rail, SensorKind::soc,
                                SensorKind::dram,  SensorKind::module,   SensorKind::other};
  if (const auto named = rails::parse_sensor_name(sensor)) {
    return named->dcgm ? SensorKind::dcgm : kOf[static_cast<int>(named->kind)];
  }
  return kOf[static_cast<int>(rails::classify_oem(sensor).kind)];
}

std::vector<long long> expected_sockets(const CpuData& cpu, const std::string& host,
                                        const RunExpectations& expect) {
  if (const auto it = expect.cpu_node.find(host);
      it != expect.cpu_node.end() && it->second.sockets_expected) {
    return *it->second.sockets_expected;
  }
  std::vector<long long> out;  // sockets are sorted by (host, socket)
  for (const CpuSocket& s : of_host(cpu.sockets, host)) {
    if (s.power.any_value()) out.push_back(s.socket);
  }
  return out;
}

std::vector<std::string> drop_partial_totals(CpuData& cpu, const RunExpectations& expect) {
  std::vector<std::string> warnings;
  for (CpuNode& node : cpu.nodes) {
    const std::vector<long long> wanted = expected_sockets(cpu, node.host, expect);
    std::vector<const Track*> tracks;
    std::vector<long long> ids;              // of `tracks`
    std::optional<long long> absent_socket;  // an expected socket without any row
    for (const long long id : wanted) {
      const CpuSocket* s = cpu.find_socket(node.host, id);
      if (s && s->power.any_value()) {
        tracks.push_back(&s->power);
        ids.push_back(id);
      } else if (!absent_socket) {
        absent_socket = id;
      }
    }
    const Track& total = node.total;
    std::vector<double> values;  // a copy of the totals, made at the first one dropped
    std::vector<std::size_t> pos(tracks.size(), 0);
    std::size_t dropped = 0, readings = 0;
    std::optional<long long> first_socket;
    double first_at = 0;
    for (std::size_t i = 0; i < total.size(); ++i) {
      if (!total.has(i)) continue;
      ++readings;
      const double at = total.time(i);
      std::optional<long long> lacking = absent_socket;
      for (std::size_t k = 0; k < tracks.size() && !lacking; ++k) {
        const Track& st = *tracks[k];
        bool has = false;
        if (st.t == total.t) {
          has = st.has(i);  // the wide layouts: one time column per host
        } else {
          while (pos[k] < st.size() && st.time(pos[k]) < at) ++pos[k];
          has = pos[k] < st.size() && st.time(pos[k]) == at && st.has(pos[k]);
        }
        if (!has) lacking = ids[k];
      }
      if (!lacking) continue;
      if (dropped++ == 0) {
        first_socket = lacking;
        first_at = at;
        values = total.v;
      }
      values[i] = std::numeric_limits<double>::quiet_NaN();
    }
    if (dropped == 0) continue;
    node.total = Track(total.t, std::move(values));
    warnings.push_back("cpu/" + node.host + ": " + std::to_string(dropped) + " of " +
                       std::to_string(readings) +
                       " total_power_w readings not used: taken while an expected socket had no "
                       "reading (first at " +
                       std::to_string(first_at) + ", socket " + std::to_string(*first_socket) +
                       "), so not the whole node");
  }
  // A host left without any total is said by the report's own warning.
  cpu.nodes.erase(std::remove_if(cpu.nodes.begin(), cpu.nodes.end(),
                                 [](const CpuNode& n) { return !n.total.any_value(); }),
                  cpu.nodes.end());
  return warnings;
}

std::vector<std::string> uneven_socket_warnings(
    const std::vector<std::pair<std::string, std::vector<long long>>>& nodes) {
  std::vector<std::string> warnings;
  const auto most = std::max_element(nodes.begin(), nodes.end(), [](const auto& a, const auto& b) {
    return a.second.size() < b.second.size();
  });
  if (most == nodes.end()) return warnings;
  for (const auto& [host, ids] : nodes) {
    if (ids.empty() || ids.size() == most->second.size()) continue;
    warnings.push_back(fmt::format(
        "cpu/{}: {} socket{} ({}) where cpu/{} has {} ({}); a power meter its exporter did not "
        "find when it started is neither read nor expected, and the node's figures would then "
        "be short of the node: unless the nodes differ in kind, see that exporter's log",
        host, ids.size(), ids.size() == 1 ? "" : "s", fmt::join(ids, ", "), most->first,
        most->second.size(), fmt::join(most->second, ", ")));
  }
  return warnings;
}

std::vector<std::string> uneven_socket_counts(const CpuData& cpu, const RunExpectations& expect) {
  std::vector<std::pair<std::string, std::vector<long long>>> nodes;
  for (const std::string& host : cpu.hosts)
    nodes.emplace_back(host, expected_sockets(cpu, host, expect));
  return uneven_socket_warnings(nodes);
}

const CpuSocket* CpuData::find_socket(std::string_view host, long long socket) const {
  // Sockets are sorted by (host, socket).
  const auto it =
      std::lower_bound(sockets.begin(), sockets.end(), std::pair(host, socket),
                       [](const CpuSocket& s, const std::pair<std::string_view, long long>& k) {
                         return std::pair<std::string_view, long long>(s.host, s.socket) < k;
                       });
  if (it == sockets.end() || it->host != host || it->socket != socket) return nullptr;
  return &*it;
}

Result<CpuData> load_cpu_samples(const std::string& path, unsigned threads) {
#if defined(__GLIBC__)
  // glibc raises its mmap threshold each time a large block is freed, and then keeps later
  // large blocks in its heaps, where freed ones stay resident: a fixed threshold returns
  // every freed column to the system (peak RSS of a 10-million-row load 598 -> 419 MB,
  // docs/performance.md). Other C libraries need nothing here.
  static std::once_flag fixed;
  std::call_once(fixed, [] { mallopt(M_MMAP_THRESHOLD, 128 * 1024); });
#endif
  // The header from the file's first bytes: a first line that is no header (2 GiB of NUL
  // bytes, a column named twice) is an error naming the line, without reading the rest.
  const auto first = artifacts::read_csv_header(path);
  if (!first) {
    return Error{first.error().starts_with(path) ? first.error() : path + ": " + first.error()};
  }
  std::size_t size = 0;
  {
    auto reader = artifacts::CsvFileReader::open(path);
    if (!reader) return Error{reader.error()};
    size = reader->size();
  }
  if (!*first) {
    // A collector that died before writing its header left a leg without samples; the
    // other leg still reports.
    CpuData empty;
    empty.path = path;
    empty.layout = "empty";
    empty.empty = true;
    return empty;
  }
  const std::vector<std::string>& header = **first;
  const auto c = columns_of(header, path + ": ");
  if (!c) return Error{c.error()};
  threads = std::max(1u, threads);
  const std::size_t pieces = std::min<std::size_t>(1 + size / kMinBytesPerThread, threads);
  std::vector<Part> parts(pieces);
  parallel_for(pieces, static_cast<unsigned>(pieces), [&](std::size_t k) {
    parts[k] = read_range(path, *c, header.size(), size * k / pieces,
                          k + 1 == pieces ? SIZE_MAX : size * (k + 1) / pieces);
  });
  // The ranges must meet exactly: a quoted cell holding a line break can make a range start
  // inside a record, so a quoted file is read again in one piece.
  bool clean = true;
  for (std::size_t k = 0; k < pieces; ++k) {
    if (!parts[k].error.empty()) return Error{parts[k].error};
    if (pieces > 1 && (parts[k].saw_quote ||
                       (k + 1 < pieces && parts[k].stop_offset != parts[k + 1].first_offset))) {
      clean = false;
    }
  }
  if (!clean) {
    parts.clear();
    parts.push_back(read_range(path, *c, header.size(), 0, SIZE_MAX));
    if (!parts[0].error.empty()) return Error{parts[0].error};
  }
  for (std::size_t k = 1; k < parts.size(); ++k) join(parts[0], parts[k]);
  CpuData data = finish(parts[0], *c, header, threads);
  data.path = path;
  return data;
}

Result<CpuData> parse_cpu_samples_text(std::string_view text) {
  artifacts::CsvTextReader reader(text, true);
  artifacts::CsvRecord r;
  std::vector<artifacts::CsvDamage> damage;
  if (!reader.next(r, damage)) {
    if (!damage.empty()) return Error{artifacts::csv_header_problem({}, 0, damage)};
    return Error{"empty file (no header)"};
  }
  if (std::string problem = artifacts::csv_header_problem(r.cells, r.line, damage);
      !problem.empty()) {
    return Error{problem};
  }
  damage.clear();
  const std::vector<std::string> header(r.cells.begin(), r.cells.end());
  const auto c = columns_of(header, "");
  if (!c) return Error{c.error()};
  Part part;
  read_part(reader, *c, header.size(), false, 0, part);
  part.issues.add_damage(damage);
  return finish(part, *c, header, 1);
}

}  // namespace cpupower::report
