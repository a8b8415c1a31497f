#pragma once
// How well one integral was measured: the share of the window the sensors' averaging
// intervals covered, and an uncertainty in joules (docs/formats.md, Coverage and
// uncertainty, states the method and what it assumes).
//
// A reading is the mean power over its averaging interval (ACPI power*_average_interval,
// NVML's 1 s), dated at the interval's centre. Each term below is a bound taken as a uniform
// error within it (a standard deviation of bound / sqrt(3)), or a standard deviation where
// said; they add in quadrature and the sum is expanded with k = 2:
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
//    the readings over the pairs that reach within tau / 2 of the edge, or, where readings
//    at most kTracedSpacing x tau apart show how far the change had gone at the edge, tau / 4
//    times the smaller of their moves over the half intervals on either side (added in full
//    where they go one way: nearly the error itself, at both edges at once); or, where the power
//    changes often (bursts shorter than tau), the sum of many small misplaced slices, a
//    standard deviation the readings' differences give (tau rms(d) sqrt(max(tau / (24 s),
//    kSmearFloor)), readings s apart; 0 where they all go one way), or the run's usual one
//    around the window (kUsualSmearQuantile of the readings' figures), if more;
//  - where overlapping averages tile the window unevenly (read times that drift against
//    tau), the instants they count more or less than once, with the power's fluctuation per
//    second from the run's usual smear (uneven_tiling);
//  - the readings' dates, known to the meter's update period (kDateResolutionS): a shift of
//    every date moves the energy by that times the power change across the window, and each
//    reading's own staleness (uniform within the period) by that times the power's slope at
//    it, every step inside the window counting;
//  - snap edges only, added in full (it has a sign, not a spread): the energy between each
//    window edge and the sample it snapped to, the two edges' with their signs (the end's
//    counted, the start's left out, where the samples lie after the edges), within the
//    stretches' lengths times the power's change across each.
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
// The smallest factor of (tau rms(d))^2 in an edge's smear variance: the high-frequency
// limit, where a difference of readings s apart shows tau / (6 s) of what the smear moves
// (docs/formats.md, term 3).
inline constexpr double kSmearFloor = 0.25;
// Differences near an edge that go against their net direction by at most this share of
// their total variation are a ramp (one change, smeared), not many changes.
inline constexpr double kOneWayShare = 0.01;
// Readings at most kTracedSpacing x tau apart (four a tau, with room for the read times'
// jitter) trace the rise an averaging interval makes of a change, so the one-change edge
// figure can use how far it had gone at the edge (term 3).
inline constexpr double kTracedSpacing = 0.3;
// How many readings of the stretch around a window the usual smear is taken over.
inline constexpr std::size_t kUsualReadings = 256;
// Which quantile of their smear figures the usual smear is. Each rests on a few differences,
// and a bursty power's differences are heavy-tailed (most small, a few a whole burst): on the
// calibration replays the median of such figures is mostly 0.4-0.8 of the smear all the
// run's differences give together where reads are 250 ms or 1 s apart, the 65th percentile
// mostly 0.8-1.0 (docs/performance.md, Calibration of the uncertainty). Where the power
// changes in steps, most readings' figures are 0 and so is this quantile.
inline constexpr double kUsualSmearQuantile = 0.65;
// Readings up to this many averaging intervals apart count as tiling the time (term 7).
inline constexpr double kTilingSpacing = 2.0;

// What a track usually shows around a window, from a wider stretch of it than the window's
// own readings (which may happen to show nothing):
struct Usual {
  double roughness = 0;  // typical_roughness
  // The kUsualSmearQuantile quantile over the stretch's readings of the smear standard
  // deviation an edge at each would have (J; docs/formats.md, term 3): 0 where the power
  // steps one way at a time.
  double smear_sd = 0;
};
Usual usual_around(const Series& wide, const Averaging& averaging);

// The error bar of the trapezoid over the samples s[first..last] standing for [start, end]:
// interpolated edges integrate exactly [start, end]; snapped ones [s.t[first], s.t[last]].
// `usual`: what the series usually shows around the window (usual_around a wider stretch of
// it); by default that of `s`.
ErrorBar error_bar(const Series& s, std::size_t first, std::size_t last, double start, double end,
                   bool snapped, const Averaging& averaging,
                   std::optional<Usual> usual = std::nullopt);

// How unevenly overlapping averages of tau seconds, dated at the samples s[first..last] and
// weighted as the trapezoid over [lo, hi] weighs them, count the instants of the window's
// inside [lo + tau / 2, hi - tau / 2]: the integral of (density - 1)^2, the density at an
// instant being the sum of weight / tau over the averages that hold it (1 everywhere for
// readings evenly spaced at tau / k). 0 where the readings' median spacing is over
// kTilingSpacing times tau: their averages do not overlap, and the uncovered stretches'
// terms state what they miss.
double uneven_tiling(const Series& s, std::size_t first, std::size_t last, double lo, double hi,
                     bool snapped, double tau);

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
