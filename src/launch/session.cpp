#include "launch/session.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "common/log.hpp"
#include "launch/clock_check.hpp"
#include "launch/gpu_leg.hpp"
#include "launch/host_leg.hpp"
#include "launch/launcher.hpp"
#include "launch/process.hpp"
#include "launch/prometheus_sd.hpp"
#include "launch/readiness.hpp"
#include "launch/session_record.hpp"
#include "scrape/curl_api.hpp"
#include "validate/validate.hpp"

namespace cpupower::launch {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// The clock check's srun steps: each tool on a node has 2 s; srun's own start-up is the rest.
constexpr milliseconds kClockStepTimeout{30000};

// <log_dir>/prometheus_sd.json with these endpoints (an empty list at the end of the
// session); true when written. A failure is a warning: the file serves a cluster Prometheus,
// never the run.
bool publish_prometheus_sd(const SessionPlan& plan,
                           const std::vector<scrape::Endpoint>& endpoints) {
  const auto path = plan.log_dir + "/" + kPrometheusSdFile;
  if (!written(path, write_prometheus_sd(plan.log_dir, prometheus_sd_json(endpoints, plan.job_id,
                                                                          sd_run_name(plan))))) {
    return false;
  }
  log()->info("Prometheus targets in {} count={}", path, endpoints.size());
  return true;
}

// The exporter leg: cpu-power-exporter on every node (the Launcher's), its collector into
// <cpu_dir>/samples.csv and cpu_manifest.json, and the exporters as Prometheus targets in
// prometheus_sd.json while they run. Never fails the session.
class ExporterLeg : public Leg {
 public:
  ExporterLeg(const SessionPlan& plan, Launcher& launcher) : plan_(plan), launcher_(launcher) {}

  // Ready when the collector started (nodes without rows are logged).
  bool start(Clock::time_point started, const std::function<bool()>& give_up) override {
    // libcurl is loaded (and its global state set up) while this is still the only thread.
    if (const auto curl = scrape::curl_api(); !curl) {
      log()->warn("CPU power telemetry skipped: {}", curl.error());
      return false;
    }
    give_up_ = give_up;
    const auto deadline = started + to_ms(plan_.recipe.telemetry.startup_timeout_seconds);
    const auto endpoints = launcher_.start(deadline, give_up);
    // The addresses are known: a cluster Prometheus may start scraping now.
    sd_written_ = publish_prometheus_sd(plan_, endpoints);
    // Polling /health is pointless once every exporter process has ended (a node without
    // any power source exits at once): stop waiting then, not at the deadline.
    const auto ready = wait_until_ready(
        endpoints, deadline, [&] { return give_up() || !launcher_.any_running(); },
        plan_.scrape_security);
    std::string waiting;
    for (std::size_t i = 0; i < endpoints.size(); ++i) {
      if (!ready[i]) waiting += (waiting.empty() ? "" : ",") + endpoints[i].hostname;
    }
    const auto ready_count = static_cast<std::size_t>(
        std::count_if(ready.begin(), ready.end(), [](const auto& r) { return r.has_value(); }));
    if (ready_count == endpoints.size()) {
      log()->info("CPU power exporters ready count={}", ready_count);
    } else {
      log()->warn("CPU power exporters not ready by the startup deadline ready={} of={} waiting={}",
                  ready_count, endpoints.size(), common::quoted(waiting));
    }
    std::error_code ec;
    std::filesystem::create_directories(plan_.cpu_dir, ec);
    auto options = collector_options(plan_, plan_.cpu_dir);
    options.cpu_samples_schema = plan_.cpu_samples_schema;
    options.security = plan_.scrape_security;
    collector_ = std::make_unique<scrape::Collector>(endpoints, std::move(options));
    if (const Status started = collector_->start(); !started) {
      log()->warn("CPU power collector did not start error={}", common::quoted(started.error()));
      collector_.reset();
      return false;
    }
    log()->info("CPU power telemetry started (artifacts under {})", plan_.cpu_dir);
    // The command starts once every exporter that answered has a row (bounded: one collect
    // interval and one request past readiness, never past the startup deadline).
    const bool first_rows = wait_for_rows(
        *collector_, std::min(deadline, Clock::now() + row_wait(plan_)),
        [&](std::size_t i, const scrape::NodeStats& n) {
          return !ready[i] || n.first_sample_unix.has_value();
        },
        give_up);
    log()->info("CPU power first rows {} after {:.3f} s",
                first_rows ? "from every ready node" : "missing for some nodes",
                std::chrono::duration<double>(Clock::now() - started).count());
    return true;
  }

  void interrupt() override {
    if (collector_) collector_->interrupt();
  }

  // Finalized while the exporters still answer, so that the last scrape has something to
  // read, once every node has a row from after the command's end. Not after a signal: the
  // batch system that sent it kills the session after its own wait, and a request in flight
  // could hold the session up to its timeout.
  LegVerdict finish(const SessionEnd& end) override {
    if (!collector_) return {};
    if (end.command && !end.interrupted) {
      const double end_unix = end.command->end_unix;
      const bool last_rows = wait_for_rows(
          *collector_, Clock::now() + row_wait(plan_),
          [&](std::size_t, const scrape::NodeStats& n) {
            return !n.last_sample_unix || *n.last_sample_unix >= end_unix;
          },
          give_up_);  // bounded; the artifacts are worth it
      if (!last_rows) log()->warn("CPU power rows after the command's end missing for some nodes");
    }
    const auto finalized = end.interrupted ? collector_->stop_and_finalize_interrupted()
                                           : collector_->stop_and_finalize();
    if (!finalized) {
      log()->warn("CPU power collector finalize incomplete error={}",
                  common::quoted(finalized.problems));
    }
    return {finalized ? "complete" : "incomplete",
            {},
            finalized.ok(),
            false,
            exporter_leg_summary(collector_->stats(), collector_->samples_path(),
                                 collector_->manifest_path())};
  }

  // The targets go before the exporters do: Prometheus drops them instead of recording the
  // stopped exporters as down.
  void withdraw() override {
    if (sd_written_) publish_prometheus_sd(plan_, {});
  }

 private:
  const SessionPlan& plan_;
  Launcher& launcher_;
  std::unique_ptr<scrape::Collector> collector_;
  std::function<bool()> give_up_;
  bool sd_written_ = false;
};

// Runs the command in our process group (it keeps the terminal) and waits for it.
void run_command(const SessionPlan& plan, SignalForwarder& signals, SessionResult& result,
                 SessionRecord& record) {
  SpawnOptions o;
  o.argv = plan.command;
  o.own_process_group = false;
  o.null_stdin = false;
  int error_number = 0;
  record.command = plan.command;
  // Wall clock against monotonic while the command runs: a step of the wall clock (NTP, an
  // operator) moves the window and every row time, and is recorded so that no energy figure
  // is integrated across it unsaid.
  ClockStepWatch watch;
  std::mutex watch_mutex;
  std::condition_variable_any watch_cv;
  std::jthread watcher([&](std::stop_token stop) {
    std::unique_lock lock(watch_mutex);
    while (
        !watch_cv.wait_for(lock, stop, milliseconds(100), [&] { return stop.stop_requested(); })) {
      if (watch.observe()) {
        const auto& s = watch.steps().back();
        log()->warn(
            "the wall clock stepped by {:+.3f} s against the monotonic clock at {:.3f} while "
            "the command ran; energy over it is not vouched for",
            s.step_s, s.at_unix);
      }
    }
  });
  record.start_unix = now_unix();
  record.start_monotonic = monotonic_now_s();
  const auto t0 = Clock::now();
  const auto child = spawn_process(o, &error_number);
  result.command_started = true;
  if (!child) {
    log()->error("command could not be started error={}", common::quoted(child.error()));
    // As a shell reports it: 127 not found, 126 found but not runnable.
    record.exit_code = error_number == ENOENT ? 127 : 126;
  } else {
    signals.set_target(child->pid);
    const int status = wait_for_exit(child->pid).value_or(0);
    signals.set_target(0);
    record.exit_code = exit_code_from_status(status);
    log()->info("command finished {} after {:.3f} s", describe_status(status),
                std::chrono::duration<double>(Clock::now() - t0).count());
  }
  record.end_unix = now_unix();
  record.end_monotonic = monotonic_now_s();
  record.duration_s = std::chrono::duration<double>(Clock::now() - t0).count();
  watcher.request_stop();
  watcher.join();
  const auto seen = watch.steps().size();
  watch.settle(record.start_unix, record.start_monotonic, record.end_unix, record.end_monotonic);
  if (watch.steps().size() > seen) {
    log()->warn(
        "the wall clock moved {:+.3f} s against the monotonic clock during the command; energy "
        "over it is not vouched for",
        watch.steps().back().step_s);
  }
  record.clock_steps = watch.steps();
  result.command_seconds = record.end_unix - record.start_unix;
  result.exit_code = record.exit_code;
}

}  // namespace

SessionResult run_session(const SessionPlan& plan, SignalForwarder& signals,
                          Clock::time_point started) {
  SessionResult result;
  std::error_code ec;
  std::filesystem::create_directories(plan.log_dir, ec);
  if (ec) log()->warn("cannot create log dir {}: {}", plan.log_dir, ec.message());
  for (const auto& w : plan.warnings) log()->warn("{}", w);
  // Every node's clock, before any server starts (launch/clock_check.hpp); bounded, and kept
  // out of the startup deadlines, which count from its end: a slow probe never costs a leg
  // its readiness.
  std::optional<artifacts::ClockSyncCheck> clocks;
  if (plan.exporter_leg || plan.host_leg || plan.gpu_leg) {
    const auto probe_start = Clock::now();
    clocks = check_session_clocks(plan, kClockStepTimeout);
    started += Clock::now() - probe_start;
  }

  // In the order they start and finish: the exporter leg, the GPU leg, the host leg.
  Launcher launcher(plan);
  std::vector<std::unique_ptr<Leg>> legs;
  const auto give_up = [&signals] { return signals.interrupted(); };
  if (plan.exporter_leg) legs.push_back(std::make_unique<ExporterLeg>(plan, launcher));
  if (plan.gpu_leg) legs.push_back(std::make_unique<GpuLegRun>(plan, launcher, clocks));
  if (plan.host_leg) legs.push_back(std::make_unique<HostLeg>(plan, launcher));
  std::optional<std::string> blocked;
  for (auto& leg : legs) {
    leg->start(started, give_up);
    if (!blocked) blocked = leg->blocks();
  }

  // A signal from here on (Slurm's SIGTERM at the time limit, say) hurries the collectors'
  // stops, also one already draining: the batch system sends SIGKILL after its own wait.
  signals.set_on_signal([&legs] {
    for (auto& leg : legs) leg->interrupt();
  });
  SessionRecord record;
  record.job_id = plan.artifact_job_id;
  if (signals.interrupted()) {
    log()->warn("interrupted before the command started; it is not run");
    result.exit_code = 128 + signals.last_signal();
  } else if (blocked) {
    log()->error("{}", *blocked);
    result.exit_code = 1;
  } else {
    run_command(plan, signals, result, record);
    // Now, not at the end: the GPU leg's session window points at it.
    const std::string path = plan.log_dir + "/session.json";
    if (written(path, write_session_record(path, record))) result.session_path = path;
  }

  for (auto& leg : legs) {
    auto verdict = leg->finish({.interrupted = signals.interrupted(),
                                .command = result.command_started ? &record : nullptr,
                                .exit_code = result.exit_code});
    if (verdict.exit_nonzero && result.exit_code == 0) result.exit_code = 1;
    result.legs.push_back(std::move(verdict));
  }
  for (auto& leg : legs) leg->withdraw();
  launcher.stop();
  signals.set_on_signal({});  // before the legs go
  // The consumers' verdict on what the legs wrote (logged; the exit status stays the session's).
  if (plan.exporter_leg || plan.gpu_leg || plan.host_leg) {
    validate::log_session_verdict(
        {.run_dir = plan.log_dir,
         .gpu_dir = plan.gpu_leg ? plan.gpu_leg->power_dir : plan.log_dir + "/power",
         .cpu_dir = plan.cpu_dir,
         .host_dir = plan.host_leg ? plan.host_leg->cpu_dir : plan.log_dir + "/cpu_power",
         .expect_roles = {},
         .require_distinct_het_groups = false});
  }
  return result;
}

std::string exporter_leg_summary(const scrape::CollectorStats& s, const std::string& samples_path,
                                 const std::string& manifest_path) {
  std::string out = fmt::format("CPU power: {} rows in {} ({} dropped), manifest {}\n",
                                s.rows_written, samples_path, s.rows_dropped, manifest_path);
  if (const auto samples = scrape::samples_health_text(s); !samples.empty()) {
    out += "  " + samples;
    if (!s.write_error_log.empty()) out += "; first error: " + s.write_error_log.front().error;
    out += "\n";
  }
  std::size_t width = 4;
  for (const auto& n : s.nodes) width = std::max(width, n.hostname.size());
  out += fmt::format("  {:<{}}  {:>7} {:>8} {:>7} {:>7} {:>9}  {}\n", "node", width, "rows",
                     "scrapes", "errors", "missed", "span_s", "last error");
  for (const auto& n : s.nodes) {
    const double span = n.first_sample_unix && n.last_sample_unix
                            ? *n.last_sample_unix - *n.first_sample_unix
                            : 0.0;
    out += fmt::format("  {:<{}}  {:>7} {:>8} {:>7} {:>7} {:>9.1f}  {}\n", n.hostname, width,
                       n.rows_appended, n.scrape_count, n.error_count, n.missed_slots, span,
                       n.last_error.value_or("-"));
  }
  if (s.nodes.empty()) out += "  (no endpoints)\n";
  return out;
}

std::string summary_text(const SessionResult& r) {
  std::string out =
      fmt::format("cpu-power run: exit code {} after {:.1f} s\n", r.exit_code, r.command_seconds);
  // The last leg to finish first: the host leg's line, the GPU leg's, the exporter leg's table.
  std::string legs;
  for (auto it = r.legs.rbegin(); it != r.legs.rend(); ++it) legs += it->summary;
  return out + (legs.empty() ? "CPU power: no telemetry collected\n" : legs);
}

}  // namespace cpupower::launch
