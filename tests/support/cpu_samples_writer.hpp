#pragma once
// Test-side helpers for CPU samples.csv: a writer of whole rows through RowAppender (the
// collector's path, artifacts::format_cpu_row behind scrape::CpuLeg), and the formatting
// shorthands the tests compare bytes with.

#include <memory>
#include <span>
#include <string>

#include "artifacts/cpu_samples.hpp"
#include "artifacts/csv.hpp"
#include "artifacts/row_appender.hpp"
#include "common/result.hpp"

namespace cpupower::artifacts {

inline std::string format_v3_row(const CpuSampleRow& row) {
  return format_cpu_row(row, kCpuSchemaVersion);
}
inline std::string format_v2_row(const CpuSampleRow& row) {
  return format_cpu_row(row, kCpuSchemaVersionV2);
}

// Appends v3 (or v2) rows to samples.csv (see RowAppender for what happens on failure).
class CpuSamplesWriter : public RowAppender {
 public:
  // Opens for appending rows of `schema_version` (2 or 3; anything else is an error). An
  // existing file must start with the header of that version, so a restarted collector
  // continues the same file instead of mixing layouts.
  static Result<std::unique_ptr<CpuSamplesWriter>> open(const std::string& path,
                                                        int schema_version = kCpuSchemaVersion) {
    if (!is_writable_cpu_schema(schema_version)) {
      return Error{"cannot write samples.csv schema v" + std::to_string(schema_version) + " to " +
                   path + " (only v2 and v3)"};
    }
    std::unique_ptr<CpuSamplesWriter> writer(new CpuSamplesWriter(path, schema_version));
    if (Status opened = writer->open_fd(); !opened) return Error{opened.error()};
    return writer;
  }

  // Formats rows into the pending buffer. A row cpu_row_problem refuses is counted as
  // dropped. Returns false when any row was refused or the writer is closed.
  bool append(std::span<const CpuSampleRow> rows) {
    bool all_ok = true;
    for (const auto& row : rows) {
      if (auto problem = cpu_row_problem(row)) {
        refuse(std::move(*problem));
        all_ok = false;
      } else {
        all_ok = append_rows(format_cpu_row(row, schema_version_), 1) && all_ok;
      }
    }
    return all_ok;
  }

  int schema_version() const { return schema_version_; }  // of every row it writes

 private:
  CpuSamplesWriter(const std::string& path, int schema_version)
      : RowAppender(path, std::string(cpu_header(schema_version))),
        schema_version_(schema_version) {}

  int schema_version_ = kCpuSchemaVersion;
};

}  // namespace cpupower::artifacts
