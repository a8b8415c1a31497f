#pragma once
// numpy's arithmetic, reproduced so that our numbers agree with upstream's report to the last
// bits where it matters: pairwise summation (np.add.reduce), np.trapezoid's term order, and
// np.percentile's "linear" method with numpy's lerp branch.

#include <cstddef>
#include <span>
#include <string>
#include <vector>

namespace cpupower::report {

// np.add.reduce over a contiguous float64 array: pairwise summation (blocks of 8 interleaved
// accumulators, split in halves above 128 elements).
double numpy_sum(std::span<const double> values);

// np.trapezoid(y, x): sum of (x[i+1]-x[i]) * (y[i+1]+y[i]) / 2.0, summed like numpy_sum.
double numpy_trapezoid(std::span<const double> x, std::span<const double> y);

struct Percentiles {
  double p5 = 0, p50 = 0, p95 = 0, p99 = 0;
  double min = 0, max = 0;  // std::minmax_element's: the first smallest, the last largest
};

// np.percentile(values, (5, 50, 95, 99)) with the default linear method (by selection, not a
// full sort), and the extremes found on the way. `values` must not be empty or hold NaN and
// is left as it is.
Percentiles numpy_percentiles(std::span<const double> values);

// Python's {:,.2f} (and other precisions): correctly rounded fixed point with a comma every
// three integer digits.
std::string py_fixed_commas(double value, int decimals);

}  // namespace cpupower::report
