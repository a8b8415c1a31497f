#pragma once
// The exporter's HTTP front: routes, content types, and the rendering of the resolved
// source's snapshot. Nothing here touches a sensor.

#include <atomic>
#include <string>

#include "exporter/http_server.hpp"
#include "sources/ladder.hpp"

namespace cpupower::exporter {

inline constexpr std::string_view kMetricsContentType = "text/plain; version=0.0.4; charset=utf-8";

class Service {
 public:
  Service(sources::ResolvedSource source, std::string version);

  // GET/HEAD /metrics (query ignored) and /health; 404 for other paths; 405 with
  // Allow: GET, HEAD for other methods.
  HttpResponse handle(std::string_view method, std::string_view path);

  std::string render_metrics();
  const sources::ResolvedSource& source() const { return source_; }

 private:
  sources::ResolvedSource source_;
  std::string version_;
  std::atomic<std::uint64_t> scrapes_total_{0};
};

}  // namespace cpupower::exporter
