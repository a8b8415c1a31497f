#include "report/uncertainty.hpp"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

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

// The pairs (j, j + 1) of s that may bear on the instants within `reach` of x: from the last
// pair ending before x - reach to the first starting after x + reach, and the two pairs on
// either side of the one around x.
struct PairRange {
  std::size_t begin = 0, end = 0;  // j in [begin, end)
  std::size_t nearest = 0;         // the first sample at or after x
};
PairRange pairs_near(const Series& s, double x, double reach) {
  if (s.size() < 2) return {};
  const auto at = [&](double v) {
    return static_cast<std::size_t>(std::lower_bound(s.t.begin(), s.t.end(), v) - s.t.begin());
  };
  const std::size_t nearest = at(x);
  const std::size_t lo = std::min(at(x - reach), nearest);
  const std::size_t hi = std::max(at(x + reach) + 1, nearest + 1);
  return {lo >= 2 ? lo - 2 : 0, std::min(hi + 1, s.size() - 1), nearest};
}

// The total variation of the readings' polyline over [a, b], interpolated at both ends.
double variation_between(const Series& s, double a, double b) {
  if (s.empty() || !(b > a)) return 0;
  double total = 0, previous = value_at(s, a);
  for (auto i = static_cast<std::size_t>(std::upper_bound(s.t.begin(), s.t.end(), a) - s.t.begin());
       i < s.size() && s.t[i] < b; ++i) {
    total += std::abs(s.w[i] - previous);
    previous = s.w[i];
  }
  return total + std::abs(value_at(s, b) - previous);
}

// What an averaging meter misplaces across an edge at x: a change from A to B at s, within
// tau/2 of x, is smeared over [s - tau/2, s + tau/2], and (B - A) tau min(f, 1 - f)^2 / 2 of
// its energy lands on the wrong side of x, f being how far the reading at x has gone from A
// to B (0 or 1: no change near the edge; 1/2: the change is at the edge, tau (B - A) / 8).
// Where the readings trace the smear (at most kTracedSpacing x tau apart around x), they show
// f: the readings move by (B - A) min(f, 1/2) over [x - tau/2, x] and (B - A) min(1 - f, 1/2)
// over [x, x + tau/2], and the misplaced energy is at most tau / 4 times the smaller of the
// two (equal at f = 1/2; several changes one way add up the same). Sparser readings say
// little of f: the bound is then the worst case, tau / 8 times the total variation of the
// pairs that reach into [x - tau/2, x + tau/2] (the pair around x where the readings are
// sparser than tau / 2).
struct EdgeBound {
  double joules = 0;
  bool traced = false;  // from the readings' moves around x, not the worst case
};
EdgeBound edge_bound(const Series& s, double x, double tau) {
  double variation = 0, widest = 0;
  const PairRange r = pairs_near(s, x, tau / 2);
  for (std::size_t j = r.begin; j < r.end; ++j) {
    if (s.t[j + 1] < x - tau / 2 || s.t[j] > x + tau / 2) continue;
    variation += std::abs(s.w[j + 1] - s.w[j]);
    widest = std::max(widest, s.t[j + 1] - s.t[j]);
  }
  if (widest <= kTracedSpacing * tau) {
    return {
        tau / 4 *
            std::min(variation_between(s, x - tau / 2, x), variation_between(s, x, x + tau / 2)),
        true};
  }
  return {variation * tau / 8, false};
}

// The same smear where the power changes often (bursts shorter than tau): the error is then
// the sum of many small misplaced slices, random rather than one change's. A difference d of
// two readings s apart (s < tau) is the energy of the slice that entered their averaging
// interval less the one that left it, over tau; the slices within tau / 2 of the edge are
// weighted by how much of each the smear moves across it (1/2 at the edge, 0 at tau / 2).
// For bursts at random instants the misplaced energy then has a standard deviation of
// tau rms(d) sqrt(tau / (24 s)). Bursts more regular than random ones carry their variance
// at and above 1 / tau, where a difference of readings s apart shows tau / (6 s) of what the
// smear moves: the factor is never taken under kSmearFloor = 1/4 (the two agree at
// s = tau / 6). rms(d) is taken around the differences' mean over the pairs within tau / 2 of
// x and the pairs around x; where they all go one way (a ramp: one change, or several one
// way, smeared), they are one change's (edge_bound) and this gives 0. s, their mean spacing,
// is at most tau (readings farther apart are independent averages).
double smear_sd(const Series& s, double x, double tau) {
  if (s.size() < 2 || !(tau > 0)) return 0;
  double sum = 0, sum_sq = 0, total = 0, spacing = 0;
  std::size_t n = 0;
  const PairRange r = pairs_near(s, x, tau / 2);
  for (std::size_t j = r.begin; j < r.end; ++j) {
    const double mid = (s.t[j] + s.t[j + 1]) / 2;
    // The pair around x and one on either side, for readings farther apart than tau / 2.
    const bool near = std::abs(mid - x) <= tau / 2 || (j + 2 >= r.nearest && j <= r.nearest);
    if (!near || !(s.t[j + 1] > s.t[j])) continue;
    const double d = s.w[j + 1] - s.w[j];
    sum += d;
    sum_sq += d * d;
    total += std::abs(d);
    spacing += s.t[j + 1] - s.t[j];
    ++n;
  }
  if (n == 0 || total - std::abs(sum) <= 2 * kOneWayShare * total) return 0;
  const double mean = sum / static_cast<double>(n);
  const double rms = std::sqrt(std::max(0.0, sum_sq / static_cast<double>(n) - mean * mean));
  const double step = std::min(spacing / static_cast<double>(n), tau);
  return tau * rms * std::sqrt(std::max(tau / (24 * step), kSmearFloor));
}

// The trapezoid's weight of each reading: the energy is sum(weight_i * w_i). Interpolated
// edges lend their weight to the two readings around them.
std::vector<std::pair<std::size_t, double>> trapezoid_weights(const Series& s, std::size_t first,
                                                              std::size_t last, double lo,
                                                              double hi, bool snapped) {
  struct Point {
    double x;
    std::size_t a, b;  // readings it is made of
    double fa;         // share of a (b gets the rest)
  };
  std::vector<Point> points;
  const auto edge_point = [&](double x, std::size_t a, std::size_t b) {
    const double span = s.t[b] - s.t[a];
    const double fb = span > 0 ? (x - s.t[a]) / span : 0.0;
    return Point{x, a, b, 1 - fb};
  };
  if (snapped) {
    for (std::size_t i = first; i <= last; ++i) points.push_back({s.t[i], i, i, 1});
  } else {
    if (s.t[first] < lo && first < last) points.push_back(edge_point(lo, first, first + 1));
    for (std::size_t i = first; i <= last; ++i) {
      if (s.t[i] >= lo && s.t[i] <= hi) points.push_back({s.t[i], i, i, 1});
    }
    if (s.t[last] > hi && last > first) points.push_back(edge_point(hi, last - 1, last));
  }
  std::vector<std::pair<std::size_t, double>> out;
  for (std::size_t k = 0; k < points.size(); ++k) {
    const double left = k > 0 ? points[k - 1].x : points[k].x;
    const double right = k + 1 < points.size() ? points[k + 1].x : points[k].x;
    const double weight = (right - left) / 2;
    out.emplace_back(points[k].a, weight * points[k].fa);
    if (points[k].fa < 1) out.emplace_back(points[k].b, weight * (1 - points[k].fa));
  }
  return out;
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

double uneven_tiling(const Series& s, std::size_t first, std::size_t last, double lo, double hi,
                     bool snapped, double tau) {
  if (!(tau > 0) || last <= first || last >= s.size()) return 0;
  std::size_t apart = 0;  // pairs farther apart than the averages reach
  for (std::size_t i = first; i < last; ++i) apart += s.t[i + 1] - s.t[i] > kTilingSpacing * tau;
  if (2 * apart > last - first) return 0;  // the median spacing is over kTilingSpacing tau
  const double a = lo + tau / 2, b = hi - tau / 2;
  if (b <= a) return 0;
  // Each average holds [t - tau / 2, t + tau / 2] with density weight / tau. The weights come
  // in the order of their readings, so the averages' starts, and their ends, are in time
  // order: the density's changes are the merge of the two.
  const auto weights = trapezoid_weights(s, first, last, lo, hi, snapped);
  double density = 0, at = a, total = 0;
  const auto advance = [&](double x, double change) {
    const double until = std::min(x, b);
    if (until > at) {
      total += (density - 1) * (density - 1) * (until - at);
      at = until;
    }
    density += change;
  };
  std::size_t opened = 0, closed = 0;
  while (closed < weights.size()) {
    const auto& [i, w] = weights[opened < weights.size() ? opened : closed];
    const auto& [j, v] = weights[closed];
    if (opened < weights.size() && s.t[i] - tau / 2 <= s.t[j] + tau / 2) {
      advance(s.t[i] - tau / 2, w / tau);
      ++opened;
    } else {
      advance(s.t[j] + tau / 2, -v / tau);
      ++closed;
    }
  }
  if (b > at) total += (density - 1) * (density - 1) * (b - at);
  return total;
}

Usual usual_around(const Series& wide, const Averaging& averaging) {
  Usual out;
  out.roughness = typical_roughness(wide);
  const double tau = averaging.max_s.value_or(0.0);
  if (!(tau > 0) || wide.size() < 2) return out;
  // The kUsualSmearQuantile quantile of at most kUsualReadings of them, evenly spread over
  // the stretch: as good a quantile, at a cost that does not grow with the window
  // (docs/performance.md).
  const std::size_t stride = (wide.size() + kUsualReadings - 1) / kUsualReadings;
  std::vector<double> sds;
  sds.reserve(wide.size() / stride + 1);
  for (std::size_t i = 0; i < wide.size(); i += stride)
    sds.push_back(smear_sd(wide, wide.t[i], tau));
  const auto at = sds.begin() + static_cast<std::ptrdiff_t>(kUsualSmearQuantile *
                                                            static_cast<double>(sds.size() - 1));
  std::nth_element(sds.begin(), at, sds.end());
  out.smear_sd = *at;
  return out;
}

ErrorBar error_bar(const Series& s, std::size_t first, std::size_t last, double start, double end,
                   bool snapped, const Averaging& averaging, std::optional<Usual> around) {
  ErrorBar out;
  if (s.empty() || last >= s.size() || first > last) return out;
  const double tau_gap = averaging.min_s.value_or(0.0);
  const double tau_edge = averaging.max_s.value_or(0.0);
  if (averaging.known()) out.coverage = covered_share(s, start, end, tau_gap);

  double variance = 0;  // of the terms taken as uniform: bound^2 / 3 each
  double uncovered_s = 0;
  const Usual usual = around ? *around : usual_around(s, averaging);
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
    const double hidden = 2 * uncovered * std::max(roughness(s, i), usual.roughness);
    variance += (bound * bound + hidden * hidden) / 3;
    uncovered_s += uncovered;
  }
  // The uncovered seconds as a whole: their mean power is known only from the instants the
  // readings fell on, a standard deviation rather than a bound.
  const double sampled = kReadGridFactor * uncovered_s * sampling_error(s, lo, hi);
  variance += sampled * sampled;
  double in_full = 0;  // bounds that are nearly the error itself: added, not spread
  if (tau_edge > 0) {
    for (const double x : {start, end}) {
      // One change's smear (a bound, uniform within it) or many small ones' (a standard
      // deviation), whichever is more; the latter at least what the run usually shows. Where
      // the readings trace one change's smear (they go one way around the edge), its bound
      // is nearly the error itself, which both edges can have at once (a window that opens
      // on a rise and closes on a fall loses both): it is added in full, as the snap term.
      const auto one = edge_bound(s, x, tau_edge);
      const double local = smear_sd(s, x, tau_edge);
      if (one.traced && local == 0) {
        in_full += one.joules;
        variance += usual.smear_sd * usual.smear_sd;
      } else {
        const double many = std::max(local, usual.smear_sd);
        variance += std::max(one.joules * one.joules / 3, many * many);
      }
    }
    // Overlapping averages that do not tile the time evenly (read times that drift against
    // the interval, or an interval that is no multiple of the spacing) count some instants
    // more than once and others less: with power that changes often, that is an error of
    // its own, inside the window as at its edges. The run's usual smear gives the power's
    // fluctuation per second (a white power with the same smear: 12 sd^2 / tau).
    const double intensity = 12 * usual.smear_sd * usual.smear_sd / tau_edge;
    if (intensity > 0)
      variance += intensity * uneven_tiling(s, first, last, lo, hi, snapped, tau_gap);
  }
  // The readings' dates are known to the meter's update period: a shift of every date by up
  // to kDateResolutionS moves the energy by that times the power change across the window.
  const double shift = kDateResolutionS * std::abs(value_at(s, end) - value_at(s, start));
  variance += shift * shift / 3;
  // And each reading's own staleness within that period (uniform, a variance of
  // kDateResolutionS^2 / 12) moves the trapezoid by its error times the power's slope there,
  // half the difference of its neighbours: every step inside the window counts, not only
  // the net change.
  double slopes = 0;
  for (std::size_t i = std::max<std::size_t>(first, 1); i <= last && i + 1 < s.size(); ++i) {
    const double half = (s.w[i + 1] - s.w[i - 1]) / 2;
    slopes += half * half;
  }
  variance += kDateResolutionS * kDateResolutionS / 12 * slopes;
  out.uncertainty_j = kCoverageFactor * std::sqrt(variance) + in_full;
  if (snapped) {
    // The stretch between each edge and its sample is counted (or left out) whole: the end's
    // adds its energy where the sample lies after the edge, the start's takes it away, so the
    // two have signs and cancel as far as their energies do. Each is its length times the
    // mean of the power at its two ends, within the length times their difference.
    const double to_first = s.t[first] - start, to_last = s.t[last] - end;
    const double at_start = value_at(s, start), at_end = value_at(s, end);
    const double counted =
        to_last * (s.w[last] + at_end) / 2 - to_first * (s.w[first] + at_start) / 2;
    out.uncertainty_j += std::abs(counted) + std::abs(to_first) * std::abs(s.w[first] - at_start) +
                         std::abs(to_last) * std::abs(s.w[last] - at_end);
  }
  return out;
}

std::optional<double> uncertainty_pct(double uncertainty_j, double joules) {
  if (!(joules > 0)) return std::nullopt;
  return 100.0 * uncertainty_j / joules;
}

}  // namespace cpupower::report
