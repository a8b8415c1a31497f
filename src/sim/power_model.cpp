#include "sim/power_model.hpp"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <set>

#include "common/text.hpp"

namespace cpupower::sim {
namespace {

// Field positions after the "cpuN" token in /proc/stat.
enum Field { kUser, kNice, kSystem, kIdle, kIowait, kIrq, kSoftirq, kSteal, kFieldCount };

std::vector<std::string_view> words(std::string_view line) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    const auto start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t') ++i;
    if (i > start) out.push_back(line.substr(start, i - start));
  }
  return out;
}

Error trace_fail(const std::string& name, std::size_t line, const std::string& why) {
  return Error{"trace " + name + ":" + std::to_string(line) + ": " + why};
}

}  // namespace

std::vector<CpuTimes> parse_proc_stat(std::string_view text) {
  std::vector<CpuTimes> out;
  for (const auto& raw : common::split(text, '\n')) {
    const auto fields = words(raw);
    if (fields.empty() || fields[0].size() <= 3 || fields[0].substr(0, 3) != "cpu") continue;
    const auto cpu = common::parse_u64(fields[0].substr(3));
    // Kernels before 2.6.11 print fewer columns; user..idle are always there.
    if (!cpu || *cpu > UINT32_MAX || fields.size() < 1 + kIowait) continue;
    std::uint64_t v[kFieldCount] = {};
    bool ok = true;
    for (std::size_t f = 0; f < kFieldCount && f + 1 < fields.size(); ++f) {
      const auto n = common::parse_u64(fields[f + 1]);
      if (!n) {
        ok = false;
        break;
      }
      v[f] = *n;
    }
    if (!ok) continue;
    CpuTimes t;
    t.cpu = static_cast<std::uint32_t>(*cpu);
    t.busy = v[kUser] + v[kNice] + v[kSystem] + v[kIrq] + v[kSoftirq] + v[kSteal];
    t.total = t.busy + v[kIdle] + v[kIowait];
    out.push_back(t);
  }
  return out;
}

double model_watts(Profile profile, rails::Kind kind, double u) {
  u = std::clamp(u, 0.0, 1.0);
  if (is_rapl_profile(profile)) {
    // An x86 package: its cores, and the rest of the package (uncore, I/O, memory
    // controller); an Intel package idles at ~70 W and reaches ~260 W, an AMD one, whose
    // I/O die draws more, ~100 to ~310 W. DRAM is outside the package.
    const bool intel = profile == Profile::x86_intel;
    const double core = intel ? 25.0 + 175.0 * u : 20.0 + 200.0 * u;
    const double uncore = intel ? 30.0 + 20.0 * u : 80.0 + 10.0 * u;
    switch (kind) {
      case rails::Kind::total:
        return core + uncore + (intel ? 15.0 : 0.0);
      case rails::Kind::cpu_rail:
        return core;
      case rails::Kind::soc:
        return uncore;
      case rails::Kind::dram:
        return 12.0 + 18.0 * u;
      case rails::Kind::module:
      case rails::Kind::other:
        break;
    }
    return 0.0;
  }
  const double cpu_rail = 41.0 + 162.0 * u;
  const double soc = 6.0 + 0.5 * u;
  const double dram = 8.0 + 12.0 * u;
  switch (kind) {
    case rails::Kind::cpu_rail:
      return cpu_rail;
    case rails::Kind::soc:
      return soc;
    case rails::Kind::dram:
      return dram;
    case rails::Kind::total:
      // The remainder is memory, regulators and fabric that the rails do not cover; both
      // platforms idle at ~96 W per socket.
      return profile == Profile::platform_uw ? cpu_rail + soc + dram + 41.0 : cpu_rail + soc + 49.0;
    case rails::Kind::module:
      // The whole GH200 module: the Grace socket plus the Hopper GPU, its HBM and the
      // regulators. The simulated node has no GPU load of its own, so the GPU share follows
      // the socket's load.
      return model_watts(profile, rails::Kind::total, u) + 120.0 + 480.0 * u;
    case rails::Kind::other:
      break;
  }
  return 0.0;
}

LoadTracker::LoadTracker(std::string proc_stat, std::uint32_t sockets,
                         std::chrono::milliseconds time_constant)
    : path_(std::move(proc_stat)),
      sockets_(std::max<std::uint32_t>(sockets, 1)),
      time_constant_s_(std::max(0.001, std::chrono::duration<double>(time_constant).count())),
      smoothed_(sockets_, 0.0) {}

Result<std::vector<LoadTracker::Totals>> LoadTracker::read_sockets() const {
  const auto text = common::read_small_file(path_, 1 << 20);
  if (!text) return Error{"cannot read " + path_ + ": " + text.error()};
  const auto cpus = parse_proc_stat(*text);
  if (cpus.empty()) return Error{path_ + " lists no cpuN line"};
  std::vector<Totals> out(sockets_);
  for (const auto& c : cpus) {
    auto& s = out[c.cpu % sockets_];
    s.busy += c.busy;
    s.total += c.total;
  }
  return out;
}

Status LoadTracker::prime(std::chrono::steady_clock::time_point now) {
  auto totals = read_sockets();
  if (!totals) return Error{totals.error()};
  previous_ = std::move(*totals);
  previous_at_ = now;
  // Idle until the first interval says otherwise: cumulative since-boot ratios say little
  // about the load right now.
  std::fill(smoothed_.begin(), smoothed_.end(), 0.0);
  return Ok{};
}

void LoadTracker::sample(std::chrono::steady_clock::time_point now) {
  auto totals = read_sockets();
  if (!totals) return;
  const double dt_s = std::chrono::duration<double>(now - previous_at_).count();
  const double alpha = 1.0 - std::exp(-std::max(dt_s, 0.0) / time_constant_s_);
  for (std::uint32_t s = 0; s < sockets_; ++s) {
    const auto& prev = s < previous_.size() ? previous_[s] : Totals{};
    // A counter that went backwards (CPU hot-unplugged, fake file rewritten) gives no
    // information for this interval; the new reading becomes the baseline.
    const auto& current = (*totals)[s];
    if (current.total <= prev.total || current.busy < prev.busy) continue;
    const double busy = static_cast<double>(current.busy - prev.busy);
    const double total = static_cast<double>(current.total - prev.total);
    const double u = std::clamp(busy / total, 0.0, 1.0);
    smoothed_[s] += alpha * (u - smoothed_[s]);
  }
  previous_ = std::move(*totals);
  previous_at_ = now;
}

double LoadTracker::utilisation(std::uint32_t socket) const {
  return socket < smoothed_.size() ? smoothed_[socket] : 0.0;
}

double Noise::next(double amplitude) {
  // splitmix64
  std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  z ^= z >> 31;
  const double unit = static_cast<double>(z >> 11) * 0x1.0p-53;  // [0, 1)
  return (unit * 2.0 - 1.0) * amplitude;
}

Result<TraceTable> parse_trace(std::string_view text, const std::string& name,
                               const TraceColumnCheck& column_error) {
  TraceTable table;
  bool have_header = false;
  std::size_t line_no = 0;
  for (const auto& raw : common::split(text, '\n')) {
    ++line_no;
    const auto line = common::trim(raw);
    if (line.empty() || line.front() == '#') continue;
    auto cells = common::split(line, ',');
    for (auto& c : cells) c = std::string(common::trim(c));
    if (!have_header) {
      if (cells[0] != "time_s") return trace_fail(name, line_no, "header must start with time_s");
      if (cells.size() < 2) return trace_fail(name, line_no, "no power column");
      std::set<std::string> seen;
      for (std::size_t c = 1; c < cells.size(); ++c) {
        const auto why = seen.insert(cells[c]).second ? column_error(cells[c], c - 1)
                                                      : "column '" + cells[c] + "' repeated";
        if (!why.empty()) return trace_fail(name, line_no, why);
      }
      table.columns.assign(cells.begin() + 1, cells.end());
      have_header = true;
      continue;
    }
    if (cells.size() != table.columns.size() + 1) {
      return trace_fail(name, line_no,
                        "expected " + std::to_string(table.columns.size() + 1) + " cells, found " +
                            std::to_string(cells.size()));
    }
    const auto t = common::parse_double(cells[0]);
    if (!t || !std::isfinite(*t) || *t < 0) {
      return trace_fail(name, line_no,
                        "time_s is not a number of seconds >= 0: '" + cells[0] + "'");
    }
    if (!table.times_s.empty() && *t <= table.times_s.back()) {
      return trace_fail(name, line_no, "time_s must increase from row to row");
    }
    std::vector<double> row;
    for (std::size_t c = 1; c < cells.size(); ++c) {
      const auto w = common::parse_double(cells[c]);
      if (!w || !std::isfinite(*w) || *w < 0) {
        return trace_fail(
            name, line_no,
            "'" + cells[c] + "' is not a number of watts >= 0 (" + table.columns[c - 1] + ")");
      }
      row.push_back(*w);
    }
    table.times_s.push_back(*t);
    table.rows.push_back(std::move(row));
  }
  if (!have_header || table.rows.empty()) {
    return Error{"trace " + name + (have_header ? ": no data rows" : ": no header")};
  }
  return table;
}

Result<std::string> read_trace_file(const std::string& path) {
  auto text = common::read_small_file(path, 64 << 20);
  if (!text) return Error{"cannot read trace " + path + ": " + text.error()};
  return std::move(*text);
}

Result<Trace> Trace::load(const std::string& path, const std::vector<ChannelSpec>& channels) {
  std::set<std::string> known;
  for (const auto& c : channels) known.insert(c.key);
  const auto text = read_trace_file(path);
  if (!text) return Error{text.error()};
  Trace trace;
  auto table = parse_trace(*text, path, [&](const std::string& key, std::size_t index) {
    if (!known.count(key)) return "unknown channel '" + key + "'";
    trace.columns_.emplace(key, index);
    return std::string();
  });
  if (!table) return Error{table.error()};
  trace.table_ = std::move(*table);
  return trace;
}

std::optional<double> Trace::value_at(const std::string& key, double elapsed_s) const {
  const auto col = columns_.find(key);
  const auto& times = table_.times_s;
  if (col == columns_.end() || times.empty()) return std::nullopt;
  // First row whose time is > elapsed; the one before it holds.
  const auto after = std::upper_bound(times.begin(), times.end(), elapsed_s);
  const auto row = after == times.begin() ? 0 : (after - times.begin()) - 1;
  return table_.rows[static_cast<std::size_t>(row)][col->second];
}

std::vector<std::pair<double, double>> Trace::steps(const std::string& key, double after_s,
                                                    double upto_s) const {
  std::vector<std::pair<double, double>> out;
  const auto col = columns_.find(key);
  if (col == columns_.end() || !(upto_s > after_s)) return out;
  const auto& times = table_.times_s;
  auto it = std::upper_bound(times.begin(), times.end(), after_s);
  for (; it != times.end() && *it <= upto_s; ++it) {
    const auto row = static_cast<std::size_t>(it - times.begin());
    out.emplace_back(*it, table_.rows[row][col->second]);
  }
  return out;
}

void PowerHistory::set(double t_s, double watts) {
  if (!steps_.empty()) {
    auto& last = steps_.back();
    if (t_s <= last.first) {
      last.second = watts;
      // The step before may now hold the same value: merge so the deque stays short.
      if (steps_.size() >= 2 && steps_[steps_.size() - 2].second == watts) steps_.pop_back();
      return;
    }
    if (last.second == watts) return;  // no change in power: no new step
  }
  steps_.emplace_back(t_s, watts);
  // The first step is needed only while it still holds somewhere inside the kept span.
  while (steps_.size() >= 2 && steps_[1].first <= t_s - keep_s_) steps_.pop_front();
}

double PowerHistory::mean(double from_s, double to_s) const {
  if (steps_.empty()) return 0.0;
  if (!(to_s > from_s)) {
    auto after = std::upper_bound(steps_.begin(), steps_.end(), to_s,
                                  [](double t, const auto& step) { return t < step.first; });
    return after == steps_.begin() ? steps_.front().second : std::prev(after)->second;
  }
  double joules = 0.0;
  for (std::size_t k = 0; k < steps_.size(); ++k) {
    // Step k holds over [begin, end): the first from -inf, the latest until +inf.
    const double begin = k == 0 ? from_s : std::max(from_s, steps_[k].first);
    const double end = k + 1 == steps_.size() ? to_s : std::min(to_s, steps_[k + 1].first);
    if (end > begin) joules += steps_[k].second * (end - begin);
  }
  return joules / (to_s - from_s);
}

}  // namespace cpupower::sim
