#pragma once
// The metric families of the CPU power contract, each defined once: name, help, type and the
// labels its samples carry. The exporter renders from these descriptors and the collector
// reads by their names, so the two cannot drift. Our diagnostics: cpu_power_exporter_*.

#include <span>
#include <string_view>

namespace cpupower::expo {

struct Family {
  std::string_view name;
  std::string_view help;
  std::span<const std::string_view> labels = {};  // in the order samples carry them
  std::string_view type = "gauge";
};

inline constexpr std::string_view kAcpiLabels[] = {"sensor", "type", "socket", "oem_info",
                                                   "source"};
inline constexpr std::string_view kDcgmLabels[] = {"socket", "field_id", "source"};
inline constexpr std::string_view kNvmlLabels[] = {"type", "socket", "gpus", "source"};
inline constexpr std::string_view kRaplLabels[] = {"socket", "type", "sensor"};
inline constexpr std::string_view kInfoLabels[] = {"version", "source"};
// Per-sensor self metrics: `sensor`; DCGM rows add their value's labels after it.
inline constexpr std::string_view kSensorLabels[] = {"sensor"};
inline constexpr std::string_view kWithheldLabels[] = {"socket", "reason"};
inline constexpr std::string_view kSocketLabels[] = {"socket"};

inline constexpr Family kAcpiWatts{
    "cpu_power_acpi_watts", "Grace CPU power rail reading from ACPI hwmon (W).", kAcpiLabels};
inline constexpr Family kDcgmWatts{
    "cpu_power_dcgm_watts",
    "Grace CPU power via DCGM CPU-entity fields (W): field_id=1130 is the CPU rail (ACPI 'CPU "
    "Power Socket N'), 1132 the SysIO rail; DCGM has no socket-envelope field.",
    kDcgmLabels};
inline constexpr Family kNvmlWatts{
    "cpu_power_nvml_watts",
    "Superchip module power from NVML field 185 (1 s average) at module scope (W): Grace, its "
    "GPUs and the rest of the module; the mean of the socket's GPUs, never to be added to GPU "
    "power.",
    kNvmlLabels};

// x86 RAPL (powercap intel-rapl zones, Intel and AMD): power from the difference of two
// reads of a zone's energy counter, and the counter itself, unwrapped.
inline constexpr Family kRaplWatts{
    "cpu_power_rapl_watts",
    "x86 CPU power from the RAPL energy counters (W): the counter's difference between two "
    "reads over their time; type total is the package (socket = package id), core, uncore and "
    "dram its subzones. A package boundary, not a Grace socket envelope.",
    kRaplLabels};
inline constexpr Family kRaplJoules{
    "cpu_power_rapl_joules_total",
    "Energy counted by each RAPL zone since the exporter's first read of it (J): the hardware "
    "counter unwrapped at max_energy_range_uj; an interval over a counter reset adds nothing.",
    kRaplLabels, "counter"};

inline constexpr Family kInfo{"cpu_power_exporter_info",
                              "Exporter version and the CPU power source resolved at startup.",
                              kInfoLabels};
inline constexpr Family kSampleAge{
    "cpu_power_exporter_sample_age_seconds",
    "Age of each sensor's last good reading when this scrape was served, counted from the "
    "centre of the interval the reading averages (read time minus half the averaging "
    "interval) (s).",
    kSensorLabels};
inline constexpr Family kAverageInterval{
    "cpu_power_exporter_average_interval_seconds",
    "Averaging interval of each sensor's readings (s): ACPI power*_average_interval, NVML's 1 "
    "s; each value is the mean power over this interval before it was read.",
    kSensorLabels};
inline constexpr Family kReadDuration{"cpu_power_exporter_read_duration_seconds",
                                      "Duration of each sensor's last completed read (s).",
                                      kSensorLabels};
inline constexpr Family kStale{
    "cpu_power_exporter_stale",
    "1 when a sensor's reading is withheld because it is older than --max-age-s or never "
    "arrived, else 0.",
    kSensorLabels};
inline constexpr Family kModuleWithheld{
    "cpu_power_exporter_module_withheld",
    "1 when a socket's superchip module power is withheld for this reason, else 0: "
    "reason=\"stale\" (its latest NVML reading is older than 3 s), reason=\"disagree\" (its "
    "GPUs' readings differ by more than 5 % of their mean).",
    kWithheldLabels};
inline constexpr Family kReadsTotal{"cpu_power_exporter_reads_total", "Sensor reads completed.",
                                    kSensorLabels, "counter"};
inline constexpr Family kReadErrorsTotal{
    "cpu_power_exporter_read_errors_total",
    "Sensor reads that gave no value (failed, empty, invalid, zero or negative).", kSensorLabels,
    "counter"};
inline constexpr Family kScrapesTotal{"cpu_power_exporter_scrapes_total",
                                      "Requests for /metrics served, this one included.",
                                      {},
                                      "counter"};
inline constexpr Family kSocketUp{
    "cpu_power_exporter_socket_up",
    "1 while the socket's primary power reading (ACPI socket total, DCGM field 1130) is "
    "served, 0 while it is withheld or missing; one sample per socket found at discovery.",
    kSocketLabels};

// The families with one sample per sensor, in the order the exporter serves them.
inline constexpr const Family* kPerSensorFamilies[] = {
    &kSampleAge, &kAverageInterval, &kReadDuration, &kStale, &kReadsTotal, &kReadErrorsTotal};

}  // namespace cpupower::expo
