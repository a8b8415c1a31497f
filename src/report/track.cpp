#include "report/track.hpp"

#include <algorithm>
#include <numeric>

namespace cpupower::report {

Track::Track(Times times, std::vector<double> values)
    : t(std::move(times)),
      v(std::move(values)),
      any_value_(std::any_of(v.begin(), v.end(), [](double x) { return !std::isnan(x); })) {}

std::size_t gather(const Track& track, std::size_t begin, std::size_t end, double* times_out,
                   double* values_out) {
  std::size_t n = 0;
  for (std::size_t i = begin; i < end; ++i) {
    // Every entry is written and the output advanced past values only: no branch per sample.
    times_out[n] = (*track.t)[i];
    values_out[n] = track.v[i];
    n += std::isnan(track.v[i]) ? 0 : 1;
  }
  return n;
}

void stable_sort_by_time(std::vector<double>& t, std::vector<double>& w, bool keep_last) {
  // Collector files are written in time order, so the common case costs one pass.
  if (!std::is_sorted(t.begin(), t.end())) {
    std::vector<std::size_t> order(t.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return t[a] < t[b]; });
    std::vector<double> st(t.size()), sw(w.size());
    for (std::size_t i = 0; i < order.size(); ++i) {
      st[i] = t[order[i]];
      sw[i] = w[order[i]];
    }
    t = std::move(st);
    w = std::move(sw);
  }
  if (!keep_last) return;
  std::size_t out = 0;
  for (std::size_t i = 0; i < t.size(); ++i) {
    if (out > 0 && t[out - 1] == t[i]) {
      w[out - 1] = w[i];
      continue;
    }
    t[out] = t[i];
    w[out] = w[i];
    ++out;
  }
  t.resize(out);
  w.resize(out);
}

Track make_track(std::vector<double> t, std::vector<double> v) {
  return Track(std::make_shared<const std::vector<double>>(std::move(t)), std::move(v));
}

}  // namespace cpupower::report
