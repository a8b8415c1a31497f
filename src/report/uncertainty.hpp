#pragma once
// How well one integral was measured: the share of the window the sensors' averaging
// intervals covered, and an uncertainty in joules (docs/formats.md, Coverage and
// uncertainty, states the method and what it assumes).
//
// A reading is the mean power over its averaging interval (ACPI power*_average_interval,
// NVML's 1 s), dated at the interval's centre. Each term below is a bound taken as a uniform
// error within it (a standard deviation of bound / sqrt(3)); they add in quadrature and the
// sum is expanded with k = 2:
//  - each pair of consecutive samples, over the c seconds of it the window keeps, u of them
//    outside both samples' averaging intervals: a change of |dw| at an unknown instant of the
//    uncovered stretch costs up to u |dw| / 2; a bend in the averaged rest up to
//    (c - u) |dw| / 8, shrunk by spacing / tau where the averages overlap (they tile the time
//    axis, and the trapezoid of overlapping means is nearly the integral);
//  - what an uncovered stretch may hide where the power goes back and forth (bursts that
//    start and end between two readings leave no step): 2 u times the pair's roughness, the
//    readings' total variation over the neighbouring pairs less their net change, per pair
//    (0 for steps that go one way), or the track's usual roughness within 30 s of the window
//    where that is more (readings that happened to catch no burst near a pair);
//  - the uncovered seconds as a whole, a standard deviation rather than a bound: their power
//    is known only from the instants the readings fell on. kReadGridFactor times the
//    uncovered seconds times the standard error of the readings' mean departure from the
//    line through their neighbours (0 for a reading the power goes one way through);
//  - each window edge: an averaging interval of tau smears a change near the edge over tau,
//    and up to tau / 8 of it lands on the wrong side: tau / 8 times the total variation of
//    the readings within tau / 2 of the edge; or, where the power changes often (bursts
//    shorter than tau), the sum of many small misplaced slices, whose spread the readings'
//    differences give (tau sqrt(3) rms(d) sqrt(tau / (24 s)), readings s apart), if more;
//  - the readings' dates, known to the meter's update period (kDateResolutionS): a shift of
//    every date moves the energy by that times the power change across the window;
//  - snap edges only, added in full (it has a sign, not a spread): the energy between each
//    window edge and the sample it snapped to.
// An unknown interval is taken as 0 (instantaneous samples, every gap uncovered): the
// uncertainty is then that of point samples and the coverage is not stated. How often the
// stated figure holds on known traces: docs/performance.md (Calibration of the uncertainty).

#include <optional>
#include <span>

#include "report/track.hpp"

namespace cpupower::report {

// The averaging interval of a track's readings as the run's files record it (seconds), the
// smallest and largest seen; unset when they do not say (older files, DCGM, the GPU leg).
struct Averaging {
  std::optional<double> min_s, max_s;
  bool known() const { return min_s.has_value() && max_s.has_value(); }
};

struct ErrorBar {
  std::optional<double> coverage;  // 0-1; unset when the averaging interval is unknown
  double uncertainty_j = 0;        // expanded (k = 2)
};

inline constexpr double kCoverageFactor = 2.0;
// Readings on a regular grid sample bursts unlike independent instants: over grid phases
// drawn again, the error of their mean spread up to twice as widely as independent samples'
// on the bursty calibration trace (docs/performance.md, Calibration of the uncertainty). The
// sampling term's standard error is widened by this factor, set on two replays and checked
// on others.
inline constexpr double kReadGridFactor = 1.5;
// How well a reading's date is known beyond the centring: the meter publishes a new average
// every few milliseconds (the simulated node every 10 ms), so the interval a value averages
// ends up to that long before its read.
inline constexpr double kDateResolutionS = 0.010;

// The error bar of the trapezoid over the samples s[first..last] standing for [start, end]:
// interpolated edges integrate exactly [start, end]; snapped ones [s.t[first], s.t[last]].
// `typical`: the series' usual roughness around the window (typical_roughness of a wider
// stretch of it); by default that of `s`.
ErrorBar error_bar(const Series& s, std::size_t first, std::size_t last, double start, double end,
                   bool snapped, const Averaging& averaging,
                   std::optional<double> typical = std::nullopt);

// How much the power usually goes back and forth between two readings of `s`: the mean over
// its pairs of each pair's roughness (the readings' total variation over the pairs within
// three of it, less their net change, per pair). An uncovered stretch is taken to hide at
// least that much, also where the readings next to it happen to show none.
double typical_roughness(const Series& s);

// The standard error of the mean of the readings' departures from the line through their
// neighbours, over the readings of `s` within [lo, hi] (each with a neighbour on either side):
// what the instants the readings happened to fall on say about the power between them. A
// reading the power goes one way through (a step, a flat stretch) departs by nothing the pair
// terms do not already bound and counts as 0; one that caught a burst its neighbours missed,
// or missed one they caught, departs by it. 0 under two readings.
double sampling_error(const Series& s, double lo, double hi);

// Seconds on either side of a window over which typical_roughness is taken.
inline constexpr double kRoughnessMarginS = 30.0;

// uncertainty / joules in percent; unset for no energy.
std::optional<double> uncertainty_pct(double uncertainty_j, double joules);

}  // namespace cpupower::report
