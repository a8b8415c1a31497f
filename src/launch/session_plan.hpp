#pragma once
// What `cpu-power run` is going to do, decided before anything starts (and all that
// --dry-run prints): where the exporters run and how they are started, where the samples
// go, and the command. Pure: the machine's facts come in through PlanRequest.
//
// Modes: `simulate` (--simulate: simulated nodes and local exporters, any machine), `slurm`
// (inside an allocation, or --nodes: one srun per node group), `local` (neither: one exporter
// on this host, started as it would be on a node).

#include <ctime>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/recipe.hpp"
#include "launch/exporter_binary.hpp"
#include "launch/node_set.hpp"
#include "scrape/client_security.hpp"
#include "scrape/gpu_readings.hpp"

namespace cpupower::launch {

enum class LaunchMode { slurm, local, simulate };
std::string_view mode_name(LaunchMode mode);

struct PlanRequest {
  config::Recipe recipe;
  std::string log_dir;                  // absolute
  std::optional<std::string> nodes;     // --nodes
  std::optional<std::string> simulate;  // --simulate profile
  std::vector<std::string> command;
  Env env;
  ExporterChoice exporter;
  std::string self_exe;        // this cpu-power, run on the nodes as the address resolver
  std::string local_hostname;  // the local mode's node name
  HostlistExpander expand;
  int cpu_samples_schema = 3;  // --cpu-samples-schema: the exporter leg's samples.csv layout
  int gpu_samples_schema = 3;  // --gpu-samples-schema: the GPU leg's samples.csv layout
  // --job-id: the artifacts' job id outside Slurm (inside, Slurm's wins).
  std::optional<std::string> job_id;
  // The id generated when neither Slurm nor --job-id gives one (local_job_id()); empty: made
  // from this process's time and PID by make_plan.
  std::string generated_job_id;
  // telemetry.clock_sync_check: false turns the clock check off.
  bool clock_sync_check = true;
  std::optional<std::string> gpu_roles;     // --gpu-roles FILE
  int sim_gpus = 4;                         // --sim-gpus: GPUs per simulated node
  std::vector<std::string> sim_gpu_faults;  // --sim-gpu-fault, passed to each sim-gpu
  // TLS and Basic authentication toward the exporters (the recipe's
  // cpu_power_exporter.tls_config and basic_auth, password file already read).
  scrape::ClientSecurity scrape_security;
};

// The address resolver on one node group: `cpu-power node-address` through srun, its stdout
// read back (where each node answers, by the recipe's runtime.network_interface).
struct ResolverStep {
  std::string name;  // telemetry_cpu_power[_gG] or telemetry_dcgm_exporter[_gG]
  std::vector<std::string> srun;
  std::string log;  // the step's stderr
};

// One srun group: the exporter step and the address resolver step on the same nodes.
struct GroupPlan {
  NodeGroup group;
  std::string process_name;  // telemetry_cpu_power_exporter[_gG]
  std::vector<std::string> exporter_srun;
  std::string srun_log;  // srun's own messages for the exporter step
  ResolverStep resolver;
};

// A leg's helpers on one node group: one srun step.
struct SrunGroup {
  NodeGroup group;
  std::string process_name;  // telemetry_cpu_power[_gG], telemetry_dcgm_exporter[.gG]
  std::vector<std::string> srun;
};

// The host-collector leg (telemetry.cpu_power.enabled): `cpu-power host-collect` on every
// node, writing under <log_dir>/<cpu_power.storage_subdir>/nodes, merged at the end.
struct HostLegPlan {
  std::string cpu_dir;                         // <log_dir>/<cpu_power.storage_subdir>
  std::vector<std::string> collector_command;  // as run on each node
  std::vector<SrunGroup> groups;               // slurm mode
};

// The GPU leg (telemetry.dcgm_exporter): dcgm-exporter on every node, scraped by a second
// collector into <log_dir>/<storage_subdir>/{samples.csv,manifest.json,windows/}.
enum class GpuExporterSource {
  running,    // already running on each node (a site service): scraped at `port`
  started,    // `binary`/`command` given: started on each node with srun (locally: spawned)
  simulated,  // --simulate: `cpu-power sim-gpu` per simulated node, on a free port
};

struct GpuLegPlan {
  std::string power_dir;   // <log_dir>/<storage_subdir>
  int samples_schema = 3;  // of samples.csv: 1, 2 or 3 (--gpu-samples-schema)
  GpuExporterSource source = GpuExporterSource::running;
  long port = 9400;                           // where each node's dcgm-exporter listens
  std::vector<std::string> exporter_command;  // as started on each node (started, simulated)
  std::vector<SrunGroup> groups;              // slurm mode, started
  // Slurm mode without the exporter leg, whose resolution serves both legs otherwise.
  std::vector<ResolverStep> resolvers;
  std::optional<std::string> roles_file;  // --gpu-roles
  bool required = false;                  // telemetry.required
  // The exporter's names (kind, gpu_labels, gpu_metrics) and, when the cluster's
  // visible_devices_env names a variable set to GPU indices, the only GPUs read and expected.
  scrape::GpuReadOptions read;
  std::string visible_devices;  // "NAME=VALUE" when a selection applies
};

struct SessionPlan {
  LaunchMode mode = LaunchMode::local;
  bool exporter_leg = false;  // the exporter leg runs (telemetry.cpu_power_exporter)
  config::Recipe recipe;
  std::string log_dir;
  std::string cpu_dir;         // <log_dir>/<storage_subdir>/cpu
  int cpu_samples_schema = 3;  // of <cpu_dir>/samples.csv: 3, or 2 (no module_w)
  // The Slurm allocation's job id: srun's --jobid, nothing else. Unset outside an allocation.
  std::optional<std::string> job_id;
  // The job id every artifact records (manifests, session.json): Slurm's when there is an
  // allocation, else --job-id, else a generated local-<UTC time>-<PID>. Never empty, and never
  // given to srun.
  std::string artifact_job_id;
  // The clock check before the servers start (telemetry.clock_sync_check, on by default):
  // one srun step over every node (slurm mode), one probe of this host otherwise.
  bool clock_sync_check = true;
  std::vector<ResolverStep> clock_steps;  // slurm mode: `cpu-power clock-check` per node group
  ExporterChoice exporter;
  std::vector<std::string> exporter_command;  // as started on each node
  scrape::ClientSecurity scrape_security;     // how the exporters are scraped and probed
  std::vector<GroupPlan> groups;              // slurm mode
  std::vector<std::string> nodes;             // every node, in launch order
  std::optional<HostLegPlan> host_leg;        // set when the host-collector leg runs
  std::optional<GpuLegPlan> gpu_leg;          // set when the GPU leg runs
  std::string simulate_profile;
  std::vector<std::string> command;
  std::vector<std::string> warnings;  // logged when the session starts
  std::string error;                  // set: the plan cannot run (a usage error)
};

SessionPlan make_plan(const PlanRequest& request);

// "local-<YYYYMMDDTHHMMSSZ>-<pid>": the artifacts' job id of a run with neither a Slurm
// allocation nor --job-id (UTC time of `now`).
std::string local_job_id(std::time_t now, long pid);

// The samples schemas of a consumer profile (`default`: CPU 3, GPU 3; `compat`: CPU 2, GPU 2,
// the layouts validators pinned to the v1/v2 headers accept), with an explicit
// --cpu-samples-schema / --gpu-samples-schema (0: not given) winning over it. nullopt for
// an unknown profile.
struct SamplesSchemas {
  int cpu = 3;
  int gpu = 3;
};
std::optional<SamplesSchemas> samples_schemas_for(std::string_view profile, int cpu_schema,
                                                  int gpu_schema);

// The plan as --dry-run prints it: argvs shell-quoted, one per line.
std::string describe_plan(const SessionPlan& plan);

}  // namespace cpupower::launch
