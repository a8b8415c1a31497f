#pragma once
// The shared vocabulary of Grace power rails: what an ACPI OEM label means, the names
// every producer and consumer uses for it, and the DCGM CPU power fields. Pure functions,
// one table; nothing else in the project classifies a label.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace cpupower::rails {

// total: the whole CPU-side socket envelope, the only kind that becomes per-socket power_w.
// cpu_rail, soc, dram: component rails, overlapping the total, never summed into it.
// module: the whole superchip (Grace + GPUs + memory + regulators), never summed into
// anything; only NVML produces it (no OEM label classifies as module: a firmware
// "Module Power Socket N" meter is other). other: unclassified, published with no socket.
enum class Kind { total, cpu_rail, soc, dram, module, other };

std::string_view kind_name(Kind kind);

// Canonical kind names plus the legacy v1 aliases grace -> total, cpu -> cpu_rail,
// sysio -> soc. nullopt for anything else ("other" included: it carries no rail).
std::optional<Kind> parse_kind(std::string_view name);

struct Classification {
  Kind kind = Kind::other;
  std::string socket;  // decimal digits as written in the label; empty for other
};

// Classifies an OEM label (power*_oem_info). Case-insensitive; the socket is the run of
// digits immediately after a known phrase, so "Grace Power Socket 1 CPU Power" is total/1
// and a phrase without adjacent digits does not match.
Classification classify_oem(std::string_view oem_info);

// The socket label as an index, for consumers that need a number.
std::optional<std::uint32_t> socket_index(std::string_view socket);

// Canonical sensor names of the samples.csv `sensor` column, e.g. CPU0:cpuSidePowerUsageW.
std::string acpi_sensor_name(Kind kind, std::uint32_t socket);
std::string dcgm_sensor_name(std::uint32_t socket);
// An x86 RAPL package, the socket's power_w there: CPU<n>:packagePowerUsageW.
std::string rapl_sensor_name(std::uint32_t socket);

// What a canonical sensor name names, read back from its suffix after the first ':': the
// rail, and whether it is DCGM field 1130 (CPU<n>:cpuPowerUsageW, the cpu_rail) or an x86
// RAPL package (CPU<n>:packagePowerUsageW, a total of the package boundary). nullopt for any
// other name, otherPowerUsageW included.
struct SensorName {
  Kind kind = Kind::other;
  bool dcgm = false;
  bool rapl = false;
};
std::optional<SensorName> parse_sensor_name(std::string_view name);

// DCGM CPU-entity power fields. DCGM has no CPU power backend of its own: its sysmon module
// reads the same hwmon channels by label, so each field is one ACPI rail.
inline constexpr std::uint16_t kDcgmCpuPowerField = 1130;     // CPU Power Socket N -> cpu_rail
inline constexpr std::uint16_t kDcgmCpuLimitField = 1131;     // Grace Power Socket N cap (unused)
inline constexpr std::uint16_t kDcgmSysioPowerField = 1132;   // SysIO Power Socket N -> soc
inline constexpr std::uint16_t kDcgmModulePowerField = 1133;  // excluded: scope unverified

// DCGM CPU-entity utilization fields 1100..1104 (total, user, nice, sys, irq), fractions 0-1
// of the socket's CPU time, in the order of the host leg's cpu_util_* columns.
inline constexpr std::uint16_t kDcgmCpuUtilFields[5] = {1100, 1101, 1102, 1103, 1104};

// NVML's superchip module power (NVML_FI_DEV_POWER_AVERAGE, scope module) is the mean over
// the last second: the averaging interval of every module_w reading, in seconds.
inline constexpr double kNvmlModuleAverageS = 1.0;

// The rail a DCGM power field reads, for the fields we publish (1130, 1132).
std::optional<Kind> dcgm_field_kind(std::uint16_t field_id);

}  // namespace cpupower::rails
