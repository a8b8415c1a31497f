#include "report/gpu_data.hpp"

#include <map>

namespace cpupower::report {
namespace {

using TimeSums = std::map<double, double>;

Track sums_track(const TimeSums& sums) {
  std::vector<double> t, w;
  t.reserve(sums.size());
  w.reserve(sums.size());
  for (const auto& [time, watts] : sums) {
    t.push_back(time);
    w.push_back(watts);
  }
  return make_track(t, w);
}

struct DeviceRows {
  std::vector<double> t, w;
  std::array<std::pair<std::vector<double>, std::vector<double>>, artifacts::kGpuUtils> util;
};

}  // namespace

GpuData build_gpu_data(const artifacts::GpuSamplesFile& file, const artifacts::GpuRoles& roles) {
  GpuData data;
  std::map<std::pair<std::string, long long>, DeviceRows> devices;
  std::map<std::string, TimeSums> nodes;
  std::map<std::pair<std::string, std::string>, TimeSums> role_sums;  // (role, host)
  for (const auto& row : file.rows) {
    const std::string& host = file.hosts[row.host];
    DeviceRows& d = devices[{host, row.gpu_index}];
    for (std::size_t i = 0; i < artifacts::kGpuUtils; ++i) {
      if (!row.util[i]) continue;
      d.util[i].first.push_back(row.timestamp_unix);
      d.util[i].second.push_back(*row.util[i]);
    }
    if (!row.power_w) continue;  // a blank power cell is a missing sample, not 0 W
    d.t.push_back(row.timestamp_unix);
    d.w.push_back(*row.power_w);
    nodes[host][row.timestamp_unix] += *row.power_w;
    const auto assigned = roles.find({host, row.gpu_index});
    if (assigned == roles.end()) continue;
    for (const auto& role : assigned->second) {
      role_sums[{role, host}][row.timestamp_unix] += *row.power_w;
    }
  }
  for (auto& [key, rows] : devices) {
    GpuDevice dev;
    dev.host = key.first;
    dev.index = key.second;
    stable_sort_by_time(rows.t, rows.w, false);
    dev.power = make_track(std::move(rows.t), std::move(rows.w));
    for (std::size_t i = 0; i < artifacts::kGpuUtils; ++i) {
      auto& [ut, uv] = rows.util[i];
      if (ut.empty()) continue;
      stable_sort_by_time(ut, uv, false);
      dev.util[i] = make_track(std::move(ut), std::move(uv));
    }
    const auto assigned = roles.find(key);
    if (assigned != roles.end()) dev.roles = assigned->second;
    data.devices.push_back(std::move(dev));
  }
  for (const auto& [host, sums] : nodes) data.nodes.push_back({host, "", sums_track(sums)});
  for (const auto& [key, sums] : role_sums) {
    data.roles.push_back({key.second, key.first, sums_track(sums)});
  }
  return data;
}

}  // namespace cpupower::report
