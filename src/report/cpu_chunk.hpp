#pragma once
// What one chunk of a CPU samples file contributes, in file order: the per-row work of the
// CPU loader. A block's chunk is appended to the file's chunk (absorb), and the file's chunk
// becomes the tracks (cpu_load.cpp).
//
// Every host has one time column: the times of its rows in file order, a time repeated by the
// next row of that host kept once (the socket rows of one scrape share their timestamp). The
// node total and, in the wide layouts, every column of the host's sockets hold one value per
// entry of it (NaN where a row lacks the cell or the socket has no row), so a 10-million-row
// file stores its times once per scrape, not once per socket and again for the node.

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "artifacts/csv_stream.hpp"
#include "artifacts/host_samples.hpp"
#include "report/cpu_data.hpp"
#include "report/doubles.hpp"

namespace cpupower::report {

struct Column {
  bool present = false;  // some row had a value; else `v` stays empty
  Values v;
};

struct Pairs {
  Doubles t;
  Doubles w;
};

struct ChunkSensor {
  std::string name;
  SensorKind kind = SensorKind::other;
  Pairs samples;
};

// Chunks, their sockets and hosts are written on every row by the thread parsing into them,
// and two threads' chunks sit side by side in memory: each starts on its own cache line, or
// a shared line bounces between the cores (a load of the benchmark file took 1.0 s instead
// of 0.8 s with one such layout).
struct alignas(64) ChunkSocket {
  std::size_t host = 0;                  // chunk-local host index
  std::size_t absorbed_into = SIZE_MAX;  // a block's socket: its index in the absorbing chunk
  long long socket = 0;
  // Wide layouts: one value per entry of the host's times, up to the last entry this socket
  // has a row at (the entries after it are NaN).
  Values power;
  std::array<Column, 3> rails;
  Column module;
  std::vector<ChunkSensor> sensors;  // long layout
  std::array<Pairs, 3> long_rails;   // long layout, rows of rail sensors
  Pairs long_module;
  std::array<Pairs, 5> util;
  bool has_first_sensor = false;
  std::string first_sensor;
  std::vector<std::string> sources;
  std::size_t last_sensor = 0;
};

// The text of the last number parsed from one column and its value. The rows of one scrape
// repeat its timestamp and node total, so comparing a few bytes replaces most parses (a
// 17-digit timestamp is the costliest cell of a row).
class CachedNumber {
 public:
  bool lookup(std::string_view text, double* value) const {
    if (!same(text)) return false;
    *value = value_;
    return true;
  }
  bool same(std::string_view text) const {
    return text.size() == len_ && std::memcmp(text.data(), text_, len_) == 0;
  }
  void store(std::string_view text, double value = 0) {
    if (text.size() > sizeof text_) {
      len_ = SIZE_MAX;
      return;
    }
    std::memcpy(text_, text.data(), text.size());
    len_ = text.size();
    value_ = value;
  }

 private:
  char text_[32] = {};
  std::size_t len_ = SIZE_MAX;
  double value_ = 0;
};

struct alignas(64) ChunkHost {
  std::string name;
  Doubles t;                // this host's times (see the top of this file)
  Column total;             // total_power_w, one value per entry of t
  CachedNumber last_total;  // the text behind the total at t's last entry
  std::vector<std::pair<long long, std::size_t>> sockets;  // socket id -> index in `sockets`
  std::size_t next = SIZE_MAX;  // the host whose row last followed one of this host's
};

class alignas(64) CpuChunk {
 public:
  // `row_bound`: at most this many rows can reach this chunk (its bytes / shortest row);
  // columns reserve address space for that many values and are then written in place.
  CpuChunk(const artifacts::CpuCsvColumns* columns, std::size_t row_bound)
      : c_(columns),
        row_bound_(row_bound),
        any_util_(std::any_of(columns->util.begin(), columns->util.end(),
                              [](const auto& index) { return index.has_value(); })) {}
  void add(const artifacts::CsvRecord& record);
  // Appends everything `block` collected (the rows right after this chunk's in the file)
  // and empties it for the next block, keeping its memory: a block's columns are written
  // again and again, so only this chunk's columns ever need fresh memory.
  void absorb(CpuChunk& block);

  std::vector<ChunkHost> hosts;
  std::vector<ChunkSocket> sockets;
  std::size_t rows = 0;
  std::size_t skipped = 0;
  std::string first_skipped;  // why the first skipped row (in file order) was dropped

 private:
  std::size_t host_id(std::string_view name);
  std::size_t socket_id(std::size_t host, long long socket);
  void add_wide(ChunkSocket& s, std::span<const std::string_view> cells, std::size_t entry);
  void overwrite_wide(ChunkSocket& s, std::span<const std::string_view> cells, std::size_t entry);
  void add_total(ChunkHost& h, std::string_view text, std::size_t entry);
  void add_long(ChunkSocket& s, std::span<const std::string_view> cells, double t);
  void note_source(ChunkSocket& s, std::string_view source);
  void skip(std::string_view column, std::string_view cell, std::string_view wanted = "a number");
  void skip_short(std::size_t cells);

  std::size_t global_socket(CpuChunk& block, std::size_t index);

  const artifacts::CpuCsvColumns* c_;
  std::size_t row_bound_ = 0;
  bool any_util_ = false;  // the file has utilization columns (the host leg's v2 and later)
  static constexpr std::size_t kLinearHosts = 16;
  struct Hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, std::size_t, Hash, std::equal_to<>> host_index_;
  std::size_t last_host_ = SIZE_MAX;
  CachedNumber last_time_;
};

}  // namespace cpupower::report
