#include "store/series.hpp"

#include <algorithm>

namespace cpupower::store {

std::string_view label(const Labels& labels, std::string_view name) {
  const auto it = labels.find(std::string(name));
  return it == labels.end() ? std::string_view() : std::string_view(it->second);
}

std::string series_name(const Labels& labels) {
  std::string out(label(labels, "__name__"));
  out += '{';
  bool first = true;
  for (const auto& [k, v] : labels) {
    if (k == "__name__") continue;
    out += (first ? "" : ", ") + k + "=\"" + v + "\"";
    first = false;
  }
  return out + '}';
}

std::string instance_host(std::string_view instance) {
  if (!instance.empty() && instance.front() == '[') {
    const auto close = instance.find(']');
    if (close != std::string_view::npos) return std::string(instance.substr(1, close - 1));
  }
  const auto colon = instance.rfind(':');
  // One colon: host:port. More (a bare IPv6 address) or none: the whole label.
  if (colon != std::string_view::npos && instance.find(':') == colon) {
    return std::string(instance.substr(0, colon));
  }
  return std::string(instance);
}

std::string node_of(const Labels& labels) {
  const auto node = label(labels, "node");
  if (!node.empty()) return std::string(node);
  return instance_host(label(labels, "instance"));
}

std::string gpu_node_of(const Labels& labels) {
  const auto node = label(labels, "node");
  if (!node.empty()) return std::string(node);
  const auto host = label(labels, "Hostname");
  if (!host.empty()) return std::string(host);
  return instance_host(label(labels, "instance"));
}

std::vector<RawSeries> merge_ignoring(std::vector<RawSeries> series, std::string_view ignored) {
  std::map<Labels, std::vector<std::size_t>> groups;  // members in input order
  for (std::size_t i = 0; i < series.size(); ++i) {
    Labels key = series[i].metric;
    key.erase(std::string(ignored));
    groups[std::move(key)].push_back(i);
  }
  std::vector<RawSeries> out;
  out.reserve(groups.size());
  for (auto& [key, members] : groups) {
    RawSeries merged;
    merged.metric = key;
    if (members.size() == 1) {
      merged.samples = std::move(series[members[0]].samples);
      out.push_back(std::move(merged));
      continue;
    }
    // Every member's samples, by time; a stable sort keeps the first member's first.
    struct At {
      double t, v;
      std::size_t member;
    };
    std::vector<At> all;
    for (std::size_t m = 0; m < members.size(); ++m) {
      const Samples& s = series[members[m]].samples;
      for (std::size_t i = 0; i < s.size(); ++i) all.push_back({s.t[i], s.v[i], m});
    }
    std::stable_sort(all.begin(), all.end(), [](const At& a, const At& b) {
      return a.t < b.t || (a.t == b.t && a.member < b.member);
    });
    for (const At& a : all) {
      if (!merged.samples.t.empty() && merged.samples.t.back() == a.t) continue;
      merged.samples.t.push_back(a.t);
      merged.samples.v.push_back(a.v);
    }
    out.push_back(std::move(merged));
  }
  return out;
}

}  // namespace cpupower::store
