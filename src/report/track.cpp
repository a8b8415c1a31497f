#include "report/track.hpp"

#include <algorithm>
#include <numeric>

namespace cpupower::report {

bool Track::any_value() const {
  signed char known = any_value_.load(std::memory_order_relaxed);
  if (known < 0) {
    known = v.any_value() ? 1 : 0;
    any_value_.store(known, std::memory_order_relaxed);
  }
  return known == 1;
}

void stable_sort_by_time(Doubles& t, Doubles& w, bool keep_last) {
  // Collector files are written in time order, so the common case costs one pass.
  if (!std::is_sorted(t.begin(), t.end())) {
    std::vector<std::size_t> order(t.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return t[a] < t[b]; });
    Doubles st(t.size(), 0.0), sw(w.size(), 0.0);
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
  t.truncate(out);
  w.truncate(out);
}

Track make_track(const std::vector<double>& t, const std::vector<double>& v) {
  return make_track(Doubles(t), Doubles(v));
}

Track make_track(Doubles t, Doubles v) {
  Track track;
  track.t = std::make_shared<const Doubles>(std::move(t));
  track.v = Values(std::move(v));
  return track;
}

}  // namespace cpupower::report
