#pragma once
// A track: one quantity over time, the unit every report computation works on. The times
// are shared between the CPU tracks of one host (its sockets' power_w, rails and module_w
// and its node total come from the rows of the same scrapes), so a 10-million-row file costs
// one time array per host, not one per column. A NaN value marks a time without a value in
// that column (a blank cell, or no row of that socket): a missing sample, never a zero.

#include <atomic>
#include <cmath>
#include <memory>
#include <vector>

#include "report/doubles.hpp"
#include "report/values.hpp"

namespace cpupower::report {

using Times = std::shared_ptr<const Doubles>;

class Track {
 public:
  Track() = default;
  Track(Times times, Values values) : t(std::move(times)), v(std::move(values)) {}
  Track(const Track& o) : t(o.t), v(o.v), any_value_(o.any_value_.load()) {}
  Track(Track&& o) noexcept
      : t(std::move(o.t)), v(std::move(o.v)), any_value_(o.any_value_.load()) {}
  Track& operator=(const Track& o) {
    t = o.t;
    v = o.v;
    any_value_ = o.any_value_.load();
    return *this;
  }
  Track& operator=(Track&& o) noexcept {
    t = std::move(o.t);
    v = std::move(o.v);
    any_value_ = o.any_value_.load();
    return *this;
  }

  Times t = std::make_shared<const Doubles>();  // ascending
  Values v;                                     // same length; NaN = no value

  std::size_t size() const { return v.size(); }
  double time(std::size_t i) const { return (*t)[i]; }
  bool has(std::size_t i) const { return !std::isnan(v[i]); }
  // Whether some row has a value; computed once, since every window asks (windows are
  // reported on several threads at once, hence the atomic).
  bool any_value() const;

 private:
  mutable std::atomic<signed char> any_value_{-1};  // unknown, 0 or 1
};

// A dense, owned series: the samples one computation rests on.
struct Series {
  std::vector<double> t;
  std::vector<double> w;

  std::size_t size() const { return t.size(); }
  bool empty() const { return t.empty(); }
};

// Sorts (t, w) pairs by time, keeping file order among equal times (the reference's stable
// sort). With `keep_last`, equal times collapse to the value of the last row, the
// reference's dict semantics for CPU series; otherwise duplicates stay (GPU device lists).
void stable_sort_by_time(Doubles& t, Doubles& w, bool keep_last);

// Builds a Track owning its times.
Track make_track(Doubles t, Doubles v);
Track make_track(const std::vector<double>& t, const std::vector<double>& v);

}  // namespace cpupower::report
