// cpu-power sim-gpu: a simulated NVIDIA dcgm-exporter serving the real exposition for N GPUs
// over HTTP, so the GPU leg can be exercised anywhere; with --flavour amd or the --*-metric
// and --*-label options, another GPU exporter's family and label names (a `kind: custom`
// exporter).

#include <fmt/core.h>

#include <cstdio>
#include <iostream>
#include <memory>
#include <set>

#include "apps/cpu-power/commands.hpp"
#include "common/signals.hpp"
#include "common/text.hpp"
#include "sim/sim_gpu.hpp"

namespace cpupower::app {
namespace {

constexpr std::uint32_t kMaxGpus = 64;

struct SimGpuArgs {
  sim::SimGpuOptions options;  // the settings taken as given, with their defaults
  std::string listen = "0.0.0.0:9400";
  std::string port_file;
  bool no_hostname = false;
  std::string power = "load";
  std::int64_t collect_interval_ms = 1000;
  std::string mig;
  std::vector<std::string> faults;
  bool no_noise = false;
  double duration_s = 0.0;
  std::string flavour = "dcgm";
  // --power-metric ... --identity-label: set when given (empty for the optional families:
  // not served).
  std::optional<std::string> power_metric, util_metric, sm_active_metric, temperature_metric,
      index_label, identity_label;
};

struct ListenAddress {
  std::string ip;
  std::uint16_t port = 0;
};

// ADDR:PORT with ADDR an IPv4 literal, [IPv6] literal, "localhost" or empty (all IPv4
// interfaces, like Go's ":9400"); PORT 0..65535, 0 letting the kernel pick.
Result<ListenAddress> parse_listen(std::string_view text) {
  const auto colon = text.rfind(':');
  if (colon == std::string_view::npos) {
    return Error{"'" + std::string(text) + "' is not ADDR:PORT, e.g. 127.0.0.1:0 or :9400"};
  }
  std::string_view host = text.substr(0, colon);
  const auto port = common::parse_u64(text.substr(colon + 1));
  if (!port || *port > 65535) {
    return Error{"port '" + std::string(text.substr(colon + 1)) + "' is not 0..65535"};
  }
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  } else if (host.find(':') != std::string_view::npos) {
    return Error{"an IPv6 address needs brackets, e.g. [::1]:9400"};
  }
  return ListenAddress{host.empty()          ? "0.0.0.0"
                       : host == "localhost" ? "127.0.0.1"
                                             : std::string(host),
                       static_cast<std::uint16_t>(*port)};
}

// "" (every GPU) or a comma-separated list of GPU indices.
std::vector<std::uint32_t> parse_mig(const std::string& text, std::uint32_t gpus) {
  std::vector<std::uint32_t> out;
  if (text.empty() || text == "all") {
    for (std::uint32_t g = 0; g < gpus; ++g) out.push_back(g);
    return out;
  }
  std::set<std::uint32_t> seen;
  for (const auto& item : common::split(text, ',')) {
    const auto g = common::parse_u64(common::trim(item));
    if (!g || *g >= gpus) {
      throw CLI::ValidationError("--mig",
                                 "'" + item + "' is not a GPU index below " + std::to_string(gpus));
    }
    if (seen.insert(static_cast<std::uint32_t>(*g)).second) {
      out.push_back(static_cast<std::uint32_t>(*g));
    }
  }
  return out;
}

// Cross-option checks CLI11 cannot express; thrown as usage errors (exit 2).
sim::SimGpuOptions to_options(const SimGpuArgs& args, bool mig_given) {
  sim::SimGpuOptions o = args.options;
  const auto listen = parse_listen(args.listen);
  if (!listen) throw CLI::ValidationError("--listen", listen.error());
  o.bind_ip = listen->ip;
  o.port = listen->port;
  o.hostname_label = !args.no_hostname;
  const auto power = sim::parse_gpu_power_spec(args.power);
  if (!power) throw CLI::ValidationError("--power", power.error());  // unreachable: checked
  o.power = *power;
  if (!(o.max_w > o.idle_w)) throw CLI::ValidationError("--max-w", "must be above --idle-w");
  o.collect_interval = std::chrono::milliseconds(args.collect_interval_ms);
  if (mig_given) o.mig_gpus = parse_mig(args.mig, o.gpus);
  for (const auto& spec : args.faults) {
    auto fault = sim::parse_gpu_fault(spec);
    if (!fault) throw CLI::ValidationError("--fault", fault.error());  // unreachable: checked
    if ((fault->kind == sim::GpuFault::Kind::vanish ||
         fault->kind == sim::GpuFault::Kind::uuid_change) &&
        fault->gpu >= o.gpus) {
      throw CLI::ValidationError("--fault", "'" + spec + "' names gpu " +
                                                std::to_string(fault->gpu) + ", but --gpus is " +
                                                std::to_string(o.gpus));
    }
    o.faults.push_back(*fault);
  }
  o.noise = !args.no_noise;
  // Another exporter's names: the flavour's, then each name given.
  const bool renamed = args.flavour != "dcgm" || args.power_metric || args.util_metric ||
                       args.sm_active_metric || args.temperature_metric || args.index_label ||
                       args.identity_label;
  if (renamed) {
    sim::ExporterNames names =
        args.flavour == "amd" ? sim::ExporterNames::amd() : sim::ExporterNames{};
    const auto set = [](std::string& field, const std::optional<std::string>& given) {
      if (given) field = *given;
    };
    set(names.power, args.power_metric);
    set(names.gpu_util, args.util_metric);
    set(names.sm_active, args.sm_active_metric);
    set(names.temperature, args.temperature_metric);
    set(names.index_label, args.index_label);
    set(names.identity_label, args.identity_label);
    if (names.power.empty()) throw CLI::ValidationError("--power-metric", "may not be empty");
    if (names.index_label.empty() || names.identity_label.empty()) {
      throw CLI::ValidationError("--index-label/--identity-label", "may not be empty");
    }
    if (names.index_label == names.identity_label) {
      throw CLI::ValidationError("--identity-label", "must differ from the index label");
    }
    o.names = names;
  }
  return o;
}

int run_sim_gpu(const sim::SimGpuOptions& options, const std::string& port_file,
                double duration_s) {
  // Before any thread exists, so that every thread inherits the mask and the signal waits
  // for us below instead of killing the process mid-response.
  common::block_shutdown_signals();
  sim::SimGpu gpu(options);
  if (!started(gpu.start())) return 1;
  if (!port_file.empty()) {
    const Status written = common::write_file_atomic(port_file, std::to_string(gpu.port()) + "\n");
    if (!written) {
      std::cerr << "Error: cannot write --port-file " << port_file << ": " << written.error()
                << std::endl;
      return 1;
    }
  }
  fmt::print("sim-gpu: listening on http://{}/metrics\n", gpu.address());
  std::fflush(stdout);

  const auto reason = wait_for_stop(duration_s);
  gpu.stop();
  fmt::print("sim-gpu: stopped reason={}\n", reason);
  std::fflush(stdout);
  return 0;
}

}  // namespace

void add_sim_gpu_command(CLI::App& app, Action& action) {
  auto args = std::make_shared<SimGpuArgs>();
  auto* cmd = app.add_subcommand("sim-gpu", "Simulate NVIDIA dcgm-exporter for N GPUs over HTTP");
  cmd->add_option("--listen", args->listen,
                  "ADDR:PORT to serve /metrics on (PORT 0: the kernel picks; see the ready line)")
      ->capture_default_str();
  cmd->add_option("--port-file", args->port_file,
                  "Write the bound port to this file (atomically) once listening");
  cmd->add_option("--gpus", args->options.gpus, "Number of GPUs")
      ->check(CLI::Range(std::uint32_t{1}, kMaxGpus))
      ->capture_default_str();
  cmd->add_option("--hostname", args->options.hostname,
                  "Hostname label and seed of the UUIDs (default: this host's name)");
  cmd->add_flag("--no-hostname", args->no_hostname, "No Hostname label (dcgm-exporter -n)");
  cmd->add_option("--model-name", args->options.model_name, "modelName label")
      ->capture_default_str();
  cmd->add_option("--driver-version", args->options.driver_version,
                  "DCGM_FI_DRIVER_VERSION label (empty: none)")
      ->capture_default_str();
  cmd->add_option("--power", args->power, "Board power: load, constant:W or trace:FILE")
      ->check(CLI::Validator(
          [](std::string& spec) { return sim::parse_gpu_power_spec(spec).error(); }, "POWER"))
      ->capture_default_str();
  cmd->add_option("--idle-w", args->options.idle_w, "Load model: watts at 0 % host CPU load")
      ->check(CLI::Range(0.0, 10000.0))
      ->capture_default_str();
  cmd->add_option("--max-w", args->options.max_w, "Load model: watts at 100 % host CPU load")
      ->check(CLI::Range(0.0, 10000.0))
      ->capture_default_str();
  cmd->add_option("--collect-interval-ms", args->collect_interval_ms,
                  "Values refresh every this many ms (dcgm-exporter -c; its default is 30000)")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{3600000}))
      ->capture_default_str();
  cmd->add_flag("--profiling", args->options.profiling,
                "Serve the DCGM_FI_PROF_* fields (DCGM_FI_PROF_SM_ACTIVE, ...): opt-in");
  auto* mig = cmd->add_option("--mig", args->mig,
                              "GPUs in MIG mode (comma-separated; no list: all): their GPU "
                              "instances are served, with GPU_I_PROFILE and GPU_I_ID")
                  ->expected(0, 1);
  cmd->add_flag("--kubernetes", args->options.kubernetes,
                "container, namespace and pod labels on every GPU (dcgm-exporter -k)");
  cmd->add_option("--fault", args->faults,
                  "KIND[:ARG][@FROM_MS[-TO_MS]]: slow:MS, hang, garbage, http500, vanish:GPU, "
                  "uuid-change:GPU, e.g. vanish:1@3000 (repeatable)")
      ->check(CLI::Validator([](std::string& spec) { return sim::parse_gpu_fault(spec).error(); },
                             "FAULT"));
  cmd->add_option("--seed", args->options.seed, "Noise seed")->capture_default_str();
  cmd->add_flag("--no-noise", args->no_noise, "No noise on the load model");
  cmd->add_option("--proc-stat", args->options.proc_stat, "CPU time source for the load model")
      ->capture_default_str();
  add_duration_option(cmd, args->duration_s);
  cmd->add_option("--flavour", args->flavour,
                  "Whose names to serve: dcgm (dcgm-exporter's whole exposition) or amd "
                  "(rocm/device-metrics-exporter's: gpu_power_usage, gpu_gfx_activity, "
                  "gpu_junction_temperature, labels gpu_id and serial_number)")
      ->check(CLI::IsMember({"dcgm", "amd"}))
      ->capture_default_str();
  cmd->add_option("--power-metric", args->power_metric,
                  "Serve GPU power under this family name (only the families the GPU leg reads "
                  "are served once any name is given)");
  cmd->add_option("--util-metric", args->util_metric,
                  "Family name of GPU utilization, percent (empty: not served)");
  cmd->add_option("--sm-active-metric", args->sm_active_metric,
                  "Family name of SM activity, 0..1 (empty: not served)");
  cmd->add_option("--temperature-metric", args->temperature_metric,
                  "Family name of GPU temperature, Celsius (empty: not served)");
  cmd->add_option("--index-label", args->index_label, "Label carrying the GPU index");
  cmd->add_option("--identity-label", args->identity_label,
                  "Label carrying the GPU's identity (its UUID)");
  cmd->callback([&action, args, mig] {
    auto options = std::make_shared<sim::SimGpuOptions>(to_options(*args, mig->count() > 0));
    action = [options, args] { return run_sim_gpu(*options, args->port_file, args->duration_s); };
  });
}

}  // namespace cpupower::app
