// cpu-power sim-node: writes a simulated Grace node's hwmon tree (or an x86 node's powercap
// tree of RAPL zones) and keeps it moving, so an exporter started with --hwmon-root DIR (or
// --powercap-root DIR) can be exercised anywhere.

#include <fmt/core.h>

#include <cstdio>
#include <memory>
#include <set>

#include "apps/cpu-power/commands.hpp"
#include "common/signals.hpp"
#include "sim/sim_node.hpp"
#include "sim/sim_rapl.hpp"

namespace cpupower::app {
namespace {

struct SimNodeArgs {
  sim::SimOptions options;  // the settings taken as given, with their defaults
  std::string profile = "gb200";
  std::string layout = "modern";
  std::string model = "load";
  std::string trace;
  std::int64_t update_ms = 50;  // 10 for the x86 profiles unless given
  std::int64_t average_interval_ms = 50;
  std::int64_t sample_ms = 10;
  std::vector<std::string> faults;
  bool no_noise = false;
  double duration_s = 0.0;
};

// Cross-option checks CLI11 cannot express; thrown as usage errors (exit 2).
sim::SimOptions to_options(const SimNodeArgs& args, bool model_given, bool update_given) {
  sim::SimOptions o = args.options;
  o.profile = *sim::parse_profile(args.profile);  // IsMember-checked
  const bool rapl = sim::is_rapl_profile(o.profile);
  if (!rapl && (o.root_only || o.max_energy_range_uj || o.energy_start_uj)) {
    throw CLI::ValidationError("--root-only, --max-energy-range-uj, --energy-start-uj",
                               "only apply to the x86 profiles (x86-intel, x86-amd)");
  }
  if (rapl && !args.faults.empty()) {
    throw CLI::ValidationError("--fault", "the x86 profiles take no faults");
  }
  o.layout = *sim::parse_layout(args.layout);
  o.model = *sim::parse_model(args.model);
  if (!args.trace.empty()) {
    if (model_given && o.model != sim::Model::trace) {
      throw CLI::ValidationError("--trace", "only applies to --model trace");
    }
    o.model = sim::Model::trace;
    o.trace_path = args.trace;
  } else if (o.model == sim::Model::trace) {
    throw CLI::ValidationError("--model", "trace needs --trace FILE");
  }
  // RAPL counters advance about every millisecond on hardware; a 50 ms update would put up to
  // half of a 100 ms read interval's energy into the wrong interval.
  o.update_interval = std::chrono::milliseconds(rapl && !update_given ? 10 : args.update_ms);
  o.average_interval = std::chrono::milliseconds(args.average_interval_ms);
  o.sample_step = std::chrono::milliseconds(args.sample_ms);
  o.noise = !args.no_noise;

  std::set<std::string> known;
  std::string known_list;
  for (const auto& c : sim::profile_channels(o.profile)) {
    known.insert(c.key);
    known_list += (known_list.empty() ? "" : ", ") + c.key;
  }
  for (const auto& spec : args.faults) {
    auto parsed = sim::parse_fault(spec);
    if (!parsed) throw CLI::ValidationError("--fault", parsed.error());  // unreachable: checked
    const auto& [key, fault] = *parsed;
    if (!known.count(key)) {
      throw CLI::ValidationError("--fault", "no channel '" + key + "' in profile " + args.profile +
                                                " (channels: " + known_list + ")");
    }
    if (fault.kind == sim::Fault::Kind::slow && o.once) {
      throw CLI::ValidationError("--fault",
                                 "slow faults need a running node; not allowed with --once");
    }
    if (!o.faults.emplace(key, fault).second) {
      throw CLI::ValidationError("--fault", "more than one fault for channel '" + key + "'");
    }
  }
  return o;
}

int run_rapl_node(const sim::SimOptions& options, double duration_s) {
  common::block_shutdown_signals();
  sim::SimRaplNode node(options);
  if (!started(node.start())) return 1;
  std::size_t zone_w = 0, key_w = 0, name_w = 0;
  for (const auto& z : node.zones()) {
    zone_w = std::max(zone_w, z.zone.size());
    key_w = std::max(key_w, z.key.size());
    name_w = std::max(name_w, z.oem_info.size() + 2);
  }
  for (const auto& z : node.zones()) {
    fmt::print("{:<{}}  {:<{}}  {:<{}}  {}\n", z.zone, zone_w, z.key, key_w,
               "\"" + z.oem_info + "\"", name_w, z.energy_path);
  }
  fmt::print("sim-node ready root={} profile={} layout=powercap channels={} t0_unix={:.6f}\n",
             options.root, sim::profile_name(options.profile), node.zones().size(),
             node.started_unix());
  std::fflush(stdout);
  if (options.once) return 0;
  const auto reason = wait_for_stop(duration_s);
  node.stop();
  fmt::print("sim-node stopped reason={}\n", reason);
  std::fflush(stdout);
  return 0;
}

int run_sim_node(const sim::SimOptions& options, double duration_s) {
  if (sim::is_rapl_profile(options.profile)) return run_rapl_node(options, duration_s);
  // Before any thread exists, so that every thread inherits the mask and the signal waits
  // for us below instead of killing the process mid-write.
  common::block_shutdown_signals();
  sim::SimNode node(options);
  if (!started(node.start())) return 1;
  std::size_t hwmon_w = 0, key_w = 0, label_w = 0;
  for (const auto& c : node.channels()) {
    hwmon_w = std::max(hwmon_w, c.hwmon.size());
    key_w = std::max(key_w, c.key.size());
    label_w = std::max(label_w, c.oem_info.size() + 2);
  }
  for (const auto& c : node.channels()) {
    fmt::print("{:<{}}  {:<{}}  {:<{}}  {}\n", c.hwmon, hwmon_w, c.key, key_w,
               "\"" + c.oem_info + "\"", label_w, c.value_path);
  }
  fmt::print("sim-node ready root={} profile={} layout={} channels={} t0_unix={:.6f}\n",
             options.root, sim::profile_name(options.profile), sim::layout_name(options.layout),
             node.channels().size(), node.started_unix());
  std::fflush(stdout);
  if (options.once) return 0;

  const auto reason = wait_for_stop(duration_s);
  node.stop();
  fmt::print("sim-node stopped reason={}\n", reason);
  std::fflush(stdout);
  return 0;
}

}  // namespace

void add_sim_node_command(CLI::App& app, Action& action) {
  auto args = std::make_shared<SimNodeArgs>();
  auto* cmd = app.add_subcommand(
      "sim-node", "Simulate a Grace node's hwmon tree, or an x86 node's RAPL powercap tree");
  cmd->add_option("--root", args->options.root,
                  "Directory standing for /sys/class/hwmon (x86 profiles: /sys/class/powercap); "
                  "created")
      ->required();
  cmd->add_option("--profile", args->profile,
                  "Platform: gb200, gh200, platform-uw or gh200-quad (four GH200 sockets "
                  "with their Module Power meters); x86-intel (two packages with core, uncore "
                  "and dram zones) or x86-amd (two packages with a core zone), RAPL")
      ->check(
          CLI::IsMember({"gb200", "gh200", "platform-uw", "gh200-quad", "x86-intel", "x86-amd"}))
      ->capture_default_str();
  cmd->add_option("--layout", args->layout,
                  "hwmon layout: modern (kernel >= 6.15) or legacy (<= 6.14)")
      ->check(CLI::IsMember({"modern", "legacy"}))
      ->capture_default_str();
  auto* model = cmd->add_option("--model", args->model, "Value source: load, trace or constant")
                    ->check(CLI::IsMember({"load", "trace", "constant"}))
                    ->capture_default_str();
  cmd->add_option("--trace", args->trace, "CSV trace: time_s,<key>,... in watts (--model trace)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--load", args->options.load, "Utilisation 0..1 for the constant model")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  auto* update = cmd->add_option("--update-ms", args->update_ms,
                                 "Value update interval in milliseconds (x86 profiles: 10 "
                                 "unless given)")
                     ->check(CLI::Range(std::int64_t{1}, std::int64_t{3600000}))
                     ->capture_default_str();
  cmd->add_option("--average-interval-ms", args->average_interval_ms,
                  "Firmware averaging interval each channel starts with: 50 or 1000 (a write of "
                  "50 or 1000 to power1_average_interval changes it later)")
      ->check(CLI::IsMember({std::int64_t{50}, std::int64_t{1000}}))
      ->capture_default_str();
  cmd->add_option("--sample-ms", args->sample_ms,
                  "Sample step of the load model's underlying power in milliseconds (trace and "
                  "constant models are averaged exactly)")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1000}))
      ->capture_default_str();
  cmd->add_option("--fault", args->faults,
                  "KEY=KIND[:ARG][@FROM_MS[-TO_MS]], e.g. total:1=slow:150@0-2000 (repeatable)")
      ->check(CLI::Validator([](std::string& spec) { return sim::parse_fault(spec).error(); },
                             "FAULT"));
  cmd->add_option("--seed", args->options.seed, "Noise seed")->capture_default_str();
  cmd->add_flag("--no-noise", args->no_noise, "No noise on the load model");
  cmd->add_option("--max-energy-range-uj", args->options.max_energy_range_uj,
                  "x86 profiles: each counter's max_energy_range_uj, where it wraps (default: "
                  "the hardware's; a small one wraps within a test, and must stay above one read "
                  "interval's energy)")
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1} << 62));
  cmd->add_option("--energy-start-uj", args->options.energy_start_uj,
                  "x86 profiles: the value every counter starts from (default 0)");
  cmd->add_flag("--root-only", args->options.root_only,
                "x86 profiles: energy_uj mode 0400, readable by root only, as current kernels "
                "have it");
  cmd->add_option("--proc-stat", args->options.proc_stat, "CPU time source for the load model")
      ->capture_default_str();
  auto* duration = add_duration_option(cmd, args->duration_s);
  cmd->add_flag("--once", args->options.once, "Write the tree with its first values and exit")
      ->excludes(duration);
  cmd->callback([&action, args, model, update] {
    auto options = std::make_shared<sim::SimOptions>(
        to_options(*args, model->count() > 0, update->count() > 0));
    action = [options, args] { return run_sim_node(*options, args->duration_s); };
  });
}

}  // namespace cpupower::app
