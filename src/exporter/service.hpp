#pragma once
// The exporter's HTTP front: routes, content types, and the rendering of the resolved
// source's snapshot plus NVML module power. Nothing here touches a sensor or a library.

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "exporter/http_server.hpp"
#include "sources/ladder.hpp"
#include "sources/nvml.hpp"

namespace cpupower::exporter {

inline constexpr std::string_view kMetricsContentType = "text/plain; version=0.0.4; charset=utf-8";

class Service {
 public:
  // `nvml` may be null (module power not requested).
  Service(sources::ResolvedSource source, std::unique_ptr<sources::NvmlModuleReader> nvml,
          std::string version);

  // GET/HEAD /metrics (query ignored) and /health; 404 for other paths; 405 with
  // Allow: GET, HEAD for other methods.
  HttpResponse handle(std::string_view method, std::string_view path);

  std::string render_metrics();
  void stop(std::chrono::milliseconds grace);

 private:
  sources::ResolvedSource source_;
  std::unique_ptr<sources::NvmlModuleReader> nvml_;
  std::string version_;
  std::vector<std::string> self_labels_;  // escaped label text per base-source row
  std::atomic<std::uint64_t> scrapes_total_{0};
};

}  // namespace cpupower::exporter
