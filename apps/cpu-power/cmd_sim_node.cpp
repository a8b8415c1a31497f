// cpu-power sim-node: writes a simulated Grace node's hwmon tree and keeps it moving, so an
// exporter started with --hwmon-root DIR can be exercised anywhere.

#include <fmt/core.h>

#include <cstdio>
#include <memory>
#include <set>

#include "apps/cpu-power/commands.hpp"
#include "common/signals.hpp"
#include "sim/sim_node.hpp"

namespace cpupower::app {
namespace {

struct SimNodeArgs {
  sim::SimOptions options;  // the settings taken as given, with their defaults
  std::string profile = "gb200";
  std::string layout = "modern";
  std::string model = "load";
  std::string trace;
  std::int64_t update_ms = 50;
  std::int64_t average_interval_ms = 50;
  std::int64_t sample_ms = 10;
  std::vector<std::string> faults;
  bool no_noise = false;
  double duration_s = 0.0;
};

// Cross-option checks CLI11 cannot express; thrown as usage errors (exit 2).
sim::SimOptions to_options(const SimNodeArgs& args, bool model_given) {
  sim::SimOptions o = args.options;
  o.profile = *sim::parse_profile(args.profile);  // IsMember-checked
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
  o.update_interval = std::chrono::milliseconds(args.update_ms);
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

int run_sim_node(const sim::SimOptions& options, double duration_s) {
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
  auto* cmd = app.add_subcommand("sim-node", "Simulate a Grace node's hwmon tree");
  cmd->add_option("--root", args->options.root, "Directory standing for /sys/class/hwmon (created)")
      ->required();
  cmd->add_option("--profile", args->profile,
                  "Platform: gb200, gh200, platform-uw or gh200-quad (four GH200 sockets "
                  "with their Module Power meters)")
      ->check(CLI::IsMember({"gb200", "gh200", "platform-uw", "gh200-quad"}))
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
  cmd->add_option("--update-ms", args->update_ms, "Value update interval in milliseconds")
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
  cmd->add_option("--proc-stat", args->options.proc_stat, "CPU time source for the load model")
      ->capture_default_str();
  auto* duration = add_duration_option(cmd, args->duration_s);
  cmd->add_flag("--once", args->options.once, "Write the tree with its first values and exit")
      ->excludes(duration);
  cmd->callback([&action, args, model] {
    auto options = std::make_shared<sim::SimOptions>(to_options(*args, model->count() > 0));
    action = [options, args] { return run_sim_node(*options, args->duration_s); };
  });
}

}  // namespace cpupower::app
