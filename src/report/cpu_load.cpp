// Loading a CPU samples file: scan (a large file in blocks on every thread, appended to one
// chunk in file order; see cpu_chunk.cpp), then give every host its sorted time column and
// every socket and node its tracks on it.

#include <algorithm>
#include <condition_variable>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <thread>

#include "artifacts/csv_stream.hpp"
#include "artifacts/host_samples.hpp"
#include "rails/rails.hpp"
#include "report/cpu_chunk.hpp"
#include "report/cpu_data.hpp"
#include "report/parallel.hpp"

namespace cpupower::report {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

int rank(SensorKind kind) {
  return static_cast<int>(kind);
}

// Appends `from` and frees it at once, so that merging chunks never holds a column twice;
// the first part is taken over without a copy.
void append_and_free(Doubles& into, Doubles& from) {
  if (into.empty()) {
    into = std::move(from);
    return;
  }
  into.append_consuming(from);
}

// Sorts rows by time (stable) and collapses equal times, each column keeping its last
// value (a blank cell does not overwrite): the reference's per-column dicts.
void sort_and_collapse(Doubles& t, std::vector<Values*> cols) {
  if (!std::is_sorted(t.begin(), t.end())) {
    std::vector<std::size_t> order(t.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return t[a] < t[b]; });
    Doubles sorted(t.size(), 0.0);
    for (std::size_t i = 0; i < order.size(); ++i) sorted[i] = t[order[i]];
    t = std::move(sorted);
    for (auto* c : cols) {
      Values out;
      for (const std::size_t i : order) out.push_back((*c)[i]);
      *c = std::move(out);
    }
  }
  if (std::adjacent_find(t.begin(), t.end()) == t.end()) return;
  std::size_t out = 0;
  for (std::size_t i = 0; i < t.size(); ++i) {
    if (out > 0 && t[out - 1] == t[i]) {
      for (auto* c : cols) {
        if (!std::isnan((*c)[i])) c->set(out - 1, (*c)[i]);
      }
      continue;
    }
    t[out] = t[i];
    for (auto* c : cols) c->set(out, (*c)[i]);
    ++out;
  }
  t.truncate(out);
  for (auto* c : cols) c->truncate(out);
}

Track pairs_track(std::vector<Pairs*> parts, bool keep_last) {
  Pairs all;
  for (Pairs* p : parts) {
    append_and_free(all.t, p->t);
    append_and_free(all.w, p->w);
  }
  stable_sort_by_time(all.t, all.w, keep_last);
  return make_track(std::move(all.t), std::move(all.w));
}

void merge_wide(ChunkSocket& p, const Times& times, CpuSocket& out) {
  out.power = Track(times, std::move(p.power));
  for (std::size_t i = 0; i < 3; ++i) {
    if (p.rails[i].present) out.rails[i] = Track(times, std::move(p.rails[i].v));
  }
  if (p.module.present) out.module = Track(times, std::move(p.module.v));
  if (p.has_first_sensor) out.sensor = p.first_sensor;
  out.dcgm = std::find(out.sources.begin(), out.sources.end(), "dcgm") != out.sources.end();
}

void merge_long(ChunkSocket& p, CpuSocket& out) {
  std::map<std::string, std::pair<SensorKind, std::vector<Pairs*>>> sensors;
  for (auto& s : p.sensors) {
    auto& entry = sensors[s.name];
    entry.first = s.kind;
    entry.second.push_back(&s.samples);
  }
  const auto best = std::min_element(sensors.begin(), sensors.end(), [](auto& a, auto& b) {
    return std::pair(rank(a.second.first), a.first) < std::pair(rank(b.second.first), b.first);
  });
  if (best != sensors.end()) {
    out.sensor = best->first;
    out.power = pairs_track(best->second.second, true);
    out.dcgm = best->second.first == SensorKind::dcgm;
  }
  for (const auto& [name, entry] : sensors) {
    if (best != sensors.end() && name != best->first) out.other_sensors.push_back(name);
  }
  for (std::size_t i = 0; i < 3; ++i) {
    Track track = pairs_track({&p.long_rails[i]}, true);
    if (track.size() > 0) out.rails[i] = std::move(track);
  }
  Track m = pairs_track({&p.long_module}, true);
  if (m.size() > 0) out.module = std::move(m);
}

CpuSocket merge_socket(const std::string& host, ChunkSocket& p, const Times& times, bool wide) {
  CpuSocket out;
  out.host = host;
  out.socket = p.socket;
  out.sources = p.sources;
  if (wide) {
    merge_wide(p, times, out);
  } else {
    merge_long(p, out);
  }
  for (std::size_t i = 0; i < 5; ++i) {
    Track u = pairs_track({&p.util[i]}, false);
    if (u.size() > 0) out.util[i] = std::move(u);
  }
  return out;
}

// One host's tracks: its columns made as long as its times, sorted and collapsed together
// when the file is out of order, and given one shared time column.
struct HostTracks {
  std::vector<CpuSocket> sockets;  // by socket id
  std::optional<CpuNode> node;     // when some row had a node total
};

HostTracks merge_host(CpuChunk& chunk, ChunkHost& h, bool wide) {
  std::vector<std::pair<long long, std::size_t>> ids = h.sockets;
  std::sort(ids.begin(), ids.end());
  const std::size_t n = h.t.size();
  std::vector<Values*> cols;
  const auto add = [&](Values& v) {
    if (v.size() < n) v.append_fill(n - v.size(), kNaN);
    cols.push_back(&v);
  };
  if (h.total.present) add(h.total.v);
  if (wide) {
    for (const auto& [id, index] : ids) {
      ChunkSocket& s = chunk.sockets[index];
      add(s.power);
      for (auto& rail : s.rails) {
        if (rail.present) add(rail.v);
      }
      if (s.module.present) add(s.module.v);
    }
  }
  sort_and_collapse(h.t, cols);
  const Times times = std::make_shared<const Doubles>(std::move(h.t));
  HostTracks out;
  for (const auto& [id, index] : ids) {
    out.sockets.push_back(merge_socket(h.name, chunk.sockets[index], times, wide));
  }
  if (h.total.present) out.node = CpuNode{h.name, Track(times, std::move(h.total.v))};
  return out;
}

// Hosts are merged independently of each other, on `threads` threads.
CpuData merge_chunks(std::vector<CpuChunk>& chunks, bool wide, unsigned threads) {
  CpuData data;
  data.wide = wide;
  CpuChunk& all = chunks.front();
  for (std::size_t i = 1; i < chunks.size(); ++i) all.absorb(chunks[i]);
  data.rows = all.rows;
  data.skipped_rows = all.skipped;
  data.first_skipped = all.first_skipped;
  std::vector<std::size_t> order(all.hosts.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::sort(order.begin(), order.end(),
            [&](std::size_t a, std::size_t b) { return all.hosts[a].name < all.hosts[b].name; });
  std::vector<HostTracks> merged(order.size());
  parallel_for(order.size(), threads,
               [&](std::size_t i) { merged[i] = merge_host(all, all.hosts[order[i]], wide); });
  for (std::size_t i = 0; i < order.size(); ++i) {
    data.hosts.push_back(all.hosts[order[i]].name);
    for (auto& s : merged[i].sockets) data.sockets.push_back(std::move(s));
    if (merged[i].node) data.nodes.push_back(std::move(*merged[i].node));
  }
  return data;
}

CpuLoad finish(std::vector<CpuChunk>& chunks, const artifacts::CpuCsvColumns& columns,
               const std::vector<std::string>& header, const std::string& path, unsigned threads) {
  CpuLoad load;
  load.data = merge_chunks(chunks, columns.wide, threads);
  load.data->path = path;
  load.data->layout = artifacts::describe_cpu_header(header);
  return load;
}

}  // namespace

SensorKind classify_sensor(std::string_view sensor) {
  const auto colon = sensor.find(':');
  if (colon != std::string_view::npos) {
    const std::string_view suffix = sensor.substr(colon + 1);
    if (suffix == "cpuSidePowerUsageW") return SensorKind::total;
    if (suffix == "cpuRailPowerUsageW") return SensorKind::cpu_rail;
    if (suffix == "socPowerUsageW") return SensorKind::soc;
    if (suffix == "dramPowerUsageW") return SensorKind::dram;
    if (suffix == "modulePowerUsageW") return SensorKind::module;
    if (suffix == "cpuPowerUsageW") return SensorKind::dcgm;
  }
  switch (rails::classify_oem(sensor).kind) {
    case rails::Kind::total:
      return SensorKind::total;
    case rails::Kind::cpu_rail:
      return SensorKind::cpu_rail;
    case rails::Kind::soc:
      return SensorKind::soc;
    case rails::Kind::dram:
      return SensorKind::dram;
    case rails::Kind::module:
      return SensorKind::module;
    default:
      return SensorKind::other;
  }
}

const CpuSocket* CpuData::find_socket(std::string_view host, long long socket) const {
  for (const auto& s : sockets) {
    if (s.host == host && s.socket == socket) return &s;
  }
  return nullptr;
}

namespace {

// Joins the blocks of a parallel scan in file order into one chunk. A thread that finishes a
// block leaves it ready and goes on with another (recycled) chunk; a thread that finds nobody
// appending appends every ready block in order. So no thread waits for its turn while a core
// idles; one only waits while too many parsed blocks are ready (they hold memory).
class BlockJoiner {
 public:
  BlockJoiner(const artifacts::CpuCsvColumns* columns, std::size_t block_rows,
              std::size_t whole_rows, unsigned threads)
      : columns_(columns), block_rows_(block_rows), whole_(columns, whole_rows) {
    for (unsigned i = 0; i < threads; ++i) current_.push_back(fresh());
  }

  CpuChunk& chunk(std::size_t slot) { return *current_[slot]; }
  CpuChunk& whole() { return whole_; }
  std::size_t joined() const { return next_; }
  // Without blocks (one thread, a small file) the slots' chunks are the file's chunks.
  std::vector<CpuChunk> take_slots() {
    std::vector<CpuChunk> out;
    for (auto& c : current_) out.push_back(std::move(*c));
    return out;
  }

  void block_done(std::size_t slot, std::size_t block) {
    std::unique_lock lock(mutex_);
    ready_.emplace(block, std::move(current_[slot]));
    while (appending_ && ready_.size() > kMaxReady) changed_.wait(lock);
    if (!appending_) {
      appending_ = true;
      for (auto it = ready_.find(next_); it != ready_.end(); it = ready_.find(next_)) {
        std::unique_ptr<CpuChunk> c = std::move(it->second);
        ready_.erase(it);
        lock.unlock();
        whole_.absorb(*c);
        lock.lock();
        free_.push_back(std::move(c));
        ++next_;
        changed_.notify_all();
      }
      appending_ = false;
      changed_.notify_all();
    }
    if (free_.empty()) {
      current_[slot] = fresh();
    } else {
      current_[slot] = std::move(free_.back());
      free_.pop_back();
    }
  }

 private:
  static constexpr std::size_t kMaxReady = 16;
  std::unique_ptr<CpuChunk> fresh() const {
    return std::make_unique<CpuChunk>(columns_, block_rows_);
  }

  const artifacts::CpuCsvColumns* columns_;
  std::size_t block_rows_;
  CpuChunk whole_;
  std::vector<std::unique_ptr<CpuChunk>> current_;  // per slot, the chunk being filled
  std::mutex mutex_;
  std::condition_variable changed_;
  std::map<std::size_t, std::unique_ptr<CpuChunk>> ready_;  // parsed, by block
  std::vector<std::unique_ptr<CpuChunk>> free_;             // appended, to be reused
  std::size_t next_ = 0;                                    // the next block to append
  bool appending_ = false;
};

}  // namespace

CpuLoad load_cpu_samples(const std::string& path, unsigned threads) {
  artifacts::CpuCsvColumns columns;
  std::string missing;
  artifacts::CsvScanOptions options;
  options.threads = std::max(1u, threads);
  // No row of any layout is shorter than 16 bytes: bounds for the columns' address space.
  std::error_code ec;
  const std::uintmax_t bytes = std::filesystem::file_size(path, ec);
  const std::uintmax_t pieces =
      std::min<std::uintmax_t>(options.threads, ec ? 1 : bytes / options.min_chunk_bytes + 1);
  const std::size_t bound = ec ? 0 : static_cast<std::size_t>(bytes / pieces / 16 + 1024);
  // A large file is read in blocks on every thread. Each block is parsed into a small chunk
  // that is appended to the whole file's chunk in file order and then reused: on a VM the
  // first write to fresh memory costs more than parsing, so every column is written once,
  // in place, and never merged (docs/performance.md).
  options.block_bytes = 4u << 20;
  std::optional<BlockJoiner> joiner;
  bool serial = false;  // a quoted file, rescanned serially straight into the whole chunk
  options.on_block = [&](std::size_t slot, std::size_t block) {
    if (!serial) joiner->block_done(slot, block);
  };
  const auto scan = artifacts::scan_csv_file(
      path, options,
      [&](const std::vector<std::string>& header) {
        columns = artifacts::CpuCsvColumns::from_header(header);
        missing = columns.missing_required();
        joiner.emplace(&columns, bound, bound * pieces, options.threads);
        return missing.empty();
      },
      [&](std::size_t slot, const artifacts::CsvRecord& r) {
        (serial ? joiner->whole() : joiner->chunk(slot)).add(r);
      },
      [&] {
        joiner.emplace(&columns, bound, bound * pieces, 1);
        serial = true;
      });
  if (!scan.ok) return {std::nullopt, scan.error};
  if (scan.header.empty()) {
    // A collector that died before writing its header left a leg without samples; the
    // other leg still reports.
    CpuLoad empty{CpuData{}, ""};
    empty.data->path = path;
    empty.data->layout = "empty";
    return empty;
  }
  if (!missing.empty()) return {std::nullopt, path + ": no '" + missing + "' column"};
  std::vector<CpuChunk> chunks;
  if (joiner->joined() > 0 || serial) {
    chunks.push_back(std::move(joiner->whole()));
  } else {
    chunks = joiner->take_slots();
  }
  return finish(chunks, columns, scan.header, path, options.threads);
}

CpuLoad parse_cpu_samples_text(std::string_view text) {
  artifacts::CpuCsvColumns columns;
  std::vector<CpuChunk> chunks;
  std::string missing;
  const auto scan = artifacts::scan_csv_text(
      text,
      [&](const std::vector<std::string>& header) {
        columns = artifacts::CpuCsvColumns::from_header(header);
        missing = columns.missing_required();
        chunks.assign(1, CpuChunk(&columns, 0));
        return missing.empty();
      },
      [&](std::size_t, const artifacts::CsvRecord& r) { chunks[0].add(r); });
  if (scan.header.empty()) return {std::nullopt, "empty file (no header)"};
  if (!missing.empty()) return {std::nullopt, "no '" + missing + "' column"};
  return finish(chunks, columns, scan.header, "", 1);
}

}  // namespace cpupower::report
