// cpu-power-exporter: per-node Prometheus exporter of Grace CPU power. A drop-in for the
// upstream binary: same flags, metric families, labels and exit codes (usage errors 2,
// startup failures "Error: <message>" and 1, clean shutdown on SIGINT/SIGTERM 0). With
// --web.config.file it serves TLS and/or Basic authentication (docs/security.md); a web config
// that cannot be used is a usage error (2), like any other bad flag.

#include <arpa/inet.h>

#include <CLI/CLI.hpp>

#include "common/version.hpp"
#include "exporter/run.hpp"

namespace {

bool is_ip_literal(const std::string& s) {
  unsigned char buf[16];
  return inet_pton(AF_INET, s.c_str(), buf) == 1 || inet_pton(AF_INET6, s.c_str(), buf) == 1;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace cpupower;
  exporter::Options o;
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
  app.add_option("--powercap-root", o.powercap_root,
                 "powercap class directory, for x86 RAPL (override for testing)")
      ->capture_default_str();
  app.add_option("--pci-root", o.pci_root, "PCI devices directory, for GPU NUMA nodes")
      ->capture_default_str();
  app.add_option("--source", o.source, "CPU power source: " + sources::source_help())
      ->capture_default_str()
      ->check(CLI::IsMember(sources::source_choices()));
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

  return exporter::run(o, kVersion);
}
