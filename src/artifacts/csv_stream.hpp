#pragma once
// A tolerant, fast CSV record stream for the large sample files the energy report reads (a
// run's samples.csv can hold tens of millions of rows). It follows Python's csv module in the
// default dialect, which wrote these files: comma separator, double-quote quoting with ""
// as an escaped quote, CR LF or LF line ends, fully blank lines skipped. The file is read
// with pread into small buffers, never mapped, so resident memory stays far below the file
// size; large files are cut into chunks at line starts and scanned on several threads.

#include <cstddef>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace cpupower::artifacts {

struct CsvRecord {
  std::span<const std::string_view> cells;  // valid only during the callback
};

struct CsvScanOptions {
  unsigned threads = 1;  // chunks scanned at once; 1 reads the file in order on this thread
  std::size_t min_chunk_bytes = 8u << 20;  // smaller files are never split
};

struct CsvScanResult {
  bool ok = false;
  bool missing = false;  // the file does not exist
  std::string error;     // what went wrong, with the path
  std::vector<std::string> header;
  std::size_t chunks = 0;  // how many chunk indexes the record callback saw
};

// Reads the header line, calls `on_header` (returning false stops the scan with ok=true and
// no records), then calls `on_record(chunk, record)` for every data record. Records of one
// chunk arrive in file order on one thread; chunk k lies before chunk k+1 in the file, so a
// caller that keeps one state per chunk and concatenates them in chunk order sees the file
// order. `on_reset` is called when a parallel scan met a quote character (a quoted cell may
// hide a line break, so chunk edges are not trustworthy) and the file is scanned again as
// one chunk: the caller drops whatever it collected.
CsvScanResult scan_csv_file(const std::string& path, const CsvScanOptions& options,
                            const std::function<bool(const std::vector<std::string>&)>& on_header,
                            const std::function<void(std::size_t, const CsvRecord&)>& on_record,
                            const std::function<void()>& on_reset);

// The same over text in memory, always as one chunk (tests, small files).
CsvScanResult scan_csv_text(std::string_view text,
                            const std::function<bool(const std::vector<std::string>&)>& on_header,
                            const std::function<void(std::size_t, const CsvRecord&)>& on_record);

// Python float() for one cell: surrounding blanks allowed, decimal or exponent notation,
// inf and nan. nullopt for an empty or unparsable cell. Correctly rounded.
std::optional<double> parse_cell_double(std::string_view cell);

// Python int() for one cell (surrounding blanks allowed). nullopt when not an integer.
std::optional<long long> parse_cell_int(std::string_view cell);

// Index of `name` in `header`, or nullopt.
std::optional<std::size_t> column_index(const std::vector<std::string>& header,
                                        std::string_view name);

}  // namespace cpupower::artifacts
