#pragma once
// The parts of an srtctl recipe that CPU power telemetry reads: the `telemetry:` block, field
// for field as srtctl's TelemetryConfig (defaults included), plus the few settings outside it
// that decide how the exporters are launched and what their port may collide with.
// Plain data; loading is in config/load.hpp and the rules in config/validate.hpp.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/sample_gap.hpp"

namespace cpupower::config {

// A place in the recipe file, 1-based; line 0 means "not in the file" (a default).
struct Mark {
  int line = 0;
  int column = 0;
};

// telemetry.dcgm_exporter.gpu_labels: the labels that name a GPU in every sample of the
// exporter's body. Unset with kind dcgm: dcgm-exporter's (gpu, UUID, MIG GPU_I_ID and
// GPU_I_PROFILE).
struct GpuLabelsConfig {
  std::string index;                  // the node-local GPU index (gpu_index)
  std::string identity;               // stable per physical GPU (gpu_uuid)
  std::vector<std::string> instance;  // a sample carrying one is a sub-device: dropped
};

// telemetry.dcgm_exporter.gpu_metrics: the families read from the body. Unset with kind
// dcgm: DCGM_FI_DEV_POWER_USAGE, DCGM_FI_DEV_GPU_UTIL, DCGM_FI_PROF_SM_ACTIVE and
// DCGM_FI_DEV_GPU_TEMP. Given: power is required, an optional family left out is not read.
struct GpuMetricsConfig {
  std::string power_metric;                    // watts
  std::string power_scope;                     // what the watts measure: the manifest's power_scope
  std::optional<std::string> gpu_util_metric;  // percent
  std::optional<std::string> sm_active_metric;    // 0..1
  std::optional<std::string> temperature_metric;  // Celsius
};

// telemetry.dcgm_exporter (or the cluster's default_gpu_exporter): the GPU leg's exporter.
// `kind` dcgm is NVIDIA dcgm-exporter; custom is any other exporter, named by gpu_labels and
// gpu_metrics (an AMD GPU metrics exporter, say).
struct DcgmExporterConfig {
  std::string container_image;
  std::int64_t port = 0;
  std::optional<std::string> command;
  std::optional<std::string> binary;
  std::string kind = "dcgm";
  std::optional<GpuLabelsConfig> gpu_labels;
  std::optional<GpuMetricsConfig> gpu_metrics;
};

// The cluster configuration (srtctl's srtslurm.yaml): the two keys the GPU leg reads.
struct ClusterConfig {
  std::string file;  // as given
  // The environment variable that names the GPUs a job may use (its value: indices).
  std::string visible_devices_env = "CUDA_VISIBLE_DEVICES";
  // Inherited by a recipe that enables telemetry with no GPU exporter and no CPU leg. Unset
  // when the file leaves it out or sets it to null.
  std::optional<DcgmExporterConfig> default_gpu_exporter;
  std::map<std::string, Mark> marks;  // as Recipe::marks, in `file`
};

// telemetry.cpu_power_exporter.tls_config: how the collector checks the exporters' TLS
// (keys as in a Prometheus scrape config's tls_config). Its presence means https://.
struct ScrapeTlsConfig {
  std::optional<std::string> ca_file;    // unset: the system's trust store
  std::optional<std::string> cert_file;  // client certificate, with key_file
  std::optional<std::string> key_file;
};

// telemetry.cpu_power_exporter.basic_auth: the user the collector authenticates as, the
// password read from password_file (as Prometheus' basic_auth.password_file).
struct ScrapeBasicAuth {
  std::string username;
  std::string password_file;
};

// telemetry.cpu_power_exporter: the exporter leg. Its presence turns the leg on.
struct CpuPowerExporterConfig {
  std::int64_t port = 9405;
  std::string source = "auto";
  // Passed as --web.config.file to the exporters `cpu-power run` starts (a path valid on the
  // nodes; docs/security.md).
  std::optional<std::string> web_config_file;
  std::optional<ScrapeTlsConfig> tls_config;
  std::optional<ScrapeBasicAuth> basic_auth;
};

// telemetry.cpu_power: the host-collector leg (needs enabled: true to run).
struct CpuPowerHostConfig {
  bool enabled = false;
  std::string source = "auto";
  double sample_interval_seconds = 0.1;
  double startup_timeout_seconds = 30.0;
  bool required = false;
  std::string storage_subdir = "cpu_power";
};

struct TelemetryConfig {
  bool enabled = false;
  std::optional<DcgmExporterConfig> dcgm_exporter;
  std::int64_t collect_interval_ms = 1000;
  std::string storage_subdir = "power";
  bool required = false;
  double startup_timeout_seconds = 30.0;
  double request_timeout_seconds = 2.0;
  std::optional<double> collector_join_timeout_seconds;  // unset: derived
  bool clock_sync_check = true;  // false: no node's clock is checked before the servers start
  std::optional<CpuPowerExporterConfig> cpu_power_exporter;
  CpuPowerHostConfig cpu_power;
};

// observability.tachometer: its exporters run on every worker node too, so their resolved
// ports are part of the collision set. `enabled` is a tri-state whose unset means on.
struct TachometerConfig {
  std::optional<bool> enabled;
  std::int64_t dcgm_exporter_port = 9401;
  std::int64_t node_exporter_port = 9101;

  bool is_enabled() const { return enabled.value_or(true); }
};

struct RuntimeConfig {
  std::optional<std::string> network_interface;  // the address the collector scrapes
  // runtime.srun_options, in file order: --key=value, or --key when the value is unset.
  std::vector<std::pair<std::string, std::optional<std::string>>> srun_options;
};

struct Recipe {
  std::string file;  // as given; "" for a recipe built in code
  TelemetryConfig telemetry;
  RuntimeConfig runtime;
  TachometerConfig tachometer;
  std::optional<std::string> benchmark_type;  // benchmark.type
  // The recipe's top-level `name` (srtctl's), when it is a string: the run_name label of
  // <log_dir>/prometheus_sd.json. Read leniently: srtctl judges it, not cpu-power.
  std::optional<std::string> name;
  // Where each field given in the file sits, by dotted path ("telemetry.cpu_power.enabled").
  std::map<std::string, Mark> marks;
  // The cluster configuration it was loaded with (--cluster-config), if any.
  std::optional<ClusterConfig> cluster;
  // telemetry.dcgm_exporter came from the cluster's default_gpu_exporter.
  bool gpu_exporter_inherited = false;
};

// Slack on one collector cycle, which may take 2 x request timeout + this grace (upstream's
// value, so the timeouts derived from it are the same).
inline constexpr double kCollectCycleGraceS = 1.0;
// The largest gap between two samples an energy window tolerates (common/sample_gap.hpp).
using common::kMaxSampleGapS;

// One collector cycle's worst case: 2 x request timeout + grace.
inline double collector_cycle_s(const TelemetryConfig& t) {
  return 2.0 * t.request_timeout_seconds + kCollectCycleGraceS;
}

// The explicit join timeout, else 2 x cycle + 2 s (12 s at the default 2 s request timeout).
inline double resolved_join_timeout_s(const TelemetryConfig& t) {
  return t.collector_join_timeout_seconds.value_or(2.0 * collector_cycle_s(t) + 2.0);
}

// Whether the exporter leg runs: telemetry on and the block present.
inline bool exporter_leg_enabled(const TelemetryConfig& t) {
  return t.enabled && t.cpu_power_exporter.has_value();
}

}  // namespace cpupower::config
