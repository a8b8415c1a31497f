#include "exporter/service.hpp"

#include "exporter/render.hpp"

namespace cpupower::exporter {

Service::Service(sources::ResolvedSource source, std::string version)
    : source_(std::move(source)), version_(std::move(version)) {}

std::string Service::render_metrics() {
  const auto scrapes = ++scrapes_total_;
  std::string out;
  out.reserve(4096);
  std::vector<sources::ChannelReading> readings;
  static const std::vector<sources::AcpiChannel> kNone;
  const auto& channels = source_.acpi ? source_.acpi->channels() : kNone;
  if (source_.acpi) {
    readings = source_.acpi->snapshot();
    render_acpi_family(out, channels, readings);
  }
  render_self_metrics(out, channels, readings, {version_, source_.mode, scrapes});
  return out;
}

HttpResponse Service::handle(std::string_view method, std::string_view path) {
  if (method != "GET" && method != "HEAD") {
    return {405, "text/plain", "Method Not Allowed\n", "GET, HEAD"};
  }
  if (const auto q = path.find('?'); q != std::string_view::npos) path = path.substr(0, q);
  if (path == "/metrics") return {200, std::string(kMetricsContentType), render_metrics(), {}};
  if (path == "/health") return {200, "text/plain", "ok\n", {}};
  return {404, "text/plain", "Not Found\n", {}};
}

}  // namespace cpupower::exporter
