#pragma once
// Rendering a source snapshot to the exposition body, from the family descriptors of
// expo/families.hpp: the families existing parsers read first, then our cpu_power_exporter_
// diagnostics, so those parsers are unaffected.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "expo/families.hpp"
#include "sources/socket_watch.hpp"
#include "sources/source.hpp"

namespace cpupower::exporter {

// The most bytes one ACPI channel adds to a body: its cpu_power_acpi_watts sample, its
// counters, its per-sensor self metrics and a socket_up sample, with every value at its
// widest.
// `label_text` and `self_label_text` as in sources::Sensor.
std::size_t acpi_channel_bytes_bound(std::string_view label_text, std::string_view self_label_text);

// What the exporter's channels may add to a body: the collector refuses bodies over
// expo::kMaxBodyBytes (1 MiB), and the rest of a body (HELP and TYPE lines, info, NVML
// module power of a few sockets) stays far below the quarter left.
inline constexpr std::size_t kMaxChannelBytes = 768 * 1024;

// One family: HELP and TYPE always, then one sample per power sensor holding a fresh value,
// in the source's order, labelled with the sensor's label text.
void render_family(std::string& out, const expo::Family& family, const sources::Snapshot& snapshot);

// A source's counters (energy, covered and bridged seconds), each family's HELP and TYPE
// always, then one sample per power sensor holding the value, labelled as in render_family.
void render_counter_families(std::string& out, const expo::CounterFamilies& families,
                             const sources::Snapshot& snapshot);

// One sensor row of the self metrics: its escaped label text and its reading.
struct SelfRow {
  std::string_view label_text;  // owned by the caller; built once, not per scrape
  sources::ChannelReading reading;
  // Only in cpu_power_exporter_average_interval_seconds: a sensor without self metrics
  // (NVML module power) whose averaging window is still published.
  bool interval_only = false;
};

struct SelfStats {
  std::string_view version;
  std::string_view source;  // resolved mode
  std::uint64_t scrapes_total = 0;
  std::vector<sources::ModuleSocketState> modules;  // NVML module sockets, when NVML is on
  // The base source's sockets found at discovery (cpu_power_exporter_socket_up).
  std::vector<sources::SocketUp> sockets = {};
};

// cpu_power_exporter_* families: info, per-sensor sample age (counted from the centre of the
// interval the reading averages: read time minus half the window), averaging interval, read
// duration, read counters, stale flags, module sockets withheld (by reason; only with NVML
// module sockets), scrapes served, then whether each socket's primary reading is served
// (cpu_power_exporter_socket_up, one sample per socket found at discovery; after every
// older family, so a body's earlier lines are those of exporters without it).
void render_self_metrics(std::string& out, const std::vector<SelfRow>& rows,
                         const SelfStats& stats);

}  // namespace cpupower::exporter
