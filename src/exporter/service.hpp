#pragma once
// The exporter's HTTP front: routes, content types, and the rendering of every source's
// snapshot (the base source, then NVML module power). Nothing here touches a sensor or a
// library, and nothing here knows which source it serves: each one's mode names its family.

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "exporter/http_server.hpp"
#include "sources/socket_watch.hpp"
#include "sources/source.hpp"

namespace cpupower::exporter {

inline constexpr std::string_view kMetricsContentType = "text/plain; version=0.0.4; charset=utf-8";

class Service {
 public:
  // `sources` are running; the first is the base source (acpi, rapl or dcgm), whose mode the
  // info metric reports. A source whose snapshot says unavailable is omitted, family and all.
  // The base source's sockets are watched from here on: a socket whose primary reading stops
  // is a WARN, and cpu_power_exporter_socket_up says so on every scrape.
  Service(std::vector<std::unique_ptr<sources::Source>> sources, std::string version);

  // GET/HEAD /metrics (query ignored) and /health; 404 for other paths; 405 with
  // Allow: GET, HEAD for other methods.
  HttpResponse handle(std::string_view method, std::string_view path);

  std::string render_metrics();
  void stop(std::chrono::milliseconds grace);

 private:
  std::vector<std::unique_ptr<sources::Source>> sources_;
  std::string version_;
  std::atomic<std::uint64_t> scrapes_total_{0};
  std::unique_ptr<sources::SocketWatch> socket_watch_;  // declared last: stopped first
};

}  // namespace cpupower::exporter
