#include "exporter/service.hpp"

#include <deque>

#include "expo/writer.hpp"
#include "exporter/render.hpp"

namespace cpupower::exporter {

Service::Service(std::vector<std::unique_ptr<sources::Source>> sources, std::string version)
    : sources_(std::move(sources)), version_(std::move(version)) {
  if (!sources_.empty()) {
    socket_watch_ =
        std::make_unique<sources::SocketWatch>(*sources_.front(), std::chrono::milliseconds(250));
  }
}

std::string Service::render_metrics() {
  const auto scrapes = ++scrapes_total_;
  const auto now = std::chrono::steady_clock::now();
  std::string out;
  out.reserve(4096);
  std::vector<sources::Snapshot> snapshots;
  snapshots.reserve(sources_.size());
  std::vector<SelfRow> rows;
  std::deque<std::string> interval_labels;  // stable addresses for the rows' label views
  SelfStats stats;
  for (const auto& source : sources_) {
    auto& snap = snapshots.emplace_back(source->snapshot(now));
    if (!snap.available) continue;
    stats.modules.insert(stats.modules.end(), snap.modules.begin(), snap.modules.end());
    render_family(out, source->family(), snap);
    render_counter_families(out, source->counters(), snap);
    const auto& sensors = *snap.sensors;
    for (std::size_t i = 0; i < sensors.size() && i < snap.readings.size(); ++i) {
      if (!sensors[i].power) continue;
      if (!sensors[i].self_label_text.empty()) {
        rows.push_back({sensors[i].self_label_text, snap.readings[i]});
      } else if (snap.readings[i].average_interval_s) {
        // No self metrics (NVML), but its averaging window is published.
        const auto& label = interval_labels.emplace_back(
            expo::label_text(expo::kAverageInterval, {sensors[i].name}));
        rows.push_back({label, snap.readings[i], true});
      }
    }
  }
  stats.version = version_;
  stats.source = sources_.empty() ? "" : sources_.front()->mode();
  stats.scrapes_total = scrapes;
  if (!snapshots.empty() && snapshots.front().available) {
    stats.sockets = sources::socket_states(snapshots.front());
  }
  render_self_metrics(out, rows, stats);
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
  if (socket_watch_) socket_watch_->stop();
  for (auto it = sources_.rbegin(); it != sources_.rend(); ++it) (*it)->stop(grace);
}

}  // namespace cpupower::exporter
