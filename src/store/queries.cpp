#include "store/queries.hpp"

#include "expo/families.hpp"

namespace cpupower::store {
namespace {

struct FamilySpec {
  std::string_view metric;  // empty: named by a __name__ matcher
  std::vector<Matcher> own;
  bool gpu = false;  // dcgm-exporter's series
};

FamilySpec spec(Family f) {
  switch (f) {
    case Family::acpi_joules:
      return {expo::kAcpiJoules.name, {{"type", "=~", "total|cpu_rail|soc|dram"}}};
    case Family::acpi_covered:
      return {expo::kAcpiCovered.name, {{"type", "=", "total"}}};
    case Family::dcgm_joules:
      return {expo::kDcgmJoules.name, {{"field_id", "=", "1130"}}};
    case Family::rapl_joules:
      return {expo::kRaplJoules.name, {{"type", "=", "total"}}};
    case Family::rapl_covered:
      return {expo::kRaplCovered.name, {{"type", "=", "total"}}};
    case Family::nvml_joules:
      return {expo::kNvmlJoules.name, {{"type", "=", "module"}}};
    case Family::nvml_covered:
      return {expo::kNvmlCovered.name, {{"type", "=", "module"}}};
    case Family::exporter_self:
      return {"",
              {{"__name__", "=~",
                "cpu_power_exporter_(sample_age_seconds|average_interval_seconds|socket_up)"}}};
    case Family::gpu_energy:
      return {"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", {}, true};
    case Family::gpu_power:
      break;
  }
  return {"DCGM_FI_DEV_POWER_USAGE", {}, true};
}

}  // namespace

Selectors selectors_for(const std::optional<std::vector<Matcher>>& match,
                        const std::vector<std::string>& nodes) {
  if (match) return {*match, *match};
  return {{names_matcher("node", nodes)}, {names_matcher("Hostname", nodes, true)}};
}

std::string family_query(Family family, const Selectors& selectors, double range_s) {
  FamilySpec s = spec(family);
  const auto& extra = s.gpu ? selectors.gpu : selectors.exporter;
  s.own.insert(s.own.end(), extra.begin(), extra.end());
  return range_selector(s.metric, s.own, range_s);
}

QuerySpan query_span(double start, double end, double lookback_s) {
  return {end - start + 2 * lookback_s, end + lookback_s};
}

}  // namespace cpupower::store
