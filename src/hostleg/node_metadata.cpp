#include "hostleg/node_metadata.hpp"

#include "artifacts/host_samples.hpp"
#include "common/text.hpp"
#include "rails/rails.hpp"

namespace cpupower::hostleg {

namespace {

using nlohmann::json;

// A sibling attribute of the channel's value file (powerN_accuracy, ...), as a number when
// it parses, else null.
json channel_attribute(const sources::AcpiChannel& c, const std::string& suffix) {
  const auto dir = c.value_path.substr(0, c.value_path.rfind('/') + 1);
  const auto text = common::read_small_file(dir + c.channel + suffix);
  if (!text) return nullptr;
  if (const auto v = common::parse_double(common::trim(*text))) return *v;
  return nullptr;
}

json acpi_description(const sources::AcpiReader& reader) {
  json sensors = json::array(), domains = json::array();
  for (const auto& c : reader.channels()) {
    domains.push_back({{"name", c.oem_info}, {"path", c.value_path}});
    const auto socket = rails::socket_index(c.cls.socket);
    if (c.cls.kind == rails::Kind::other || !socket) continue;
    const auto label = common::read_small_file(c.value_path.substr(0, c.value_path.rfind('/') + 1) +
                                               c.channel + "_label");
    sensors.push_back({
        {"name", rails::acpi_sensor_name(c.cls.kind, *socket)},
        {"socket_id", *socket},
        {"domain_kind", std::string(rails::kind_name(c.cls.kind))},
        {"domain", c.oem_info},
        {"label", label ? std::string(common::trim(*label)) : c.oem_info},
        {"path", c.value_path},
        {"accuracy", channel_attribute(c, "_accuracy")},
        {"average_interval_ms", channel_attribute(c, "_average_interval")},
    });
  }
  return {
      {"source", "acpi"},
      {"driver", "Linux ACPI power_meter hwmon"},
      {"semantics", "firmware-reported average CPU-side socket total and component power in watts"},
      {"sensors", sensors},
      {"available_power_domains", domains},
      {"total_method",
       "sum of recognized CPU-side socket-total domains only; component and module rails are "
       "reference only"},
      {"aggregate_scope", "cpu_side_socket_total"},
  };
}

json rapl_description(const sources::RaplReader& reader) {
  static constexpr const char* kColumns[] = {"power_w", "cpu_rail_w", "soc_w", "dram_w"};
  json sensors = json::array(), domains = json::array();
  for (const auto& z : reader.zones()) {
    domains.push_back({{"name", z.zone_name}, {"zone", z.sensor}, {"path", z.energy_path}});
    sensors.push_back({
        {"name", z.type == sources::RaplType::total
                     ? rails::rapl_sensor_name(z.socket)
                     : rails::acpi_sensor_name(sources::rapl_kind(z.type), z.socket)},
        {"socket_id", z.socket},
        {"domain_kind", std::string(sources::rapl_type_name(z.type))},
        {"domain", z.zone_name},
        {"zone", z.sensor},
        {"column", kColumns[static_cast<int>(z.type)]},
        {"path", z.energy_path},
        {"max_energy_range_uj", z.max_energy_range_uj},
        // A power value is the counter's difference over the time between two reads: the
        // mean over the read interval, so the report states coverage for it as for ACPI.
        {"average_interval_ms", reader.read_interval().count()},
    });
  }
  return {
      {"source", "rapl"},
      {"driver", "Linux powercap intel-rapl (Intel and AMD packages)"},
      {"semantics",
       "energy counter difference between two reads over their time, in watts; counters wrap at "
       "max_energy_range_uj"},
      {"sensors", sensors},
      {"available_power_domains", domains},
      {"total_method",
       "sum of the package zones only; core, uncore and dram subzones are reference only"},
      {"aggregate_scope", "cpu_package"},
  };
}

json dcgm_description(const sources::DcgmReader& reader) {
  struct Field {
    std::uint16_t id;
    const char* name;
    const char* rail;
    const char* label;
    const char* column;
  };
  static constexpr Field kPower[] = {
      {rails::kDcgmCpuPowerField, "DCGM_FI_DEV_CPU_POWER_WATTS", "cpu_rail", "CPU Power Socket N",
       "power_w,cpu_rail_w"},
      {rails::kDcgmSysioPowerField, "DCGM_FI_DEV_SYSIO_POWER_UTIL_CURRENT", "soc",
       "SysIO Power Socket N", "soc_w"},
  };
  static constexpr const char* kUtilNames[] = {
      "DCGM_FI_DEV_CPU_UTIL_TOTAL", "DCGM_FI_DEV_CPU_UTIL_USER", "DCGM_FI_DEV_CPU_UTIL_NICE",
      "DCGM_FI_DEV_CPU_UTIL_SYS", "DCGM_FI_DEV_CPU_UTIL_IRQ"};
  const auto watched = reader.fields();
  auto is_watched = [&](std::uint16_t id) {
    return std::find(watched.begin(), watched.end(), id) != watched.end();
  };
  json power = json::array(), util = json::array(), sensors = json::array();
  for (const auto& f : kPower) {
    power.push_back({{"field_id", f.id},
                     {"field_name", f.name},
                     {"rail_kind", f.rail},
                     {"hwmon_label", f.label},
                     {"column", f.column},
                     {"watched", is_watched(f.id)}});
  }
  for (std::size_t k = 0; k < artifacts::kCpuUtilColumns.size(); ++k) {
    if (!is_watched(rails::kDcgmCpuUtilFields[k])) continue;
    util.push_back({{"column", std::string(artifacts::kCpuUtilColumns[k])},
                    {"field_id", rails::kDcgmCpuUtilFields[k]},
                    {"field_name", kUtilNames[k]}});
  }
  const auto ids = reader.entities();
  for (auto e : std::set<std::uint32_t>(ids.begin(), ids.end())) {
    sensors.push_back({{"name", rails::dcgm_sensor_name(e)}, {"cpu_entity_id", e}});
  }
  return {
      {"source", "dcgm"},
      {"field_id", rails::kDcgmCpuPowerField},
      {"field_name", "DCGM_FI_DEV_CPU_POWER_WATTS"},
      {"semantics", "instantaneous power usage in watts"},
      {"sensors", sensors},
      {"total_method", "sum of available DCGM CPU entities"},
      {"aggregate_scope", "cpu_rail_only"},
      {"power_fields", power},
      {"utilization_fields", util},
      {"utilization_unit", "fraction of socket CPU time (0-1) as reported by DCGM"},
  };
}

}  // namespace

nlohmann::json node_metadata(const RunInfo& info, const sources::ResolvedSource& source,
                             const std::optional<RunOutcome>& outcome) {
  json j = source.acpi   ? acpi_description(*source.acpi)
           : source.rapl ? rapl_description(*source.rapl)
           : source.dcgm ? dcgm_description(*source.dcgm)
                         : json::object();
  j["schema_version"] = kMetadataSchemaVersion;
  j["hostname"] = info.hostname;
  j["requested_source"] = info.requested_source;
  j["sample_interval_seconds"] = info.sample_interval_seconds;
  j["started_at_unix"] = info.started_at_unix;
  j["module_power"] = {{"source", "nvml"},
                       {"enabled", info.module_power},
                       {"column", "module_w"},
                       {"field", "NVML_FI_DEV_POWER_AVERAGE at NVML_POWER_SCOPE_MODULE"}};
  j["row_time"] = "mean read time of the socket readings in the sample (worker clock)";
  if (outcome) {
    j["ended_at_unix"] = outcome->ended_at_unix;
    j["sample_row_count"] = outcome->sample_row_count;
    j["read_failure_count"] = outcome->read_failure_count;
    j["status"] = outcome->sample_row_count > 0 ? "complete" : "failed";
    if (info.module_power) {
      j["module_power"]["withheld_rows"] = {{"stale", outcome->module_withheld_stale_rows},
                                            {"disagree", outcome->module_withheld_disagree_rows}};
    }
  }
  return j;
}

}  // namespace cpupower::hostleg
