#pragma once
// A track: one quantity over time, the unit every report computation works on. The times
// are shared between the CPU tracks of one host (its sockets' power_w, rails and module_w
// and its node total come from the rows of the same scrapes), so a large file costs one time
// array per host, not one per column. A NaN value marks a time without a value in that
// column (a blank cell, or no row of that socket): a missing sample, never a zero.

#include <algorithm>
#include <cmath>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace cpupower::report {

using Times = std::shared_ptr<const std::vector<double>>;

class Track {
 public:
  Track() = default;
  Track(Times times, std::vector<double> values);

  Times t = std::make_shared<const std::vector<double>>();  // ascending
  std::vector<double> v;  // same length; NaN = no value. Not changed after construction.

  std::size_t size() const { return v.size(); }
  double time(std::size_t i) const { return (*t)[i]; }
  bool has(std::size_t i) const { return !std::isnan(v[i]); }
  bool any_value() const { return any_value_; }  // some time has a value

 private:
  bool any_value_ = false;
};

// The values in [begin, end) that are not NaN, written densely to `values_out` with their
// times to `times_out` (both with room for end - begin); their count.
std::size_t gather(const Track& track, std::size_t begin, std::size_t end, double* times_out,
                   double* values_out);

// A dense, owned series: the samples one computation rests on.
struct Series {
  std::vector<double> t;
  std::vector<double> w;
  std::size_t size() const { return t.size(); }
  bool empty() const { return t.empty(); }
};

// Sorts (t, w) pairs by time, stably (equal times keep their file order), as upstream's report
// does, so that its joules are reproduced. With `keep_last`, equal times collapse to the value
// of the last row, as a dict keyed by time keeps it (CPU series); otherwise equal times stay
// (GPU device lists, whose reader has already dropped rows repeating an instant).
void stable_sort_by_time(std::vector<double>& t, std::vector<double>& w, bool keep_last);

// A Track owning its times.
Track make_track(std::vector<double> t, std::vector<double> v);

// The elements of `sorted` (sockets or devices, sorted by host first) whose host is `host`.
// std::equal_range rather than std::ranges': clang 14 cannot compile libstdc++ 12's
// ranges::subrange, and the sanitizer builds use clang.
template <typename T>
std::span<const T> of_host(const std::vector<T>& sorted, const std::string& host) {
  struct ByHost {
    bool operator()(const T& a, const std::string& h) const { return a.host < h; }
    bool operator()(const std::string& h, const T& a) const { return h < a.host; }
  };
  const auto [first, last] = std::equal_range(sorted.begin(), sorted.end(), host, ByHost{});
  return {sorted.data() + (first - sorted.begin()), static_cast<std::size_t>(last - first)};
}

}  // namespace cpupower::report
