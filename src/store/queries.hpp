#pragma once
// What the store report asks a metrics store for each window: one range selector per family
// (the exporter's counters from the contract, its per-sensor self metrics, dcgm-exporter's GPU
// energy or power), each covering [start - lookback, end + lookback] and evaluated at
// end + lookback, so its answer is every raw sample of that span.

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "store/selector.hpp"
#include "store/series.hpp"

namespace cpupower::store {

enum class Family {
  acpi_joules,    // cpu_power_acpi_joules_total: socket totals (type="total") and rails
  acpi_covered,   // cpu_power_acpi_covered_seconds_total{type="total"}
  dcgm_joules,    // cpu_power_dcgm_joules_total{field_id="1130"}: the CPU rail
  rapl_joules,    // cpu_power_rapl_joules_total{type="total"}: x86 packages
  rapl_covered,   // cpu_power_rapl_covered_seconds_total{type="total"}
  nvml_joules,    // cpu_power_nvml_joules_total{type="module"}: superchip modules
  nvml_covered,   // cpu_power_nvml_covered_seconds_total{type="module"}
  exporter_self,  // cpu_power_exporter_{sample_age_seconds,average_interval_seconds,socket_up}
  gpu_energy,     // DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION (mJ)
  gpu_power,      // DCGM_FI_DEV_POWER_USAGE (W), asked only when there is no GPU energy
};
inline constexpr std::size_t kFamilies = 10;
inline constexpr std::size_t index(Family f) {
  return static_cast<std::size_t>(f);
}

// The self metrics' names, as exporter_self returns them.
inline constexpr std::string_view kSampleAge = "cpu_power_exporter_sample_age_seconds";
inline constexpr std::string_view kAverageInterval = "cpu_power_exporter_average_interval_seconds";
inline constexpr std::string_view kSocketUp = "cpu_power_exporter_socket_up";

// The matchers every query of a family carries beside its own: the exporter's (its counters
// and self metrics) and dcgm-exporter's.
struct Selectors {
  std::vector<Matcher> exporter, gpu;
};

// `--match`'s matchers for both; or, from the run's nodes, `node=~"n1|n2"` for the exporter
// (the run's discovery file gives each target its node label) and
// `Hostname=~"(n1|n2)(\\..+)?"` for dcgm-exporter (which names its host itself, possibly in
// full).
Selectors selectors_for(const std::optional<std::vector<Matcher>>& match,
                        const std::vector<std::string>& nodes);

// The family's range selector over `range_s` seconds.
std::string family_query(Family family, const Selectors& selectors, double range_s);

// The span a window's queries cover, and the time they are evaluated at.
struct QuerySpan {
  double range_s = 0;
  double at_unix = 0;
};
QuerySpan query_span(double start, double end, double lookback_s);

}  // namespace cpupower::store
