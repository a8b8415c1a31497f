#pragma once
// Rendering a source snapshot to the exposition body. The reference families come first,
// exactly as the reference prints them; our own diagnostics follow under the distinct
// cpu_power_exporter_ prefix, so parsers of the reference families are unaffected.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sources/acpi_reader.hpp"

namespace cpupower::exporter {

inline constexpr std::string_view kAcpiFamily = "cpu_power_acpi_watts";
inline constexpr std::string_view kAcpiHelp = "Grace CPU power rail reading from ACPI hwmon (W).";

// The cpu_power_acpi_watts family: one sample per channel holding a fresh value, in
// discovery order. HELP and TYPE are always present.
void render_acpi_family(std::string& out, const std::vector<sources::AcpiChannel>& channels,
                        const std::vector<sources::ChannelReading>& readings);

struct SelfStats {
  std::string_view version;
  std::string_view source;  // resolved mode
  std::uint64_t scrapes_total = 0;
};

// cpu_power_exporter_* families: info, per-sensor sample age, read duration, read counters,
// stale flags, scrapes served.
void render_self_metrics(std::string& out, const std::vector<sources::AcpiChannel>& channels,
                         const std::vector<sources::ChannelReading>& readings,
                         const SelfStats& stats);

}  // namespace cpupower::exporter
