#pragma once
// The GPU leg's strict reader of samples.csv: what the session checks before it finalizes
// the manifest, and what a consumer re-checks from the bytes on disk. Unlike the energy
// report's lenient reader (gpu_samples.hpp), any departure from the contract is a reason
// code (docs/formats.md, "GPU leg"). It also derives the observed devices (UUIDs, sample
// times) and the file's SHA-256, so the manifest and window coverage come from the file
// itself, never from what the collector meant to write.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "artifacts/gpu_contract.hpp"
#include "artifacts/gpu_samples_out.hpp"
#include "common/result.hpp"

namespace cpupower::artifacts {

struct GpuSamplesCheck {
  // Reason codes, each once, in the order found: samples_csv_missing,
  // samples_digest_unavailable, samples_csv_header_mismatch, samples_csv_malformed,
  // duplicate_sample_row, timestamp_non_monotonic.
  GpuReasons reason_codes;
  int schema_version = 0;          // the version whose header the file has; 0 when none
  std::size_t row_count = 0;       // rows kept: well-formed and not duplicates (sample_row_count)
  std::size_t malformed_rows = 0;  // records refused, blank and torn lines included
  std::size_t duplicate_rows = 0;  // later rows of a (scrape_seq, hostname, gpu_index) key
  std::optional<std::uint64_t> max_scrape_seq;  // over the rows kept
  std::optional<std::string> sha256_hex;        // of the file's bytes, lowercase
  std::vector<GpuObservedDevice> devices;       // from the rows kept, by (hostname, gpu_index)
  std::vector<std::string> problems;            // the first few, "line <n>: <what>"
};

// Reads `path` strictly. `expected_schema_version` (1, 2 or 3) is the only header accepted;
// nullopt accepts any of the three, each row then checked against the version its header
// names. Never throws; an unreadable file is reasons, not an error.
//
//   no file at `path`                   samples_csv_missing (no digest; nothing else read)
//   digest cannot be computed            samples_digest_unavailable
//   first line not exactly the header    samples_csv_header_mismatch (no row is read)
//   a row that breaks a cell rule, has another number of cells, is blank, has no line end
//   (a torn last line), holds invalid UTF-8 or an unclosed quote: samples_csv_malformed
//   a later row with a (scrape_seq, hostname, gpu_index) already seen: duplicate_sample_row
//   a device's timestamps decreasing in scrape_seq order: timestamp_non_monotonic
//
// Cell rules: schema_version an integer equal to the header's version; timestamp_unix and
// power_w finite numbers, power_w >= 0; scrape_seq and gpu_index integers >= 0; hostname and
// gpu_uuid non-empty; gpu_util_pct, sm_active, temperature_c empty or a number in range
// (0..100, 0..1, -273.15..200).
GpuSamplesCheck check_gpu_samples(
    const std::string& path, std::optional<int> expected_schema_version = kGpuSamplesSchemaVersion);

// SHA-256 of a file's bytes, or of bytes, as 64 lowercase hex digits (GNU Nettle).
Result<std::string> sha256_file_hex(const std::string& path);
std::string sha256_hex(std::string_view bytes);

}  // namespace cpupower::artifacts
