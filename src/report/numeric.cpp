#include "report/numeric.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

namespace cpupower::report {
namespace {

// numpy's pairwise_sum over values produced by `at(i)` for i in [0, n).
template <typename At>
double pairwise(const At& at, std::size_t begin, std::size_t n) {
  if (n < 8) {
    double res = 0.;
    for (std::size_t i = 0; i < n; ++i) res += at(begin + i);
    return res;
  }
  if (n <= 128) {
    double r[8];
    for (std::size_t j = 0; j < 8; ++j) r[j] = at(begin + j);
    std::size_t i = 8;
    for (; i < n - (n % 8); i += 8) {
      for (std::size_t j = 0; j < 8; ++j) r[j] += at(begin + i + j);
    }
    double res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for (; i < n; ++i) res += at(begin + i);
    return res;
  }
  std::size_t n2 = n / 2;
  n2 -= n2 % 8;
  return pairwise(at, begin, n2) + pairwise(at, begin + n2, n - n2);
}

// numpy 1.24 reduces a contiguous float64 array by pairwise summation from the identity.
template <typename At>
double reduce(const At& at, std::size_t n) {
  return pairwise(at, 0, n);
}

double lerp_at(const std::vector<double>& s, std::size_t k, double g) {
  const double a = s[k];
  const double b = s[k + 1];
  const double d = b - a;
  return g >= 0.5 ? b - d * (1.0 - g) : a + d * g;
}

}  // namespace

double numpy_sum(std::span<const double> values) {
  return reduce([&](std::size_t i) { return values[i]; }, values.size());
}

double numpy_trapezoid(std::span<const double> x, std::span<const double> y) {
  if (x.size() < 2) return 0.0;
  return reduce([&](std::size_t i) { return (x[i + 1] - x[i]) * (y[i + 1] + y[i]) / 2.0; },
                x.size() - 1);
}

Percentiles numpy_percentiles(std::vector<double>& values) {
  const std::size_t n = values.size();
  const double qs[4] = {5 / 100.0, 50 / 100.0, 95 / 100.0, 99 / 100.0};
  // Every percentile reads the order statistics k and k+1. They are put in place in
  // ascending order: k by nth_element over the part above the last one placed, k+1 as the
  // minimum of what lies above k (a plain scan, far cheaper than another selection).
  const auto at = [&](std::size_t i) { return values.begin() + static_cast<std::ptrdiff_t>(i); };
  std::size_t from = 0;  // positions below this that were placed are final
  for (const double q : qs) {
    const auto k =
        std::min(static_cast<std::size_t>(std::floor(static_cast<double>(n - 1) * q)), n - 1);
    if (k >= from) std::nth_element(at(from), at(k), values.end());
    from = std::max(from, k + 1);
    if (k + 1 < n && k + 1 >= from) {
      std::iter_swap(std::min_element(at(k + 1), values.end()), at(k + 1));
      from = k + 2;
    }
  }
  double out[4];
  for (int i = 0; i < 4; ++i) {
    const double v = static_cast<double>(n - 1) * qs[i];
    if (v >= static_cast<double>(n - 1)) {
      out[i] = values[n - 1];
      continue;
    }
    const auto k = static_cast<std::size_t>(std::floor(v));
    out[i] = lerp_at(values, k, v - std::floor(v));
  }
  return {out[0], out[1], out[2], out[3]};
}

std::string py_fixed_commas(double value, int decimals) {
  char buf[512];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, value);
  const std::string_view s(buf);
  if (!std::isfinite(value)) return std::string(s);
  const std::size_t sign = s[0] == '-' ? 1 : 0;
  std::size_t dot = s.find('.');
  if (dot == std::string_view::npos) dot = s.size();
  std::string out(s.substr(0, sign));
  const std::size_t digits = dot - sign;
  for (std::size_t i = 0; i < digits; ++i) {
    if (i > 0 && (digits - i) % 3 == 0) out += ',';
    out += s[sign + i];
  }
  out += s.substr(dot);
  return out;
}

}  // namespace cpupower::report
