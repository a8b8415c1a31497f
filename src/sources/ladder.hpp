#pragma once
// Resolving the CPU power source once at startup (--source auto|acpi|dcgm). Each rung must
// prove itself before it is used: a node can expose channels that never report, and
// publishing them would integrate to 0 J and pass for a measurement.
//
// auto: ACPI, live -> DCGM 1130 + 1132 -> DCGM 1130 alone -> failure with the reasons of
// every rung. --source acpi and --source dcgm run only their own rungs.

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "sources/acpi_reader.hpp"
#include "sources/dcgm.hpp"
#include "sources/nvml.hpp"
#include "sources/source.hpp"

namespace cpupower::sources {

enum class SourceRequest { automatic, acpi, dcgm };
std::optional<SourceRequest> parse_source_request(std::string_view text);

struct LadderOptions {
  SourceRequest request = SourceRequest::automatic;
  std::string hwmon_root = "/sys/class/hwmon";
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
  std::string mode;                // "acpi" or "dcgm"
  std::unique_ptr<Source> source;  // running; null when no source could be established
  std::string error;               // set when no source could be established
  // Typed views of `source`, for describing it (metadata); sinks use the Source interface.
  const AcpiReader* acpi = nullptr;
  const DcgmReader* dcgm = nullptr;

  // The sockets the base source publishes power for (ACPI totals, DCGM entities).
  std::set<std::uint32_t> cpu_sockets() const;
};

// Walks the ladder, logging each rung's outcome and every step down at WARN.
ResolvedSource resolve_source(const LadderOptions& options);

// The node's sources, the same for both sinks (the exporter, the host collector): the base
// source by the ladder, then NVML module power (unless `nvml` is null) for the base source's
// sockets, with the ladder's maximum age.
struct NodeSources {
  ResolvedSource base;
  std::unique_ptr<NvmlModuleReader> nvml;  // running; null when off or with no base source
};
NodeSources open_node_sources(const LadderOptions& ladder, const NvmlOptions* nvml);

}  // namespace cpupower::sources
