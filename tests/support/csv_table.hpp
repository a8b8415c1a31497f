#pragma once
// A whole small CSV file as records, every record's cells as strings: for tests that look at
// what a writer wrote. The product streams records through CsvTextReader and CsvFileReader.

#include <string>
#include <string_view>
#include <vector>

#include "artifacts/csv.hpp"

namespace cpupower::artifacts {

struct CsvTable {
  std::vector<std::string> header;
  struct Row {
    std::size_t line = 0;
    std::vector<std::string> cells;
    bool terminated = true;
  };
  std::vector<Row> rows;
  std::vector<CsvDamage> damage;
};

// Every record of a reader, the first as the header.
template <typename Reader>
CsvTable table_of(Reader& reader) {
  CsvTable t;
  CsvRecord r;
  bool first = true;
  while (reader.next(r, t.damage)) {
    std::vector<std::string> cells(r.cells.begin(), r.cells.end());
    if (first) {
      t.header = std::move(cells);
      first = false;
    } else {
      t.rows.push_back({r.line, std::move(cells), r.terminated});
    }
  }
  return t;
}

inline CsvTable parse_csv(std::string_view text) {
  CsvTextReader reader(text, true);
  return table_of(reader);
}

inline Result<CsvTable> read_csv(const std::string& path) {
  auto file = CsvFileReader::open(path);
  if (!file) return Error{file.error()};
  CsvTable t = table_of(*file);
  if (!file->error().empty()) return Error{file->error()};
  return t;
}

}  // namespace cpupower::artifacts
