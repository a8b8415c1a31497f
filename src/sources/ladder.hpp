#pragma once
// Resolving the CPU power source once at startup (--source auto|acpi|rapl|dcgm). Each rung must
// prove itself before it is used: a node can expose channels that never report, and
// publishing them would integrate to 0 J and pass for a measurement. The sources are rows of
// one registry table (registered_sources(), as node_exporter registers its collectors):
// --source's choices and help, the `auto` ladder's order and the mode come from it.
// auto: ACPI, live -> RAPL, advancing -> DCGM 1130 + 1132 -> DCGM 1130 alone -> failure with
// the reasons of every rung. --source <name> runs only that source's rung.
//
// RAPL after ACPI: a node whose ACPI power meters include socket totals is a Grace node, and
// those meters cover the socket envelope, which is more than a package boundary; Grace has no
// RAPL, and x86 nodes have neither such meters (their ACPI power meters, where they have one,
// carry no Grace socket-total label, so the ACPI rung refuses them) nor DCGM CPU entities.
// RAPL before DCGM: DCGM's CPU fields exist on Grace only, so on x86 DCGM could only fail.

#include <chrono>
#include <functional>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "sources/acpi_reader.hpp"
#include "sources/dcgm.hpp"
#include "sources/nvml.hpp"
#include "sources/rapl.hpp"
#include "sources/source.hpp"

namespace cpupower::sources {

struct LadderOptions {
  std::string request = "auto";  // "auto" or a registered source's name
  std::string hwmon_root = "/sys/class/hwmon";
  std::string powercap_root = std::string(kPowercapRoot);
  std::chrono::milliseconds read_interval{100};
  std::chrono::milliseconds max_age{3000};
  std::chrono::milliseconds probe_retry_delay{1000};
  DcgmOptions dcgm;
  // A bound on what the ACPI channels may add to a sink's output (the exporter's body): when
  // set, channels are kept while the sum of channel_bytes() over them stays within
  // max_channel_bytes, socket totals first, then the others in discovery order; the rest are
  // neither read nor published, with a WARN. Unset: every channel.
  std::function<std::size_t(const AcpiChannel&)> channel_bytes;
  std::size_t max_channel_bytes = 0;
};

// The outcome of the ACPI rung alone: a running reader, or the reason it is unusable.
struct AcpiRung {
  std::unique_ptr<AcpiReader> reader;
  std::string reason;
  std::vector<std::string> warnings;  // discovery warnings, to be logged
};

// Discovery, "a socket-total channel exists", then the liveness probe: some total reads
// positive, on the first pass or on one retry after probe_retry_delay. Component rails
// never vouch for a socket.
AcpiRung try_acpi(const LadderOptions& options);

struct ResolvedSource {
  std::string mode;                // the registered name of the source: "acpi", "rapl", "dcgm"
  std::unique_ptr<Source> source;  // running; null when no source could be established
  std::string error;               // set when no source could be established
  // Typed views of `source`, for describing it (metadata); sinks use the Source interface.
  const AcpiReader* acpi = nullptr;
  const RaplReader* rapl = nullptr;
  const DcgmReader* dcgm = nullptr;

  // The sockets the base source publishes power for (ACPI totals, RAPL packages, DCGM
  // entities).
  std::set<std::uint32_t> cpu_sockets() const;
};

// The rung of one source: running, or the reason it is unusable.
struct SourceRung {
  std::unique_ptr<Source> source;
  std::string reason;
};

// One registered source. To add one: its reader and open function in a file of its own, a
// declaration of the function and a row in ladder.cpp's table, the file in CMakeLists.txt.
struct SourceEntry {
  std::string_view name;       // --source value and mode: Source::mode() of what it opens
  std::string_view title;      // in the ladder's logs and reasons ("ACPI")
  std::string_view auto_help;  // its rung in --source's help ("live ACPI")
  int rank = 0;                // `auto` tries lower ranks first
  SourceRung (*open)(const LadderOptions&) = nullptr;  // logs its own findings
};
std::span<const SourceEntry> registered_sources();

// --source's choices ("auto", then every name by rank) and help text, "auto (live ACPI, then
// RAPL, then DCGM), acpi, rapl or dcgm".
std::vector<std::string> source_choices(std::span<const SourceEntry> table = registered_sources());
std::string source_help(std::span<const SourceEntry> table = registered_sources());

// Walks the ladder over `table`, logging each rung's outcome and every step down at WARN.
ResolvedSource resolve_source(const LadderOptions& options,
                              std::span<const SourceEntry> table = registered_sources());

// The node's sources, the same for both sinks (the exporter, cpu-power host-collect): the base
// source by the ladder, then NVML module power (unless --no-nvml) for its sockets. `ladder`
// brings the sink's intervals, the flags the rest; DCGM and NVML take the ladder's max age.
struct NodeFlags {
  std::string source = "auto";  // auto or a registered source's name
  std::string hwmon_root = "/sys/class/hwmon";
  std::string powercap_root = std::string(kPowercapRoot);
  std::string pci_root = "/sys/bus/pci/devices";
  std::string dcgm_lib;
  std::string nvml_lib;
  bool no_nvml = false;
  double max_age_s = 3.0;
};
struct NodeSources {
  ResolvedSource base;
  std::unique_ptr<NvmlModuleReader> nvml;  // running; null when off or with no base source
};
NodeSources open_node_sources(const NodeFlags& flags, LadderOptions ladder);

}  // namespace cpupower::sources
