#pragma once
// Test helper: the rows of an exporter v3 samples.csv, read with the project's CSV reader and
// held to the writer's own rules (the exact v3 header, twelve cells, every number parses), so
// writer and collector tests can compare whole rows. `torn` counts a last line without a line
// end; `bad` every other row that breaks the rules.

#include <string>
#include <vector>

#include "../support/csv_table.hpp"
#include "artifacts/cpu_samples.hpp"
#include "artifacts/csv.hpp"

namespace cpupower::testing {

struct V3File {
  int schema_version = 0;  // 3 when the header is exactly the v3 one
  std::vector<artifacts::CpuSampleRow> rows;
  std::size_t torn = 0;
  std::size_t bad = 0;
};

inline V3File parse_v3(const artifacts::CsvTable& t) {
  V3File f;
  std::string header;
  for (std::size_t i = 0; i < t.header.size(); ++i) header += (i ? "," : "") + t.header[i];
  if (header != artifacts::kCpuHeaderV3) return f;
  f.schema_version = 3;
  f.bad = t.damage.size();
  for (const auto& r : t.rows) {
    if (!r.terminated) {
      ++f.torn;
      continue;
    }
    const auto& c = r.cells;
    artifacts::CpuSampleRow row;
    const auto num = [](const std::string& s) { return artifacts::parse_double(s); };
    const auto opt = [&](const std::string& s) -> std::optional<double> {
      return s.empty() ? std::nullopt : num(s);
    };
    if (c.size() != 12 || c[0] != "3" || !num(c[1]) || !artifacts::parse_int(c[5]) || !num(c[6]) ||
        (!c[7].empty() && !num(c[7])) || (!c[8].empty() && !num(c[8])) ||
        (!c[9].empty() && !num(c[9])) || (!c[10].empty() && !num(c[10])) ||
        (!c[11].empty() && !num(c[11]))) {
      ++f.bad;
      continue;
    }
    row.timestamp_unix = *num(c[1]);
    row.hostname = c[2];
    row.source = c[3];
    row.sensor = c[4];
    row.socket_id = static_cast<std::uint32_t>(*artifacts::parse_int(c[5]));
    row.power_w = *num(c[6]);
    row.cpu_rail_w = opt(c[7]);
    row.soc_w = opt(c[8]);
    row.dram_w = opt(c[9]);
    row.module_w = opt(c[10]);
    row.total_power_w = opt(c[11]);
    f.rows.push_back(std::move(row));
  }
  return f;
}

inline V3File parse_v3(std::string_view text) {
  return parse_v3(artifacts::parse_csv(text));
}

inline V3File read_v3(const std::string& path) {
  const auto t = artifacts::read_csv(path);
  return t ? parse_v3(*t) : V3File{};
}

}  // namespace cpupower::testing
