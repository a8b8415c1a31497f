#pragma once
// Rendering a source snapshot to the exposition body. The reference families come first,
// exactly as the reference prints them; our own diagnostics follow under the distinct
// cpu_power_exporter_ prefix, so parsers of the reference families are unaffected.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sources/acpi_reader.hpp"
#include "sources/dcgm.hpp"
#include "sources/nvml.hpp"

namespace cpupower::exporter {

inline constexpr std::string_view kAcpiFamily = "cpu_power_acpi_watts";
inline constexpr std::string_view kAcpiHelp = "Grace CPU power rail reading from ACPI hwmon (W).";

// The cpu_power_acpi_watts family: one sample per channel holding a fresh value, in
// discovery order. HELP and TYPE are always present.
void render_acpi_family(std::string& out, const std::vector<sources::AcpiChannel>& channels,
                        const std::vector<sources::ChannelReading>& readings);

inline constexpr std::string_view kDcgmFamily = "cpu_power_dcgm_watts";
inline constexpr std::string_view kDcgmHelp =
    "Grace CPU power via DCGM CPU-entity fields (W): field_id=1130 is the CPU rail (ACPI 'CPU "
    "Power Socket N'), 1132 the SysIO rail; DCGM has no socket-envelope field.";
inline constexpr std::string_view kNvmlFamily = "cpu_power_nvml_watts";
inline constexpr std::string_view kNvmlHelp =
    "Superchip module power from NVML field 185 (1 s average) at module scope (W): Grace, its "
    "GPUs and the rest of the module; the mean of the socket's GPUs, never to be added to GPU "
    "power.";

// cpu_power_dcgm_watts{socket,field_id,source="dcgm"}: one sample per (entity, field) holding
// a fresh value, entity-major with 1130 first per entity.
void render_dcgm_family(std::string& out, const std::vector<sources::DcgmRow>& rows,
                        const std::vector<sources::ChannelReading>& readings);

// cpu_power_nvml_watts{type="module",socket,gpus,source="nvml"}: one sample per socket.
void render_nvml_family(std::string& out, const std::vector<sources::ModuleSample>& samples);

// One sensor row of the self metrics: its escaped label text and its reading.
struct SelfRow {
  std::string_view label_text;  // owned by the caller; built once, not per scrape
  sources::ChannelReading reading;
};

struct SelfStats {
  std::string_view version;
  std::string_view source;  // resolved mode
  std::uint64_t scrapes_total = 0;
};

// cpu_power_exporter_* families: info, per-sensor sample age, read duration, read counters,
// stale flags, scrapes served.
void render_self_metrics(std::string& out, const std::vector<SelfRow>& rows,
                         const SelfStats& stats);

}  // namespace cpupower::exporter
