#pragma once
// CPU power samples as the energy report reads them: the host-collector leg's
// <storage_subdir>/samples.csv (and nodes/<host>.csv), schema v1 to v5, and, through the
// same column-name rules, the exporter leg's power/cpu/samples.csv v1 to v3. The report
// reads by header name, as a csv.DictReader does, so extra columns are harmless
// and the layout (one row per rail, or one row per socket) follows from the header alone.

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "artifacts/layout.hpp"

namespace cpupower::artifacts {

inline const std::string kHostHeaderV1 = csv_header(kHostColumns, 1);
inline const std::string kHostHeaderV2 = csv_header(kHostColumns, 2);
inline const std::string kHostHeaderV3 = csv_header(kHostColumns, 3);
inline const std::string kHostHeaderV4 = csv_header(kHostColumns, 4);
inline const std::string kHostHeaderV5 = csv_header(kHostColumns, 5);
inline const std::string kHostHeader = csv_header(kHostColumns, newest_version(kHostColumns));

// DCGM CPU-entity fields 1100..1104, fractions 0-1 of socket CPU time (host leg v3+).
inline constexpr std::size_t kUtils = 5;
inline constexpr std::array<std::string_view, kUtils> kCpuUtilColumns = {
    "cpu_util_total", "cpu_util_user", "cpu_util_nice", "cpu_util_sys", "cpu_util_irq"};

// Rail kinds of the wide layouts, in the order the report lists them.
inline constexpr std::size_t kRails = 3;
inline constexpr std::array<std::string_view, kRails> kCpuRailColumns = {"cpu_rail_w", "soc_w",
                                                                         "dram_w"};

inline constexpr int kHostSchemaVersion = newest_version(kHostColumns);

// One row of the host leg's wide layout (v4/v5): one socket of one sample. power_w is the
// socket's primary reading (ACPI envelope, DCGM field 1130), NaN when missing (an empty
// cell: the merge keeps a node file's row whose reading the report reads as missing);
// total_power_w the node total, present only when every discovered socket total read back;
// module_w NVML module power.
struct HostSampleRow {
  double timestamp_unix = 0;
  std::string timestamp_local;  // ISO 8601 with the node's UTC offset
  std::string hostname;
  std::string source;  // acpi | rapl | dcgm
  std::string sensor;
  std::uint32_t socket_id = 0;
  double power_w = 0;
  std::optional<double> cpu_rail_w, soc_w, dram_w, module_w, total_power_w;
  std::array<std::optional<double>, kUtils> cpu_util;  // kCpuUtilColumns order, fractions 0-1

  bool operator==(const HostSampleRow&) const = default;
};

// Each watts column of kHostColumns and the HostSampleRow member that holds it, in the order
// the readers read a row's readings (the report's: the node total, whose cell repeats across a
// scrape's rows, first; then the primary reading, module power and the rails), so that a row
// with two bad readings is counted under the same one by the merge and the report. A reader
// walks this table, so a watts column added to the layout and here needs no reader of its own.
struct HostWatts {
  std::size_t column;                                      // in kHostColumns
  std::optional<double> HostSampleRow::*member = nullptr;  // null: power_w, a plain double
  // Keeps a reading as read_watts gives it: NaN when missing.
  void put(HostSampleRow& row, double w) const {
    if (!member) {
      row.power_w = w;
    } else {
      row.*member = std::isnan(w) ? std::nullopt : std::optional<double>(w);
    }
  }
};
inline constexpr HostWatts kHostWatts[] = {
    {column_of(kHostColumns, "total_power_w"), &HostSampleRow::total_power_w},
    {column_of(kHostColumns, "power_w")},
    {column_of(kHostColumns, "module_w"), &HostSampleRow::module_w},
    {column_of(kHostColumns, "cpu_rail_w"), &HostSampleRow::cpu_rail_w},
    {column_of(kHostColumns, "soc_w"), &HostSampleRow::soc_w},
    {column_of(kHostColumns, "dram_w"), &HostSampleRow::dram_w},
};

// Every watts column of the layout is in kHostWatts once, bound to a member when optional.
consteval bool binds_every_watts_column() {
  for (std::size_t i = 0; i < std::size(kHostColumns); ++i) {
    std::size_t bound = 0;
    for (const auto& w : kHostWatts) {
      if (w.column != i) continue;
      if ((w.member != nullptr) != kHostColumns[i].optional()) return false;
      ++bound;
    }
    if (bound != (kHostColumns[i].cell == Cell::watts ? 1u : 0u)) return false;
  }
  return true;
}
static_assert(binds_every_watts_column(), "each watts column of kHostColumns in kHostWatts once");

// One line of the newest version (kHostSchemaVersion) with its "\r\n" terminator, the cells in
// kHostColumns order; missing or non-finite values are empty cells.
inline std::string format_host_row(const HostSampleRow& row) {
  std::string out;
  out.reserve(192);
  const auto& u = row.cpu_util;
  const std::optional<double> power_w = row.power_w;  // a missing (NaN) one is an empty cell
  append_row(out, kHostColumns, kHostSchemaVersion, kHostSchemaVersion, row.timestamp_unix,
             row.timestamp_local, row.hostname, row.source, row.sensor, row.socket_id, power_w,
             row.cpu_rail_w, row.soc_w, row.dram_w, row.module_w, row.total_power_w, u[0], u[1],
             u[2], u[3], u[4]);
  return out;
}

// Which header this is, for messages: "exporter v3", "host v4", or "unrecognised" when the
// header matches no known version exactly (it is still read by column name).
std::string describe_cpu_header(const std::vector<std::string>& header);

// Host-leg schema version (1..5) whose header this is exactly, else 0.
int host_schema_version(const std::vector<std::string>& header);

// Positions in kHostColumns of the columns the readers use.
namespace host_column {
inline constexpr std::size_t kTimestampUnix = column_of(kHostColumns, "timestamp_unix");
inline constexpr std::size_t kTimestampLocal = column_of(kHostColumns, "timestamp_local");
inline constexpr std::size_t kHostname = column_of(kHostColumns, "hostname");
inline constexpr std::size_t kSource = column_of(kHostColumns, "source");
inline constexpr std::size_t kSensor = column_of(kHostColumns, "sensor");
inline constexpr std::size_t kSocketId = column_of(kHostColumns, "socket_id");
inline constexpr std::size_t kPowerW = column_of(kHostColumns, "power_w");
inline constexpr std::size_t kRail = column_of(kHostColumns, kCpuRailColumns[0]);  // then soc, dram
inline constexpr std::size_t kModuleW = column_of(kHostColumns, "module_w");
inline constexpr std::size_t kTotalPowerW = column_of(kHostColumns, "total_power_w");
inline constexpr std::size_t kUtil =
    column_of(kHostColumns, kCpuUtilColumns[0]);  // then the others
}  // namespace host_column

// Where each kHostColumns column is in a file's header, by name: the host leg's layouts, and
// the exporter leg's, whose columns are among them.
struct CpuCsvColumns {
  std::vector<std::optional<std::size_t>> at;  // by kHostColumns position; nullopt: absent
  // One row per socket when every rail column is present (upstream's rule, so that both read
  // a file alike); else one row per rail or sensor.
  bool wide = false;

  static CpuCsvColumns from_header(const std::vector<std::string>& header);
  // The key columns every row needs: timestamp_unix, hostname, socket_id, power_w,
  // total_power_w. Empty when all are there, else the first missing name.
  std::string missing_required() const;
  // The record's cell of a column; empty when the header lacks it.
  std::string_view cell(std::span<const std::string_view> cells, std::size_t column) const {
    return at[column] ? cells[*at[column]] : std::string_view{};
  }
};

}  // namespace cpupower::artifacts
