#include "launch/session_plan.hpp"

#include <fmt/chrono.h>
#include <unistd.h>

#include <ctime>

#include <algorithm>

#include "common/text.hpp"
#include "config/validate.hpp"
#include "hostleg/markers.hpp"
#include "launch/process.hpp"
#include "launch/srun_argv.hpp"
#include "sim/profiles.hpp"

namespace cpupower::launch {
namespace {

// The srun argv of one step of the plan on node group `g`: the allocation's job, the recipe's
// srun options, stdout to `output` (none: read back by the caller).
std::vector<std::string> srun_on(const SessionPlan& plan, const NodeGroup& g,
                                 std::optional<std::string> output,
                                 std::vector<std::string> command) {
  SrunStep step;
  step.job_id = plan.job_id;
  step.group = g;
  step.srun_options = plan.recipe.runtime.srun_options;
  step.output = std::move(output);
  step.command = std::move(command);
  return srun_argv(step);
}

// `cpu-power node-address` on every node of `g`, through srun, its stdout read back.
ResolverStep resolver_step(const PlanRequest& r, const SessionPlan& plan, const NodeGroup& g,
                           const std::string& name, bool several) {
  std::vector<std::string> command = {r.self_exe, "node-address"};
  if (const auto& iface = plan.recipe.runtime.network_interface) {
    command.insert(command.end(), {"--interface", *iface});
  }
  return {name, srun_on(plan, g, std::nullopt, std::move(command)),
          plan.log_dir + "/" + name + "_resolver" + group_suffix(g.het_group, several) + ".log"};
}

// The node groups of a step over `nodes` (srun's --jobid: the allocation's). A node that no
// het component holds is left out, and a warning when `what` names the step's program.
GroupedNodes slurm_groups(SessionPlan& plan, const std::optional<Allocation>& allocation,
                          const std::vector<std::string>& nodes, std::string_view what) {
  if (allocation) plan.job_id = allocation->job_id;
  GroupedNodes grouped = group_nodes(nodes, allocation);
  for (const auto& e : grouped.errors) {
    if (!what.empty()) {
      plan.warnings.push_back(std::string(what) + " launch failed for " + e + "; it is left out");
    }
  }
  return grouped;
}

// `command` on each group, as the step `name` (with several groups `name`<sep>g<G>), each
// node's output in <log_dir>/<step>.%N.out.
std::vector<SrunGroup> srun_groups(const SessionPlan& plan, const GroupedNodes& grouped,
                                   const std::string& name, char sep,
                                   const std::vector<std::string>& command) {
  std::vector<SrunGroup> out;
  for (const auto& g : grouped.groups) {
    SrunGroup s{g, name, {}};
    if (grouped.groups.size() > 1) s.process_name += sep + ("g" + std::to_string(g.het_group));
    s.srun =
        srun_on(plan, g, percent_escaped(plan.log_dir) + "/" + s.process_name + ".%N.out", command);
    out.push_back(std::move(s));
  }
  return out;
}

void plan_slurm(const PlanRequest& r, const std::optional<Allocation>& allocation,
                std::vector<std::string> nodes, SessionPlan& plan) {
  const GroupedNodes grouped = slurm_groups(plan, allocation, nodes, "CPU power exporter");
  const bool several = grouped.groups.size() > 1;
  for (const auto& g : grouped.groups) {
    GroupPlan gp;
    gp.group = g;
    gp.process_name = exporter_process_name(g.het_group, several);
    gp.srun_log = plan.log_dir + "/" + gp.process_name + ".srun.log";
    gp.resolver = resolver_step(r, plan, g, "telemetry_cpu_power", several);
    gp.exporter_srun = srun_on(plan, g, exporter_log_pattern(plan.log_dir, g.het_group, several),
                               plan.exporter_command);
    for (const auto& n : g.nodes) plan.nodes.push_back(n);
    plan.groups.push_back(std::move(gp));
  }
}

std::vector<std::string> host_collector_command(const PlanRequest& r, const std::string& cpu_dir) {
  const auto& c = r.recipe.telemetry.cpu_power;
  return {r.self_exe,           "host-collect",
          "--output-dir",       cpu_dir + "/nodes",
          "--ready-dir",        cpu_dir + "/ready",
          "--source",           c.source,
          "--interval-seconds", fmt::format("{}", c.sample_interval_seconds)};
}

// One srun step per node group, as for the exporters: argv only, on the bare host.
void plan_host_leg(const PlanRequest& r, const std::optional<Allocation>& allocation,
                   SessionPlan& plan) {
  HostLegPlan leg;
  leg.cpu_dir = r.log_dir + "/" + r.recipe.telemetry.cpu_power.storage_subdir;
  leg.collector_command = host_collector_command(r, leg.cpu_dir);
  if (plan.mode == LaunchMode::slurm) {
    leg.groups =
        srun_groups(plan, slurm_groups(plan, allocation, plan.nodes, "CPU power collector"),
                    "telemetry_cpu_power", '_', leg.collector_command);
  }
  plan.host_leg = std::move(leg);
}

// The command when a recipe gives none, upstream's default, so that such a recipe starts the
// same exporter; {port} is the recipe's port.
constexpr std::string_view kDefaultDcgmCommand =
    "dcgm-exporter --collect-interval=100 --address :{port}";

std::vector<std::string> dcgm_exporter_command(const config::DcgmExporterConfig& d, long port) {
  std::string text = d.command.value_or(std::string(kDefaultDcgmCommand));
  for (auto at = text.find("{port}"); at != std::string::npos; at = text.find("{port}", at)) {
    text.replace(at, 6, std::to_string(port));
  }
  std::vector<std::string> argv;
  for (auto& word : common::split(text, ' ')) {
    if (!word.empty()) argv.push_back(std::move(word));
  }
  if (d.binary) {
    if (argv.empty()) argv.push_back(*d.binary);
    argv.front() = *d.binary;
  }
  return argv;
}

// The exporter block's names: dcgm-exporter's, overridden by gpu_labels and gpu_metrics.
scrape::GpuExporterProfile gpu_profile(const config::DcgmExporterConfig& d) {
  scrape::GpuExporterProfile p = scrape::GpuExporterProfile::dcgm();
  if (const auto& l = d.gpu_labels) {
    p.index_label = l->index;
    p.identity_label = l->identity;
    p.instance_labels = l->instance;
  }
  if (const auto& m = d.gpu_metrics) {
    p.power_metric = m->power_metric;
    p.power_scope = m->power_scope;
    p.util_metric = m->gpu_util_metric;
    p.sm_active_metric = m->sm_active_metric;
    p.temperature_metric = m->temperature_metric;
  }
  return p;
}

// The GPU indices a visible-devices variable names ("0,1,3"); nullopt when it holds anything
// else (UUIDs, "all", an empty item).
std::optional<std::vector<long long>> visible_indices(const std::string& value) {
  std::vector<long long> out;
  for (const auto& item : common::split(value, ',')) {
    const auto v = common::parse_u64(common::trim(item));
    if (!v || *v > 1000000) return std::nullopt;
    if (std::find(out.begin(), out.end(), static_cast<long long>(*v)) == out.end()) {
      out.push_back(static_cast<long long>(*v));
    }
  }
  if (out.empty()) return std::nullopt;
  return out;
}

void plan_gpu_leg(const PlanRequest& r, const std::optional<Allocation>& allocation,
                  SessionPlan& plan) {
  const auto& t = r.recipe.telemetry;
  const auto& d = *t.dcgm_exporter;
  GpuLegPlan leg;
  leg.power_dir = r.log_dir + "/" + t.storage_subdir;
  leg.samples_schema = r.gpu_samples_schema;
  leg.port = d.port;
  leg.required = t.required;
  leg.roles_file = r.gpu_roles;
  leg.read.profile = gpu_profile(d);
  if (const auto& cluster = r.recipe.cluster) {
    const auto it = r.env.find(cluster->visible_devices_env);
    if (it != r.env.end() && !common::trim(it->second).empty()) {
      const std::string shown = cluster->visible_devices_env + "=" + it->second;
      if (auto indices = visible_indices(it->second)) {
        leg.read.only_indices = std::move(indices);
        leg.visible_devices = shown;
      } else {
        plan.warnings.push_back("visible_devices_env: " + common::escape_untrusted(shown) +
                                " is not a list of GPU indices; every GPU a node shows is read "
                                "and expected");
      }
    }
  }
  if (plan.mode == LaunchMode::simulate) {
    leg.source = GpuExporterSource::simulated;
    leg.exporter_command = {r.self_exe,
                            "sim-gpu",
                            "--listen",
                            "127.0.0.1:0",
                            "--gpus",
                            std::to_string(r.sim_gpus),
                            "--collect-interval-ms",
                            "100"};
    for (const auto& f : r.sim_gpu_faults)
      leg.exporter_command.insert(leg.exporter_command.end(), {"--fault", f});
    // Another exporter's names: the simulated exporter serves them (a dcgm recipe's command
    // is what it always was).
    if (const auto& p = leg.read.profile; !(p == scrape::GpuExporterProfile::dcgm())) {
      leg.exporter_command.insert(
          leg.exporter_command.end(),
          {"--power-metric", p.power_metric, "--util-metric", p.util_metric.value_or(""),
           "--sm-active-metric", p.sm_active_metric.value_or(""), "--temperature-metric",
           p.temperature_metric.value_or(""), "--index-label", p.index_label, "--identity-label",
           p.identity_label});
    }
  } else if (d.command || d.binary) {
    leg.source = GpuExporterSource::started;
    leg.exporter_command = dcgm_exporter_command(d, d.port);
  } else {
    leg.source = GpuExporterSource::running;
    if (!d.container_image.empty()) {
      plan.warnings.push_back(
          "telemetry.dcgm_exporter.container_image is not launched (containers are out of "
          "scope): scraping a dcgm-exporter already running on each node at port " +
          std::to_string(d.port) + "; give telemetry.dcgm_exporter.binary to start one");
    }
  }
  if (plan.mode == LaunchMode::slurm) {
    const bool started = leg.source == GpuExporterSource::started;
    const GroupedNodes grouped =
        slurm_groups(plan, allocation, plan.nodes, started ? "dcgm-exporter" : "");
    const bool several = grouped.groups.size() > 1;
    // Where each node answers: the exporter leg's resolvers find it for both legs; without
    // that leg, the GPU leg runs the same resolver step itself.
    if (plan.groups.empty()) {
      for (const auto& g : grouped.groups) {
        leg.resolvers.push_back(resolver_step(r, plan, g, "telemetry_dcgm_exporter", several));
      }
    }
    if (started) {
      leg.groups = srun_groups(plan, grouped, "telemetry_dcgm_exporter", '.', leg.exporter_command);
    }
  }
  plan.gpu_leg = std::move(leg);
}

// `cpu-power clock-check` on every node of the session, one srun step per node group, each
// node's output in <log_dir>/clock_sync_<node>.out (srun's %N).
void plan_clock_steps(const PlanRequest& r, const std::optional<Allocation>& allocation,
                      SessionPlan& plan) {
  const GroupedNodes grouped = slurm_groups(plan, allocation, plan.nodes, "");
  const bool several = grouped.groups.size() > 1;
  for (const auto& g : grouped.groups) {
    ResolverStep step;
    step.name = "clock_sync" + group_suffix(g.het_group, several);
    step.srun = srun_on(plan, g, percent_escaped(plan.log_dir) + "/clock_sync_%N.out",
                        {r.self_exe, "clock-check"});
    step.log = plan.log_dir + "/" + step.name + ".srun.log";
    plan.clock_steps.push_back(std::move(step));
  }
}

// Slurm's job id when there is one, else --job-id, else a generated local one; a --job-id
// that differs from Slurm's is warned about and not used.
void choose_artifact_job_id(const PlanRequest& r, const std::optional<Allocation>& allocation,
                            SessionPlan& plan) {
  std::optional<std::string> slurm;
  if (allocation && !allocation->job_id.empty()) {
    slurm = allocation->job_id;
  } else if (const auto it = r.env.find("SLURM_JOB_ID"); it != r.env.end() && !it->second.empty()) {
    slurm = it->second;  // --simulate inside an allocation: still that job's artifacts
  }
  const bool given = r.job_id && !r.job_id->empty();
  if (slurm) {
    plan.artifact_job_id = *slurm;
    if (given && *r.job_id != *slurm) {
      plan.warnings.push_back("--job-id " + *r.job_id + " differs from the Slurm job id " + *slurm +
                              "; the artifacts record Slurm's");
    }
  } else if (given) {
    plan.artifact_job_id = *r.job_id;
  } else {
    plan.artifact_job_id = r.generated_job_id.empty()
                               ? local_job_id(std::time(nullptr), static_cast<long>(::getpid()))
                               : r.generated_job_id;
  }
}

// The flags that point a simulated node's reader at its tree, as the dry run shows them.
std::string sim_root_flags(const SessionPlan& p) {
  const auto profile = sim::parse_profile(p.simulate_profile);
  return profile && sim::is_rapl_profile(*profile)
             ? " --powercap-root <sim root> --hwmon-root <empty directory>"
             : " --hwmon-root <sim root>";
}

}  // namespace

std::string local_job_id(std::time_t now, long pid) {
  return fmt::format("local-{:%Y%m%dT%H%M%SZ}-{}", fmt::gmtime(now), pid);
}

std::optional<SamplesSchemas> samples_schemas_for(std::string_view profile, int cpu_schema,
                                                  int gpu_schema) {
  SamplesSchemas out;
  if (profile == "compat") {
    out = {2, 2};
  } else if (profile != "default" && !profile.empty()) {
    return std::nullopt;
  }
  if (cpu_schema != 0) out.cpu = cpu_schema;
  if (gpu_schema != 0) out.gpu = gpu_schema;
  return out;
}

std::string_view mode_name(LaunchMode mode) {
  return mode == LaunchMode::slurm ? "slurm" : mode == LaunchMode::simulate ? "simulate" : "local";
}

SessionPlan make_plan(const PlanRequest& r) {
  SessionPlan plan;
  plan.recipe = r.recipe;
  plan.log_dir = r.log_dir;
  plan.command = r.command;
  plan.exporter = r.exporter;
  const auto& t = r.recipe.telemetry;
  plan.exporter_leg = config::exporter_leg_enabled(t);
  plan.cpu_dir = r.log_dir + "/" + t.storage_subdir + "/cpu";
  plan.cpu_samples_schema = r.cpu_samples_schema;
  // A usage error: the plan cannot run.
  const auto fail = [&plan](std::string error) {
    plan.error = std::move(error);
    return plan;
  };
  if (r.command.empty()) return fail("no command to run: give it after --");

  std::optional<Allocation> allocation;
  if (!r.simulate) {
    auto from_env = allocation_from_env(r.env, r.expand);
    if (!from_env) return fail("cannot read the Slurm allocation: " + from_env.error());
    allocation = std::move(*from_env);
  }
  choose_artifact_job_id(r, allocation, plan);
  std::vector<std::string> nodes;
  if (r.nodes) {
    // Simulated node names are only names: no Slurm to expand a range.
    const HostlistExpander no_ranges = [](const std::string& expr) {
      return Result<std::vector<std::string>>(
          Error{"--simulate takes plain node names, not the range " + expr});
    };
    auto parsed = parse_node_list(*r.nodes, r.simulate ? no_ranges : r.expand);
    if (!parsed) return fail("--nodes: " + parsed.error());
    if (parsed->empty()) return fail("--nodes: no node names in '" + *r.nodes + "'");
    nodes = std::move(*parsed);
  }

  const bool host_leg = t.enabled && t.cpu_power.enabled;
  const bool gpu_leg = t.enabled && t.dcgm_exporter.has_value();
  // The recipe's storage directories fit a path alone (config/validate.cpp); below this log
  // directory they must too, or every open under them fails and the run keeps nothing.
  for (const auto& [on, field, subdir] :
       {std::tuple{plan.exporter_leg || gpu_leg, "telemetry.storage_subdir", t.storage_subdir},
        std::tuple{host_leg, "telemetry.cpu_power.storage_subdir", t.cpu_power.storage_subdir}}) {
    if (!on) continue;
    const auto problem = config::path_length_problem(
        std::string("--log-dir + ") + field, r.log_dir + "/" + subdir, config::kBelowSubdirBytes);
    if (!problem.empty()) return fail(problem);
  }
  plan.mode = r.simulate                ? LaunchMode::simulate
              : (allocation || r.nodes) ? LaunchMode::slurm
                                        : LaunchMode::local;
  if (!plan.exporter_leg && !host_leg && !gpu_leg) {
    plan.warnings.push_back(
        "power telemetry is off in the recipe (telemetry.enabled with "
        "telemetry.cpu_power_exporter, telemetry.cpu_power.enabled or telemetry.dcgm_exporter); "
        "running the command only");
    return plan;
  }

  if (plan.exporter_leg) {
    for (const auto& w : r.exporter.warnings) plan.warnings.push_back(w);
    if (r.exporter.kind == ExporterKind::none) {
      plan.warnings.push_back("CPU power exporter launch failed: no exporter to start");
    }
  }
  const auto exporter = t.cpu_power_exporter.value_or(config::CpuPowerExporterConfig{});
  const std::string source_warning = exporter_source_warning(r.exporter, exporter.source);
  // The exporters this run starts serve the recipe's web config (the native exporter only:
  // the python fallback has no TLS or authentication, and would refuse the flag).
  std::vector<std::string> web_args;
  if (exporter.web_config_file) {
    if (r.exporter.kind == ExporterKind::native) {
      web_args = {"--web.config.file", *exporter.web_config_file};
    } else if (plan.exporter_leg && r.exporter.kind == ExporterKind::python_fallback) {
      plan.warnings.push_back(
          "telemetry.cpu_power_exporter.web_config_file is set, but the Python fallback "
          "exporter serves plain HTTP without authentication; it is started without it");
    }
  }
  // Simulated nodes share this host's loopback: port 0, each exporter takes a free one.
  if (r.simulate) web_args.insert(web_args.begin(), {"--bind", "127.0.0.1"});
  plan.exporter_command =
      exporter_argv(r.exporter, r.simulate ? 0 : exporter.port, exporter.source, web_args);
  if (plan.mode == LaunchMode::simulate) {
    plan.simulate_profile = *r.simulate;
    plan.nodes = nodes.empty() ? std::vector<std::string>{"sim1"} : nodes;
  } else if (plan.mode == LaunchMode::slurm) {
    if (nodes.empty()) {
      for (const auto& g : allocation->groups)
        nodes.insert(nodes.end(), g.nodes.begin(), g.nodes.end());
    }
    if (plan.exporter_leg && r.exporter.kind != ExporterKind::none) {
      plan_slurm(r, allocation, nodes, plan);
    } else {
      plan.nodes = nodes;
    }
  } else {
    plan.nodes = {r.local_hostname};
  }
  plan.scrape_security = r.scrape_security;
  if (!plan.exporter_leg) plan.exporter_command.clear();
  // Node names name files in the log directory (logs, the host leg's rows and markers).
  for (const auto& n : plan.nodes) {
    if (!hostleg::is_file_name(n)) {
      return fail("node name '" + n +
                  "' cannot name the node's files: it is empty, '.', '..' or holds a '/'");
    }
  }
  if (host_leg) plan_host_leg(r, allocation, plan);
  if (gpu_leg) plan_gpu_leg(r, allocation, plan);
  plan.clock_sync_check = r.clock_sync_check;
  if (plan.clock_sync_check && plan.mode == LaunchMode::slurm)
    plan_clock_steps(r, allocation, plan);
  if (plan.exporter_leg && !source_warning.empty()) plan.warnings.push_back(source_warning);
  return plan;
}

std::string describe_plan(const SessionPlan& p) {
  std::string out;
  auto line = [&](const std::string& key, const std::string& value) {
    out += fmt::format("{:<10} {}\n", key + ":", value);
  };
  auto groups = [&](const std::vector<SrunGroup>& gs, std::string_view what) {
    for (const auto& g : gs) {
      out += fmt::format("group {} ({} node{}):\n  {}: {}\n", g.process_name, g.group.nodes.size(),
                         g.group.nodes.size() == 1 ? "" : "s", what, shell_quote_argv(g.srun));
    }
  };
  line("mode", std::string(mode_name(p.mode)) + (p.job_id ? " (job " + *p.job_id + ")" : ""));
  line("log dir", p.log_dir);
  line("job id", p.artifact_job_id + " (the artifacts')");
  line("command", shell_quote_argv(p.command));
  if (!p.exporter_leg) {
    line("telemetry", p.host_leg || p.gpu_leg ? "CPU exporter leg off" : "off");
  } else {
    const auto& t = p.recipe.telemetry;
    line("samples", p.cpu_dir + "/samples.csv (schema v" + std::to_string(p.cpu_samples_schema) +
                        ") every " + std::to_string(t.collect_interval_ms) + " ms, manifest " +
                        p.cpu_dir + "/cpu_manifest.json");
    std::string kind = p.exporter.kind == ExporterKind::native            ? "binary"
                       : p.exporter.kind == ExporterKind::python_fallback ? "python fallback"
                                                                          : "none";
    line("exporter", kind + (p.exporter.path.empty() ? "" : " " + p.exporter.path) +
                         (p.exporter.origin.empty() ? "" : " (" + p.exporter.origin + ")"));
    const auto& sec = p.scrape_security;
    if (sec.https || !sec.username.empty()) {
      std::string how = sec.https ? "https" : "http";
      if (sec.https) how += ", CA " + (sec.ca_file.empty() ? "(system)" : sec.ca_file);
      if (!sec.cert_file.empty()) how += ", client certificate " + sec.cert_file;
      if (!sec.username.empty()) how += ", basic auth user " + sec.username;
      line("scrape", how);
    }
    if (p.mode == LaunchMode::slurm) {
      for (const auto& g : p.groups) {
        out += fmt::format("group {} ({}, {} node{}):\n", g.process_name,
                           g.group.het_group >= 0 ? "het group " + std::to_string(g.group.het_group)
                                                  : std::string("no het group"),
                           g.group.nodes.size(), g.group.nodes.size() == 1 ? "" : "s");
        out += "  exporter: " + shell_quote_argv(g.exporter_srun) + "\n";
        out += "  resolver: " + shell_quote_argv(g.resolver.srun) + "\n";
      }
    } else {
      line("exporter", shell_quote_argv(p.exporter_command) +
                           (p.mode == LaunchMode::simulate ? sim_root_flags(p) : ""));
    }
    std::string endpoints;
    const long port = t.cpu_power_exporter->port;
    for (const auto& n : p.nodes) {
      if (!endpoints.empty()) endpoints += ", ";
      endpoints += p.mode == LaunchMode::slurm
                       ? n + " -> <address resolved on the node>:" + std::to_string(port)
                   : p.mode == LaunchMode::simulate ? n + " -> 127.0.0.1:<free port>"
                                                    : n + " -> 127.0.0.1:" + std::to_string(port);
    }
    line("endpoints", endpoints.empty() ? "(none)" : endpoints);
    if (p.mode == LaunchMode::simulate) line("simulate", p.simulate_profile);
  }
  if (p.host_leg) {
    const auto& c = p.recipe.telemetry.cpu_power;
    line("host leg", p.host_leg->cpu_dir + "/samples.csv (merged), manifest " +
                         p.host_leg->cpu_dir + "/manifest.json, every " +
                         fmt::format("{}", c.sample_interval_seconds) + " s" +
                         (c.required ? ", required" : ", best-effort"));
    if (p.mode == LaunchMode::slurm) {
      groups(p.host_leg->groups, "collector");
    } else {
      line("collector",
           shell_quote_argv(p.host_leg->collector_command) +
               (p.mode == LaunchMode::simulate ? sim_root_flags(p) + " --hostname <node>" : ""));
    }
  }
  if (p.gpu_leg) {
    const auto& g = *p.gpu_leg;
    line("gpu leg", g.power_dir + "/samples.csv (schema v" + std::to_string(g.samples_schema) +
                        ") every " + std::to_string(p.recipe.telemetry.collect_interval_ms) +
                        " ms, manifest " + g.power_dir + "/manifest.json, windows " + g.power_dir +
                        "/windows/" + (g.required ? ", required" : ", best-effort"));
    if (g.source == GpuExporterSource::running) {
      line("dcgm", "already running on each node, port " + std::to_string(g.port));
    } else if (g.source == GpuExporterSource::started && p.mode == LaunchMode::slurm) {
      groups(g.groups, "dcgm-exporter");
    } else {
      line("dcgm", shell_quote_argv(g.exporter_command) +
                       (g.source == GpuExporterSource::simulated ? " --hostname <node>" : ""));
    }
    for (const auto& rs : g.resolvers) line("resolver", shell_quote_argv(rs.srun));
    if (g.roles_file) line("gpu roles", *g.roles_file);
    if (const auto& p = g.read.profile; !(p == scrape::GpuExporterProfile::dcgm())) {
      line("gpu exporter", "power " + p.power_metric + " (" + p.power_scope + "), labels " +
                               p.index_label + "/" + p.identity_label);
    }
    if (!g.visible_devices.empty()) {
      line("gpu devices", common::escape_untrusted(g.visible_devices) + " on every node");
    }
  }
  if (p.exporter_leg || p.host_leg || p.gpu_leg) {
    if (!p.clock_sync_check) {
      line("clock", "not checked (telemetry.clock_sync_check: false)");
    } else if (p.mode == LaunchMode::slurm) {
      for (const auto& c : p.clock_steps) line("clock", shell_quote_argv(c.srun));
    } else {
      line("clock",
           "this host's clock, probed once" +
               std::string(p.mode == LaunchMode::simulate ? " for every simulated node" : ""));
    }
  }
  for (const auto& w : p.warnings) line("warning", w);
  return out;
}

}  // namespace cpupower::launch
