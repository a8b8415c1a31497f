#include "config/describe.hpp"

#include <fmt/core.h>

namespace cpupower::config {
namespace {

// A value as the recipe would spell it: true/false, 2, 0.5.
template <typename T>
std::string str(const T& v) {
  return fmt::format("{}", v);
}

std::string given_or_default(const std::map<std::string, Mark>& marks, const std::string& path) {
  return marks.count(path) ? "" : "  (default)";
}

}  // namespace

std::string describe_recipe(const Recipe& r) {
  const auto& t = r.telemetry;
  std::string out;
  auto line = [&](const std::string& key, const std::string& value, const std::string& note = "") {
    out += key + ": " + value + note + "\n";
  };
  auto field = [&](const std::string& key, const std::string& value) {
    line(key, value, given_or_default(r.marks, key));
  };
  field("telemetry.enabled", str(t.enabled));
  field("telemetry.collect_interval_ms", str(t.collect_interval_ms));
  field("telemetry.storage_subdir", t.storage_subdir);
  field("telemetry.required", str(t.required));
  field("telemetry.startup_timeout_seconds", str(t.startup_timeout_seconds));
  field("telemetry.request_timeout_seconds", str(t.request_timeout_seconds));
  line("telemetry.collector_join_timeout_seconds", str(resolved_join_timeout_s(t)),
       t.collector_join_timeout_seconds ? "" : "  (derived: 2 x (2 x request timeout + 1) + 2)");
  if (t.dcgm_exporter) {
    const auto& d = *t.dcgm_exporter;
    line("telemetry.dcgm_exporter.container_image", d.container_image);
    line("telemetry.dcgm_exporter.port", str(d.port));
    line("telemetry.dcgm_exporter.command", d.command.value_or("(default)"));
    line("telemetry.dcgm_exporter.binary", d.binary.value_or("(none)"));
    // The exporter's names only when the recipe or a cluster configuration speaks of them:
    // a plain DCGM recipe prints what it always did.
    if (d.kind != "dcgm" || d.gpu_labels || d.gpu_metrics || r.cluster) {
      const auto opt = [](const std::optional<std::string>& v) { return v.value_or("(none)"); };
      line("telemetry.dcgm_exporter.kind", d.kind);
      if (d.gpu_labels) {
        std::string instance;
        for (const auto& l : d.gpu_labels->instance) instance += (instance.empty() ? "" : ",") + l;
        line("telemetry.dcgm_exporter.gpu_labels",
             "index=" + d.gpu_labels->index + " identity=" + d.gpu_labels->identity +
                 " instance=" + (instance.empty() ? "(none)" : instance));
      } else {
        line("telemetry.dcgm_exporter.gpu_labels",
             "index=gpu identity=UUID "
             "instance=GPU_I_ID,GPU_I_PROFILE  (dcgm)");
      }
      if (d.gpu_metrics) {
        const auto& m = *d.gpu_metrics;
        line("telemetry.dcgm_exporter.gpu_metrics",
             "power=" + m.power_metric + " scope=" + m.power_scope +
                 " gpu_util=" + opt(m.gpu_util_metric) + " sm_active=" + opt(m.sm_active_metric) +
                 " temperature=" + opt(m.temperature_metric));
      } else {
        line("telemetry.dcgm_exporter.gpu_metrics",
             "power=DCGM_FI_DEV_POWER_USAGE scope=gpu_device_board_as_reported_by_dcgm "
             "gpu_util=DCGM_FI_DEV_GPU_UTIL sm_active=DCGM_FI_PROF_SM_ACTIVE "
             "temperature=DCGM_FI_DEV_GPU_TEMP  (dcgm)");
      }
    }
    if (r.gpu_exporter_inherited && r.cluster) {
      line("telemetry.dcgm_exporter",
           "inherited from " + r.cluster->file + " default_gpu_exporter");
    }
  } else {
    line("telemetry.dcgm_exporter", "(absent)");
  }
  if (t.cpu_power_exporter) {
    field("telemetry.cpu_power_exporter.port", str(t.cpu_power_exporter->port));
    field("telemetry.cpu_power_exporter.source", t.cpu_power_exporter->source);
    // The security settings only when given: without them the output is what it always was.
    const auto& c = *t.cpu_power_exporter;
    if (c.web_config_file) line("telemetry.cpu_power_exporter.web_config_file", *c.web_config_file);
    if (c.tls_config) {
      line("telemetry.cpu_power_exporter.tls_config.ca_file",
           c.tls_config->ca_file.value_or("(system trust store)"));
      line("telemetry.cpu_power_exporter.tls_config.cert_file",
           c.tls_config->cert_file.value_or("(none)"));
      line("telemetry.cpu_power_exporter.tls_config.key_file",
           c.tls_config->key_file.value_or("(none)"));
    }
    if (c.basic_auth) {
      line("telemetry.cpu_power_exporter.basic_auth.username", c.basic_auth->username);
      line("telemetry.cpu_power_exporter.basic_auth.password_file", c.basic_auth->password_file);
    }
  } else {
    line("telemetry.cpu_power_exporter", "(absent)");
  }
  const auto& c = t.cpu_power;
  field("telemetry.cpu_power.enabled", str(c.enabled));
  field("telemetry.cpu_power.source", c.source);
  field("telemetry.cpu_power.sample_interval_seconds", str(c.sample_interval_seconds));
  field("telemetry.cpu_power.startup_timeout_seconds", str(c.startup_timeout_seconds));
  field("telemetry.cpu_power.required", str(c.required));
  field("telemetry.cpu_power.storage_subdir", c.storage_subdir);
  line("runtime.network_interface", r.runtime.network_interface.value_or("(none)"));
  std::string srun;
  for (const auto& [k, v] : r.runtime.srun_options) {
    srun += (srun.empty() ? "" : " ") + ("--" + k) + (v ? "=" + *v : "");
  }
  line("runtime.srun_options", srun.empty() ? "(none)" : srun);
  line("observability.tachometer.enabled", str(r.tachometer.is_enabled()));
  if (r.cluster) {
    line("cluster", r.cluster->file);
    line("cluster.visible_devices_env", r.cluster->visible_devices_env,
         given_or_default(r.cluster->marks, "visible_devices_env"));
  }

  std::string legs;
  auto leg = [&](bool on, const std::string& text) {
    if (on) legs += (legs.empty() ? "" : ", ") + text;
  };
  leg(t.enabled && t.dcgm_exporter.has_value(),
      std::string(t.dcgm_exporter && t.dcgm_exporter->kind == "custom" ? "GPU custom exporter"
                                                                       : "GPU DCGM") +
          " scrape -> <log_dir>/" + t.storage_subdir + "/");
  leg(exporter_leg_enabled(t), "CPU exporter scrape -> <log_dir>/" + t.storage_subdir + "/cpu/");
  leg(t.enabled && c.enabled, "CPU host collector -> <log_dir>/" + c.storage_subdir + "/");
  line("legs", legs.empty() ? "none (telemetry off)" : legs);
  return out;
}

}  // namespace cpupower::config
