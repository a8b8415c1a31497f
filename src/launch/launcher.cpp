#include "launch/launcher.hpp"

#include <filesystem>
#include <map>
#include <thread>

#include "common/log.hpp"
#include "common/text.hpp"
#include "launch/node_address.hpp"
#include "launch/process.hpp"
#include "launch/srun_argv.hpp"
#include "sim/sim_node.hpp"
#include "sim/sim_rapl.hpp"

namespace cpupower::launch {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

}  // namespace

Launcher::Launcher(const SessionPlan& plan) : plan_(plan) {}

std::optional<std::string> Launcher::node_address(const std::string& node) const {
  const auto it = addresses_.find(node);
  if (it == addresses_.end()) return std::nullopt;
  return it->second;
}

Launcher::~Launcher() {
  stop();
}

std::vector<scrape::Endpoint> Launcher::start(Clock::time_point deadline,
                                              const std::function<bool()>& give_up) {
  if (plan_.exporter.kind == ExporterKind::none) return {};
  if (plan_.exporter.kind == ExporterKind::native) {
    log()->info("CPU power exporter: using binary {} ({})", plan_.exporter.path,
                plan_.exporter.origin);
  } else {
    log()->info("CPU power exporter: binary not found, falling back to Python exporter {}",
                plan_.exporter.path);
  }
  auto endpoints = plan_.mode == LaunchMode::slurm   ? start_slurm(deadline)
                   : plan_.mode == LaunchMode::local ? start_local()
                                                     : start_simulated(deadline, give_up);
  processes_.poll();  // an exporter that ended already is logged now
  return endpoints;
}

std::map<std::string, std::string> resolve_node_addresses(const std::vector<ResolverStep>& steps,
                                                          const std::vector<std::string>& nodes,
                                                          Clock::time_point deadline,
                                                          std::string_view what) {
  // Every group's resolver at once; each returns by the deadline.
  std::vector<std::map<std::string, std::string>> answers(steps.size());
  std::vector<std::thread> resolvers;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    resolvers.emplace_back([&, i] {
      const auto& step = steps[i];
      const auto result = run_capture(step.srun, deadline, step.log);
      answers[i] = parse_resolver_output(result.output);
      if (!result.error.empty()) {
        log()->warn("{} node address resolver failed name={} error={}", what, step.name,
                    common::quoted(result.error));
      } else if (!result.status) {
        log()->warn("{} node address resolver hit the startup deadline name={} log={}", what,
                    step.name, step.log);
      }
    });
  }
  for (auto& t : resolvers) t.join();
  std::map<std::string, std::string> out;
  for (const auto& a : answers) out.insert(a.begin(), a.end());
  const std::size_t on_node = out.size();

  // Nodes without an answer: name resolution on this host, all at once, by the same deadline.
  std::vector<std::string> missing;
  for (const auto& n : nodes) {
    if (!out.count(n)) missing.push_back(n);
  }
  std::vector<std::optional<std::string>> looked_up(missing.size());
  std::vector<std::thread> lookups;
  for (std::size_t i = 0; i < missing.size(); ++i) {
    lookups.emplace_back([&, i] { looked_up[i] = resolve_name(missing[i], deadline); });
  }
  for (auto& t : lookups) t.join();
  for (std::size_t i = 0; i < missing.size(); ++i) {
    if (!looked_up[i]) continue;
    if (is_loopback_address(*looked_up[i])) {
      log()->warn("{} endpoint for {} resolved by name to loopback address {}", what, missing[i],
                  *looked_up[i]);
    } else {
      log()->info("{} endpoint for {} resolved by name on this host", what, missing[i]);
    }
    out[missing[i]] = *looked_up[i];
  }
  log()->info("{} endpoints resolved on_node={} by_name={} of={}", what, on_node,
              out.size() - on_node, nodes.size());
  return out;
}

std::vector<scrape::Endpoint> Launcher::start_slurm(Clock::time_point deadline) {
  const long port = plan_.recipe.telemetry.cpu_power_exporter->port;
  for (const auto& g : plan_.groups) {
    log()->info("CPU power exporters starting name={} nodes={} argv={}", g.process_name,
                g.group.nodes.size(), common::quoted(shell_quote_argv(g.exporter_srun)));
    processes_.spawn(g.process_name, g.exporter_srun, g.srun_log);
  }
  std::vector<ResolverStep> steps;
  for (const auto& g : plan_.groups) steps.push_back(g.resolver);
  addresses_ = resolve_node_addresses(steps, plan_.nodes, deadline, "CPU power");
  std::vector<scrape::Endpoint> endpoints;
  for (const auto& n : plan_.nodes) {
    const auto it = addresses_.find(n);
    if (it == addresses_.end()) {
      log()->warn("CPU power endpoint resolution failed for {}; it is left out", n);
      continue;
    }
    endpoints.push_back({n, it->second, static_cast<std::uint16_t>(port)});
  }
  return endpoints;
}

std::vector<scrape::Endpoint> Launcher::start_local() {
  const auto& node = plan_.nodes.front();
  const auto log_path = exporter_log_for_node(plan_.log_dir, -1, false, node);
  log()->info("CPU power exporter starting locally argv={}",
              common::quoted(shell_quote_argv(plan_.exporter_command)));
  if (!processes_.spawn("telemetry_cpu_power_exporter", plan_.exporter_command, log_path)) {
    return {};
  }
  // Scraped over loopback: this host is the node. Readiness is /health, not the log line.
  return {{node, "127.0.0.1",
           static_cast<std::uint16_t>(plan_.recipe.telemetry.cpu_power_exporter->port)}};
}

const std::vector<SimulatedNode>& Launcher::simulated_nodes() {
  if (sims_started_) return sim_roots_;
  sims_started_ = true;
  const auto profile = sim::parse_profile(plan_.simulate_profile).value_or(sim::Profile::gb200);
  const bool rapl = sim::is_rapl_profile(profile);
  for (std::size_t i = 0; i < plan_.nodes.size(); ++i) {
    const auto& node = plan_.nodes[i];
    const std::string dir = plan_.log_dir + "/sim/" + std::to_string(i + 1);
    sim::SimOptions o;
    o.root = dir + (rapl ? "/powercap" : "/hwmon");
    o.profile = profile;
    o.seed = i + 1;
    if (rapl) o.update_interval = milliseconds(10);  // RAPL counters advance every ~1 ms
    std::error_code ec;
    std::filesystem::create_directories(o.root, ec);
    Status started = Ok{};
    if (rapl) {
      // An empty hwmon directory: this host's own power meters must not answer for the node.
      std::filesystem::create_directories(dir + "/no-hwmon", ec);
      auto sim_node = std::make_unique<sim::SimRaplNode>(o);
      started = sim_node->start();
      if (started) rapl_sims_.push_back(std::move(sim_node));
    } else {
      auto sim_node = std::make_unique<sim::SimNode>(o);
      started = sim_node->start();
      if (started) sims_.push_back(std::move(sim_node));
    }
    if (!started) {
      log()->warn("simulated node failed to start node={} error={}", node,
                  common::quoted(started.error()));
      continue;
    }
    sim_roots_.push_back({node, rapl ? std::vector<std::string>{"--powercap-root", o.root,
                                                                "--hwmon-root", dir + "/no-hwmon"}
                                     : std::vector<std::string>{"--hwmon-root", o.root}});
  }
  log()->info("simulated {} node{} profile={} under {}/sim", sim_roots_.size(),
              sim_roots_.size() == 1 ? "" : "s", plan_.simulate_profile, plan_.log_dir);
  return sim_roots_;
}

std::vector<scrape::Endpoint> Launcher::start_simulated(Clock::time_point deadline,
                                                        const std::function<bool()>& give_up) {
  for (const auto& sim_node : simulated_nodes()) {
    auto argv = plan_.exporter_command;
    argv.insert(argv.end(), sim_node.root_flags.begin(), sim_node.root_flags.end());
    processes_.spawn("telemetry_cpu_power_exporter." + sim_node.node, argv,
                     exporter_log_for_node(plan_.log_dir, -1, false, sim_node.node),
                     {sim_node.node});
  }
  std::vector<scrape::Endpoint> endpoints;
  for (auto& p : processes_.processes()) {
    if (p.pid <= 0) continue;  // its launch failure is logged
    const auto& node = p.nodes.front();
    const auto port = processes_.wait_listening(p, deadline, give_up);
    if (!port) {
      log()->warn("CPU power exporter for {} never reported listening; it is left out", node);
      continue;
    }
    endpoints.push_back({node, "127.0.0.1", static_cast<std::uint16_t>(*port)});
  }
  return endpoints;
}

bool Launcher::any_running() {
  return processes_.poll();
}

void Launcher::stop(milliseconds grace) {
  if (stopped_) return;
  stopped_ = true;
  processes_.stop(grace);
  for (auto& s : sims_) s->stop();
  for (auto& s : rapl_sims_) s->stop();
  sims_.clear();
  rapl_sims_.clear();
  sim_roots_.clear();
}

}  // namespace cpupower::launch
