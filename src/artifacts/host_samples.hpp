#pragma once
// CPU power samples as the energy report reads them: the host-collector leg's
// <storage_subdir>/samples.csv (and nodes/<host>.csv), schema v1 to v5, and, through the
// same column-name rules, the exporter leg's power/cpu/samples.csv v1 to v3. The report
// reads by header name like the reference's csv.DictReader, so extra columns are harmless
// and the layout (one row per rail, or one row per socket) follows from the header alone.

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cpupower::artifacts {

inline constexpr std::string_view kHostHeaderV1 =
    "schema_version,timestamp_unix,hostname,source,sensor,socket_id,power_w,total_power_w";
inline constexpr std::string_view kHostHeaderV2 =
    "schema_version,timestamp_unix,timestamp_local,hostname,source,sensor,socket_id,power_w,"
    "total_power_w";
inline constexpr std::string_view kHostHeaderV3 =
    "schema_version,timestamp_unix,timestamp_local,hostname,source,sensor,socket_id,power_w,"
    "total_power_w,cpu_util_total,cpu_util_user,cpu_util_nice,cpu_util_sys,cpu_util_irq";
inline constexpr std::string_view kHostHeaderV4 =
    "schema_version,timestamp_unix,timestamp_local,hostname,source,sensor,socket_id,power_w,"
    "cpu_rail_w,soc_w,dram_w,total_power_w,cpu_util_total,cpu_util_user,cpu_util_nice,"
    "cpu_util_sys,cpu_util_irq";
inline constexpr std::string_view kHostHeaderV5 =
    "schema_version,timestamp_unix,timestamp_local,hostname,source,sensor,socket_id,power_w,"
    "cpu_rail_w,soc_w,dram_w,module_w,total_power_w,cpu_util_total,cpu_util_user,"
    "cpu_util_nice,cpu_util_sys,cpu_util_irq";

// DCGM CPU-entity fields 1100..1104, fractions 0-1 of socket CPU time (host leg v3+).
inline constexpr std::size_t kUtils = 5;
inline constexpr std::array<std::string_view, kUtils> kCpuUtilColumns = {
    "cpu_util_total", "cpu_util_user", "cpu_util_nice", "cpu_util_sys", "cpu_util_irq"};

// Rail kinds of the wide layouts, in the order the report lists them.
inline constexpr std::size_t kRails = 3;
inline constexpr std::array<std::string_view, kRails> kCpuRailColumns = {"cpu_rail_w", "soc_w",
                                                                         "dram_w"};

inline constexpr int kHostSchemaVersion = 5;

// One row of the host leg's wide layout (v4/v5): one socket of one sample. power_w is the
// socket's primary reading (ACPI envelope, DCGM field 1130); total_power_w the node total,
// present only when every discovered socket total read back; module_w NVML module power.
struct HostSampleRow {
  double timestamp_unix = 0;
  std::string timestamp_local;  // ISO 8601 with the node's UTC offset
  std::string hostname;
  std::string source;  // acpi | dcgm
  std::string sensor;
  std::uint32_t socket_id = 0;
  double power_w = 0;
  std::optional<double> cpu_rail_w, soc_w, dram_w, module_w, total_power_w;
  std::array<std::optional<double>, kUtils> cpu_util;  // kCpuUtilColumns order, fractions 0-1

  bool operator==(const HostSampleRow&) const = default;
};

// One v5 line with its "\r\n" terminator; missing or non-finite values are empty cells.
std::string format_host_v5_row(const HostSampleRow& row);

// Which header this is, for messages: "exporter v3", "host v4", or "unrecognised" when the
// header matches no known version exactly (it is still read by column name).
std::string describe_cpu_header(const std::vector<std::string>& header);

// Host-leg schema version (1..5) whose header this is exactly, else 0.
int host_schema_version(const std::vector<std::string>& header);

// Column positions by name; a column the header lacks is nullopt.
struct CpuCsvColumns {
  std::optional<std::size_t> timestamp_unix, hostname, source, sensor, socket_id, power_w,
      total_power_w, module_w;
  std::array<std::optional<std::size_t>, kRails> rails;  // kCpuRailColumns order
  std::array<std::optional<std::size_t>, kUtils> util;   // kCpuUtilColumns order
  // One row per socket when every rail column is present (the reference's rule); else one
  // row per rail or sensor.
  bool wide = false;

  static CpuCsvColumns from_header(const std::vector<std::string>& header);
  // The columns every row needs: timestamp_unix, hostname, socket_id, power_w, total_power_w.
  // Empty when all are there, else the first missing name.
  std::string missing_required() const;
};

}  // namespace cpupower::artifacts
