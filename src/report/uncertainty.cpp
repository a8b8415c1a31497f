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

// The same smear where the power changes often (bursts shorter than tau): the error is then
// the sum of many small misplaced slices, random rather than one change's. A difference d of
// two readings s apart (s < tau) is the energy of the slice that entered their averaging
// interval less the one that left it, over tau; the slices within tau / 2 of the edge are
// weighted by how much of each the smear moves across it (1/2 at the edge, 0 at tau / 2), so
// the misplaced energy has a standard deviation of tau rms(d) sqrt(tau / (24 s)). rms(d) is
// taken around the differences' mean (a ramp, one change smeared, goes one way and is
// edge_bound's) over the pairs within tau / 2 of x and the pair around x with one on either
// side; s, their mean spacing, is at most tau (readings farther apart are independent
// averages). Returned as a bound (sqrt(3) standard deviations), to be taken as uniform as the
// other terms are.
double edge_fluctuation_bound(const Series& s, double x, double tau) {
  if (s.size() < 2) return 0;
  double sum = 0, sum_sq = 0, spacing = 0;
  std::size_t n = 0;
  const auto nearest =
      static_cast<std::size_t>(std::lower_bound(s.t.begin(), s.t.end(), x) - s.t.begin());
  for (std::size_t j = 0; j + 1 < s.size(); ++j) {
    const double mid = (s.t[j] + s.t[j + 1]) / 2;
    // The pair around x and one on either side, for readings farther apart than tau / 2.
    const bool near = std::abs(mid - x) <= tau / 2 || (j + 2 >= nearest && j <= nearest);
    if (!near || !(s.t[j + 1] > s.t[j])) continue;
    const double d = s.w[j + 1] - s.w[j];
    sum += d;
    sum_sq += d * d;
    spacing += s.t[j + 1] - s.t[j];
    ++n;
  }
  if (n == 0) return 0;
  const double mean = sum / static_cast<double>(n);
  const double rms = std::sqrt(std::max(0.0, sum_sq / static_cast<double>(n) - mean * mean));
  const double step = std::min(spacing / static_cast<double>(n), tau);
  return std::sqrt(3.0) * tau * rms * std::sqrt(tau / (24 * step));
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

double sampling_error(const Series& s, double lo, double hi) {
  double sum = 0, sum_sq = 0;
  std::size_t n = 0;
  const auto begin =
      static_cast<std::size_t>(std::lower_bound(s.t.begin(), s.t.end(), lo) - s.t.begin());
  for (std::size_t i = std::max<std::size_t>(begin, 1); i + 1 < s.size() && s.t[i] <= hi; ++i) {
    const double ta = s.t[i - 1], tb = s.t[i + 1];
    if (!(tb > ta)) continue;
    const double up = s.w[i] - s.w[i - 1], down = s.w[i + 1] - s.w[i];
    const double line = s.w[i - 1] + (s.w[i + 1] - s.w[i - 1]) * (s.t[i] - ta) / (tb - ta);
    const double e = up * down >= 0 ? 0.0 : s.w[i] - line;
    sum += e;
    sum_sq += e * e;
    ++n;
  }
  if (n < 2) return 0;
  const double count = static_cast<double>(n);
  const double mean = sum / count;
  return std::sqrt(std::max(0.0, sum_sq / count - mean * mean) / count);
}

double typical_roughness(const Series& s) {
  if (s.size() < 2) return 0;
  double sum = 0;
  for (std::size_t j = 0; j + 1 < s.size(); ++j) sum += roughness(s, j);
  return sum / static_cast<double>(s.size() - 1);
}

ErrorBar error_bar(const Series& s, std::size_t first, std::size_t last, double start, double end,
                   bool snapped, const Averaging& averaging, std::optional<double> typical) {
  ErrorBar out;
  if (s.empty() || last >= s.size() || first > last) return out;
  const double tau_gap = averaging.min_s.value_or(0.0);
  const double tau_edge = averaging.max_s.value_or(0.0);
  if (averaging.known()) out.coverage = covered_share(s, start, end, tau_gap);

  double variance = 0;  // of the terms taken as uniform: bound^2 / 3 each
  double uncovered_s = 0;
  const double usual = typical ? *typical : typical_roughness(s);
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
    const double hidden = 2 * uncovered * std::max(roughness(s, i), usual);
    variance += (bound * bound + hidden * hidden) / 3;
    uncovered_s += uncovered;
  }
  // The uncovered seconds as a whole: their mean power is known only from the instants the
  // readings fell on, a standard deviation rather than a bound.
  const double sampled = kReadGridFactor * uncovered_s * sampling_error(s, lo, hi);
  variance += sampled * sampled;
  if (tau_edge > 0) {
    for (const double x : {start, end}) {
      const double bound =
          std::max(edge_bound(s, x, tau_edge), edge_fluctuation_bound(s, x, tau_edge));
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
