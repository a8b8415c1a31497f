#include "launch/session.hpp"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <cerrno>
#include <cmath>
#include <condition_variable>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "artifacts/gpu_windows.hpp"
#include "common/log.hpp"
#include "launch/clock_check.hpp"
#include "launch/host_leg.hpp"
#include "launch/launcher.hpp"
#include "launch/process.hpp"
#include "launch/prometheus_sd.hpp"
#include "launch/readiness.hpp"
#include "launch/session_record.hpp"
#include "report/discovery.hpp"
#include "report/window.hpp"
#include "scrape/curl_api.hpp"
#include "validate/validate.hpp"

namespace cpupower::launch {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr std::size_t kSpreadAboveNodes = 64;
// The clock check's srun steps: each tool on a node has 2 s; srun's own start-up is the rest.
constexpr milliseconds kClockStepTimeout{30000};

double now_unix() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

milliseconds to_ms(double seconds) {
  return milliseconds(static_cast<std::int64_t>(std::llround(seconds * 1000.0)));
}

scrape::CollectorOptions collector_options(const SessionPlan& plan) {
  const auto& t = plan.recipe.telemetry;
  scrape::CollectorOptions o;
  o.out_dir = plan.cpu_dir;
  o.collect_interval = milliseconds(t.collect_interval_ms);
  o.request_timeout = to_ms(t.request_timeout_seconds);
  o.cpu_samples_schema = plan.cpu_samples_schema;
  o.security = plan.scrape_security;
  o.join_timeout = to_ms(config::resolved_join_timeout_s(t));
  // Spreading the slots over an interval keeps a thousand requests from queueing behind each
  // other; a few dozen do not queue, and all-at-once gives every node its first row at once.
  o.spread_slots = plan.nodes.size() > kSpreadAboveNodes;
  return o;
}

// Polls the collector until `satisfied(index, node)` holds for every node, or the deadline.
template <typename Satisfied>
bool wait_for_rows(const scrape::Collector& collector, Clock::time_point deadline,
                   Satisfied satisfied, const std::function<bool()>& give_up) {
  while (true) {
    const auto nodes = collector.stats().nodes;
    bool all = true;
    for (std::size_t i = 0; i < nodes.size(); ++i) all = all && satisfied(i, nodes[i]);
    if (all) return true;
    if (Clock::now() >= deadline || give_up()) return false;
    std::this_thread::sleep_for(milliseconds(20));
  }
}

// An energy window needs a sample at or before its start and one at or after its end, so
// the command starts once every exporter that answered has a row (bounded: one collect
// interval and one request past readiness, never past the startup deadline), and the
// collector is finalized once every node has a row from after the command's end.
milliseconds row_wait(const SessionPlan& plan) {
  const auto& t = plan.recipe.telemetry;
  return milliseconds(t.collect_interval_ms) + to_ms(t.request_timeout_seconds) + milliseconds(250);
}

// <log_dir>/prometheus_sd.json with these endpoints (an empty list at the end of the
// session); true when written. A failure is a warning: the file serves a cluster Prometheus,
// never the run.
bool publish_prometheus_sd(const SessionPlan& plan,
                           const std::vector<scrape::Endpoint>& endpoints) {
  auto log = common::logger("cpu_power::run");
  std::string error;
  if (!write_prometheus_sd(plan.log_dir,
                           prometheus_sd_json(endpoints, plan.job_id, sd_run_name(plan)), &error)) {
    log->warn("cannot write {}/{} error={}", plan.log_dir, kPrometheusSdFile,
              common::quoted(error));
    return false;
  }
  log->info("Prometheus targets in {}/{} count={}", plan.log_dir, kPrometheusSdFile,
            endpoints.size());
  return true;
}

// Starts everything the CPU leg needs; nullptr when the collector could not start. Never
// throws and never fails the session. `sd_written`: whether prometheus_sd.json was written.
std::unique_ptr<scrape::Collector> start_telemetry(const SessionPlan& plan, Launcher& launcher,
                                                   SignalForwarder& signals,
                                                   Clock::time_point started,
                                                   Clock::time_point deadline, bool& sd_written) {
  auto log = common::logger("cpu_power::run");
  const auto give_up = [&signals] { return signals.interrupted(); };
  const auto endpoints = launcher.start(deadline, give_up);
  // The addresses are known: a cluster Prometheus may start scraping now.
  sd_written = publish_prometheus_sd(plan, endpoints);
  // Polling /health is pointless once every exporter process has ended (a node without any
  // power source exits at once): stop waiting then, not at the deadline.
  const auto ready = wait_until_ready(
      endpoints, deadline, [&] { return give_up() || !launcher.any_running(); },
      plan.scrape_security);
  std::size_t ready_count = 0;
  std::string waiting;
  for (std::size_t i = 0; i < endpoints.size(); ++i) {
    if (ready[i]) {
      ++ready_count;
    } else {
      waiting += (waiting.empty() ? "" : ",") + endpoints[i].hostname;
    }
  }
  if (ready_count == endpoints.size()) {
    log->info("CPU power exporters ready count={}", ready_count);
  } else {
    log->warn("CPU power exporters not ready by the startup deadline ready={} of={} waiting={}",
              ready_count, endpoints.size(), common::quoted(waiting));
  }
  std::error_code ec;
  std::filesystem::create_directories(plan.cpu_dir, ec);
  auto collector = std::make_unique<scrape::Collector>(endpoints, collector_options(plan));
  std::string error;
  if (!collector->start(&error)) {
    log->warn("CPU power collector did not start error={}", common::quoted(error));
    return nullptr;
  }
  log->info("CPU power telemetry started (artifacts under {})", plan.cpu_dir);
  const auto rows_by = std::min(deadline, Clock::now() + row_wait(plan));
  const bool first_rows = wait_for_rows(
      *collector, rows_by,
      [&](std::size_t i, const scrape::NodeStats& n) {
        return !ready[i] || n.first_sample_unix.has_value();
      },
      give_up);
  log->info("CPU power first rows {} after {:.3f} s",
            first_rows ? "from every ready node" : "missing for some nodes",
            std::chrono::duration<double>(Clock::now() - started).count());
  return collector;
}

// Runs the command in our process group (it keeps the terminal) and waits for it.
void run_command(const SessionPlan& plan, SignalForwarder& signals, SessionResult& result,
                 SessionRecord& record) {
  auto log = common::logger("cpu_power::run");
  SpawnOptions o;
  o.argv = plan.command;
  o.own_process_group = false;
  o.null_stdin = false;
  std::string error;
  int error_number = 0;
  record.command = plan.command;
  // Wall clock against monotonic while the command runs: a step of the wall clock (NTP, an
  // operator) moves the window and every row time, and is recorded so that no energy figure
  // is integrated across it unsaid.
  ClockStepWatch watch;
  std::mutex watch_mutex;
  std::condition_variable watch_cv;
  bool watch_done = false;
  std::thread watcher([&] {
    std::unique_lock lock(watch_mutex);
    while (!watch_cv.wait_for(lock, milliseconds(100), [&] { return watch_done; })) {
      if (watch.observe()) {
        const auto& s = watch.steps().back();
        log->warn(
            "the wall clock stepped by {:+.3f} s against the monotonic clock at {:.3f} while "
            "the command ran; energy over it is not vouched for",
            s.step_s, s.at_unix);
      }
    }
  });
  record.start_unix = now_unix();
  record.start_monotonic = monotonic_now_s();
  const auto t0 = Clock::now();
  const auto child = spawn_process(o, &error, &error_number);
  result.command_started = true;
  if (!child) {
    log->error("command could not be started error={}", common::quoted(error));
    // As a shell reports it: 127 not found, 126 found but not runnable.
    record.exit_code = error_number == ENOENT ? 127 : 126;
  } else {
    signals.set_target(child->pid);
    const int status = wait_for_exit(child->pid).value_or(0);
    signals.set_target(0);
    record.exit_code = exit_code_from_status(status);
    log->info("command finished {} after {:.3f} s", describe_status(status),
              std::chrono::duration<double>(Clock::now() - t0).count());
  }
  record.end_unix = now_unix();
  record.end_monotonic = monotonic_now_s();
  record.duration_s = std::chrono::duration<double>(Clock::now() - t0).count();
  {
    std::lock_guard lock(watch_mutex);
    watch_done = true;
  }
  watch_cv.notify_all();
  watcher.join();
  const auto seen = watch.steps().size();
  watch.settle(record.start_unix, record.start_monotonic, record.end_unix, record.end_monotonic);
  if (watch.steps().size() > seen) {
    log->warn(
        "the wall clock moved {:+.3f} s against the monotonic clock during the command; energy "
        "over it is not vouched for",
        watch.steps().back().step_s);
  }
  record.clock_steps = watch.steps();
  result.command_seconds = record.end_unix - record.start_unix;
  result.exit_code = record.exit_code;
}

// An aiperf concurrency point's window. aiperf's files carry no start, end and duration the
// window check could compare, so the window points at a result file derived from them by the
// energy report's own code (<storage_subdir>/aiperf/aiperf_conc_<N>.json): start = the first
// profiling request's start, end = start + benchmark_duration (or the last request's end,
// when earlier), duration = aiperf's benchmark_duration when it has one.
std::optional<GpuWindowInput> aiperf_window(const SessionPlan& plan, const report::RunInputs& run,
                                            const report::WindowSource& source) {
  const bool records = source.kind == report::SourceKind::aiperf_records;
  const report::Window window = records ? report::load_aiperf_records_window(
                                              source.path, source.concurrency, run.benchmark_out)
                                        : report::load_aiperf_aggregate_window(
                                              source.path, source.concurrency, run.benchmark_out);
  if (!window.error.empty() || !(window.end_unix > window.start_unix)) {
    common::logger("cpu_power::run")
        ->warn("no GPU window for aiperf concurrency {}: {}", source.concurrency,
               window.error.empty() ? "empty span" : window.error);
    return std::nullopt;
  }
  const auto& gpu = *plan.gpu_leg;
  const std::string name = "aiperf_conc_" + std::to_string(source.concurrency);
  const std::filesystem::path dir(gpu.power_dir);
  GpuWindowInput w;
  w.name = name;
  w.benchmark_type = "aiperf";
  w.concurrency = source.concurrency;
  w.result_path = (dir / "aiperf" / (name + ".json")).lexically_relative(plan.log_dir).string();
  w.start_unix = window.start_unix;
  w.end_unix = window.end_unix;
  w.duration_s = window.reported.duration_seconds.value_or(window.end_unix - window.start_unix);
  artifacts::DerivedWindowResult r;
  r.benchmark_type = "aiperf";
  r.concurrency = source.concurrency;
  r.start_unix = *w.start_unix;
  r.end_unix = *w.end_unix;
  r.duration_s = *w.duration_s;
  r.derived_from = std::filesystem::path(source.path).lexically_relative(plan.log_dir).string();
  r.derivation =
      records ? "start: first profiling request's start; end: start + benchmark_duration, or "
                "the last profiling request's end when earlier; duration: benchmark_duration"
              : "start and end: the aggregate's start_time and end_time; duration: "
                "benchmark_duration";
  w.derived_result = std::move(r);
  return w;
}

// The windows the session knows: its command's (windows/session.json, pointing at
// session.json), each sa-bench result the command left below the log directory, and each
// aiperf concurrency point.
std::vector<GpuWindowInput> gpu_windows(const SessionPlan& plan, const SessionRecord& record) {
  std::vector<GpuWindowInput> out;
  GpuWindowInput session;
  session.name = "session";
  session.benchmark_type = "session";
  session.concurrency = 1;
  session.result_path = "session.json";
  session.start_unix = record.start_unix;
  session.end_unix = record.end_unix;
  session.duration_s = record.duration_s;
  if (record.exit_code != 0) {
    session.failure = "the command exited with code " + std::to_string(record.exit_code);
  }
  out.push_back(session);
  const auto found = report::discover_run(plan.log_dir, std::nullopt);
  if (!found.run) return out;
  for (const auto& source : found.run->sources) {
    if (source.kind == report::SourceKind::aiperf_records ||
        source.kind == report::SourceKind::aiperf_aggregate) {
      if (auto w = aiperf_window(plan, *found.run, source)) out.push_back(std::move(*w));
      continue;
    }
    if (source.kind != report::SourceKind::sa_bench) continue;
    const auto result = artifacts::read_gpu_window_result(source.path);
    GpuWindowInput w;
    const std::filesystem::path path(source.path);
    w.name = path.stem().string();
    w.benchmark_type = "sa-bench";
    w.concurrency = source.concurrency;
    w.result_path = path.lexically_relative(plan.log_dir).string();
    w.start_unix = result.start_time_unix;
    w.end_unix = result.end_time_unix;
    w.duration_s = result.duration_s;
    if (!w.start_unix || !w.end_unix) continue;  // not a result the contract can use
    out.push_back(std::move(w));
  }
  return out;
}

}  // namespace

SessionResult run_session(const SessionPlan& plan, SignalForwarder& signals,
                          Clock::time_point started) {
  auto log = common::logger("cpu_power::run");
  SessionResult result;
  std::error_code ec;
  std::filesystem::create_directories(plan.log_dir, ec);
  if (ec) log->warn("cannot create log dir {}: {}", plan.log_dir, ec.message());
  for (const auto& w : plan.warnings) log->warn("{}", w);
  // Every node's clock, before any server starts (launch/clock_check.hpp); bounded, and kept
  // out of the startup deadlines, which count from its end: a slow probe never costs a leg
  // its readiness.
  std::optional<artifacts::ClockSyncCheck> clocks;
  if (plan.telemetry || plan.host_leg || plan.gpu_leg) {
    const auto probe_start = Clock::now();
    clocks = check_session_clocks(plan, kClockStepTimeout);
    started += Clock::now() - probe_start;
  }

  Launcher launcher(plan);
  std::unique_ptr<scrape::Collector> collector;
  bool sd_written = false;
  if (plan.telemetry) {
    // libcurl is loaded (and its global state set up) while this is still the only thread.
    std::string curl_error;
    if (scrape::curl_api(&curl_error) == nullptr) {
      log->warn("CPU power telemetry skipped: {}", curl_error);
    } else {
      const auto deadline = started + to_ms(plan.recipe.telemetry.startup_timeout_seconds);
      collector = start_telemetry(plan, launcher, signals, started, deadline, sd_written);
    }
  }

  std::unique_ptr<GpuLegRun> gpu_leg;
  bool gpu_blocks = false;
  if (plan.gpu_leg) {
    std::string curl_error;
    if (scrape::curl_api(&curl_error) == nullptr) {
      log->warn("GPU power telemetry skipped: {}", curl_error);
      gpu_blocks = plan.gpu_leg->required;
    } else {
      gpu_leg = std::make_unique<GpuLegRun>(plan, launcher);
      gpu_leg->set_clock_check(clocks);
      const auto deadline = started + to_ms(plan.recipe.telemetry.startup_timeout_seconds);
      const bool ready = gpu_leg->start(deadline, [&signals] { return signals.interrupted(); });
      gpu_blocks = !ready && plan.gpu_leg->required;
    }
  }

  std::unique_ptr<HostLeg> host_leg;
  bool host_blocks = false;
  if (plan.host_leg) {
    host_leg = std::make_unique<HostLeg>(plan, launcher);
    const auto deadline = started + to_ms(plan.recipe.telemetry.cpu_power.startup_timeout_seconds);
    const bool ready = host_leg->start(deadline, [&signals] { return signals.interrupted(); });
    host_blocks = !ready && plan.recipe.telemetry.cpu_power.required;
  }

  // A signal from here on (Slurm's SIGTERM at the time limit, say) hurries the collectors'
  // stops, also one already draining: the batch system sends SIGKILL after its own wait.
  signals.set_on_signal([c = collector.get(), g = gpu_leg.get()] {
    if (c) c->interrupt();
    if (g) g->interrupt();
  });
  SessionRecord record;
  record.job_id = plan.artifact_job_id;
  if (signals.interrupted()) {
    log->warn("interrupted before the command started; it is not run");
    result.exit_code = 128 + signals.last_signal();
  } else if (gpu_blocks) {
    log->error(
        "telemetry.required is set and the GPU power telemetry is not ready (reason={}); the "
        "command is not run",
        gpu_leg ? gpu_leg->readiness_reason() : std::string("libcurl unavailable"));
    result.exit_code = 1;
  } else if (host_blocks) {
    log->error(
        "telemetry.cpu_power.required is set and the CPU power collectors are not ready "
        "(reason={}); the command is not run",
        host_leg->readiness_reason());
    result.exit_code = 1;
  } else {
    run_command(plan, signals, result, record);
    // Now, not at the end: the GPU leg's session window points at it.
    const std::string path = plan.log_dir + "/session.json";
    std::string error;
    if (write_session_record(path, record, &error)) {
      result.session_path = path;
    } else {
      log->warn("cannot write {} error={}", path, common::quoted(error));
    }
  }

  // Finalize while the exporters still answer, so that the last scrape has something to read.
  // Not after a signal: the batch system that sent it kills the session after its own wait,
  // and a request in flight could hold the session up to its timeout.
  if (collector && result.command_started && !signals.interrupted()) {
    const double end_unix = record.end_unix;
    const bool last_rows = wait_for_rows(
        *collector, Clock::now() + row_wait(plan),
        [&](std::size_t, const scrape::NodeStats& n) {
          return !n.last_sample_unix || *n.last_sample_unix >= end_unix;
        },
        [&signals] { return signals.interrupted(); });  // bounded; the artifacts are worth it
    if (!last_rows) log->warn("CPU power rows after the command's end missing for some nodes");
  }
  if (collector) {
    std::string error;
    const bool finalized = signals.interrupted() ? collector->stop_and_finalize_interrupted(&error)
                                                 : collector->stop_and_finalize(&error);
    if (!finalized) {
      log->warn("CPU power collector finalize incomplete error={}", common::quoted(error));
    }
    result.stats = collector->stats();
    result.samples_path = collector->samples_path();
    result.manifest_path = collector->manifest_path();
  }
  if (gpu_leg) {
    std::vector<GpuWindowInput> windows;
    if (result.command_started) windows = gpu_windows(plan, record);
    result.gpu_leg = gpu_leg->finish(
        windows, signals.interrupted(),
        result.command_started ? std::optional<double>(record.end_unix) : std::nullopt);
    if (result.gpu_leg->exit_nonzero && result.exit_code == 0) {
      log->error("GPU power artifacts are not publishable{} status={} reasons={} rules={}",
                 plan.gpu_leg->required ? " and telemetry.required is set" : "",
                 result.gpu_leg->status, fmt::join(result.gpu_leg->reason_codes, ","),
                 fmt::join(result.gpu_leg->failed_rules, ","));
      result.exit_code = 1;
    }
    signals.set_on_signal([c = collector.get()] {
      if (c) c->interrupt();
    });
    gpu_leg.reset();
  }
  if (host_leg) {
    result.host_leg = host_leg->finish(
        signals.interrupted(),
        result.command_started ? std::optional<double>(record.end_unix) : std::nullopt);
    result.host_leg_dir = plan.host_leg->cpu_dir;
    if (result.host_leg->exit_nonzero && result.exit_code == 0) {
      log->error(
          "telemetry.cpu_power.required is set and CPU power artifacts are not publishable "
          "reasons={}",
          fmt::join(result.host_leg->reason_codes, ","));
      result.exit_code = 1;
    }
    host_leg.reset();
  }
  // The targets go before the exporters do: Prometheus drops them instead of recording the
  // stopped exporters as down.
  if (sd_written) publish_prometheus_sd(plan, {});
  launcher.stop();
  signals.set_on_signal({});  // before the collector goes
  // The consumers' verdict on what the legs wrote (logged; the exit status stays the session's).
  if (plan.telemetry || plan.gpu_leg || plan.host_leg) {
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

std::string summary_text(const SessionResult& r) {
  std::string out =
      fmt::format("cpu-power run: exit code {} after {:.1f} s\n", r.exit_code, r.command_seconds);
  if (r.host_leg) {
    const auto& h = *r.host_leg;
    out +=
        fmt::format("CPU power (host collectors): {} rows in {}/samples.csv, status {}{}\n",
                    h.sample_row_count, r.host_leg_dir, h.status,
                    h.reason_codes.empty() ? std::string()
                                           : fmt::format(" ({})", fmt::join(h.reason_codes, ", ")));
  }
  if (r.gpu_leg) {
    const auto& g = *r.gpu_leg;
    out += fmt::format(
        "GPU power: {} rows from {} GPUs in {}/samples.csv, status {}, {}{}\n", g.sample_row_count,
        g.devices, g.power_dir, g.status, g.publication_valid ? "publishable" : "not publishable",
        g.reason_codes.empty() ? std::string()
                               : fmt::format(" ({})", fmt::join(g.reason_codes, ", ")));
  }
  if (!r.stats) {
    return out + (r.host_leg || r.gpu_leg ? "" : "CPU power: no telemetry collected\n");
  }
  const auto& s = *r.stats;
  out += fmt::format("CPU power: {} rows in {} ({} dropped), manifest {}\n", s.rows_written,
                     r.samples_path, s.rows_dropped, r.manifest_path);
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

}  // namespace cpupower::launch
