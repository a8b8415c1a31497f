#include "artifacts/layout.hpp"

#include <cmath>

#include "artifacts/csv.hpp"

namespace cpupower::artifacts {

std::string csv_header(CsvLayout layout, int version) {
  std::string out;
  for (const auto& c : layout) {
    if (c.since > version) continue;
    if (!out.empty()) out += ',';
    out += c.name;
  }
  return out;
}

int header_version(CsvLayout layout, std::string_view line) {
  for (int v = 1; v <= newest_version(layout); ++v) {
    if (line == csv_header(layout, v)) return v;
  }
  return 0;
}

std::vector<std::optional<std::size_t>> find_columns(CsvLayout layout,
                                                     std::span<const std::string> header) {
  std::vector<std::optional<std::size_t>> out;
  for (const auto& c : layout) out.push_back(column_index(header, c.name));
  return out;
}

std::optional<std::string_view> missing_key(CsvLayout layout,
                                            std::span<const std::optional<std::size_t>> found) {
  for (std::size_t i = 0; i < layout.size(); ++i) {
    if (layout[i].key() && !found[i]) return layout[i].name;
  }
  return std::nullopt;
}

bool in_bounds(const CsvColumn& column, double value) {
  return std::isfinite(value) && value >= column.lo && value <= column.hi;
}

std::optional<std::string> cell_problem(const CsvColumn& c, std::string_view cell, int version) {
  if (c.optional() && cell.empty()) return std::nullopt;
  const auto bad = [&](const std::string& wanted) {
    return describe_bad_cell(c.name, cell, (c.optional() ? "empty or " : "") + wanted);
  };
  switch (c.cell) {
    case Cell::version: {
      const auto v = parse_int(cell);
      if (v && *v == version) return std::nullopt;
      return bad(std::to_string(version));
    }
    case Cell::finite: {
      const auto v = parse_double(cell);
      if (v && std::isfinite(*v)) return std::nullopt;
      return bad("a finite number");
    }
    case Cell::count: {
      const auto v = parse_int(cell);
      if (v && *v >= 0) return std::nullopt;
      return bad("an integer >= 0");
    }
    case Cell::name:
      if (!cell.empty()) return std::nullopt;
      return std::string(c.name) + " is empty";
    case Cell::text:
      return std::nullopt;
    case Cell::watts: {
      const auto v = parse_double(cell);
      if (v && std::isfinite(*v) && *v >= 0) return std::nullopt;
      return bad("a finite number >= 0");
    }
    case Cell::range: {
      const auto v = parse_double(cell);
      if (v && in_bounds(c, *v)) return std::nullopt;
      std::string lo, hi;
      append_number(lo, c.lo);
      append_number(hi, c.hi);
      return bad("a number in " + lo + ".." + hi);
    }
  }
  return std::nullopt;
}

}  // namespace cpupower::artifacts
