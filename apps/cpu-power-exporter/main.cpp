// cpu-power-exporter: per-node Prometheus exporter of Grace CPU power. A drop-in for the
// reference binary: same flags, metric families, labels and exit codes (usage errors 2,
// startup failures "Error: <message>" and 1, clean shutdown on SIGINT/SIGTERM 0). With
// --web.config.file it serves TLS and/or Basic authentication (docs/security.md); a web config
// that cannot be used is a usage error (2), like any other bad flag.

#include <arpa/inet.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <thread>

#include "common/log.hpp"
#include "common/signals.hpp"
#include "common/version.hpp"
#include "expo/writer.hpp"
#include "exporter/basic_auth.hpp"
#include "exporter/http_server.hpp"
#include "exporter/peer_log.hpp"
#include "exporter/render.hpp"
#include "exporter/service.hpp"
#include "exporter/web_config.hpp"
#include "sources/acpi_discovery.hpp"
#include "sources/ladder.hpp"
#include "sources/nvml.hpp"

namespace {

using namespace cpupower;

struct Options {
  std::uint16_t port = 9405;
  std::string bind = "0.0.0.0";
  std::string hwmon_root = "/sys/class/hwmon";
  std::string pci_root = "/sys/bus/pci/devices";
  std::string source = "auto";
  unsigned read_interval_ms = 100;
  double max_age_s = 3.0;
  std::string log_level = "info";
  std::string dcgm_lib;
  std::string nvml_lib;
  bool no_nvml = false;
  unsigned set_average_interval_ms = 0;  // 0: leave the firmware's interval alone
  std::string web_config_file;           // empty: plain HTTP, no authentication
};

bool is_ip_literal(const std::string& s) {
  unsigned char buf[16];
  return inet_pton(AF_INET, s.c_str(), buf) == 1 || inet_pton(AF_INET6, s.c_str(), buf) == 1;
}

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

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"Grace CPU power exporter for Prometheus / AIPerf server-metrics"};
  app.name("cpu-power-exporter");
  app.set_version_flag("-V,--version", std::string("cpu-power-exporter ") + kVersion);
  app.add_option("--port", o.port, "Listen port (0 picks a free one)")->capture_default_str();
  app.add_option("--bind", o.bind, "Listen address, an IPv4 or IPv6 literal")
      ->capture_default_str()
      ->check([](const std::string& s) {
        return is_ip_literal(s) ? std::string() : "not an IP address literal: " + s;
      });
  app.add_option("--hwmon-root", o.hwmon_root, "hwmon class directory (override for testing)")
      ->capture_default_str();
  app.add_option("--pci-root", o.pci_root, "PCI devices directory, for GPU NUMA nodes")
      ->capture_default_str();
  app.add_option("--source", o.source,
                 "CPU power source: auto (live ACPI, then DCGM), acpi or dcgm")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "acpi", "dcgm"}));
  app.add_option("--read-interval-ms", o.read_interval_ms,
                 "Sensor read cadence, measured from the start of each cycle")
      ->capture_default_str()
      ->check(CLI::Range(1u, 3600000u));
  app.add_option("--max-age-s", o.max_age_s,
                 "Withhold a sensor whose last good reading is older than this")
      ->capture_default_str()
      ->check(CLI::Range(0.001, 86400.0));
  app.add_option("--dcgm-lib", o.dcgm_lib,
                 "DCGM library to load (default: libdcgm.so.4, .so.3, then .so)");
  app.add_option("--nvml-lib", o.nvml_lib,
                 "NVML library to load (default: libnvidia-ml.so.1, then .so)");
  app.add_flag("--no-nvml", o.no_nvml, "Do not serve NVML superchip module power");
  app.add_option("--set-average-interval-ms", o.set_average_interval_ms,
                 "Write this averaging interval (50 or 1000) to every ACPI power meter once at "
                 "start. System-wide: DCGM and every other reader of the meters see it too")
      ->check(CLI::IsMember({50u, 1000u}));
  app.add_option("--web.config.file", o.web_config_file,
                 "Prometheus exporter-toolkit web config (TLS, client certificates, basic auth); "
                 "see docs/security.md");
  app.add_option("--log-level", o.log_level, "trace, debug, info, warn or error")
      ->capture_default_str()
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "off"}));

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return 2;
  }

  // The web config is read before anything starts: a file that cannot be used is a usage
  // error, named with its field, and nothing is served.
  std::optional<exporter::WebConfig> web;
  if (!o.web_config_file.empty()) {
    std::string error;
    web = exporter::load_web_config(o.web_config_file, &error);
    if (!web) {
      std::cerr << "--web.config.file: " << error << std::endl;
      return 2;
    }
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
    if (!change.settled) {
      log->warn(
          "not every power meter re-registered and came back within 10 s; its readings follow "
          "it once it does");
    }
  }

  sources::LadderOptions ladder;
  ladder.request = *sources::parse_source_request(o.source);
  ladder.hwmon_root = o.hwmon_root;
  ladder.read_interval = std::chrono::milliseconds(o.read_interval_ms);
  ladder.max_age = std::chrono::milliseconds(static_cast<long>(o.max_age_s * 1000.0));
  ladder.dcgm.library = o.dcgm_lib;
  ladder.dcgm.max_age = ladder.max_age;
  // Every body must stay within the collector's cap, however many power meters there are.
  ladder.max_channel_bytes = exporter::kMaxChannelBytes;
  ladder.channel_bytes = [](const sources::AcpiChannel& c) {
    return exporter::acpi_channel_bytes_bound(
        c.label_text, "sensor=\"" + expo::escape_label_value(c.sensor) + "\"");
  };
  auto resolved = sources::resolve_source(ladder);
  if (!resolved.error.empty()) return fail(resolved.error);

  std::vector<std::unique_ptr<sources::Source>> readers;
  const auto cpu_sockets = resolved.cpu_sockets();
  readers.push_back(std::move(resolved.source));
  if (!o.no_nvml) {
    sources::NvmlOptions n;
    n.library = o.nvml_lib;
    n.pci_root = o.pci_root;
    n.cpu_sockets = cpu_sockets;
    readers.push_back(std::make_unique<sources::NvmlModuleReader>(std::move(n)));
    readers.back()->start();
  }
  exporter::Service service(std::move(readers), kVersion);
  exporter::HttpServer server;
  exporter::HttpLimits limits;
  // Every connection takes a file descriptor: raise the soft limit as far as the hard one
  // allows, and serve fewer connections where even that is too low.
  const auto fitted = exporter::fit_connection_limit(limits.connection_limit);
  if (fitted.reduced) {
    log->warn(
        "file descriptor limit {} leaves room for {} connections, not {}; raise the hard "
        "RLIMIT_NOFILE (ulimit -Hn, systemd LimitNOFILE) to serve more",
        fitted.fd_limit, fitted.connections, limits.connection_limit);
  }
  limits.connection_limit = fitted.connections;
  exporter::HttpSecurity security;
  std::unique_ptr<exporter::BasicAuth> auth;
  auto peers = std::make_shared<exporter::PeerLogLimiter>();
  auto security_log = common::logger("cpu_power_exporter::security");
  if (web) {
    for (const auto& key : web->ignored) {
      log->warn("web config {}: {} is accepted and not applied by this exporter",
                common::quoted(web->file), key);
    }
    if (web->tls) {
      const auto& t = *web->tls;
      security.tls = exporter::HttpTls{t.cert_pem, t.key_pem, t.client_ca_pem,
                                       exporter::gnutls_priorities(t.min_version, t.max_version),
                                       t.client_auth};
    }
    if (!web->users.empty()) {
      auth = std::make_unique<exporter::BasicAuth>(web->users);
      security.authorize = [a = auth.get()](const char* header) { return a->check(header); };
      security.authorize_cached = [a = auth.get()](const char* header) {
        return a->check_cached(header);
      };
    }
    // Each kind of refusal once per client address (bounded memory): a client retrying, or
    // a flood, cannot flood the log. Everything is counted and summed up at shutdown.
    security.on_event = [peers, security_log](const exporter::SecurityEvent& ev) {
      if (peers->first(ev.kind, ev.peer)) {
        security_log->warn("refused peer={} reason={} detail={} (logged once per peer and reason)",
                           ev.peer, ev.kind, common::quoted(ev.detail));
      }
    };
  }
  std::string error;
  if (!server.start(
          o.bind, o.port,
          [&service](std::string_view method, std::string_view path) {
            return service.handle(method, path);
          },
          limits, &error, security)) {
    return fail(error);
  }
  if (web) {
    const auto& t = web->tls;
    log->info(
        "web config file={} tls={} client_auth={} min_version={} max_version={} "
        "basic_auth_users={}",
        common::quoted(web->file), t ? "on" : "off",
        t ? exporter::client_auth_name(t->client_auth) : "-",
        t ? exporter::tls_version_name(t->min_version) : "-",
        t ? exporter::tls_version_name(t->max_version) : "-", web->users.size());
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
