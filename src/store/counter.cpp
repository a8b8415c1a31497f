#include "store/counter.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <optional>

namespace cpupower::store {
namespace {

const char* edge_name(Edge edge) {
  return edge == Edge::start ? "start" : "end";
}

}  // namespace

bool Unwrapped::reset_before(std::size_t i) const {
  return std::binary_search(resets.begin(), resets.end(), i);
}

Unwrapped unwrap(const Samples& samples) {
  Unwrapped out;
  double first = 0, prev = 0, offset = 0;
  for (std::size_t i = 0; i < samples.size(); ++i) {
    const double v = samples.v[i];
    if (!std::isfinite(v) || !std::isfinite(samples.t[i])) continue;
    if (out.t.empty()) {
      first = v;
    } else if (v < prev) {
      out.resets.push_back(out.t.size());
      offset += prev;
    }
    out.t.push_back(samples.t[i]);
    out.u.push_back(v + offset - first);
    prev = v;
  }
  return out;
}

double EdgeValue::error_bound() const {
  if (before == after) return 0;
  return std::max(fraction, 1 - fraction) * bracket_gain;
}

Result<EdgeValue> value_at(const Unwrapped& c, double x, double lookback_s, std::string_view name,
                           Edge edge) {
  const auto i =
      static_cast<std::size_t>(std::lower_bound(c.t.begin(), c.t.end(), x) - c.t.begin());
  EdgeValue out;
  if (i < c.size() && c.t[i] == x) {
    out.before = out.after = i;
    out.value = c.u[i];
    return out;
  }
  const auto missing = [&](const char* side, std::optional<double> nearest) {
    return Error{fmt::format("no sample of {} within {:g} s {} the window's {} ({:.3f}){}", name,
                             lookback_s, side, edge_name(edge), x,
                             nearest
                                 ? fmt::format("; the nearest is {:.3f} s {}", *nearest, side)
                                 : std::string(c.t.empty() ? "; the series has no sample" : ""))};
  };
  // No sample at all on a side first: past the last sample, the one missing is after.
  if (i == 0) return missing("before", std::nullopt);
  if (i == c.size()) return missing("after", std::nullopt);
  if (x - c.t[i - 1] > lookback_s) return missing("before", x - c.t[i - 1]);
  if (c.t[i] - x > lookback_s) return missing("after", c.t[i] - x);
  out.before = i - 1;
  out.after = i;
  const double ta = c.t[i - 1], tb = c.t[i];
  out.fraction = (x - ta) / (tb - ta);
  out.bracket_gain = c.u[i] - c.u[i - 1];
  out.value = c.u[i - 1] + out.bracket_gain * out.fraction;
  out.across_reset = c.reset_before(i);
  return out;
}

Result<Increase> increase(const Unwrapped& c, double start, double end, double lookback_s,
                          std::string_view name) {
  auto s = value_at(c, start, lookback_s, name, Edge::start);
  if (!s) return Error{s.error()};
  auto e = value_at(c, end, lookback_s, name, Edge::end);
  if (!e) return Error{e.error()};
  Increase out;
  out.start = *s;
  out.end = *e;
  out.gain = e->value - s->value;
  out.error_bound = s->error_bound() + e->error_bound();
  for (const std::size_t r : c.resets) {
    if (r <= s->before || r > e->after) continue;
    const double lo = std::max(c.t[r - 1], start), hi = std::min(c.t[r], end);
    if (out.resets == 0) {
      out.lost_from = c.t[r - 1];
      out.lost_to = c.t[r];
    }
    ++out.resets;
    if (hi > lo) out.lost_s += hi - lo;
  }
  return out;
}

IntervalRates interval_rates(const Unwrapped& c, std::size_t first, std::size_t last) {
  IntervalRates out;
  for (std::size_t i = first + 1; i <= last && i < c.size(); ++i) {
    const double dt = c.t[i] - c.t[i - 1];
    if (dt <= 0 || c.reset_before(i)) continue;
    out.mid.push_back((c.t[i] + c.t[i - 1]) / 2);
    out.rate.push_back((c.u[i] - c.u[i - 1]) / dt);
    out.dt.push_back(dt);
  }
  return out;
}

Redated redate(const Samples& counter, const Samples& age) {
  Redated out;
  std::size_t j = 0;
  for (std::size_t i = 0; i < counter.size(); ++i) {
    const double t = counter.t[i];
    while (j < age.size() && age.t[j] < t) ++j;
    double at = t;
    if (j < age.size() && age.t[j] == t && std::isfinite(age.v[j]) && age.v[j] >= 0) {
      at = t - age.v[j];
    } else {
      ++out.without_age;
    }
    if (!out.samples.t.empty() && at <= out.samples.t.back()) continue;
    out.samples.t.push_back(at);
    out.samples.v.push_back(counter.v[i]);
  }
  return out;
}

Result<GaugeIntegral> gauge_integral(const Samples& gauge, double start, double end,
                                     double lookback_s, std::string_view name) {
  Unwrapped g;  // the gauge's finite samples, no resets: value_at interpolates them
  for (std::size_t i = 0; i < gauge.size(); ++i) {
    if (!std::isfinite(gauge.t[i]) || !std::isfinite(gauge.v[i])) continue;
    g.t.push_back(gauge.t[i]);
    g.u.push_back(gauge.v[i]);
  }
  auto a = value_at(g, start, lookback_s, name, Edge::start);
  if (!a) return Error{a.error()};
  auto b = value_at(g, end, lookback_s, name, Edge::end);
  if (!b) return Error{b.error()};
  GaugeIntegral out;
  out.first = a->before;
  out.last = b->after;
  double t = start, w = a->value;
  for (std::size_t i = a->before; i <= b->after; ++i) {
    if (g.t[i] <= start || g.t[i] >= end) continue;
    out.joules += (g.t[i] - t) * (w + g.u[i]) / 2;
    t = g.t[i];
    w = g.u[i];
  }
  out.joules += (end - t) * (w + b->value) / 2;
  return out;
}

double median_spacing(const std::vector<double>& t) {
  if (t.size() < 2) return 0;
  std::vector<double> d;
  d.reserve(t.size() - 1);
  for (std::size_t i = 1; i < t.size(); ++i) d.push_back(t[i] - t[i - 1]);
  const std::size_t mid = d.size() / 2;
  std::nth_element(d.begin(), d.begin() + static_cast<std::ptrdiff_t>(mid), d.end());
  if (d.size() % 2 == 1) return d[mid];
  const double upper = d[mid];
  const double lower = *std::max_element(d.begin(), d.begin() + static_cast<std::ptrdiff_t>(mid));
  return (lower + upper) / 2;
}

}  // namespace cpupower::store
