#pragma once
// One scrape body -> the per-socket rows samples.csv v3 holds. Pure: no I/O, no clock.
//
// The rules (docs/formats.md states them; docs/compatibility.md where they differ from
// upstream's collector):
//   * Families: cpu_power_acpi_watts, cpu_power_rapl_watts, cpu_power_dcgm_watts,
//     cpu_power_nvml_watts. When the body yields any ACPI reading the scrape is ACPI and the
//     others are ignored; RAPL is read only when ACPI yields nothing, DCGM only when neither
//     does; NVML only ever adds module_w.
//   * RAPL: socket from `socket`; type total is power_w (the package), core cpu_rail_w,
//     uncore soc_w, dram dram_w; any other type is no reading.
//   * A value that is zero, negative, NaN or infinite is missing, never idle power.
//   * ACPI: kind from `type` (legacy aliases grace/cpu/sysio), socket from `socket` (a
//     non-negative integer); when either is unusable, both come from `oem_info`.
//   * DCGM: a missing or empty field_id is 1130 (older exporters); only 1130 (power_w and
//     cpu_rail_w) and 1132 (soc_w) are kept; the first value per (socket, field) wins.
//   * A series repeated in the body (the same family and label set twice): the first sample
//     is used, as before, and the repeats are counted and named (Readings::duplicate_series)
//     for the collector to warn about; the body is not refused.
//   * Pivot: one row per socket holding its primary reading (ACPI total, RAPL package, DCGM
//     1130); a socket without it has no row; the first reading per kind wins; sockets ascending.
//   * module_w comes from NVML (type="module") alone, and only onto a row the CPU family
//     produced. An ACPI module meter (type="module", or "Module Power Socket N" in oem_info)
//     is unclassified: it never fills module_w. An NVML-only body: no rows.
//   * total_power_w = sum of power_w over this scrape's rows, repeated on each row. It is the
//     node's total only when no socket is missing: the CPU leg writes it empty otherwise.
//   * cpu_power_exporter_socket_up{socket} (exporters that serve it): the sockets the exporter
//     found at discovery and whether each one's primary reading is served; the first sample
//     per socket wins. A socket it lists at 0, or lists at 1 with no row here, is missing.

#include <bit>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "expo/parser.hpp"

namespace cpupower::scrape {

enum class Mode { unknown, acpi, dcgm, rapl };

// "acpi", "rapl", "dcgm", "unknown": the cpu_manifest.json resolved_mode spellings.
std::string_view mode_name(Mode mode);

struct SocketRow {
  std::uint32_t socket_id = 0;
  std::string source;  // "acpi", "rapl" or "dcgm": what power_w came from
  // canonical: CPU<n>:cpuSidePowerUsageW (ACPI), CPU<n>:packagePowerUsageW (RAPL),
  // CPU<n>:cpuPowerUsageW (DCGM)
  std::string sensor;
  double power_w = 0;
  std::optional<double> cpu_rail_w;
  std::optional<double> soc_w;
  std::optional<double> dram_w;
  std::optional<double> module_w;
  double total_power_w = 0;  // node sum of power_w over this scrape's rows

  bool operator==(const SocketRow&) const = default;
};

struct Readings {
  Mode mode = Mode::unknown;
  std::vector<SocketRow> rows;  // sockets ascending; may be empty in acpi/dcgm mode

  // Mean of cpu_power_exporter_sample_age_seconds over the sensors behind the rows'
  // power_w (ACPI and RAPL: matched by the `sensor` label of the total samples; DCGM: age samples
  // whose `socket` label names a row's socket, with field_id absent or 1130). nullopt when
  // the exporter reports no age for them (older exporters, the Python fallback).
  std::optional<double> total_age_s;

  // The smallest and largest cpu_power_exporter_average_interval_seconds of the same sensors
  // (what each reading averages); nullopt when the exporter serves none for them (DCGM, older
  // exporters, the Python fallback).
  std::optional<double> average_interval_min_s, average_interval_max_s;

  // A hash of mode and every row value (not the ages). Equal fingerprints on consecutive
  // scrapes of one node mean the exporter served the same readings again.
  std::uint64_t fingerprint = 0;

  // cpu_power_exporter_socket_up, sockets ascending; empty when the body has none.
  struct SocketUp {
    std::uint32_t socket = 0;
    bool up = false;
    bool operator==(const SocketUp&) const = default;
  };
  std::vector<SocketUp> socket_up;
  // The sockets socket_up lists that have no row in this body (at 0, or at 1 and still no
  // primary reading here), ascending. Sockets a node served earlier are the CPU leg's to add.
  std::vector<std::uint32_t> sockets_missing;

  // Series the body repeats (expo::ParseResult::duplicate_series among the families read
  // here) and the first repeat's text; the first sample of each was used.
  std::size_t duplicate_series = 0;
  std::string first_duplicate;

  // Set when the body could not be parsed (the scrape then has mode unknown and no rows).
  std::optional<std::string> error;
};

// FNV-1a, 64-bit: small, deterministic across runs and builds, good enough to tell two
// scrapes' readings apart (Readings::fingerprint, GpuScrape::fingerprint).
class Fingerprint {
 public:
  void add(std::uint64_t v) {
    for (int i = 0; i < 8; ++i) byte((v >> (8 * i)) & 0xff);
  }
  void add(std::string_view s) {
    add(s.size());
    for (const unsigned char c : s) byte(c);
  }
  void add(const std::optional<double>& v) {
    add(std::uint64_t{v.has_value()});
    if (v) add(std::bit_cast<std::uint64_t>(*v));
  }
  std::uint64_t value() const { return hash_; }

 private:
  void byte(std::uint64_t b) { hash_ = (hash_ ^ b) * 0x100000001b3ULL; }
  std::uint64_t hash_ = 0xcbf29ce484222325ULL;
};

// Parses and pivots one body. Never throws.
Readings readings_from_body(std::string_view body);

// The same, parsing into `scratch` (whose storage is reused from one call to the next: the
// CPU leg keeps one). Only the families the rules above read are kept from the parse; a line
// of any other family still fails the body when it is not valid exposition.
Readings readings_from_body(std::string_view body, expo::ParseResult& scratch);

// The same for an already parsed exposition.
Readings readings_from_samples(const std::vector<expo::Sample>& samples);

}  // namespace cpupower::scrape
