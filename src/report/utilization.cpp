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

struct Group {
  std::vector<double> means;
  double max = 0;
  std::size_t samples = 0;
};

// A row per item (socket or GPU) and column in `order`, or a warning when the column has no
// sample inside the window; then a row per (group, column) over the groups each item is in,
// the mean of its items' means.
template <class Items, class Columns, class GroupsOf>
void summarize(const Items& items, const Columns& columns, const std::vector<std::size_t>& order,
               double start, double end, GroupsOf groups_of, std::vector<UtilRow>* rows,
               std::vector<std::string>* warnings) {
  std::map<std::pair<std::string, std::string>, Group> groups;
  for (const auto& item : items) {
    for (const std::size_t i : order) {
      if (!item.util[i]) continue;
      const Track& track = *item.util[i];
      const auto& t = *track.t;
      const auto b = std::lower_bound(t.begin(), t.end(), start) - t.begin();
      const auto e = std::upper_bound(t.begin(), t.end(), end) - t.begin();
      const std::string column(columns[i]);
      if (e <= b) {
        warnings->push_back(item.label() + " " + column +
                            ": no samples inside the window, utilization not reported");
        continue;
      }
      const std::span<const double> inside(track.v.data() + b, static_cast<std::size_t>(e - b));
      const UtilRow row{item.label(), column,
                        numpy_sum(inside) / static_cast<double>(inside.size()),
                        *std::max_element(inside.begin(), inside.end()), inside.size()};
      rows->push_back(row);
      for (const std::string& label : groups_of(item)) {
        Group& g = groups[{label, column}];
        g.max = g.means.empty() ? row.max : std::max(g.max, row.max);
        g.means.push_back(row.mean);
        g.samples += row.samples;
      }
    }
  }
  for (const auto& [key, g] : groups) {
    rows->push_back({key.first, key.second,
                     numpy_sum(g.means) / static_cast<double>(g.means.size()), g.max, g.samples});
  }
}

}  // namespace

void summarize_utilization(const RunData& run, WindowReport& r,
                           std::vector<std::string>* cpu_warnings,
                           std::vector<std::string>* gpu_warnings) {
  const double start = r.window.start_unix, end = r.window.end_unix;
  if (run.cpu) {
    // Columns in name order: irq, nice, sys, total, user.
    std::vector<std::size_t> order(artifacts::kUtils);
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::sort(order.begin(), order.end(), [](std::size_t a, std::size_t b) {
      return artifacts::kCpuUtilColumns[a] < artifacts::kCpuUtilColumns[b];
    });
    const auto groups_of = [](const CpuSocket& s) { return std::vector{"cpu/" + s.host}; };
    summarize(run.cpu->sockets, artifacts::kCpuUtilColumns, order, start, end, groups_of,
              &r.cpu_utilization, cpu_warnings);
  }
  if (run.gpu) {
    std::vector<std::size_t> order(artifacts::kGpuUtils);
    std::iota(order.begin(), order.end(), std::size_t{0});
    const auto groups_of = [](const GpuDevice& d) {
      std::vector<std::string> out{"gpu/" + d.host};
      for (const auto& role : d.roles) out.push_back("gpu/" + d.host + "/" + role);
      return out;
    };
    summarize(run.gpu->devices, artifacts::kGpuUtilColumns, order, start, end, groups_of,
              &r.gpu_utilization, gpu_warnings);
  }
}

}  // namespace cpupower::report
