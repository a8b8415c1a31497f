#include "exporter/run.hpp"

#include <fmt/ranges.h>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <thread>

#include "common/log.hpp"
#include "common/signals.hpp"
#include "expo/writer.hpp"
#include "exporter/basic_auth.hpp"
#include "exporter/http_server.hpp"
#include "exporter/peer_log.hpp"
#include "exporter/render.hpp"
#include "exporter/service.hpp"
#include "exporter/web_config.hpp"
#include "sources/acpi_discovery.hpp"

namespace cpupower::exporter {
namespace {

int fail(const std::string& message) {
  std::fflush(stdout);
  std::cerr << "Error: " << message << std::endl;
  return 1;
}

// After the HTTP server has stopped, nothing a stuck reader thread holds matters: leave
// without running destructors that would wait for it.
[[noreturn]] void exit_now(int status) {
  std::fflush(stdout);
  std::fflush(stderr);
  std::_Exit(status);
}

}  // namespace

int run(const Options& o, std::string_view version) {
  // The web config is read before anything starts: a file that cannot be used is a usage
  // error, named with its field, and nothing is served.
  std::optional<WebConfig> web;
  if (!o.web_config_file.empty()) {
    auto loaded = load_web_config(o.web_config_file);
    if (!loaded) {
      std::cerr << "--web.config.file: " << loaded.error() << std::endl;
      return 2;
    }
    web = std::move(*loaded);
  }

  common::block_shutdown_signals();
  common::init_logging(*common::parse_log_level(o.log_level));
  auto log = common::logger("cpu_power_exporter");

  if (o.set_average_interval_ms != 0) {
    const std::chrono::milliseconds interval(o.set_average_interval_ms);
    log->warn(
        "setting the averaging interval of every ACPI power meter; this is system-wide: DCGM, "
        "other exporters and anything else reading these meters get it too interval_ms={} "
        "hwmon_root={}",
        interval.count(), common::quoted(o.hwmon_root));
    const auto change =
        sources::set_average_interval(o.hwmon_root, interval, std::chrono::seconds(10));
    for (const auto& f : change.failures) log->warn("cannot set the averaging interval {}", f);
    log->info("averaging interval set interval_ms={} written={} unchanged={} failed={}",
              interval.count(), change.written, change.unchanged, change.failures.size());
    if (!change.not_moved.empty()) {
      log->warn(
          "power meters still on their hwmon node 10 s after the write; read there, and followed "
          "if they re-register later sensors={}",
          fmt::join(change.not_moved, ","));
    }
    if (!change.not_back.empty()) {
      log->warn(
          "power meters that left their hwmon node and were not found again within 10 s; one "
          "still missing at the discovery that follows is not read or served (restart the "
          "exporter once it is back) sensors={}",
          fmt::join(change.not_back, ","));
    }
  }

  sources::LadderOptions ladder;
  ladder.read_interval = std::chrono::milliseconds(o.read_interval_ms);
  ladder.max_age = std::chrono::milliseconds(static_cast<long>(o.max_age_s * 1000.0));
  // Every body must stay within the collector's cap, however many power meters there are.
  ladder.max_channel_bytes = kMaxChannelBytes;
  ladder.channel_bytes = [](const sources::AcpiChannel& c) {
    return acpi_channel_bytes_bound(c.label_text, expo::label_text(expo::kSampleAge, {c.sensor}));
  };
  auto node = sources::open_node_sources(o, std::move(ladder));
  if (!node.base.source) return fail(node.base.error);
  std::vector<std::unique_ptr<sources::Source>> readers;
  readers.push_back(std::move(node.base.source));
  if (node.nvml) readers.push_back(std::move(node.nvml));
  Service service(std::move(readers), std::string(version));
  HttpServer server;
  HttpLimits limits;
  // Every connection takes a file descriptor: raise the soft limit as far as the hard one
  // allows, and serve fewer connections where even that is too low.
  const auto fitted = fit_connection_limit(limits.connection_limit);
  if (fitted.reduced) {
    log->warn(
        "file descriptor limit {} leaves room for {} connections, not {}; raise the hard "
        "RLIMIT_NOFILE (ulimit -Hn, systemd LimitNOFILE) to serve more",
        fitted.fd_limit, fitted.connections, limits.connection_limit);
  }
  limits.connection_limit = fitted.connections;
  HttpSecurity security;
  std::unique_ptr<BasicAuth> auth;
  auto peers = std::make_shared<PeerLogLimiter>();
  auto security_log = common::logger("cpu_power_exporter::security");
  if (web) {
    for (const auto& key : web->ignored) {
      log->warn("web config {}: {} is accepted and not applied by this exporter",
                common::quoted(web->file), key);
    }
    if (web->tls) {
      const auto& t = *web->tls;
      security.tls = HttpTls{t.cert_pem, t.key_pem, t.client_ca_pem,
                             gnutls_priorities(t.min_version, t.max_version), t.client_auth};
    }
    if (!web->users.empty()) {
      auth = std::make_unique<BasicAuth>(web->users);
      security.authorize = [a = auth.get()](const char* header) { return a->check(header); };
      security.authorize_cached = [a = auth.get()](const char* header) {
        return a->check_cached(header);
      };
    }
    // Each kind of refusal once per client address (bounded memory): a client retrying, or
    // a flood, cannot flood the log. Everything is counted and summed up at shutdown.
    security.on_event = [peers, security_log](const SecurityEvent& ev) {
      if (peers->first(ev.kind, ev.peer)) {
        security_log->warn("refused peer={} reason={} detail={} (logged once per peer and reason)",
                           ev.peer, ev.kind, common::quoted(ev.detail));
      }
    };
  }
  if (const Status started = server.start(
          o.bind, o.port,
          [&service](std::string_view method, std::string_view path) {
            return service.handle(method, path);
          },
          limits, security);
      !started) {
    return fail(started.error());
  }
  if (web) {
    const auto& t = web->tls;
    log->info(
        "web config file={} tls={} client_auth={} min_version={} max_version={} "
        "basic_auth_users={}",
        common::quoted(web->file), t ? "on" : "off", t ? client_auth_name(t->client_auth) : "-",
        t ? tls_version_name(t->min_version) : "-", t ? tls_version_name(t->max_version) : "-",
        web->users.size());
  }
  log->info("listening addr={}", server.address());

  const int sig = common::wait_shutdown_signal();
  log->info("received {}, shutting down", common::signal_name(sig));
  // A second thread bounds the whole shutdown: in-flight connections get at most 5 s.
  std::thread([log] {
    std::this_thread::sleep_for(std::chrono::seconds(5));
    log->warn("timed out draining in-flight connections; exiting");
    exit_now(0);
  }).detach();
  server.stop();
  if (server.expired_connections() + server.evicted_connections() +
          server.half_closed_connections() >
      0) {
    log->info(
        "slow clients: closed {} connections at the request deadline, {} to make room, {} "
        "half-closed by their client",
        server.expired_connections(), server.evicted_connections(),
        server.half_closed_connections());
  }
  if (web) {
    std::string counts;
    for (const auto& [kind, n] : peers->counts()) counts += " " + kind + "=" + std::to_string(n);
    if (!counts.empty()) {
      security_log->info("refused since start:{} (not logged: {})", counts, peers->suppressed());
    }
    if (auth) {
      security_log->info("basic auth bcrypt_runs={} cache_hits={}", auth->bcrypt_runs(),
                         auth->cache_hits());
    }
  }
  service.stop(std::chrono::milliseconds(500));
  exit_now(0);
}

}  // namespace cpupower::exporter
