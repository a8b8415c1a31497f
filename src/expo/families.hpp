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

// Each power family's counters, with exactly the labels of its watts samples: the energy
// integrated on the node from every good reading (trapezoid between readings dated at the
// centre of what they average; RAPL's is the hardware counter), the seconds the readings'
// averaging intervals covered, and the seconds bridged between readings without a
// measurement. A stretch longer than --max-age-s without a good reading adds to none of
// them. Zero at the exporter's start; a restart is a counter reset.
struct CounterFamilies {
  const Family* joules;
  const Family* covered;
  const Family* bridged;
};

#define CPUPOWER_COVERAGE_HELP                                                                \
  "the averaging intervals of consecutive good readings between their centres (half of each " \
  "reading's cpu_power_exporter_average_interval_seconds either side; none where unknown)"
#define CPUPOWER_BRIDGED_HELP                                                              \
  "between consecutive good readings that their averaging intervals did not cover; a gap " \
  "over --max-age-s is not bridged"

inline constexpr Family kAcpiJoules{
    "cpu_power_acpi_joules_total",
    "Energy of each ACPI power reading integrated on the node since the exporter started (J): "
    "the trapezoid between consecutive good readings, each dated at the centre of its "
    "averaging interval; a gap over --max-age-s adds nothing.",
    kAcpiLabels, "counter"};
inline constexpr Family kAcpiCovered{"cpu_power_acpi_covered_seconds_total",
                                     "Seconds covered by " CPUPOWER_COVERAGE_HELP " (s).",
                                     kAcpiLabels, "counter"};
inline constexpr Family kAcpiBridged{"cpu_power_acpi_bridged_seconds_total",
                                     "Seconds " CPUPOWER_BRIDGED_HELP " (s).", kAcpiLabels,
                                     "counter"};
inline constexpr Family kDcgmJoules{
    "cpu_power_dcgm_joules_total",
    "Energy of each DCGM CPU power field integrated on the node since the exporter started "
    "(J): the trapezoid between consecutive good readings; a gap over --max-age-s adds "
    "nothing.",
    kDcgmLabels, "counter"};
inline constexpr Family kDcgmCovered{"cpu_power_dcgm_covered_seconds_total",
                                     "Seconds covered by " CPUPOWER_COVERAGE_HELP " (s).",
                                     kDcgmLabels, "counter"};
inline constexpr Family kDcgmBridged{"cpu_power_dcgm_bridged_seconds_total",
                                     "Seconds " CPUPOWER_BRIDGED_HELP " (s).", kDcgmLabels,
                                     "counter"};
inline constexpr Family kNvmlJoules{
    "cpu_power_nvml_joules_total",
    "Superchip module energy integrated on the node since the exporter started (J): the "
    "trapezoid between consecutive agreeing readings of field 185, each dated at the centre "
    "of its 1 s average; a withheld reading is never integrated, a gap over the module's "
    "maximum age adds nothing.",
    kNvmlLabels, "counter"};
inline constexpr Family kNvmlCovered{"cpu_power_nvml_covered_seconds_total",
                                     "Seconds covered by " CPUPOWER_COVERAGE_HELP " (s).",
                                     kNvmlLabels, "counter"};
inline constexpr Family kNvmlBridged{"cpu_power_nvml_bridged_seconds_total",
                                     "Seconds " CPUPOWER_BRIDGED_HELP " (s).", kNvmlLabels,
                                     "counter"};
inline constexpr Family kRaplCovered{"cpu_power_rapl_covered_seconds_total",
                                     "Seconds covered by the RAPL counter's differences "
                                     "between consecutive good reads (s).",
                                     kRaplLabels, "counter"};
inline constexpr Family kRaplBridged{"cpu_power_rapl_bridged_seconds_total",
                                     "Seconds " CPUPOWER_BRIDGED_HELP " (s).", kRaplLabels,
                                     "counter"};

#undef CPUPOWER_COVERAGE_HELP
#undef CPUPOWER_BRIDGED_HELP

inline constexpr CounterFamilies kAcpiCounters{&kAcpiJoules, &kAcpiCovered, &kAcpiBridged};
inline constexpr CounterFamilies kDcgmCounters{&kDcgmJoules, &kDcgmCovered, &kDcgmBridged};
inline constexpr CounterFamilies kNvmlCounters{&kNvmlJoules, &kNvmlCovered, &kNvmlBridged};
inline constexpr CounterFamilies kRaplCounters{&kRaplJoules, &kRaplCovered, &kRaplBridged};

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
