#include "report/numeric.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
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

// numpy's _lerp between two adjacent order statistics.
double lerp(double a, double b, double g) {
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

namespace {

// The order statistics `ranks` (ascending, inside [0, n)) of `values`, by selection: they
// are put in place in ascending order, each by nth_element over the part above the last
// one placed, or, right after one, as the minimum of what lies above it (a plain scan,
// far cheaper than another selection). Reorders `values`.
void select_in_place(std::vector<double>& values, const std::size_t* ranks, std::size_t count,
                     double* out) {
  const auto at = [&](std::size_t i) { return values.begin() + static_cast<std::ptrdiff_t>(i); };
  std::size_t from = 0;  // positions below this hold their order statistic
  for (std::size_t i = 0; i < count; ++i) {
    const std::size_t r = ranks[i];
    if (r >= from) {
      if (r == from && from > 0) {
        std::iter_swap(std::min_element(at(r), values.end()), at(r));
      } else {
        std::nth_element(at(from), at(r), values.end());
      }
      from = r + 1;
    }
    out[i] = values[r];
  }
}

// A double's bits as an unsigned key in the double's order (equal doubles, -0 and +0 too,
// get equal keys).
std::uint64_t order_key(double x) {
  std::uint64_t u = 0;
  std::memcpy(&u, &x, sizeof u);
  if (x == 0) u = 0;
  return (u >> 63) != 0 ? ~u : u | (std::uint64_t{1} << 63);
}

double from_order_key(std::uint64_t k) {
  const std::uint64_t u = (k >> 63) != 0 ? k & ~(std::uint64_t{1} << 63) : ~k;
  double x = 0;
  std::memcpy(&x, &u, sizeof x);
  return x;
}

// The same order statistics by a radix pass: one pass for the range of the keys, one to
// count them in 2048 buckets over that range, one to gather the few buckets the ranks fall
// in; the ranks are then selected among those alone. Each pass is branch-free or nearly
// so, where a selection over the whole array mispredicts about every other comparison.
// `values` is not reordered.
void select_by_buckets(std::span<const double> values, const std::size_t* ranks, std::size_t count,
                       double* out, double* min, double* max) {
  constexpr std::size_t kBuckets = 2048;
  // The keys are computed once; the passes below read them.
  thread_local std::vector<std::uint64_t> keys;
  keys.resize(values.size());
  std::uint64_t lo = ~std::uint64_t{0}, hi = 0;
  for (std::size_t i = 0; i < values.size(); ++i) {
    const std::uint64_t k = order_key(values[i]);
    keys[i] = k;
    lo = std::min(lo, k);
    hi = std::max(hi, k);
  }
  // The extremes are the values of the extreme keys, except that -0 and +0 share a key:
  // then the first (or last) zero is the one minmax_element picks.
  *min = from_order_key(lo);
  *max = from_order_key(hi);
  if (*min == 0) *min = *std::find(values.begin(), values.end(), 0.0);
  if (*max == 0) *max = *std::find(values.rbegin(), values.rend(), 0.0);
  const int width = hi == lo ? 0 : 64 - __builtin_clzll(hi - lo);
  const int shift = width > 11 ? width - 11 : 0;
  // Two interleaved histograms: neighbouring samples of a power series often share a
  // bucket, and one histogram would chain every such increment through memory.
  std::vector<std::uint32_t> counts2(2 * kBuckets, 0);
  std::size_t i = 0;
  for (; i + 1 < keys.size(); i += 2) {
    ++counts2[(keys[i] - lo) >> shift];
    ++counts2[kBuckets + ((keys[i + 1] - lo) >> shift)];
  }
  if (i < keys.size()) ++counts2[(keys[i] - lo) >> shift];
  std::vector<std::uint32_t> counts(kBuckets);
  for (std::size_t b = 0; b < kBuckets; ++b) counts[b] = counts2[b] + counts2[kBuckets + b];
  // The bucket of each rank, and the rank within it.
  std::size_t bucket_of[8], rank_in[8];
  std::vector<std::int8_t> slot(kBuckets, -1);  // bucket -> index among the gathered ones
  std::size_t gathered = 0;
  std::size_t bucket_starts[8];
  {
    std::size_t b = 0, below = 0;
    for (std::size_t r = 0; r < count; ++r) {
      while (below + counts[b] <= ranks[r]) below += counts[b++];
      bucket_of[r] = b;
      rank_in[r] = ranks[r] - below;
      if (slot[b] < 0) {
        slot[b] = static_cast<std::int8_t>(gathered);
        bucket_starts[gathered++] = b;
      }
    }
  }
  std::vector<std::vector<double>> parts(gathered);
  for (std::size_t g = 0; g < gathered; ++g) parts[g].reserve(counts[bucket_starts[g]]);
  for (std::size_t k = 0; k < values.size(); ++k) {
    const std::int8_t g = slot[(keys[k] - lo) >> shift];
    if (g >= 0) parts[static_cast<std::size_t>(g)].push_back(values[k]);
  }
  for (std::size_t g = 0; g < gathered; ++g) {
    std::size_t local[8];
    std::size_t n_local = 0;
    std::size_t first = 0;
    for (std::size_t i = 0; i < count; ++i) {
      if (bucket_of[i] != bucket_starts[g]) continue;
      if (n_local == 0) first = i;
      local[n_local++] = rank_in[i];
    }
    select_in_place(parts[g], local, n_local, out + first);
  }
}

}  // namespace

Percentiles numpy_percentiles(std::span<const double> values) {
  const std::size_t n = values.size();
  const double qs[4] = {5 / 100.0, 50 / 100.0, 95 / 100.0, 99 / 100.0};
  // Every percentile reads the order statistics k and k+1 (k+1 only below n).
  std::size_t ranks[8];
  std::size_t count = 0;
  for (const double q : qs) {
    const auto k =
        std::min(static_cast<std::size_t>(std::floor(static_cast<double>(n - 1) * q)), n - 1);
    for (const std::size_t r : {k, k + 1}) {
      if (r < n && (count == 0 || r > ranks[count - 1])) ranks[count++] = r;
    }
  }
  double stats[8];
  double min = 0, max = 0;
  if (n < 512) {
    const auto [lo, hi] = std::minmax_element(values.begin(), values.end());
    min = *lo;
    max = *hi;
    std::vector<double> copy(values.begin(), values.end());  // selection reorders
    select_in_place(copy, ranks, count, stats);
  } else {
    select_by_buckets(values, ranks, count, stats, &min, &max);
  }
  const auto order_statistic = [&](std::size_t r) {
    return stats[std::find(ranks, ranks + count, r) - ranks];
  };
  double out[4];
  for (int i = 0; i < 4; ++i) {
    const double v = static_cast<double>(n - 1) * qs[i];
    const auto k = std::min(static_cast<std::size_t>(std::floor(v)), n - 1);
    if (v >= static_cast<double>(n - 1)) {
      out[i] = order_statistic(n - 1);
      continue;
    }
    out[i] = lerp(order_statistic(k), order_statistic(k + 1), v - std::floor(v));
  }
  return {out[0], out[1], out[2], out[3], min, max};
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
