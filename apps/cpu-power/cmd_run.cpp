// cpu-power run [--config RECIPE] [--log-dir DIR] [--nodes LIST]
//               [--simulate gb200|gh200|x86-intel|x86-amd]
//               [--dry-run] -- CMD [ARGS...]
// Runs CMD with CPU power telemetry around it (see launch/session.hpp) and exits with CMD's
// status. Also the hidden `cpu-power node-address`, which run starts on every node through
// srun to learn the address the collector should scrape there.

#include <fmt/chrono.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <memory>

#include "apps/cpu-power/commands.hpp"
#include "common/signals.hpp"
#include "config/load.hpp"
#include "hostleg/host_collector.hpp"
#include "launch/node_address.hpp"
#include "launch/process.hpp"
#include "launch/session.hpp"
#include "launch/session_plan.hpp"
#include "report/run_report.hpp"
#include "scrape/client_security.hpp"

namespace cpupower::app {
namespace {

using Clock = std::chrono::steady_clock;

struct RunArgs {
  std::string config;
  std::string cluster_config;
  std::string log_dir;
  std::string nodes;
  std::string simulate;
  std::string gpu_roles;
  bool dry_run = false;
  int cpu_samples_schema = 0;  // 0: not given, the profile's
  int gpu_samples_schema = 0;
  std::string consumer_profile = "default";
  std::string job_id;
  launch::PlanRequest request;  // --sim-gpus, --sim-gpu-fault and the command, as given
};

std::string default_log_dir() {
  return fmt::format("cpu-power-run-{:%Y%m%dT%H%M%SZ}", fmt::gmtime(std::time(nullptr)));
}

std::string short_hostname() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "localhost";
  std::string name(buf);
  return name.substr(0, name.find('.'));
}

// Without --config the exporter leg runs with every default, as if the recipe said
// `telemetry: {enabled: true, cpu_power_exporter: {}}`.
std::optional<config::Recipe> recipe_for(const RunArgs& args) {
  if (args.config.empty()) {
    config::Recipe r;
    r.telemetry.enabled = true;
    r.telemetry.cpu_power_exporter.emplace();
    return r;
  }
  std::optional<config::ClusterConfig> cluster;
  if (!args.cluster_config.empty()) {
    auto loaded = config::load_cluster_file(args.cluster_config);
    for (const auto& e : loaded.errors) std::cerr << config::format_error(e) << "\n";
    if (!loaded.cluster) return std::nullopt;
    cluster = std::move(loaded.cluster);
  }
  const auto result = config::load_recipe_file(args.config, cluster ? &*cluster : nullptr);
  for (const auto& e : result.errors) std::cerr << config::format_error(e) << "\n";
  for (const auto& w : result.warnings) std::cerr << config::format_warning(w) << "\n";
  return result.recipe;
}

// The energy report runs in a forked child: whatever goes wrong in it (a crash included)
// stays there, and the session still exits with the command's status.
void write_report(const std::string& log_dir, const report::ReportOptions& options) {
  common::retire_closed_stdout();
  std::cout << std::flush;
  const pid_t pid = ::fork();
  if (pid < 0) {
    std::cout << "energy report not written: fork failed" << std::endl;
    return;
  }
  if (pid == 0) {
    int code = 1;
    try {
      const auto status = report::write_run_report(log_dir, options);
      for (const auto& path : status.written) std::cout << "energy report: " << path << "\n";
      if (!status.ok) std::cout << "energy report incomplete: " << status.message << "\n";
      code = status.ok ? 0 : 1;
    } catch (const std::exception& e) {
      std::cout << "energy report failed: " << e.what() << "\n";
    } catch (...) {
      std::cout << "energy report failed\n";
    }
    std::cout << std::flush;
    std::_Exit(code);
  }
  const auto status = launch::wait_for_exit(pid, std::chrono::minutes(10));
  if (!status) {
    ::kill(pid, SIGKILL);
    launch::wait_for_exit(pid);
    std::cout << "energy report abandoned after 10 minutes" << std::endl;
  } else if (WIFSIGNALED(*status)) {
    std::cout << "energy report crashed (" << launch::describe_status(*status)
              << "); the run's artifacts are complete" << std::endl;
  }
}

int run(const RunArgs& args) {
  const auto started = Clock::now();
  // stdout may be a pipe whose reader goes away (`cpu-power run ... | head`): that loses the
  // log, never the run, its artifacts or the command's exit status.
  common::ignore_sigpipe();
  const auto recipe = recipe_for(args);
  if (!recipe) return 2;  // nothing ran; the errors are printed

  launch::PlanRequest request = args.request;
  request.recipe = *recipe;
  request.log_dir =
      std::filesystem::absolute(args.log_dir.empty() ? default_log_dir() : args.log_dir)
          .lexically_normal()
          .string();
  if (!args.nodes.empty()) request.nodes = args.nodes;
  if (!args.simulate.empty()) request.simulate = args.simulate;
  if (!args.gpu_roles.empty()) request.gpu_roles = args.gpu_roles;
  const auto schemas = launch::samples_schemas_for(args.consumer_profile, args.cpu_samples_schema,
                                                   args.gpu_samples_schema);
  if (!schemas) {
    std::cerr << "Error: --consumer-profile: unknown profile " << args.consumer_profile
              << std::endl;
    return 2;
  }
  request.cpu_samples_schema = schemas->cpu;
  request.gpu_samples_schema = schemas->gpu;
  if (!args.job_id.empty()) request.job_id = args.job_id;
  request.generated_job_id = launch::local_job_id(std::time(nullptr), ::getpid());
  request.clock_sync_check = recipe->telemetry.clock_sync_check;
  request.env = launch::current_env();
  request.exporter = launch::resolve_exporter(launch::ExporterLookup::from_process());
  request.self_exe = launch::self_exe_path();
  if (request.self_exe.empty()) request.self_exe = "cpu-power";
  request.local_hostname = short_hostname();
  request.expand = launch::scontrol_expander();
  // The exporters' TLS and Basic authentication: files checked and the password read now, so
  // that a mistake is a usage error before anything starts.
  if (const auto& e = recipe->telemetry.cpu_power_exporter;
      e && (e->tls_config || e->basic_auth) && config::exporter_leg_enabled(recipe->telemetry)) {
    const auto tls = e->tls_config.value_or(config::ScrapeTlsConfig{});
    const auto& auth = e->basic_auth;
    const auto resolved = scrape::resolve_client_security(
        {tls.ca_file, tls.cert_file, tls.key_file, e->tls_config.has_value(),
         auth ? std::optional(auth->username) : std::nullopt,
         auth ? std::optional(auth->password_file) : std::nullopt});
    if (!resolved.security) {
      const auto key = resolved.refused_key;
      const bool auth = key == "username" || key == "password_file";
      std::cerr << "Error: " << args.config << ": telemetry.cpu_power_exporter."
                << (auth ? "basic_auth." : "tls_config.") << key << ": " << resolved.why
                << std::endl;
      return 2;
    }
    request.scrape_security = *resolved.security;
  }
  const auto plan = launch::make_plan(request);
  if (!plan.error.empty()) {
    std::cerr << "Error: " << plan.error << std::endl;
    return 2;
  }
  if (args.dry_run) {
    std::cout << launch::describe_plan(plan) << std::flush;
    return 0;
  }

  // Before any thread exists, so that every thread started later has the signals blocked.
  launch::SignalForwarder signals;
  signals.start();
  const auto result = launch::run_session(plan, signals, started);
  signals.stop();
  common::retire_closed_stdout();
  std::cout << launch::summary_text(result) << std::flush;
  if ((plan.exporter_leg || plan.host_leg || plan.gpu_leg) && result.command_started) {
    // With both legs the exporter leg's samples are the report's; the host leg's report is
    // `cpu-power report LOG_DIR --cpu-samples <storage_subdir>/samples.csv`.
    report::ReportOptions options;
    if (plan.exporter_leg && plan.host_leg) options.cpu_samples = plan.cpu_dir + "/samples.csv";
    write_report(plan.log_dir, options);
  }
  return result.exit_code;
}

int node_address(const std::string& interface) {
  const char* launcher = std::getenv("SLURM_LAUNCH_NODE_IPADDR");
  const auto address =
      launch::choose_node_address(launch::local_interface_addresses(),
                                  interface.empty() ? std::nullopt : std::optional(interface),
                                  launcher ? launch::route_source_address(launcher) : std::nullopt);
  const std::string node = hostleg::node_name();
  if (!address) {
    std::cerr << "Error: " << node << ": " << address.error() << std::endl;
    return 1;
  }
  std::cout << launch::resolver_line(node, *address) << std::flush;
  return 0;
}

}  // namespace

void add_run_command(CLI::App& app, Action& action) {
  auto args = std::make_shared<RunArgs>();
  auto* cmd = app.add_subcommand("run", "Run a command with CPU power telemetry around it");
  auto* config_opt =
      cmd->add_option("--config", args->config, "srtctl recipe (YAML) with a telemetry: block")
          ->check(CLI::ExistingFile);
  cmd->add_option("--cluster-config", args->cluster_config,
                  "srtctl cluster configuration (srtslurm.yaml): its default_gpu_exporter and "
                  "visible_devices_env (needs --config)")
      ->needs(config_opt);
  cmd->add_option("--log-dir", args->log_dir,
                  "Run directory for logs and <storage_subdir>/cpu/ (default: "
                  "./cpu-power-run-<UTC time>)");
  cmd->add_option("--nodes", args->nodes,
                  "Worker nodes, comma-separated (Slurm ranges allowed; default: the allocation)");
  cmd->add_option("--simulate", args->simulate,
                  "Simulated nodes and local exporters instead of real ones: Grace (gb200, "
                  "gh200) or x86 with RAPL (x86-intel, x86-amd)")
      ->check(CLI::IsMember({"gb200", "gh200", "x86-intel", "x86-amd"}));
  cmd->add_option("--gpu-roles", args->gpu_roles,
                  "JSON file of the GPU leg's expected devices and their worker roles "
                  "([{hostname, gpu_index, assignments: [{worker_role, ...}]}], or a GPU "
                  "manifest.json); default: the GPUs each node shows when it becomes ready")
      ->check(CLI::ExistingFile);
  cmd->add_option("--sim-gpus", args->request.sim_gpus,
                  "GPUs per simulated node for the GPU leg (--simulate)")
      ->check(CLI::Range(1, 64));
  cmd->add_option("--sim-gpu-fault", args->request.sim_gpu_faults,
                  "A fault for every simulated dcgm-exporter (--simulate; repeatable), as "
                  "`cpu-power sim-gpu --fault` takes it: slow:MS, hang, garbage, http500, "
                  "vanish:GPU, uuid-change:GPU, each with @FROM_MS[-TO_MS]");
  cmd->add_flag("--dry-run", args->dry_run, "Print the plan (srun argv per group) and run nothing");
  add_cpu_samples_schema_option(cmd, args->cpu_samples_schema);
  add_gpu_samples_schema_option(cmd, args->gpu_samples_schema);
  add_consumer_profile_option(cmd, args->consumer_profile);
  cmd->add_option("--job-id", args->job_id,
                  "Job id the artifacts record outside Slurm (inside an allocation Slurm's wins; "
                  "default: local-<UTC time>-<PID>)")
      ->check(
          [](const std::string& v) { return v.empty() ? std::string("empty") : std::string(); });
  cmd->add_option("command", args->request.command, "The command to run, after --")->required();
  cmd->callback([&action, args] { action = [args] { return run(*args); }; });

  // run's helper on the nodes; not for people.
  auto iface = std::make_shared<std::string>();
  auto* helper = app.add_subcommand("node-address", "Print this node's scrape address (internal)");
  helper->group("");
  helper->add_option("--interface", *iface, "Take the address of this interface");
  helper->callback([&action, iface] { action = [iface] { return node_address(*iface); }; });
}

}  // namespace cpupower::app
