#pragma once
// Records as plain values, so that two readings of one text can be compared.

#include <cstddef>
#include <string>
#include <vector>

#include "artifacts/csv.hpp"

namespace cpupower::fuzz {

struct Record {
  std::size_t line = 0;
  std::vector<std::string> cells;
  bool terminated = true;
  bool operator==(const Record&) const = default;
};

struct Damage {
  std::size_t line = 0;
  std::string what;
  bool operator==(const Damage&) const = default;
};

struct Records {
  std::vector<Record> records;
  std::vector<Damage> damage;
  bool operator==(const Records&) const = default;
};

inline Record record_of(const artifacts::CsvRecord& r, std::size_t line_offset = 0) {
  return {r.line + line_offset, std::vector<std::string>(r.cells.begin(), r.cells.end()),
          r.terminated};
}

inline void take_damage(std::vector<artifacts::CsvDamage>& from, Records& into,
                        std::size_t line_offset = 0) {
  for (const auto& d : from) into.damage.push_back({d.line + line_offset, d.what});
  from.clear();
}

}  // namespace cpupower::fuzz
