#include "exporter/service.hpp"

#include "expo/writer.hpp"
#include "exporter/render.hpp"

namespace cpupower::exporter {

Service::Service(sources::ResolvedSource source, std::unique_ptr<sources::NvmlModuleReader> nvml,
                 std::string version)
    : source_(std::move(source)), nvml_(std::move(nvml)), version_(std::move(version)) {
  if (source_.acpi) {
    for (const auto& c : source_.acpi->channels()) {
      self_labels_.push_back("sensor=\"" + expo::escape_label_value(c.sensor) + "\"");
    }
  }
  if (source_.dcgm) {
    for (const auto& r : source_.dcgm->rows()) {
      const auto e = std::to_string(r.entity), f = std::to_string(r.field);
      self_labels_.push_back("sensor=\"dcgm/cpu" + e + "/" + f + "\",socket=\"" + e +
                             "\",field_id=\"" + f + "\",source=\"dcgm\"");
    }
  }
}

std::string Service::render_metrics() {
  const auto scrapes = ++scrapes_total_;
  const auto now = std::chrono::steady_clock::now();
  std::string out;
  out.reserve(4096);
  std::vector<sources::ChannelReading> readings;
  if (source_.acpi) {
    readings = source_.acpi->snapshot(now);
    render_acpi_family(out, source_.acpi->channels(), readings);
  } else if (source_.dcgm) {
    readings = source_.dcgm->snapshot(now);
    render_dcgm_family(out, source_.dcgm->rows(), readings);
  }
  if (nvml_ && nvml_->available()) render_nvml_family(out, nvml_->snapshot(now));
  std::vector<SelfRow> rows;
  rows.reserve(readings.size());
  for (std::size_t i = 0; i < readings.size() && i < self_labels_.size(); ++i) {
    rows.push_back({self_labels_[i], readings[i]});
  }
  render_self_metrics(out, rows, {version_, source_.mode, scrapes});
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

void Service::stop(std::chrono::milliseconds grace) {
  if (nvml_) nvml_->stop(grace);
  if (source_.acpi) source_.acpi->stop(grace);
  if (source_.dcgm) source_.dcgm->stop(grace);
}

}  // namespace cpupower::exporter
