#pragma once
// How well one integral was measured: the share of the window the sensors' averaging
// intervals covered, and an uncertainty in joules (docs/formats.md, Coverage and
// uncertainty, states the method and what it assumes).
//
// A reading is the mean power over its averaging interval (ACPI power*_average_interval,
// NVML's 1 s), dated at the interval's centre. Three terms:
//  - each pair of consecutive samples: the energy between them is known only as well as the
//    power between them. A change of |dw| at an unknown instant of the stretch neither
//    reading averaged (u seconds of the c the window keeps) costs up to u |dw| / 2; the
//    averaged rest, up to (c - u) |dw| / 8, shrunk by spacing / tau where the averages
//    overlap (they tile the time axis, and the trapezoid of overlapping means is nearly the
//    integral). Independent across pairs: each is taken as uniform within its bound and they
//    add in quadrature;
//  - each window edge: an averaging interval of tau smears a change near the edge over tau,
//    and up to tau x (the change) / 8 lands on the wrong side, depending on where the
//    reading at the edge stands between the levels around it; uniform, in quadrature;
//  - snap edges only: the energy between a window edge and the sample it snapped to, which
//    the integral counts or leaves out; added in full (it has a sign, not a spread).
// The quadrature sum is expanded with k = 2 (about 95 % for the sum of several uniform
// terms). An unknown interval is taken as 0 (instantaneous samples, every gap uncovered):
// the uncertainty is then that of point samples and the coverage is not stated.

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

// The error bar of the trapezoid over the samples s[first..last] standing for [start, end]:
// interpolated edges integrate exactly [start, end]; snapped ones [s.t[first], s.t[last]].
ErrorBar error_bar(const Series& s, std::size_t first, std::size_t last, double start,
                   double end, bool snapped, const Averaging& averaging);

// uncertainty / joules in percent; unset for no energy.
std::optional<double> uncertainty_pct(double uncertainty_j, double joules);

}  // namespace cpupower::report
