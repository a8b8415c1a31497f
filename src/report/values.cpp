#include "report/values.hpp"

#include <algorithm>
#include <span>

namespace cpupower::report {

bool Values::encode(double v, int scale, std::int32_t* m) {
  if (std::isnan(v)) {
    *m = kMissing;
    return true;
  }
  const double scaled = v * kScale[scale];
  if (!(std::abs(scaled) <= static_cast<double>(kLimit))) return false;  // infinities too
  const auto r = static_cast<std::int32_t>(std::lrint(scaled));
  if (static_cast<double>(r) / kScale[scale] != v || (r == 0 && std::signbit(v))) return false;
  *m = r;
  return true;
}

bool Values::rescale(int scale) {
  const std::int64_t factor = kPow10[scale - scale_];
  const std::int64_t limit = kLimit / factor;
  for (const std::int32_t m : ints_) {
    if (m != kMissing && (m > limit || m < -limit)) return false;
  }
  // m * 10^d / 10^(s + d) is the fraction m / 10^s with an exact numerator and denominator:
  // the correctly rounded quotient, what operator[] returns, does not change.
  for (std::int32_t& m : ints_) {
    if (m != kMissing) m = static_cast<std::int32_t>(m * factor);
  }
  scale_ = scale;
  return true;
}

bool Values::encode_or_rescale(double v, std::int32_t* m) {
  if (encode(v, scale_, m)) return true;
  // More decimals than so far: a finer scale for the whole column, while everything fits.
  for (int scale = scale_ + 1; scale <= kMaxScale; ++scale) {
    if (!encode(v, scale, m)) continue;
    return rescale(scale);
  }
  return false;
}

void Values::push_back(double v) {
  std::int32_t m = 0;
  if (compact_ && encode_or_rescale(v, &m)) {
    ints_.push_back(m);
    return;
  }
  if (compact_) to_doubles();
  doubles_.push_back(v);
}

void Values::to_doubles() {
  Doubles out;
  out.reserve_address_space(std::max(reserved_, ints_.size()));
  for (std::size_t i = 0; i < ints_.size(); ++i) out.push_back((*this)[i]);
  ints_.release();
  doubles_ = std::move(out);
  compact_ = false;
}

void Values::append(const Values& from, std::size_t begin) {
  const std::size_t n = from.size() - std::min(begin, from.size());
  // A finer scale in `from` is taken first (at once when this column is still empty).
  if (compact_ && from.compact_ && from.scale_ > scale_) rescale(from.scale_);
  if (compact_ && from.compact_ && from.scale_ <= scale_) {
    // The common case: integers at the same (or a coarser) scale stay integers.
    const std::int64_t factor = kPow10[scale_ - from.scale_];
    const std::int32_t* src = from.ints_.data() + begin;
    if (factor == 1) {
      ints_.append(std::span<const std::int32_t>(src, n));
      return;
    }
    std::size_t i = 0;
    for (; i < n; ++i) {
      const std::int64_t m = src[i] == kMissing ? kMissing : src[i] * factor;
      if (src[i] != kMissing && (m > kLimit || m < -kLimit)) break;
      ints_.push_back(static_cast<std::int32_t>(m));
    }
    for (; i < n; ++i) push_back(from[begin + i]);
    return;
  }
  for (std::size_t i = 0; i < n; ++i) push_back(from[begin + i]);
}

void Values::append_fill(std::size_t n, double v) {
  if (n == 0) return;
  push_back(v);  // settles the representation
  std::int32_t m = 0;
  if (compact_ && encode(v, scale_, &m)) {
    ints_.append_fill(n - 1, m);
  } else {
    doubles_.append_fill(n - 1, v);
  }
}

void Values::set(std::size_t i, double v) {
  std::int32_t m = 0;
  if (compact_ && encode_or_rescale(v, &m)) {
    ints_[i] = m;
    return;
  }
  if (compact_) to_doubles();
  doubles_[i] = v;
}

void Values::truncate(std::size_t n) {
  ints_.truncate(n);
  doubles_.truncate(n);
}

void Values::reserve_address_space(std::size_t n) {
  reserved_ = std::max(reserved_, n);
  if (compact_) {
    ints_.reserve_address_space(n);
  } else {
    doubles_.reserve_address_space(n);
  }
}

bool Values::any_value() const {
  if (compact_) {
    return std::any_of(ints_.begin(), ints_.end(), [](std::int32_t m) { return m != kMissing; });
  }
  return std::any_of(doubles_.begin(), doubles_.end(), [](double v) { return !std::isnan(v); });
}

std::size_t Values::gather(std::size_t begin, std::size_t end, const double* times,
                           double* times_out, double* values_out) const {
  // Every entry is written and the output index only advances past a value: no branch.
  std::size_t k = 0;
  if (compact_) {
    const std::int32_t* m = ints_.data();
    const double scale = kScale[scale_];
    for (std::size_t i = begin; i < end; ++i) {
      times_out[k] = times[i];
      values_out[k] = static_cast<double>(m[i]) / scale;
      k += m[i] != kMissing ? 1 : 0;
    }
    return k;
  }
  const double* d = doubles_.data();
  for (std::size_t i = begin; i < end; ++i) {
    times_out[k] = times[i];
    values_out[k] = d[i];
    k += std::isnan(d[i]) ? 0 : 1;
  }
  return k;
}

std::vector<double> Values::slice(std::size_t begin, std::size_t end) const {
  std::vector<double> out;
  out.reserve(end > begin ? end - begin : 0);
  for (std::size_t i = begin; i < end; ++i) out.push_back((*this)[i]);
  return out;
}

}  // namespace cpupower::report
