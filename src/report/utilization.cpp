// Utilization is a gauge: averaged over the samples inside the window (inclusive), never
// integrated and never snapped.

#include <algorithm>
#include <map>
#include <numeric>

#include "artifacts/gpu_samples.hpp"
#include "artifacts/host_samples.hpp"
#include "report/numeric.hpp"
#include "report/window_report.hpp"

namespace cpupower::report {
namespace {

std::optional<UtilRow> summarize(const Track& track, double start, double end) {
  const auto& t = *track.t;
  const auto b = std::lower_bound(t.begin(), t.end(), start) - t.begin();
  const auto e = std::upper_bound(t.begin(), t.end(), end) - t.begin();
  if (e <= b) return std::nullopt;
  const std::span<const double> inside(track.v.data() + b, static_cast<std::size_t>(e - b));
  UtilRow row;
  row.samples = inside.size();
  row.mean = numpy_sum(inside) / static_cast<double>(inside.size());
  row.max = *std::max_element(inside.begin(), inside.end());
  return row;
}

struct Group {
  std::vector<double> means;
  double max = 0;
  std::size_t samples = 0;
};

void add_to_group(std::map<std::pair<std::string, std::string>, Group>& groups,
                  const std::string& label, const UtilRow& row) {
  Group& g = groups[{label, row.column}];
  g.max = g.means.empty() ? row.max : std::max(g.max, row.max);
  g.means.push_back(row.mean);
  g.samples += row.samples;
}

void append_groups(const std::map<std::pair<std::string, std::string>, Group>& groups,
                   std::vector<UtilRow>* rows) {
  for (const auto& [key, g] : groups) {
    rows->push_back({key.first, key.second,
                     numpy_sum(g.means) / static_cast<double>(g.means.size()), g.max, g.samples});
  }
}

std::string no_samples(const std::string& label, std::string_view column) {
  return label + " " + std::string(column) +
         ": no samples inside the window, utilization not reported";
}

}  // namespace

void summarize_cpu_utilization(const CpuData& cpu, double start, double end,
                               std::vector<UtilRow>* rows, std::vector<std::string>* warnings) {
  // Columns in name order: irq, nice, sys, total, user.
  std::vector<std::size_t> order(artifacts::kUtils);
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::sort(order.begin(), order.end(), [](std::size_t a, std::size_t b) {
    return artifacts::kCpuUtilColumns[a] < artifacts::kCpuUtilColumns[b];
  });
  std::map<std::pair<std::string, std::string>, Group> groups;
  for (const auto& socket : cpu.sockets) {
    for (const std::size_t i : order) {
      if (!socket.util[i]) continue;
      auto row = summarize(*socket.util[i], start, end);
      const std::string column(artifacts::kCpuUtilColumns[i]);
      if (!row) {
        warnings->push_back(no_samples(socket.label(), column));
        continue;
      }
      row->label = socket.label();
      row->column = column;
      rows->push_back(*row);
      add_to_group(groups, "cpu/" + socket.host, *row);
    }
  }
  append_groups(groups, rows);
}

void summarize_gpu_utilization(const GpuData& gpu, double start, double end,
                               std::vector<UtilRow>* rows, std::vector<std::string>* warnings) {
  std::map<std::pair<std::string, std::string>, Group> groups;
  for (const auto& dev : gpu.devices) {
    for (std::size_t i = 0; i < artifacts::kGpuUtils; ++i) {
      if (!dev.util[i]) continue;
      auto row = summarize(*dev.util[i], start, end);
      const std::string column(artifacts::kGpuUtilColumns[i]);
      if (!row) {
        warnings->push_back(no_samples(dev.label(), column));
        continue;
      }
      row->label = dev.label();
      row->column = column;
      rows->push_back(*row);
      add_to_group(groups, "gpu/" + dev.host, *row);
      for (const auto& role : dev.roles) add_to_group(groups, "gpu/" + dev.host + "/" + role, *row);
    }
  }
  append_groups(groups, rows);
}

}  // namespace cpupower::report
