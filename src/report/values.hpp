#pragma once
// The values of one track column. Collectors write watts as short decimals, so a column is
// kept as 32-bit integers m with one power-of-ten scale (the value is m / 10^scale) while
// every value allows it, and as doubles otherwise. A value is only stored as an integer when
// m / 10^scale, computed the way operator[] computes it, is exactly the double that was
// parsed, so reading a column never differs from the file. Half the bytes matter: on a VM
// the first write to fresh memory is the largest cost of loading a large samples file
// (docs/performance.md).

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string_view>
#include <vector>

#include "artifacts/csv_stream.hpp"
#include "report/doubles.hpp"

namespace cpupower::report {

class Values {
 public:
  Values() = default;
  // A column of doubles, taken over as it is.
  explicit Values(Doubles values) : doubles_(std::move(values)), compact_(false) {}

  double operator[](std::size_t i) const {
    if (!compact_) return doubles_[i];
    const std::int32_t m = ints_[i];
    return m == kMissing ? std::numeric_limits<double>::quiet_NaN()
                         : static_cast<double>(m) / kScale[scale_];
  }
  std::size_t size() const { return compact_ ? ints_.size() : doubles_.size(); }
  bool empty() const { return size() == 0; }
  bool compact() const { return compact_; }
  int scale() const { return scale_; }

  // Any value, NaN for none.
  void push_back(double v);
  // A CSV cell's value (Python float(); NaN when blank or not a number). A plain decimal
  // that fits the column's integers as they are goes in from its digits, without ever being
  // a double: no division on the loader's hottest path.
  void push_text(std::string_view cell) {
    artifacts::detail::PlainDecimal d;
    if (compact_ &&
        artifacts::detail::scan_plain_decimal(cell, &d) == artifacts::detail::Plain::ok &&
        d.frac <= scale_ && d.mantissa <= static_cast<std::uint64_t>(kLimit) &&
        !(d.negative && d.mantissa == 0)) {  // -0 has no integer form
      const auto m = static_cast<std::int64_t>(d.mantissa) * kPow10[scale_ - d.frac];
      if (m <= kLimit) {
        ints_.push_back(static_cast<std::int32_t>(d.negative ? -m : m));
        return;
      }
    }
    double v = std::numeric_limits<double>::quiet_NaN();
    artifacts::parse_number(cell, &v);
    push_back(v);
  }
  // Appends the values of `from` from index `begin` on (`from` keeps them).
  void append(const Values& from, std::size_t begin = 0);
  void append_fill(std::size_t n, double v);
  // Replaces value i (any value, NaN for none).
  void set(std::size_t i, double v);
  void truncate(std::size_t n);
  void reserve_address_space(std::size_t n);

  bool any_value() const;  // some value is not NaN
  // The values in [begin, end) that are not NaN, written densely to `values_out` with the
  // matching `times` entries to `times_out` (both with room for end - begin); their count.
  std::size_t gather(std::size_t begin, std::size_t end, const double* times, double* times_out,
                     double* values_out) const;
  std::vector<double> to_vector() const { return slice(0, size()); }
  std::vector<double> slice(std::size_t begin, std::size_t end) const;

 private:
  static constexpr std::int32_t kMissing = std::numeric_limits<std::int32_t>::min();  // NaN
  static constexpr std::int64_t kLimit = std::numeric_limits<std::int32_t>::max();
  static constexpr int kMaxScale = 9;
  static constexpr double kScale[kMaxScale + 1] = {1e0, 1e1, 1e2, 1e3, 1e4,
                                                   1e5, 1e6, 1e7, 1e8, 1e9};
  static constexpr std::int64_t kPow10[kMaxScale + 1] = {
      1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000, 1000000000};

  // v as an integer at `scale`, when that reads back exactly (NaN: the missing mark).
  static bool encode(double v, int scale, std::int32_t* m);
  bool rescale(int scale);  // every stored integer to a finer scale, if all still fit
  // v as an integer, at a finer scale for the whole column when v needs one; false when no
  // scale fits (the caller switches the column to doubles).
  bool encode_or_rescale(double v, std::int32_t* m);
  void to_doubles();

  Int32s ints_;
  Doubles doubles_;
  std::size_t reserved_ = 0;  // address space asked for, kept when switching to doubles
  int scale_ = 0;
  bool compact_ = true;
};

}  // namespace cpupower::report
