#pragma once
// The strict reader of a CPU samples file, for `cpu-power validate`: the exporter leg's
// power/cpu/samples.csv (v1..v3) and the host leg's merged samples.csv (host v1..v5), read as
// a downstream consumer reads them. Unlike the report's reader, which reads by column name
// and steps over what it cannot use, every departure here is counted under a reason code,
// with the line of its first occurrence (docs/formats.md, "Validation: `cpu-power
// validate`").

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cpupower::artifacts {

// Reason codes of the CPU samples rules, spelled as the consumers spell them.
namespace cpu_reason {
inline constexpr std::string_view kSamplesMissing = "cpu_samples_missing";
inline constexpr std::string_view kHeaderMismatch = "cpu_samples_header_mismatch";
inline constexpr std::string_view kMalformed = "cpu_samples_malformed";
inline constexpr std::string_view kSchemaVersionMismatch = "cpu_schema_version_mismatch";
inline constexpr std::string_view kInvalidPowerValue = "cpu_invalid_power_value";
inline constexpr std::string_view kDuplicateTimestamp = "cpu_duplicate_timestamp";
inline constexpr std::string_view kSourceConflict = "cpu_source_conflict";
}  // namespace cpu_reason

// One series: a socket of a host (wide layouts) or a rail of a socket (one row per rail).
struct CpuSeriesKey {
  std::string hostname;
  long long socket_id = 0;
  std::string sensor;  // empty in the wide layouts
  auto operator<=>(const CpuSeriesKey&) const = default;
  bool operator==(const CpuSeriesKey&) const = default;
  // "cpu/<host>/socket<n>" or "cpu/<host>/socket<n>/<sensor>", as the report names series.
  std::string label() const;
};

struct CpuSamplesIssue {
  std::string code;  // a cpu_reason code
  std::size_t count = 0;
  std::size_t first_line = 0;  // 0 for file-wide issues
  std::string first;           // what the first one was
};

struct CpuSamplesCheck {
  bool found = false;                   // a regular file at the path
  std::string header_problem;           // why the first line is no header; empty when it is one
  std::string header;                   // the first line's cells joined with ','
  int exporter_version = 0;             // 1..3 when the header is exactly an exporter-leg header
  int host_version = 0;                 // 1..5 when the header is exactly a host-leg header
  bool wide = false;                    // one row per socket (exporter v2/v3, host v4/v5)
  std::size_t rows = 0;                 // records after the header, damaged ones included
  std::size_t rows_kept = 0;            // rows that passed every row rule
  std::vector<CpuSamplesIssue> issues;  // in the order first seen
  // Every kept row's time per series, ascending.
  std::map<CpuSeriesKey, std::vector<double>> series;
  // hostname -> socket ids with kept rows, ascending.
  std::map<std::string, std::vector<long long>> sockets;
};

// The version a header's schema_version cells must hold: the exporter version, else the
// host version; 0 when the header is neither.
int cpu_samples_version(const CpuSamplesCheck& check);

// Reads `path`. The header must be one of the known exporter or host headers exactly, else
// cpu_samples_header_mismatch and no row is read. Row rules, each row counted once under its
// first failing rule:
//   cpu_samples_malformed        another number of cells than the header, no line end (a torn
//                                last line), a quote never closed, timestamp_unix not a finite
//                                number, hostname blank, socket_id not an integer >= 0;
//   cpu_schema_version_mismatch  the schema_version cell is not the header's version;
//   cpu_invalid_power_value      power_w not a finite number >= 0;
//   cpu_duplicate_timestamp      a series already has a row at this timestamp_unix (the same
//                                number);
// and over the file, once per (host, sensor kind) with more than one `source`:
//   cpu_source_conflict          the kind is the sensor name with its digits dropped, so
//                                "CPU0:cpuSidePowerUsageW" and "CPU1:cpuSidePowerUsageW" are
//                                one kind.
// Never throws; a file that cannot be read is found = false or a header problem.
CpuSamplesCheck check_cpu_samples(const std::string& path);

}  // namespace cpupower::artifacts
