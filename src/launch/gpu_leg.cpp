#include "launch/gpu_leg.hpp"

#include <filesystem>
#include <thread>

#include <fmt/ranges.h>

#include "artifacts/gpu_reasons.hpp"
#include "artifacts/gpu_samples_check.hpp"
#include "artifacts/gpu_windows.hpp"
#include "common/log.hpp"
#include "common/text.hpp"
#include "launch/clock_check.hpp"
#include "launch/launcher.hpp"
#include "launch/node_address.hpp"
#include "report/discovery.hpp"
#include "report/window.hpp"
#include "scrape/curl_api.hpp"

namespace cpupower::launch {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
namespace reason = artifacts::gpu_reason;

}  // namespace

GpuLegRun::GpuLegRun(const SessionPlan& plan, Launcher& launcher,
                     std::optional<artifacts::ClockSyncCheck> clock_check)
    : plan_(plan), launcher_(launcher), leg_(*plan.gpu_leg), clock_check_(std::move(clock_check)) {}

std::vector<scrape::Endpoint> GpuLegRun::start_exporters(Clock::time_point deadline,
                                                         const std::function<bool()>& give_up) {
  const auto port = static_cast<std::uint16_t>(leg_.port);
  auto spawn = [&](const std::string& name, const std::vector<std::string>& argv,
                   const std::string& log_path, const std::string& node) {
    if (!processes_.spawn(name, argv, log_path, {node}))
      reasons_.add(reason::kExporterLaunchFailed);
  };
  // Where each node's exporter answers when it listens on the recipe's port: where the CPU
  // exporter leg's resolvers found the node, or, without that leg, where this leg's own
  // resolver steps (the same `cpu-power node-address`) find it.
  auto at_nodes = [&] {
    std::vector<scrape::Endpoint> out;
    std::map<std::string, std::string> own;
    if (plan_.mode == LaunchMode::slurm && !leg_.resolvers.empty()) {
      own = resolve_node_addresses(leg_.resolvers, plan_.nodes, deadline, "dcgm-exporter");
    }
    for (const auto& node : plan_.nodes) {
      if (plan_.mode != LaunchMode::slurm) {
        out.push_back({node, "127.0.0.1", port});
        continue;
      }
      auto address = launcher_.node_address(node);
      if (const auto it = own.find(node); !address && it != own.end()) {
        address = it->second;
      }
      if (!address && leg_.resolvers.empty()) address = resolve_name(node, deadline);
      if (!address) {
        log()->warn("dcgm-exporter endpoint resolution failed for {}; it is left out", node);
        reasons_.add(reason::kEndpointResolutionFailed);
        continue;
      }
      out.push_back({node, *address, port});
    }
    return out;
  };

  // Plain ifs rather than a switch: clang's AddressSanitizer flagged the logger temporaries
  // of skipped cases as used after scope at the switch's end (a false report, but one that
  // fails the sanitizer run).
  if (leg_.source == GpuExporterSource::running) {
    log()->info("dcgm-exporter: scraping the one already running on each node, port {}", port);
    return at_nodes();
  }
  if (leg_.source == GpuExporterSource::started) {
    if (plan_.mode == LaunchMode::slurm) {
      for (const auto& g : leg_.groups) {
        log()->info("dcgm-exporter starting name={} nodes={} argv={}", g.process_name,
                    g.group.nodes.size(), common::quoted(shell_quote_argv(g.srun)));
        spawn(g.process_name, g.srun, plan_.log_dir + "/" + g.process_name + ".srun.log", "");
      }
    } else {
      log()->info("dcgm-exporter starting locally argv={}",
                  common::quoted(shell_quote_argv(leg_.exporter_command)));
      spawn("telemetry_dcgm_exporter", leg_.exporter_command,
            plan_.log_dir + "/telemetry_dcgm_exporter.out", plan_.nodes.front());
    }
    return at_nodes();
  }
  // Simulated: one sim-gpu per node on a free loopback port, found from its readiness line.
  for (std::size_t i = 0; i < plan_.nodes.size(); ++i) {
    const auto& node = plan_.nodes[i];
    auto argv = leg_.exporter_command;
    // Each node its own noise, as each simulated node's CPU sockets have (seed = position).
    argv.insert(argv.end(), {"--hostname", node, "--seed", std::to_string(i + 1)});
    spawn("telemetry_dcgm_exporter." + node, argv,
          plan_.log_dir + "/telemetry_dcgm_exporter." + node + ".out", node);
  }
  std::vector<scrape::Endpoint> out;
  for (auto& p : processes_.processes()) {
    if (p.pid <= 0) continue;  // its launch failure is logged and reasoned
    if (const auto port = processes_.wait_listening(p, deadline, give_up)) {
      out.push_back({p.nodes.front(), "127.0.0.1", static_cast<std::uint16_t>(*port)});
    } else if (p.pid > 0) {
      log()->warn("simulated dcgm-exporter for {} never reported listening; it is left out",
                  p.nodes.front());
      reasons_.add(reason::kExporterStartupTimeout);
    } else {
      reasons_.add(reason::kExporterLaunchFailed);  // it ended at startup
    }
  }
  return out;
}

std::optional<std::string> GpuLegRun::blocks() const {
  if (ready_ || !leg_.required) return std::nullopt;
  return fmt::format(
      "telemetry.required is set and the GPU power telemetry is not ready (reason={}); the "
      "command is not run",
      readiness_reason_);
}

bool GpuLegRun::start(Clock::time_point started, const std::function<bool()>& give_up) {
  if (const auto curl = scrape::curl_api(); !curl) {
    log()->warn("GPU power telemetry skipped: {}", curl.error());
    skipped_ = true;
    readiness_reason_ = "libcurl unavailable";
    return false;
  }
  const auto deadline = started + to_ms(plan_.recipe.telemetry.startup_timeout_seconds);
  started_at_unix_ = now_unix();
  std::error_code ec;
  std::filesystem::create_directories(leg_.power_dir + "/windows", ec);
  endpoints_ = start_exporters(deadline, give_up);
  auto options = collector_options(plan_, leg_.power_dir);
  options.on_scrape = [slowest = slowest_scrape_us_](const scrape::ScrapeEvent& e) {
    const auto us = std::chrono::duration_cast<std::chrono::microseconds>(e.finished - e.started);
    auto seen = slowest->load();
    while (us.count() > seen && !slowest->compare_exchange_weak(seen, us.count())) {
    }
  };
  collector_ = std::make_unique<scrape::Collector>(
      endpoints_, std::move(options),
      std::make_unique<scrape::GpuLeg>(endpoints_.size(), summary_, leg_.read,
                                       leg_.samples_schema));
  if (const Status started = collector_->start(); !started) {
    log()->warn("GPU power collector did not start error={}", common::quoted(started.error()));
    reasons_.add(reason::kCollectorException);
    collector_.reset();
    readiness_reason_ = std::string(reason::kCollectorException);
    return false;
  }
  log()->info("GPU power telemetry started (artifacts under {})", leg_.power_dir);
  // Ready: every planned node has given rows (the first scrape that parsed), by the deadline.
  while (true) {
    const auto nodes = collector_->stats().nodes;
    std::size_t with_rows = 0;
    for (const auto& n : nodes) with_rows += n.first_sample_unix ? 1 : 0;
    if (with_rows == plan_.nodes.size()) {
      log()->info("GPU power first rows from every node count={}", with_rows);
      return ready_ = true;
    }
    if (Clock::now() >= deadline || give_up()) {
      std::string waiting;
      for (const auto& n : plan_.nodes) {
        bool has = false;
        for (const auto& s : nodes) has = has || (s.hostname == n && s.first_sample_unix);
        if (!has) waiting += (waiting.empty() ? "" : ",") + n;
      }
      log()->warn("dcgm-exporters not ready by the startup deadline ready={} of={} waiting={}",
                  with_rows, plan_.nodes.size(), common::quoted(waiting));
      if (readiness_reason_.empty())
        readiness_reason_ = std::string(reason::kExporterStartupTimeout);
      reasons_.add(reason::kExporterStartupTimeout);
      return false;
    }
    std::this_thread::sleep_for(milliseconds(50));
  }
}

namespace {

// A benchmark window the session knows: windows/<name>.json, and for an aiperf window the
// result file it points at (written at its result_path).
struct GpuWindowInput {
  std::string name;  // the file stem
  artifacts::GpuWindowFile file;
  std::optional<artifacts::DerivedWindowResult> derived;
};

// A completed window over [start, end]; `duration`, the monotonic one when known.
GpuWindowInput completed_window(std::string name, std::string benchmark_type, long long concurrency,
                                std::string result_path, double start, double end,
                                std::optional<double> duration) {
  GpuWindowInput w{std::move(name), {}, std::nullopt};
  w.file.benchmark_type = std::move(benchmark_type);
  w.file.result_path = std::move(result_path);
  w.file.concurrency = concurrency;
  w.file.benchmark_start_time_unix = start;
  w.file.benchmark_end_time_unix = end;
  w.file.duration_s = duration.value_or(end - start);
  w.file.status = artifacts::GpuWindowStatus::completed;
  return w;
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
    log()->warn("no GPU window for aiperf concurrency {}: {}", source.concurrency,
                window.error.empty() ? "empty span" : window.error);
    return std::nullopt;
  }
  const std::string name = "aiperf_conc_" + std::to_string(source.concurrency);
  const std::filesystem::path dir(plan.gpu_leg->power_dir);
  auto w = completed_window(
      name, "aiperf", source.concurrency,
      (dir / "aiperf" / (name + ".json")).lexically_relative(plan.log_dir).string(),
      window.start_unix, window.end_unix, window.reported.duration_seconds);
  w.derived = artifacts::DerivedWindowResult{
      "aiperf",
      source.concurrency,
      window.start_unix,
      window.end_unix,
      *w.file.duration_s,
      std::filesystem::path(source.path).lexically_relative(plan.log_dir).string(),
      records ? "start: first profiling request's start; end: start + benchmark_duration, or "
                "the last profiling request's end when earlier; duration: benchmark_duration"
              : "start and end: the aggregate's start_time and end_time; duration: "
                "benchmark_duration"};
  return w;
}

// The windows the session knows: its command's (windows/session.json, pointing at
// session.json), each sa-bench result the command left below the log directory, and each
// aiperf concurrency point.
std::vector<GpuWindowInput> gpu_windows(const SessionPlan& plan, const SessionRecord& record) {
  std::vector<GpuWindowInput> out{completed_window("session", "session", 1, "session.json",
                                                   record.start_unix, record.end_unix,
                                                   record.duration_s)};
  if (record.exit_code != 0) {
    out[0].file.status = artifacts::GpuWindowStatus::failed;
    out[0].file.reason = "the command exited with code " + std::to_string(record.exit_code);
  }
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
    if (!result.start_time_unix || !result.end_time_unix) continue;  // not one the contract uses
    const std::filesystem::path path(source.path);
    out.push_back(completed_window(path.stem().string(), "sa-bench", source.concurrency,
                                   path.lexically_relative(plan.log_dir).string(),
                                   *result.start_time_unix, *result.end_time_unix,
                                   result.duration_s));
  }
  return out;
}

// windows/<name>.json for each window (and the result file an aiperf window points at);
// the keys the manifest expects.
std::vector<artifacts::GpuWindowKey> write_windows(const SessionPlan& plan,
                                                   const std::vector<GpuWindowInput>& windows) {
  std::vector<artifacts::GpuWindowKey> expected_windows;
  for (const auto& w : windows) {
    if (w.derived) {
      const auto path = plan.log_dir + "/" + w.file.result_path;
      written(path, artifacts::write_derived_window_result(path, *w.derived));
    }
    const auto path = plan.gpu_leg->power_dir + "/windows/" + w.name + ".json";
    written(path, artifacts::write_gpu_window(path, w.file));
    expected_windows.push_back(w.file.key());
  }
  return expected_windows;
}

}  // namespace

LegVerdict GpuLegRun::finish(const SessionEnd& end) {
  if (skipped_) return {};
  std::vector<GpuWindowInput> windows;
  if (end.command) windows = gpu_windows(plan_, *end.command);
  stop_collecting(end.command ? std::optional<double>(end.command->end_unix) : std::nullopt,
                  end.interrupted);
  // Windows first: the manifest validates what is on disk.
  const auto expected_windows = write_windows(plan_, windows);
  // Strictly the schema this run wrote: a file with another header is not this run's.
  const auto samples = artifacts::check_gpu_samples(
      leg_.power_dir + "/" + std::string(artifacts::kGpuSamplesFilename), leg_.samples_schema);
  auto expected = expected_devices();
  auto m = manifest_head();
  m.expected_devices = std::move(expected);
  m.expected_windows = expected_windows;
  m.window_validations = artifacts::validate_gpu_windows(
      leg_.power_dir, plan_.log_dir, m.expected_windows,
      {m.expected_devices, samples.devices, m.sample_interval_seconds}, m.artifact_errors);
  artifacts::GpuReasons reasons = reasons_;
  for (const auto& [code, count] : summary_->reason_counts) reasons.add(code);
  const auto publication = artifacts::settle_gpu_manifest(m, std::move(reasons), samples);
  const auto manifest_path = leg_.power_dir + "/" + std::string(artifacts::kGpuManifestFilename);
  if (const Status written = artifacts::write_gpu_manifest(manifest_path, m); !written) {
    log()->warn("cannot write {} error={}", manifest_path, common::quoted(written.error()));
  }
  const auto& codes = m.reason_codes;
  LegVerdict out{std::string(artifacts::gpu_run_status_name(m.status)), codes, publication.valid,
                 artifacts::gpu_exit_nonzero(codes, leg_.required, publication.valid), ""};
  out.summary =
      fmt::format("GPU power: {} rows from {} GPUs in {}/samples.csv, status {}, {}{}\n",
                  samples.row_count, samples.devices.size(), leg_.power_dir, out.status,
                  out.publishable ? "publishable" : "not publishable",
                  codes.empty() ? std::string() : fmt::format(" ({})", fmt::join(codes, ", ")));
  if (out.exit_nonzero && end.exit_code == 0) {
    log()->error("GPU power artifacts are not publishable{} status={} reasons={} rules={}",
                 leg_.required ? " and telemetry.required is set" : "", out.status,
                 fmt::join(codes, ","), fmt::join(publication.failed_rules, ","));
  }
  return out;
}

void GpuLegRun::stop_collecting(std::optional<double> end_unix, bool interrupted) {
  if (collector_ && end_unix && !interrupted) {
    // An energy window needs a sample at or after its end from every node. Not after a
    // signal: the batch system that sent it kills the session after its own wait.
    wait_for_rows(
        *collector_, Clock::now() + row_wait(plan_),
        [&](std::size_t, const scrape::NodeStats& n) {
          return !n.last_sample_unix || *n.last_sample_unix >= *end_unix;
        },
        [] { return false; });
  }
  if (collector_) {
    const auto finalized =
        interrupted ? collector_->stop_and_finalize_interrupted() : collector_->stop_and_finalize();
    if (!finalized) {
      log()->warn("GPU power collector finalize incomplete error={}",
                  common::quoted(finalized.problems));
    }
    if (finalized.loop_left_behind) reasons_.add(reason::kCollectorJoinTimeout);
  }
  const auto failed_before = processes_.failed();
  processes_.poll();  // an exporter that ended before the stop
  if (processes_.failed() > failed_before) reasons_.add(reason::kExporterExited);
  processes_.stop(milliseconds(5000));
  if (interrupted) reasons_.add(reason::kCollectorInterrupted);
}

std::vector<artifacts::GpuExpectedDevice> GpuLegRun::expected_devices() {
  std::vector<artifacts::GpuExpectedDevice> expected;
  // Each GPU serving one aggregated worker per node (role agg; the contract wants exactly
  // one role per GPU).
  const auto agg = [&](std::size_t n, long long index) {
    artifacts::GpuAssignment a;
    a.worker_role = "agg";
    a.worker_index = static_cast<long long>(n);
    expected.push_back({plan_.nodes[n], index, {a}});
  };
  if (leg_.roles_file) {
    if (auto roles = artifacts::read_gpu_roles_file(*leg_.roles_file)) {
      expected = std::move(*roles);
    } else {
      log()->warn("--gpu-roles not used: {}", roles.error());
    }
  }
  if (expected.empty() && leg_.read.only_indices) {
    // The visible-devices selection: those GPUs on every node, whether they answered or not.
    for (std::size_t n = 0; n < plan_.nodes.size(); ++n) {
      for (const auto index : *leg_.read.only_indices) agg(n, index);
    }
  }
  if (expected.empty()) {
    // No topology given: every GPU a node showed when it became ready.
    for (std::size_t n = 0; n < plan_.nodes.size(); ++n) {
      const auto it = summary_->first_devices.find(plan_.nodes[n]);
      if (it == summary_->first_devices.end()) {
        reasons_.add(reason::kExpectedDeviceMissing);  // a node that never gave a row
        continue;
      }
      for (const auto index : it->second) agg(n, index);
    }
  }
  return expected;
}

artifacts::GpuManifest GpuLegRun::manifest_head() const {
  const auto& t = plan_.recipe.telemetry;
  artifacts::GpuManifest m;
  m.job_id = plan_.artifact_job_id;
  m.samples_schema_version = leg_.samples_schema;
  m.utilization_metrics = artifacts::gpu_utilization_metrics(leg_.samples_schema);
  m.run_name = std::filesystem::path(plan_.log_dir).filename().string();
  m.sample_interval_seconds = static_cast<double>(t.collect_interval_ms) / 1000.0;
  m.request_timeout_seconds = t.request_timeout_seconds;
  if (const auto us = slowest_scrape_us_->load(); us >= 0) {
    m.max_scrape_duration_seconds = static_cast<double>(us) / 1e6;
  }
  m.required = leg_.required;
  m.started_at_unix = started_at_unix_;
  m.stopped_at_unix = now_unix();
  m.dcgm_exporter.container_image_resolved =
      t.dcgm_exporter ? t.dcgm_exporter->container_image : std::string();
  m.dcgm_exporter.port = leg_.port;
  m.dcgm_exporter.command = shell_quote_argv(leg_.exporter_command);
  // Another exporter's names: what the manifest says the columns were read from.
  if (const auto& p = leg_.read.profile; !(p == scrape::GpuExporterProfile::dcgm())) {
    m.source_metric = p.power_metric;
    m.power_scope = p.power_scope;
    std::vector<artifacts::GpuUtilizationMetric> used;
    for (auto u : m.utilization_metrics) {
      const auto& family = u.column == "sm_active" ? p.sm_active_metric : p.util_metric;
      if (!family) continue;  // not read: its column stays empty
      u.source_metric = *family;
      used.push_back(std::move(u));
    }
    m.utilization_metrics = std::move(used);
  }
  m.clock_sync_check = clock_check_;
  if (clock_check_) m.clock_sync_failures = clock_sync_failures(*clock_check_);
  return m;
}

}  // namespace cpupower::launch
