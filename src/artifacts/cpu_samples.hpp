#pragma once
// power/cpu/samples.csv: the exporter leg's one file of record. The writer produces schema
// v3 by default, or v2 (v3 without module_w) for readers pinned to the v1/v2 headers
// (docs/formats.md, docs/compatibility.md); the report reads every version
// (report/cpu_load.cpp). Nothing here throws on I/O failure: the collector is best-effort.

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.hpp"

namespace cpupower::artifacts {

inline constexpr std::string_view kCpuSamplesFilename = "samples.csv";
inline constexpr int kCpuSchemaVersionV1 = 1;
inline constexpr int kCpuSchemaVersionV2 = 2;
inline constexpr int kCpuSchemaVersion = 3;

inline constexpr std::string_view kCpuHeaderV1 =
    "schema_version,timestamp_unix,hostname,source,sensor,socket_id,power_w,total_power_w";
inline constexpr std::string_view kCpuHeaderV2 =
    "schema_version,timestamp_unix,hostname,source,sensor,socket_id,power_w,cpu_rail_w,soc_w,"
    "dram_w,total_power_w";
inline constexpr std::string_view kCpuHeaderV3 =
    "schema_version,timestamp_unix,hostname,source,sensor,socket_id,power_w,cpu_rail_w,soc_w,"
    "dram_w,module_w,total_power_w";

// One row of any version. v1 rows are one rail each: `sensor` is the raw label (e.g. "Grace
// Power Socket 0"), power_w that rail's value, and the rail columns are absent.
struct CpuSampleRow {
  int schema_version = kCpuSchemaVersion;
  double timestamp_unix = 0;
  std::string hostname;
  std::string source;  // acpi | dcgm (v2, v3); anything non-empty in v1
  std::string sensor;
  std::uint32_t socket_id = 0;
  double power_w = 0;
  std::optional<double> cpu_rail_w;
  std::optional<double> soc_w;
  std::optional<double> dram_w;
  std::optional<double> module_w;
  std::optional<double> total_power_w;

  bool operator==(const CpuSampleRow&) const = default;
};

// Shortest text that reads back to the same double (std::to_chars), e.g. 94.29, 1e-05, 94.
std::string format_double(double value);

// One v3 line with its "\r\n" terminator (the csv module's default dialect). Missing or
// non-finite optional values are empty cells; cells holding , " CR or LF are quoted.
// schema_version is always written as 3, whatever the row says.
std::string format_v3_row(const CpuSampleRow& row);

// The same as a v2 line: the v3 cells without module_w, schema_version written as 2.
std::string format_v2_row(const CpuSampleRow& row);

// The versions CpuSamplesWriter can write: 2 and 3.
bool is_writable_cpu_schema(int version);

// The header line (without its line end) of v1, v2 or v3; empty for any other version.
std::string_view cpu_header(int version);

// What the path of an open samples.csv names now, compared with the file the writer holds
// (st_dev and st_ino of the path against those of the descriptor).
enum class SamplesFileChange {
  none,       // the path still names the open file, at least as long as what was written
  deleted,    // nothing at the path, and the open file has no name left: its rows are gone
  replaced,   // another file at the path, and the open file has no name left
  moved,      // the open file still has a name, but not this path (renamed away)
  truncated,  // the same file, shorter than what the writer put in it
};
std::string_view samples_file_change_name(SamplesFileChange change);

// Appends v3 (or v2) rows to samples.csv. Not thread-safe: the collector serialises its
// writes.
//
// The file only ever grows by whole rows: a write that fails part-way (disk full, EFBIG,
// I/O error) is cut back with ftruncate to the end of its last complete row, so no partial
// line is left for later rows to follow.
class CpuSamplesWriter {
 public:
  // Opens for appending rows of `schema_version` (2 or 3; anything else is an error),
  // creating the file (with that version's header) when it is missing or empty. An existing
  // file must start with the header of that version, so a restarted collector continues the
  // same file instead of mixing layouts; a partial last line it ends with (a killed writer)
  // is cut off first.
  static Result<std::unique_ptr<CpuSamplesWriter>> open(const std::string& path,
                                                        int schema_version = kCpuSchemaVersion);

  ~CpuSamplesWriter();
  CpuSamplesWriter(const CpuSamplesWriter&) = delete;
  CpuSamplesWriter& operator=(const CpuSamplesWriter&) = delete;

  // Formats rows into the pending buffer. A row whose timestamp_unix or power_w is not
  // finite, or whose hostname, source or sensor is empty, is refused and counted. Returns
  // false when any row was refused or the writer is closed.
  bool append(std::span<const CpuSampleRow> rows);

  // Hands the pending rows to the OS (write(2), no fsync). On failure (disk full, I/O
  // error) the complete rows that did get written are kept, the partial row after them is
  // truncated away, and the rest are dropped and counted. Should the truncation itself fail,
  // the next flush tries it again before writing; only when that fails too is the partial
  // line terminated, so that it reads as one malformed row and later rows stay whole.
  bool flush();

  // Flushes and closes. Later appends fail. Returns false when the flush or close failed.
  bool close();

  // Whether the path still names the open file (see SamplesFileChange). `none` too when
  // the path cannot be examined for another reason (the error is not a change).
  SamplesFileChange check_path() const;

  // Closes the open file and opens the path again as open() does (creating it with the
  // header when it is missing), keeping the pending rows and the counters. On failure the
  // writer is left closed, its pending rows still pending (see discard_pending).
  Status reopen();

  // Drops the pending rows, counting them as dropped; returns how many there were.
  std::uint64_t discard_pending();

  bool is_open() const { return fd_ >= 0; }
  std::uint64_t pending_rows() const { return pending_rows_; }
  std::uint64_t rows_written() const { return rows_written_; }
  std::uint64_t rows_dropped() const { return rows_dropped_; }  // refused or lost in a write
  std::uint64_t write_errors() const { return write_errors_; }
  // Rows written to the file now open (since open or the last reopen).
  std::uint64_t rows_in_file() const { return rows_in_file_; }
  const std::string& last_error() const { return last_error_; }
  int last_errno() const { return last_errno_; }  // of the latest failed system call, or 0
  const std::string& path() const { return path_; }
  int schema_version() const { return schema_version_; }  // of every row it writes

 private:
  CpuSamplesWriter(std::string path, int fd, int schema_version);
  Status start();
  Status cut_partial_tail(off_t size);
  bool write_all(std::string_view bytes, std::size_t* written);
  bool repair_tail();
  void fail(const char* what);

  std::string path_;
  int fd_ = -1;
  int schema_version_ = kCpuSchemaVersion;
  off_t end_ = 0;                   // file size after our last write: the last whole row's end
  std::optional<off_t> repair_to_;  // a failed write's partial row still to truncate away
  bool needs_line_break_ = false;   // the file ends inside a line that could not be cut off
  std::string pending_;
  std::uint64_t pending_rows_ = 0;
  std::uint64_t rows_written_ = 0;
  std::uint64_t rows_dropped_ = 0;
  std::uint64_t write_errors_ = 0;
  std::uint64_t rows_in_file_ = 0;
  std::string last_error_;
  int last_errno_ = 0;
};

}  // namespace cpupower::artifacts
