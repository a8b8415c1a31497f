// cpu-power scrape: the head-node collector on its own. Scrapes the given exporters until the
// duration ends or SIGINT/SIGTERM, then finalizes DIR/samples.csv and DIR/cpu_manifest.json.

#include <fmt/core.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <thread>

#include "apps/cpu-power/commands.hpp"
#include "common/log.hpp"
#include "common/signals.hpp"
#include "common/text.hpp"
#include "config/validate.hpp"
#include "launch/session_plan.hpp"
#include "scrape/client_security.hpp"
#include "scrape/collector.hpp"

namespace cpupower::app {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

struct ScrapeArgs {
  std::vector<std::string> endpoints;
  std::string endpoints_file;
  std::string out;
  std::int64_t interval_ms = 1000;
  double request_timeout_s = 2.0;
  double duration_s = 0.0;
  int cpu_samples_schema = 0;  // 0: not given, the profile's
  std::string consumer_profile = "default";
  // TLS and Basic authentication (docs/security.md); the password only ever from a file.
  std::string tls_ca_file;
  std::string tls_cert_file;
  std::string tls_key_file;
  bool tls = false;
  std::string basic_auth_username;
  std::string basic_auth_password_file;
};

struct ScrapePlan {
  std::vector<scrape::Endpoint> endpoints;
  scrape::CollectorOptions options;
  std::optional<milliseconds> duration;
  std::string interval_warning;  // the interval can put sample gaps over the 3.0 s bound
};

// Everything CLI11 cannot check by itself; thrown as usage errors (exit 2).
ScrapePlan to_plan(const ScrapeArgs& args) {
  ScrapePlan plan;
  for (const auto& spec : args.endpoints) {
    auto endpoint = scrape::parse_endpoint(spec);
    if (!endpoint) throw CLI::ValidationError("--endpoint", endpoint.error());
    plan.endpoints.push_back(std::move(*endpoint));
  }
  if (!args.endpoints_file.empty()) {
    const auto text = common::read_small_file(args.endpoints_file, 16u << 20);
    if (!text) {
      throw CLI::ValidationError("--endpoints-file",
                                 "cannot read " + args.endpoints_file + ": " + text.error());
    }
    auto endpoints = scrape::parse_endpoints_text(*text);
    if (!endpoints)
      throw CLI::ValidationError("--endpoints-file", args.endpoints_file + " " + endpoints.error());
    for (auto& e : *endpoints) plan.endpoints.push_back(std::move(e));
  }
  if (plan.endpoints.empty()) {
    throw CLI::ValidationError(
        "--endpoint", "no endpoints: give --endpoint HOST=ADDR:PORT or --endpoints-file F");
  }
  std::set<std::string> hosts;
  for (const auto& e : plan.endpoints) {
    if (!hosts.insert(e.hostname).second) {
      throw CLI::ValidationError("--endpoint", "hostname '" + e.hostname +
                                                   "' given more than once (rows are keyed by it)");
    }
  }
  std::error_code ec;
  std::filesystem::create_directories(args.out, ec);
  if (ec || !std::filesystem::is_directory(args.out)) {
    throw CLI::ValidationError("--out", "cannot create directory " + args.out + ": " +
                                            (ec ? ec.message() : "not a directory"));
  }
  const auto given = [](const std::string& s) {
    return s.empty() ? std::nullopt : std::optional<std::string>(s);
  };
  const auto resolved = scrape::resolve_client_security(
      {given(args.tls_ca_file), given(args.tls_cert_file), given(args.tls_key_file), args.tls,
       given(args.basic_auth_username), given(args.basic_auth_password_file)});
  if (!resolved.security) {
    static const std::map<std::string_view, std::string> flags = {
        {"ca_file", "--tls-ca-file"},
        {"cert_file", "--tls-cert-file"},
        {"key_file", "--tls-key-file"},
        {"username", "--basic-auth-username"},
        {"password_file", "--basic-auth-password-file"}};
    throw CLI::ValidationError(flags.at(resolved.refused_key), resolved.why);
  }
  plan.options.security = *resolved.security;
  plan.options.out_dir = args.out;
  // This collector has no GPU leg: of a profile only the CPU schema applies.
  const auto schemas =
      launch::samples_schemas_for(args.consumer_profile, args.cpu_samples_schema, 0);
  if (!schemas) throw CLI::ValidationError("--consumer-profile", "unknown profile");
  plan.options.cpu_samples_schema = schemas->cpu;
  plan.options.collect_interval = milliseconds(args.interval_ms);
  plan.options.request_timeout = to_ms(args.request_timeout_s);
  if (plan.options.request_timeout.count() <= 0) {
    throw CLI::ValidationError("--request-timeout-s", "must be at least 0.001 s");
  }
  // Not refused: a scrape may serve something other than energy windows. Said at the start.
  plan.interval_warning = config::interval_gap_reason(
      args.interval_ms, args.request_timeout_s, "--interval-ms " + std::to_string(args.interval_ms),
      fmt::format("--request-timeout-s {}", args.request_timeout_s));
  if (args.duration_s > 0) plan.duration = to_ms(args.duration_s);
  return plan;
}

std::string status_text(const scrape::CollectorStats& stats) {
  std::uint64_t missed = 0;
  for (const auto& n : stats.nodes) missed += n.missed_slots;
  const auto failing = stats.nodes_failing();
  const auto ok = stats.nodes_ok();
  // A node answering with a socket missing is not ok: said only when there is one.
  const auto degraded = stats.nodes_degraded();
  // The nodes can all be fine while samples.csv is not (disk full, file deleted): say so.
  const auto samples = scrape::samples_health_text(stats);
  return fmt::format(
      "rows written {}, nodes ok {}{} / failing {}{}, missed slots {}{}", stats.rows_written, ok,
      degraded > 0 ? fmt::format(" / degraded {}", degraded) : std::string(), failing,
      ok + degraded + failing < stats.nodes.size()
          ? fmt::format(" / waiting {}", stats.nodes.size() - ok - degraded - failing)
          : std::string(),
      missed, samples.empty() ? std::string() : ", " + samples);
}

int run_scrape(const ScrapePlan& plan) {
  // Before any thread exists, so that the signals wait for us instead of killing the
  // process between two rows.
  common::block_shutdown_signals();
  common::ignore_sigpipe();  // a closed stdout loses the log, never the rows or the manifest
  auto log = common::logger("cpu_power::scrape");
  if (!plan.interval_warning.empty()) log->warn("{}", plan.interval_warning);
  scrape::Collector collector(plan.endpoints, plan.options);
  if (!started(collector.start())) return 1;

  // On a terminal, one status line redrawn in place; elsewhere (srun's .out files) a log
  // line now and then, since carriage returns make a mess of a file.
  const bool tty = ::isatty(STDOUT_FILENO) == 1;
  const milliseconds redraw = tty ? milliseconds(250) : milliseconds(10000);
  const auto started = Clock::now();
  std::string reason = "duration";
  while (true) {
    auto wait = redraw;
    if (plan.duration) {
      const auto left = std::chrono::ceil<milliseconds>(*plan.duration - (Clock::now() - started));
      if (left.count() <= 0) break;
      wait = std::min(wait, left);
    }
    if (const int sig = common::wait_shutdown_signal(wait)) {
      reason = common::signal_name(sig);
      break;
    }
    common::retire_closed_stdout();
    const auto text = status_text(collector.stats());
    if (tty) {
      std::fputs(("\r\033[K" + text).c_str(), stdout);
      std::fflush(stdout);
    } else if (!plan.duration || Clock::now() - started < *plan.duration) {
      log->info("status {}", text);
    }
  }
  if (tty) {
    std::fputs("\r\033[K", stdout);
    std::fflush(stdout);
  }
  log->info("stopping reason={}", reason);
  // A signal's stop must not wait out a request in flight (up to its timeout): the batch
  // system that sent it sends SIGKILL after its own wait, and the manifest would be lost.
  scrape::Finalized finalized;
  if (reason == "duration") {
    // A signal during this stop's drain still hurries it.
    std::atomic<bool> finalizing{true};
    std::thread hurry([&] {
      while (finalizing.load()) {
        if (common::wait_shutdown_signal(milliseconds(100))) collector.interrupt();
      }
    });
    finalized = collector.stop_and_finalize();
    finalizing.store(false);
    hurry.join();
  } else {
    finalized = collector.stop_and_finalize_interrupted();
  }
  const std::string& error = finalized.problems;
  if (!finalized) log->warn("finalize incomplete error={}", common::quoted(error));
  // The last line names only files that are there: a path that could not be written is said
  // to be missing, with why.
  const auto stats = collector.stats();
  std::error_code ec;
  const bool samples_there = std::filesystem::is_regular_file(collector.samples_path(), ec);
  const std::string samples =
      samples_there ? collector.samples_path()
                    : "none (" + collector.samples_path() + " not written" +
                          (stats.samples_failing ? ": " + *stats.samples_failing : "") + ")";
  const std::string manifest = collector.manifest_written()
                                   ? collector.manifest_path()
                                   : "none (" + collector.manifest_path() + " not written" +
                                         (error.empty() ? std::string() : ": " + error) + ")";
  log->info("finished {} samples={} manifest={}", status_text(stats), samples, manifest);
  return 0;  // best-effort: a collection problem never fails the caller
}

}  // namespace

void add_scrape_command(CLI::App& app, Action& action) {
  auto args = std::make_shared<ScrapeArgs>();
  auto* cmd = app.add_subcommand("scrape", "Scrape exporters into samples.csv and a manifest");
  cmd->add_option("--endpoint", args->endpoints,
                  "HOST=ADDR:PORT of one exporter, ADDR may be [IPv6] (repeatable)");
  cmd->add_option("--endpoints-file", args->endpoints_file,
                  "File with one HOST=ADDR:PORT per line; # starts a comment");
  cmd->add_option("--out", args->out, "Directory for samples.csv and cpu_manifest.json (created)")
      ->required();
  cmd->add_option("--interval-ms", args->interval_ms,
                  "Scrape interval per endpoint; one at which sample gaps can pass the 3.0 s "
                  "that energy windows allow is warned about at the start")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{3600000}))
      ->capture_default_str();
  cmd->add_option("--request-timeout-s", args->request_timeout_s,
                  "Deadline per request, connect and read together")
      ->check(CLI::Range(0.001, 3600.0))
      ->capture_default_str();
  add_duration_option(cmd, args->duration_s);
  add_cpu_samples_schema_option(cmd, args->cpu_samples_schema);
  add_consumer_profile_option(cmd, args->consumer_profile);
  cmd->add_flag("--tls", args->tls,
                "Scrape https:// (implied by the --tls-* files; alone: the system's trust store)");
  cmd->add_option("--tls-ca-file", args->tls_ca_file,
                  "CA certificate(s) (PEM) the exporters' certificates must chain to");
  cmd->add_option("--tls-cert-file", args->tls_cert_file,
                  "Client certificate (PEM) for exporters that require one; with --tls-key-file");
  cmd->add_option("--tls-key-file", args->tls_key_file, "Client certificate's private key (PEM)");
  cmd->add_option("--basic-auth-username", args->basic_auth_username,
                  "User for the exporters' Basic authentication");
  cmd->add_option("--basic-auth-password-file", args->basic_auth_password_file,
                  "File whose first line is that user's password (never on the command line)");
  cmd->callback([&action, args] {
    auto plan = std::make_shared<ScrapePlan>(to_plan(*args));
    action = [plan] { return run_scrape(*plan); };
  });
}

}  // namespace cpupower::app
