#include "report/uncertainty.hpp"

#include <algorithm>
#include <cmath>

namespace cpupower::report {
namespace {

// The series' power at x: linear between the samples around it, the nearest one outside.
double value_at(const Series& s, double x) {
  const auto i =
      static_cast<std::size_t>(std::lower_bound(s.t.begin(), s.t.end(), x) - s.t.begin());
  if (i == 0) return s.w.front();
  if (i == s.size()) return s.w.back();
  const double ta = s.t[i - 1], tb = s.t[i];
  return tb > ta ? s.w[i - 1] + (s.w[i] - s.w[i - 1]) * (x - ta) / (tb - ta) : s.w[i];
}

// The share of [start, end] inside some sample's averaging interval (tau wide, centred on
// the sample's time).
double covered_share(const Series& s, double start, double end, double tau) {
  if (end <= start) {
    const bool in = std::any_of(s.t.begin(), s.t.end(),
                                [&](double t) { return std::abs(t - start) <= tau / 2; });
    return in ? 1.0 : 0.0;
  }
  double covered = 0;
  double reach = start;  // everything before it is counted
  for (const double t : s.t) {
    const double lo = std::max(t - tau / 2, reach);
    const double hi = std::min(t + tau / 2, end);
    if (hi > lo) {
      covered += hi - lo;
      reach = hi;
    }
  }
  return std::clamp(covered / (end - start), 0.0, 1.0);
}

// What an averaging meter misplaces across an edge at x: a change from A to B at s, within
// tau/2 of x, is smeared over [s - tau/2, s + tau/2], and (B - A) tau min(f, 1 - f)^2 / 2 of
// its energy lands on the wrong side of x, f being how far the reading at x has gone from A
// to B (0 or 1: no change near the edge; 1/2: the change is at the edge, tau (B - A) / 8).
// A and B: the smallest and largest readings within tau of x.
double edge_bound(const Series& s, double x, double tau) {
  double variation = 0;  // every change the readings within tau/2 of x show
  for (std::size_t j = 0; j + 1 < s.size(); ++j) {
    if (std::abs(s.t[j] - x) > tau / 2 || std::abs(s.t[j + 1] - x) > tau / 2) continue;
    variation += std::abs(s.w[j + 1] - s.w[j]);
  }
  return variation * tau / 8;
}

// How much the power goes back and forth around pair i (samples i and i + 1), per pair: the
// total variation of the readings over the pairs within kRoughnessPairs of it, less their net
// change, over their number. A step, however large, goes one way and gives 0; bursts that
// some readings catch and others miss give about their height.
constexpr std::size_t kRoughnessPairs = 3;
double roughness(const Series& s, std::size_t i) {
  const std::size_t lo = i >= kRoughnessPairs ? i - kRoughnessPairs : 0;
  const std::size_t hi = std::min(i + kRoughnessPairs, s.size() - 2);
  double total = 0, net = 0;
  for (std::size_t j = lo; j <= hi; ++j) {
    const double d = s.w[j + 1] - s.w[j];
    total += std::abs(d);
    net += d;
  }
  return (total - std::abs(net)) / static_cast<double>(hi - lo + 1);
}

}  // namespace

ErrorBar error_bar(const Series& s, std::size_t first, std::size_t last, double start, double end,
                   bool snapped, const Averaging& averaging) {
  ErrorBar out;
  if (s.empty() || last >= s.size() || first > last) return out;
  const double tau_gap = averaging.min_s.value_or(0.0);
  const double tau_edge = averaging.max_s.value_or(0.0);
  if (averaging.known()) out.coverage = covered_share(s, start, end, tau_gap);

  double variance = 0;  // of the terms taken as uniform: bound^2 / 3 each
  const double lo = snapped ? s.t[first] : start;
  const double hi = snapped ? s.t[last] : end;
  for (std::size_t i = first; i < last; ++i) {
    const double a = std::max(s.t[i], lo), b = std::min(s.t[i + 1], hi);
    if (b <= a) continue;
    const double kept = b - a;
    const double uncovered =
        std::max(0.0, std::min(b, s.t[i + 1] - tau_gap / 2) - std::max(a, s.t[i] + tau_gap / 2));
    const double dw = std::abs(s.w[i + 1] - s.w[i]);
    // Overlapping averages (tau at least the spacing) tile the time axis: what they leave to
    // the trapezoid's straight line shrinks as the spacing does against tau.
    const double spacing = s.t[i + 1] - s.t[i];
    const double overlap = tau_gap > spacing ? spacing / tau_gap : 1.0;
    const double bound = dw * (uncovered / 2 + (kept - uncovered) * overlap / 8);
    // What an uncovered stretch may hide where the power goes back and forth: bursts that
    // start and end between two readings leave no step to see.
    const double hidden = 2 * uncovered * roughness(s, i);
    variance += (bound * bound + hidden * hidden) / 3;
  }
  if (tau_edge > 0) {
    for (const double x : {start, end}) {
      const double bound = edge_bound(s, x, tau_edge);
      variance += bound * bound / 3;
    }
  }
  // The readings' dates are known to the meter's update period: a shift of every date by up
  // to kDateResolutionS moves the energy by that times the power change across the window.
  const double shift = kDateResolutionS * std::abs(value_at(s, end) - value_at(s, start));
  variance += shift * shift / 3;
  out.uncertainty_j = kCoverageFactor * std::sqrt(variance);
  if (snapped) {
    // The stretch between each edge and its sample is counted (or left out) whole.
    out.uncertainty_j +=
        std::abs(s.t[first] - start) * std::max(std::abs(s.w[first]), std::abs(value_at(s, start)));
    out.uncertainty_j +=
        std::abs(s.t[last] - end) * std::max(std::abs(s.w[last]), std::abs(value_at(s, end)));
  }
  return out;
}

std::optional<double> uncertainty_pct(double uncertainty_j, double joules) {
  if (!(joules > 0)) return std::nullopt;
  return 100.0 * uncertainty_j / joules;
}

}  // namespace cpupower::report
