#pragma once
// Tracks as text (for comparing two loads bit for bit), and the energy integration run over a
// loaded track, with the property report/integrate.hpp promises: integrate_samples over the
// samples the caller gathered equals integrate_window whenever both succeed.

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>

#include "fuzz_util.hpp"
#include "report/integrate.hpp"
#include "report/track.hpp"

namespace cpupower::fuzz {

inline void append_bits(std::string& out, double v) {
  if (std::isnan(v)) {
    out += "nan ";  // one NaN is as missing as another
    return;
  }
  char buf[32];
  std::uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof v);
  std::snprintf(buf, sizeof buf, "%016llx ", static_cast<unsigned long long>(bits));
  out += buf;
}

inline std::string track_text(const report::Track& t) {
  std::string out = "[";
  for (std::size_t i = 0; i < t.size(); ++i) {
    append_bits(out, t.time(i));
    append_bits(out, t.v[i]);
  }
  return out + "]";
}

inline bool same_double(double a, double b) {
  return (std::isnan(a) && std::isnan(b)) || std::memcmp(&a, &b, sizeof a) == 0;
}

// Integrates `t` over the span of its valued samples (and a window inside it), both edge
// modes, both entry points.
inline void integrate_checks(const report::Track& t) {
  FUZZ_CHECK(t.t->size() == t.v.size());
  double first = NAN, last = NAN;
  for (std::size_t i = 0; i < t.size(); ++i) {
    if (!t.has(i) || !std::isfinite(t.time(i))) continue;
    if (std::isnan(first)) first = t.time(i);
    last = t.time(i);
  }
  if (std::isnan(first)) return;
  const double windows[][2] = {{first, last}, {first + (last - first) / 3, last}};
  for (const auto& w : windows) {
    if (!(w[1] > w[0]) || !std::isfinite(w[1] - w[0])) continue;
    for (const auto edges : {report::Edges::interpolate, report::Edges::snap}) {
      const auto a = report::integrate_window(t, w[0], w[1], edges, "fuzz");
      report::Series s;
      for (std::size_t i = 0; i < t.size(); ++i) {
        if (t.has(i) && t.time(i) >= w[0] - report::kWindowMargin &&
            t.time(i) <= w[1] + report::kWindowMargin) {
          s.t.push_back(t.time(i));
          s.w.push_back(t.v[i]);
        }
      }
      const auto b = report::integrate_samples(s, w[0], w[1], edges, "fuzz");
      if (a.row && b.row) {
        FUZZ_CHECK(same_double(a.row->stats.joules, b.row->stats.joules) &&
                       same_double(a.row->stats.avg_power_w, b.row->stats.avg_power_w) &&
                       a.row->stats.samples == b.row->stats.samples,
                   "integrate_samples %.17g J, integrate_window %.17g J", b.row->stats.joules,
                   a.row->stats.joules);
      }
      FUZZ_CHECK(a.row.has_value() || !a.error.empty());
    }
  }
}

}  // namespace cpupower::fuzz
