#include "launch/host_leg.hpp"

#include <signal.h>
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include <fmt/ranges.h>

#include "common/log.hpp"
#include "common/text.hpp"
#include "hostleg/manifest.hpp"
#include "hostleg/markers.hpp"
#include "hostleg/merge.hpp"
#include "launch/launcher.hpp"

namespace cpupower::launch {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// A collector finishes its sample and writes its metadata within one interval plus a file
// write; srun then relays the exits. Past this it is killed.
constexpr milliseconds kStopGrace{10000};

// Nodes whose collector wrote its first metadata (it started) but not the final one (it
// never finished: SIGKILL, a crash, a node lost).
std::vector<std::string> unfinished_nodes(const std::string& cpu_dir,
                                          const std::vector<std::string>& nodes) {
  std::vector<std::string> out;
  for (const auto& node : nodes) {
    const auto text =
        common::read_small_file(cpu_dir + "/nodes/" + node + ".metadata.json", 1 << 20);
    if (!text) continue;
    const auto j = nlohmann::json::parse(*text, nullptr, false);
    if (j.is_object() && !j.contains("status")) out.push_back(node);
  }
  return out;
}

// timestamp_unix of the last complete row of a node file, read from its tail.
std::optional<double> last_row_unix(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  in.seekg(0, std::ios::end);
  const auto size = static_cast<long>(in.tellg());
  const long from = std::max(0L, size - 4096);
  in.seekg(from);
  std::string tail(static_cast<std::size_t>(size - from), '\0');
  in.read(tail.data(), static_cast<std::streamsize>(tail.size()));
  const auto end = tail.rfind('\n');  // a torn last line is not a row yet
  if (end == std::string::npos) return std::nullopt;
  const auto start = tail.rfind('\n', end == 0 ? 0 : end - 1);
  const auto line = tail.substr(start == std::string::npos ? 0 : start + 1, end);
  const auto cells = common::split(line, ',');
  return cells.size() > 1 ? common::parse_double(cells[1]) : std::nullopt;
}

}  // namespace

HostLeg::HostLeg(const SessionPlan& plan, Launcher& launcher)
    : plan_(plan), launcher_(launcher), leg_(*plan.host_leg) {}

bool HostLeg::any_failed() {
  processes_.poll();
  return processes_.failed() > 0;
}

void HostLeg::write_status(std::string_view status, const std::vector<std::string>& observed) {
  const auto& c = plan_.recipe.telemetry.cpu_power;
  hostleg::HostManifest m;
  m.job_id = plan_.artifact_job_id;
  m.run_name = std::filesystem::path(plan_.log_dir).filename().string();
  m.status = std::string(status);
  m.required = c.required;
  m.requested_source = c.source;
  m.sample_interval_seconds = c.sample_interval_seconds;
  m.expected_nodes = plan_.nodes;
  m.observed_nodes = observed;
  if (!readiness_reason_.empty()) m.reason_codes = {readiness_reason_};
  m.updated_at_unix = now_unix();
  if (const auto written = hostleg::write_host_manifest(leg_.cpu_dir + "/manifest.json", m);
      !written) {
    log()->warn("cannot write the CPU power manifest error={}", common::quoted(written.error()));
  }
}

std::optional<std::string> HostLeg::blocks() const {
  if (ready_ || !plan_.recipe.telemetry.cpu_power.required) return std::nullopt;
  return fmt::format(
      "telemetry.cpu_power.required is set and the CPU power collectors are not ready "
      "(reason={}); the command is not run",
      readiness_reason_);
}

bool HostLeg::start(Clock::time_point started, const std::function<bool()>& give_up) {
  const auto deadline = started + to_ms(plan_.recipe.telemetry.cpu_power.startup_timeout_seconds);
  ::umask(0002);
  std::error_code ec;
  std::filesystem::create_directories(leg_.cpu_dir + "/nodes", ec);
  std::filesystem::create_directories(leg_.cpu_dir + "/ready", ec);
  write_status(hostleg::kStatusStarting, {});
  const auto spawn = [&](const std::string& name, const std::vector<std::string>& argv,
                         std::string log_path, std::vector<std::string> nodes) {
    const auto count = nodes.size();
    if (processes_.spawn(name, argv, std::move(log_path), std::move(nodes))) {
      log()->info("CPU power collectors starting name={} nodes={} argv={}", name, count,
                  common::quoted(shell_quote_argv(argv)));
    }
  };

  if (plan_.mode == LaunchMode::slurm) {
    for (const auto& g : leg_.groups) {
      spawn(g.process_name, g.srun, plan_.log_dir + "/" + g.process_name + ".srun.log",
            g.group.nodes);
    }
  } else if (plan_.mode == LaunchMode::simulate) {
    for (const auto& sim_node : launcher_.simulated_nodes()) {
      const auto& node = sim_node.node;
      auto argv = leg_.collector_command;
      argv.insert(argv.end(), sim_node.root_flags.begin(), sim_node.root_flags.end());
      argv.insert(argv.end(), {"--hostname", node});
      spawn("telemetry_cpu_power." + node, argv,
            plan_.log_dir + "/telemetry_cpu_power." + node + ".out", {node});
    }
  } else {
    spawn("telemetry_cpu_power", leg_.collector_command,
          plan_.log_dir + "/telemetry_cpu_power." + plan_.nodes.front() + ".out",
          {plan_.nodes.front()});
  }

  const std::string ready_dir = leg_.cpu_dir + "/ready";
  hostleg::MarkerScan scan;
  while (true) {
    scan = hostleg::scan_markers(ready_dir);
    bool all = true, settled = true;
    for (const auto& n : plan_.nodes) {
      all = all && scan.ready.count(n) > 0;
      settled = settled && (scan.ready.count(n) > 0 || scan.errors.count(n) > 0);
    }
    if (all) {
      write_status(hostleg::kStatusRunning, {scan.ready.begin(), scan.ready.end()});
      log()->info("CPU power telemetry ready (artifacts under {})", leg_.cpu_dir);
      return ready_ = true;
    }
    // A node with an error marker will not turn ready. With `required` that decides the run
    // at once; best-effort, the other nodes are still waited for (until the deadline), so
    // that every node that can collect has its rows on disk before the command starts.
    const bool errored = !scan.errors.empty();
    if ((errored && (plan_.recipe.telemetry.cpu_power.required || settled)) || any_failed() ||
        Clock::now() >= deadline || give_up()) {
      break;
    }
    std::this_thread::sleep_for(milliseconds(100));
  }
  std::string waiting;
  for (const auto& n : plan_.nodes) {
    if (!scan.ready.count(n)) waiting += (waiting.empty() ? "" : ",") + n;
  }
  readiness_reason_ = !scan.errors.empty() ? std::string(kReasonSourceUnavailable)
                      : any_failed()       ? std::string(hostleg::kReasonCollectorFailed)
                                           : std::string(kReasonStartupTimeout);
  for (const auto& [host, text] : scan.errors) {
    log()->warn("CPU power collector has no source node={} error={}", host, common::quoted(text));
  }
  log()->warn("CPU power collectors did not become ready on every worker node reason={} waiting={}",
              readiness_reason_, common::quoted(waiting));
  write_status(hostleg::kStatusFailed, {scan.ready.begin(), scan.ready.end()});
  return false;
}

LegVerdict HostLeg::finish(const SessionEnd& end) {
  any_failed();  // processes that ended on their own before the stop are failures
  if (end.command) {
    const double end_unix = end.command->end_unix;
    // A collector writes a row per new reading; give every node one read past the end
    // (bounded: two intervals and a second), as the exporter leg waits for its last scrape.
    const auto& c = plan_.recipe.telemetry.cpu_power;
    const auto deadline = Clock::now() +
                          milliseconds(std::llround(2000 * c.sample_interval_seconds)) +
                          milliseconds(1000);
    std::vector<std::string> waiting = plan_.nodes;
    while (!waiting.empty() && Clock::now() < deadline) {
      std::erase_if(waiting, [&](const std::string& n) {
        const auto t = last_row_unix(leg_.cpu_dir + "/nodes/" + n + ".csv");
        return !t || *t >= end_unix ||
               !std::filesystem::exists(leg_.cpu_dir + "/ready/" + n + ".ready.json");
      });
      if (!waiting.empty()) std::this_thread::sleep_for(milliseconds(20));
    }
    if (!waiting.empty()) {
      log()->warn("CPU power host rows after the command's end missing for some nodes nodes={}",
                  fmt::join(waiting, ","));
    }
  }
  // srun relays SIGUSR1 to the collectors (a SIGTERM would make it kill the step), so each
  // one finishes its sample and writes its final metadata; a local collector gets SIGTERM.
  // Whatever is still running after the grace gets SIGTERM, then SIGKILL.
  processes_.stop(milliseconds(2000),
                  std::pair{plan_.mode == LaunchMode::slurm ? SIGUSR1 : SIGTERM, kStopGrace});

  const auto& c = plan_.recipe.telemetry.cpu_power;
  hostleg::MergeSettings s;
  s.cpu_dir = leg_.cpu_dir;
  s.expected_nodes = plan_.nodes;
  s.required = c.required;
  s.interrupted = end.interrupted;
  if (!readiness_reason_.empty()) s.readiness_reasons = {readiness_reason_};
  for (const auto& p : processes_.processes()) {
    if (p.failed) s.failed_processes.push_back(p.name);
  }
  // srun outlives a task killed under it (it waits for the others), so a collector that
  // died shows as a node whose metadata never got its final write.
  for (const auto& node : unfinished_nodes(leg_.cpu_dir, plan_.nodes)) {
    const std::string name = "telemetry_cpu_power." + node;
    log()->warn("CPU power collector ended without its final metadata node={}", node);
    if (std::find(s.failed_processes.begin(), s.failed_processes.end(), name) ==
        s.failed_processes.end()) {
      s.failed_processes.push_back(name);
    }
  }
  s.job_id = plan_.artifact_job_id;
  s.run_name = std::filesystem::path(plan_.log_dir).filename().string();
  s.requested_source = c.source;
  s.sample_interval_seconds = c.sample_interval_seconds;
  const auto merged = hostleg::merge_host_samples(s);
  log()->info("{}", hostleg::summary_line(merged));
  LegVerdict out{merged.status, {}, merged.publication_valid, merged.exit_nonzero, ""};
  for (const auto& code : merged.reason_codes) out.reasons.add(code);
  out.summary = fmt::format("CPU power (host collectors): {} rows in {}/samples.csv, status {}{}\n",
                            merged.sample_row_count, leg_.cpu_dir, merged.status,
                            merged.reason_codes.empty()
                                ? std::string()
                                : fmt::format(" ({})", fmt::join(merged.reason_codes, ", ")));
  if (out.exit_nonzero && end.exit_code == 0) {
    log()->error(
        "telemetry.cpu_power.required is set and CPU power artifacts are not publishable "
        "reasons={}",
        fmt::join(merged.reason_codes, ","));
  }
  return out;
}

}  // namespace cpupower::launch
