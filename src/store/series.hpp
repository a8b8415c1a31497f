#pragma once
// A metrics store's series as the report reads them: a label set and raw samples, ascending in
// time. Who a series belongs to (the node) and which series are one counter.

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace cpupower::store {

using Labels = std::map<std::string, std::string>;  // __name__ included, as the store gives it

// Raw samples, ascending in time (seconds since the epoch).
struct Samples {
  std::vector<double> t, v;
  std::size_t size() const { return t.size(); }
  bool empty() const { return t.empty(); }
};

struct RawSeries {
  Labels metric;
  Samples samples;
};

// The label's value, or "" when the series has none (Prometheus treats both alike).
std::string_view label(const Labels& labels, std::string_view name);

// `name{a="x", b="y"}` for messages, the labels sorted; `__name__` is the name in front.
std::string series_name(const Labels& labels);

// The host part of an `instance` label: `host:port` -> host, `[v6]:port` -> v6.
std::string instance_host(std::string_view instance);

// The node a series belongs to: its `node` label (the run's discovery file gives every
// exporter target one), else the host part of `instance`. GPU series (dcgm-exporter) say
// theirs in `Hostname` before `instance`.
std::string node_of(const Labels& labels);
std::string gpu_node_of(const Labels& labels);

// Series whose label sets differ only in `ignored` are one counter: NVML's module counter
// starts a new series under a new `gpus` label and carries on the same value. Each group
// becomes one series (its labels without `ignored`) holding every sample of its members by
// time; where two members have a sample at the same time the first member's is kept. The
// groups come in the order of their labels.
std::vector<RawSeries> merge_ignoring(std::vector<RawSeries> series, std::string_view ignored);

}  // namespace cpupower::store
