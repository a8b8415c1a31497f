#include "report/integrate.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "report/numeric.hpp"

namespace cpupower::report {
namespace {

// The samples with values in [lo, hi], copied densely. Everything an edge can use lies in
// the window widened by the gap limit, so the rest of a long run is never touched.
Series local_samples(const Track& track, double lo, double hi) {
  const auto& t = *track.t;
  const auto b = static_cast<std::size_t>(std::lower_bound(t.begin(), t.end(), lo) - t.begin());
  const auto e = static_cast<std::size_t>(std::upper_bound(t.begin(), t.end(), hi) - t.begin());
  Series s;
  if (e <= b) return s;
  s.t.resize(e - b);
  s.w.resize(e - b);
  const std::size_t n = gather(track, b, e, s.t.data(), s.w.data());
  s.t.resize(n);
  s.w.resize(n);
  return s;
}

struct Neighbours {
  std::optional<double> before_s;  // distance to the last valued sample < x
  std::optional<double> after_s;   // distance to the first valued sample >= x
};

// Over the whole track (error messages only): the valued samples around x.
Neighbours neighbours(const Track& track, double x) {
  const auto& t = *track.t;
  const std::size_t i =
      static_cast<std::size_t>(std::lower_bound(t.begin(), t.end(), x) - t.begin());
  Neighbours n;
  for (std::size_t j = i; j < t.size(); ++j) {
    if (track.has(j)) {
      n.after_s = t[j] - x;
      break;
    }
  }
  for (std::size_t j = i; j > 0; --j) {
    if (track.has(j - 1)) {
      n.before_s = x - t[j - 1];
      break;
    }
  }
  return n;
}

// The sample nearest to x, where snap moves an edge: lower bound, ties to the earlier sample.
std::size_t nearest(const Series& s, double x) {
  const std::size_t n = s.size();
  const auto i =
      static_cast<std::size_t>(std::lower_bound(s.t.begin(), s.t.end(), x) - s.t.begin());
  if (i == 0) return 0;
  if (i == n) return n - 1;
  return (x - s.t[i - 1]) <= (s.t[i] - x) ? i - 1 : i;
}

// How far the sample nearest to x is: over the whole track when there is one, else (the
// empty stand-in of integrate_samples) over the series, whose nearest sample is s.t[i].
double snap_gap(const Track& track, const Series& s, std::size_t i, double x) {
  const Neighbours n = neighbours(track, x);
  if (n.before_s && n.after_s) return std::min(*n.before_s, *n.after_s);
  if (n.before_s || n.after_s) return n.before_s ? *n.before_s : *n.after_s;
  return s.empty() ? std::numeric_limits<double>::infinity() : std::abs(s.t[i] - x);
}

void fill_stats(const Series& s, std::size_t first, std::size_t last, bool full, PowerStats* out) {
  out->sample_start_unix = s.t[first];
  out->sample_end_unix = s.t[last];
  out->samples = last - first + 1;
  if (!full) return;
  const std::span<const double> inside(s.w.data() + first, last - first + 1);
  out->mean_w = numpy_sum(inside) / static_cast<double>(inside.size());
  for (std::size_t i = first; i < last; ++i) {
    const double gap = s.t[i + 1] - s.t[i];
    if (gap > out->largest_gap_s) {
      out->largest_gap_s = gap;
      out->largest_gap_at_unix = s.t[i];
    }
  }
  const Percentiles p = numpy_percentiles(inside);
  out->p5_w = p.p5;
  out->p50_w = p.p50;
  out->p95_w = p.p95;
  out->p99_w = p.p99;
  out->min_w = p.min;
  out->max_w = p.max;
}

Integration fail(std::string message) {
  return {std::nullopt, std::move(message)};
}

void set_error_bar(const ErrorBar& bar, PowerStats* out) {
  out->coverage = bar.coverage;
  out->uncertainty_j = bar.uncertainty_j;
}

Integration snap(const Track& track, const Series& s, double S, double E, const std::string& label,
                 bool with_stats, const Averaging& averaging, std::optional<Usual> usual) {
  if (s.empty() && !track.any_value()) return fail(label + ": no power samples available");
  const std::size_t si = s.empty() ? 0 : nearest(s, S);
  const std::size_t ei = s.empty() ? 0 : nearest(s, E);
  if (s.empty() || std::abs(s.t[si] - S) > kMaxSampleGapS) {
    return fail(fmt::format("{}: nearest sample to window start is {:.3f}s away, no coverage",
                            label, snap_gap(track, s, si, S)));
  }
  if (std::abs(s.t[ei] - E) > kMaxSampleGapS) {
    return fail(fmt::format("{}: nearest sample to window end is {:.3f}s away, no coverage", label,
                            snap_gap(track, s, ei, E)));
  }
  if (ei <= si) return fail(label + ": window narrower than the sample spacing");
  const std::span<const double> x(s.t.data() + si, ei - si + 1);
  const std::span<const double> y(s.w.data() + si, ei - si + 1);
  Breakdown row{label, {}};
  row.stats.joules = numpy_trapezoid(x, y);
  row.stats.avg_power_w = (E - S) > 0 ? row.stats.joules / (E - S) : 0.0;
  fill_stats(s, si, ei, with_stats, &row.stats);
  set_error_bar(error_bar(s, si, ei, S, E, true, averaging, usual), &row.stats);
  return {row, ""};
}

std::string bracket_error(const Track& track, const std::string& label, const char* edge,
                          double x) {
  const Neighbours n = neighbours(track, x);
  const auto side = [](const std::optional<double>& d, const char* where) {
    return d ? fmt::format("{:.3f}s {}", *d, where) : std::string("none");
  };
  return fmt::format(
      "{}: window {} at {:.3f} is not bracketed by samples within {:.1f}s (previous sample {}, "
      "next sample {}), no coverage",
      label, edge, x, kMaxSampleGapS, side(n.before_s, "before"), side(n.after_s, "after"));
}

double interpolate_at(const Series& s, std::size_t a, std::size_t b, double x) {
  const double ta = s.t[a], tb = s.t[b], wa = s.w[a], wb = s.w[b];
  return wa + (wb - wa) * (x - ta) / (tb - ta);
}

Integration interpolate(const Track& track, const Series& s, double S, double E,
                        const std::string& label, bool with_stats, const Averaging& averaging,
                        std::optional<Usual> usual) {
  if (E < S) return fail(fmt::format("{}: window ends before it starts", label));
  if (s.empty() && !track.any_value()) return fail(label + ": no power samples available");
  const std::size_t n = s.size();
  const auto lo =
      static_cast<std::size_t>(std::lower_bound(s.t.begin(), s.t.end(), S) - s.t.begin());
  const auto hi =
      static_cast<std::size_t>(std::upper_bound(s.t.begin(), s.t.end(), E) - s.t.begin());
  const bool edge_s = !(lo < n && s.t[lo] == S);
  const bool edge_e = !(hi > 0 && s.t[hi - 1] == E);
  const auto bracketed = [&](std::size_t next) { return next > 0 && next < n; };
  if (edge_s &&
      !(bracketed(lo) && S - s.t[lo - 1] <= kMaxSampleGapS && s.t[lo] - S <= kMaxSampleGapS)) {
    return fail(bracket_error(track, label, "start", S));
  }
  if (edge_e &&
      !(bracketed(hi) && E - s.t[hi - 1] <= kMaxSampleGapS && s.t[hi] - E <= kMaxSampleGapS)) {
    return fail(bracket_error(track, label, "end", E));
  }
  std::vector<double> x, y;
  x.reserve(hi - lo + 2);
  y.reserve(hi - lo + 2);
  if (edge_s) {
    x.push_back(S);
    y.push_back(interpolate_at(s, lo - 1, lo, S));
  }
  x.insert(x.end(), s.t.begin() + static_cast<std::ptrdiff_t>(lo),
           s.t.begin() + static_cast<std::ptrdiff_t>(hi));
  y.insert(y.end(), s.w.begin() + static_cast<std::ptrdiff_t>(lo),
           s.w.begin() + static_cast<std::ptrdiff_t>(hi));
  if (edge_e) {
    x.push_back(E);
    y.push_back(interpolate_at(s, hi - 1, hi, E));
  }
  Breakdown row{label, {}};
  row.stats.joules = numpy_trapezoid(x, y);
  row.stats.avg_power_w = (E - S) > 0 ? row.stats.joules / (E - S) : 0.0;
  const std::size_t first = edge_s ? lo - 1 : lo, last = edge_e ? hi : hi - 1;
  fill_stats(s, first, last, with_stats, &row.stats);
  set_error_bar(error_bar(s, first, last, S, E, false, averaging, usual), &row.stats);
  return {row, ""};
}

}  // namespace

std::string_view edges_name(Edges edges) {
  return edges == Edges::snap ? "snap" : "interpolate";
}

std::optional<Edges> parse_edges(std::string_view name) {
  if (name == "snap") return Edges::snap;
  if (name == "interpolate") return Edges::interpolate;
  return std::nullopt;
}

Integration integrate_window(const Track& track, double start_unix, double end_unix, Edges edges,
                             const std::string& label, bool with_stats,
                             const Averaging& averaging) {
  const double lo = std::min(start_unix, end_unix), hi = std::max(start_unix, end_unix);
  const Series s = local_samples(track, lo - kWindowMargin, hi + kWindowMargin);
  // What the power usually shows around the window (how rough it is, how much an average
  // smears across an edge), from a wider stretch of the track.
  const Usual usual =
      usual_around(local_samples(track, lo - kRoughnessMarginS, hi + kRoughnessMarginS), averaging);
  return edges == Edges::snap
             ? snap(track, s, start_unix, end_unix, label, with_stats, averaging, usual)
             : interpolate(track, s, start_unix, end_unix, label, with_stats, averaging, usual);
}

Integration integrate_samples(const Series& samples, double start_unix, double end_unix,
                              Edges edges, const std::string& label, bool with_stats,
                              const Averaging& averaging) {
  // The track is only read on the way to an error (whether it has any value, how far its
  // nearest sample is): an empty one stands in, and the caller redoes failures.
  static const Track kNone;
  return edges == Edges::snap ? snap(kNone, samples, start_unix, end_unix, label, with_stats,
                                     averaging, std::nullopt)
                              : interpolate(kNone, samples, start_unix, end_unix, label, with_stats,
                                            averaging, std::nullopt);
}

}  // namespace cpupower::report
