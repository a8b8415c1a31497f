#pragma once
// What a reader did with rows and readings it could not use, per reason, for warnings that
// name the file and the first line: a skipped row is never silent, and a reading read as
// missing is never a zero.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "artifacts/csv.hpp"
#include "artifacts/layout.hpp"

namespace cpupower::artifacts {

struct RowIssue {
  std::string reason;     // "timestamp_unix is not a finite number"
  bool skipped = true;    // the row was dropped; else one reading was read as missing
  std::size_t count = 0;  // rows (or readings)
  std::size_t first_line = 0;
  std::string first;  // what the first one held
};

class RowIssues {
 public:
  // Counts one; `detail` is only called for the first of its reason.
  template <typename Detail>
  void add(std::string_view reason, bool skipped, std::size_t line, const Detail& detail) {
    if (RowIssue* i = find(reason, skipped)) {
      ++i->count;
    } else {
      items_.push_back({std::string(reason), skipped, 1, line, detail()});
    }
  }
  // Records the reader stepped over (an unclosed quote, an overlong record): each lost a line.
  void add_damage(const std::vector<CsvDamage>& damage) {
    for (const auto& d : damage) {
      add(d.what, true, d.line, [] { return std::string("the line is skipped"); });
    }
  }
  // Appends the issues of a later part of the same file, its lines moved by `line_offset`.
  void append(const RowIssues& later, std::size_t line_offset) {
    for (const auto& l : later.items_) {
      if (RowIssue* i = find(l.reason, l.skipped)) {
        i->count += l.count;
      } else {
        items_.push_back(l);
        items_.back().first_line += line_offset;
      }
    }
  }
  const std::vector<RowIssue>& items() const { return items_; }
  std::size_t skipped_rows() const {
    std::size_t n = 0;
    for (const auto& i : items_) n += i.skipped ? i.count : 0;
    return n;
  }
  // One warning per reason: "<path>: 3 of 120 rows skipped: timestamp_unix is not a finite
  // number (first at line 7: timestamp_unix 'nan' is not a finite number)".
  std::vector<std::string> warnings(const std::string& path, std::size_t rows) const {
    std::vector<std::string> out;
    for (const auto& i : items_) {
      out.push_back(
          path + ": " + std::to_string(i.count) +
          (i.skipped
               ? " of " + std::to_string(rows) + " rows skipped: "
               : (i.count == 1 ? " reading" : " readings") + std::string(" read as missing: ")) +
          i.reason + " (first at line " + std::to_string(i.first_line) + ": " + i.first + ")");
    }
    return out;
  }

 private:
  RowIssue* find(std::string_view reason, bool skipped) {
    for (auto& i : items_) {
      if (i.reason == reason && i.skipped == skipped) return &i;
    }
    return nullptr;
  }
  std::vector<RowIssue> items_;
};

// The checks every loader makes before reading a record's cells: as many cells as the header
// (a torn row closed later, or two rows run together, has another count), and a line end (a
// last line without one was cut short by a stopped writer, so even its last cell is suspect).
inline constexpr std::string_view kTornRecord =
    "the last line has no line end (a stopped writer's torn row)";
inline std::string cell_count_detail(std::size_t cells, std::size_t header_cells) {
  return std::to_string(cells) + " cells where the header has " + std::to_string(header_cells);
}

inline bool whole_record(const CsvRecord& r, std::size_t header_cells, RowIssues& issues) {
  if (!r.terminated) {
    issues.add(kTornRecord, true, r.line,
               [&] { return std::to_string(r.cells.size()) + " cells"; });
    return false;
  }
  if (r.cells.size() != header_cells) {
    issues.add("wrong number of cells", true, r.line,
               [&] { return cell_count_detail(r.cells.size(), header_cells); });
    return false;
  }
  return true;
}

// The same two checks for a strict reader that refuses a file rather than skipping rows: what
// is wrong with the record, in whole_record's words, or nothing.
inline std::optional<std::string> record_damage(const CsvRecord& r, std::size_t header_cells) {
  if (!r.terminated) return std::string(kTornRecord);
  if (r.cells.size() != header_cells) return cell_count_detail(r.cells.size(), header_cells);
  return std::nullopt;
}

// The key cells of a samples row, in the words every reader counts a skipped row under: a
// finite timestamp_unix, a non-blank hostname, a socket_id in 0..2^32-1. False (the row
// skipped and counted) when the cell breaks its rule.
inline bool read_time(std::string_view cell, std::size_t line, RowIssues& issues, double* out) {
  if (parse_double(cell, out) && std::isfinite(*out)) return true;
  issues.add("timestamp_unix is not a finite number", true, line,
             [&] { return describe_bad_cell("timestamp_unix", cell, "a finite number"); });
  return false;
}
inline bool read_hostname(std::string_view cell, std::size_t line, RowIssues& issues) {
  if (!cell.empty()) return true;
  issues.add("hostname is blank", true, line, [] { return std::string("hostname is blank"); });
  return false;
}
inline bool read_socket_id(std::string_view cell, std::size_t line, RowIssues& issues,
                           std::uint32_t* out) {
  const auto v = cell.size() == 1 && cell[0] >= '0' && cell[0] <= '9'
                     ? std::optional<long long>(cell[0] - '0')  // the common case, no parse
                     : parse_int(cell);
  if (v && *v >= 0 && *v <= 0xFFFFFFFFLL) {
    *out = static_cast<std::uint32_t>(*v);
    return true;
  }
  issues.add("socket_id is not an integer in 0..4294967295", true, line,
             [&] { return describe_bad_cell("socket_id", cell, "an integer in 0..4294967295"); });
  return false;
}

// read_watts for a cell that is not plainly a reading in (0, bound]: a blank, impossible or
// absurd reading.
inline bool refuse_watts(std::string_view cell, std::string_view column, double bound,
                         std::size_t line, RowIssues& issues, double* out) {
  *out = std::numeric_limits<double>::quiet_NaN();
  if (cell.empty()) return true;
  double v = 0;
  if (!parse_double(cell, &v) || !(v > 0) || !std::isfinite(v)) {
    issues.add(std::string(column) + " is not a positive finite number", false, line,
               [&] { return describe_bad_cell(column, cell, "a positive finite number"); });
    return true;
  }
  if (v > bound) {
    issues.add(std::string(column) + " is above the physical bound", true, line, [&] {
      return std::string(column) + " " + std::string(cell) + " W above " +
             std::to_string(static_cast<long long>(bound)) + " W";
    });
    return false;
  }
  *out = v;
  return true;
}

// A power reading: its value, NaN when missing (blank, unparsable, zero, negative or not
// finite; all but blank are counted), or false when it is above `bound`: an error that
// skips the row (counted by the caller's reason).
inline bool read_watts(std::string_view cell, std::string_view column, double bound,
                       std::size_t line, RowIssues& issues, double* out) {
  if (!cell.empty() && parse_double(cell, out) && *out > 0 && *out <= bound) return true;
  return refuse_watts(cell, column, bound, line, issues, out);
}

// The same for a watts column of a layout table, within its bound.
inline bool read_watts(std::string_view cell, const CsvColumn& column, std::size_t line,
                       RowIssues& issues, double* out) {
  return read_watts(cell, column.name, column.hi, line, issues, out);
}

}  // namespace cpupower::artifacts
