#pragma once
// The CSV layouts of the three legs, each one table of its columns in the newest version's
// order, with the schema version that added each column and the rule its cells follow. A
// version's header is the columns whose `since` is at most that version, in table order, so
// every header, row width, writer's cell order and reader's column look-up comes from the
// table: a new column is one row here plus the code that fills and uses it.

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "artifacts/csv.hpp"
#include "artifacts/limits.hpp"

namespace cpupower::artifacts {

// What a cell holds in a well-formed row (what the strict readers check).
enum class Cell {
  version,  // the row's schema version, the integer its header is
  finite,   // a finite number
  count,    // an integer >= 0
  name,     // non-empty text
  text,     // any text
  watts,    // a power reading: a finite number >= 0; readers take it when in (0, hi]
  range,    // a number in [lo, hi]
};

inline constexpr unsigned kOptional = 1;  // an empty cell is a missing value
inline constexpr unsigned kKey = 2;       // the report refuses a header without the column

struct CsvColumn {
  std::string_view name;
  int since = 1;  // the schema version that added it
  Cell cell = Cell::text;
  unsigned flags = 0;     // kOptional, kKey
  double lo = 0, hi = 0;  // range's bounds; watts: hi is the physical bound (limits.hpp)
  constexpr bool optional() const { return (flags & kOptional) != 0; }
  constexpr bool key() const { return (flags & kKey) != 0; }
};
using CsvLayout = std::span<const CsvColumn>;

// GPU leg power/samples.csv, v1..v3 (docs/formats.md, "GPU leg").
inline constexpr CsvColumn kGpuColumns[] = {
    {"schema_version", 1, Cell::version},
    {"timestamp_unix", 1, Cell::finite, kKey},
    {"scrape_seq", 1, Cell::count},
    {"hostname", 1, Cell::name, kKey},
    {"gpu_index", 1, Cell::count, kKey},
    {"gpu_uuid", 1, Cell::name},
    {"power_w", 1, Cell::watts, kKey, 0, kMaxSocketWatts},
    {"gpu_util_pct", 2, Cell::range, kOptional, 0, 100},
    {"sm_active", 2, Cell::range, kOptional, 0, 1},
    {"temperature_c", 3, Cell::range, kOptional, -273.15, 200},
};

// Exporter leg power/cpu/samples.csv, v1..v3 (v1: one row per rail).
inline constexpr CsvColumn kCpuColumns[] = {
    {"schema_version", 1, Cell::version},
    {"timestamp_unix", 1, Cell::finite, kKey},
    {"hostname", 1, Cell::name, kKey},
    {"source", 1, Cell::name},
    {"sensor", 1, Cell::name},
    {"socket_id", 1, Cell::count, kKey},
    {"power_w", 1, Cell::watts, kKey, 0, kMaxSocketWatts},
    {"cpu_rail_w", 2, Cell::watts, kOptional, 0, kMaxSocketWatts},
    {"soc_w", 2, Cell::watts, kOptional, 0, kMaxSocketWatts},
    {"dram_w", 2, Cell::watts, kOptional, 0, kMaxSocketWatts},
    {"module_w", 3, Cell::watts, kOptional, 0, kMaxSocketWatts},
    {"total_power_w", 1, Cell::watts, kOptional | kKey, 0, kMaxNodeWatts},
};

// Host-collector leg nodes/<host>.csv and the merged samples.csv, v1..v5 (v1..v3: one row per
// rail). The report reads the exporter leg's files by these names too: its columns are a
// subset.
inline constexpr CsvColumn kHostColumns[] = {
    {"schema_version", 1, Cell::version},
    {"timestamp_unix", 1, Cell::finite, kKey},
    {"timestamp_local", 2, Cell::text},
    {"hostname", 1, Cell::name, kKey},
    {"source", 1, Cell::name},
    {"sensor", 1, Cell::name},
    {"socket_id", 1, Cell::count, kKey},
    {"power_w", 1, Cell::watts, kKey, 0, kMaxSocketWatts},
    {"cpu_rail_w", 4, Cell::watts, kOptional, 0, kMaxSocketWatts},
    {"soc_w", 4, Cell::watts, kOptional, 0, kMaxSocketWatts},
    {"dram_w", 4, Cell::watts, kOptional, 0, kMaxSocketWatts},
    {"module_w", 5, Cell::watts, kOptional, 0, kMaxSocketWatts},
    {"total_power_w", 1, Cell::watts, kOptional | kKey, 0, kMaxNodeWatts},
    // DCGM CPU-entity fields 1100..1104, fractions 0-1 of socket CPU time.
    {"cpu_util_total", 3, Cell::finite, kOptional},
    {"cpu_util_user", 3, Cell::finite, kOptional},
    {"cpu_util_nice", 3, Cell::finite, kOptional},
    {"cpu_util_sys", 3, Cell::finite, kOptional},
    {"cpu_util_irq", 3, Cell::finite, kOptional},
};

// The position of `name` in `layout`; a name that is not there does not compile.
consteval std::size_t column_of(CsvLayout layout, std::string_view name) {
  for (std::size_t i = 0; i < layout.size(); ++i) {
    if (layout[i].name == name) return i;
  }
  throw "no such column";
}

// The newest version of a layout: the largest `since`.
constexpr int newest_version(CsvLayout layout) {
  int v = 1;
  for (const auto& c : layout) v = c.since > v ? c.since : v;
  return v;
}

// The cells of a row of `version`.
constexpr std::size_t csv_width(CsvLayout layout, int version) {
  std::size_t n = 0;
  for (const auto& c : layout) n += c.since <= version ? 1 : 0;
  return n;
}

// The header line of `version` (1..newest), without a line end.
std::string csv_header(CsvLayout layout, int version);

// The version (1..newest) whose header `line` is exactly, else 0.
int header_version(CsvLayout layout, std::string_view line);

// Where each column of `layout` is in `header` (by table position; nullopt: the header lacks it).
std::vector<std::optional<std::size_t>> find_columns(CsvLayout layout,
                                                     std::span<const std::string> header);

// The first key column `found` (from find_columns) lacks, or nullopt.
std::optional<std::string_view> missing_key(CsvLayout layout,
                                            std::span<const std::optional<std::size_t>> found);

// Why `cell` breaks its column's rule in a row of `version`, or nullopt: describe_bad_cell's
// words ("power_w '-1' is not a finite number >= 0"), "<name> is empty" for a blank name.
std::optional<std::string> cell_problem(const CsvColumn& column, std::string_view cell,
                                        int version);

// Whether `value` is a reading the column holds: finite and within [lo, hi].
bool in_bounds(const CsvColumn& column, double value);

// One cell as the writers write it: an integer in decimal, a number as its shortest text, an
// optional number empty when missing or not finite, text quoted when it holds , " CR or LF.
template <typename T>
void append_value(std::string& out, const T& value) {
  if constexpr (std::is_integral_v<T>) {
    out += std::to_string(value);
  } else if constexpr (std::is_floating_point_v<T>) {
    append_number(out, value);
  } else if constexpr (std::is_same_v<T, std::optional<double>>) {
    append_optional(out, value);
  } else {
    append_cell(out, value);
  }
}

// One row of `version` with its "\r\n": `values` are a cell of every column of the table, in
// table order; those of columns newer than `version` are left out.
template <std::size_t N, typename... Values>
void append_row(std::string& out, const CsvColumn (&layout)[N], int version,
                const Values&... values) {
  static_assert(sizeof...(Values) == N, "one value per column of the layout");
  std::size_t i = 0;
  const auto one = [&](const auto& value) {
    if (layout[i++].since > version) return;
    if (i > 1) out += ',';  // after the first column, schema_version, in every version
    append_value(out, value);
  };
  (one(values), ...);
  out += "\r\n";
}

}  // namespace cpupower::artifacts
