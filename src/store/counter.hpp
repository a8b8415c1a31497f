#pragma once
// A counter's increase over a window from its raw samples, as a metrics store keeps them: the
// exporter's energy and covered-seconds counters (J, s), dcgm-exporter's energy counter (mJ).
// Pure functions over plain samples; docs/formats.md (Energy from a metrics store) states the
// method.
//
// - Resets: a value below its predecessor is a counter that restarted from 0 (an exporter
//   restart, a reboot) between the two samples. The value after the restart was all gained
//   after it, so the unwrapped counter carries on by that value; what the old counter gained
//   after its last sample was never stored: the stretch between the two samples is lost, and
//   the covered-seconds counter, which restarts with it, shows that as uncovered time.
// - Value at a time: linear between the samples around it (a sample on the time is used as it
//   is). Each side must have a sample within the lookback, or the series has no value there:
//   an error naming the series and the edge, never a silent 0.
// - Error bound: the counter never decreases (power is not negative), so its true value at x
//   lies between the samples around x; the interpolated value is off by at most max(f, 1 - f)
//   of the gain between them, f = (x - t_before) / (t_after - t_before). 0 on a sample.

#include <string>
#include <string_view>
#include <vector>

#include "common/result.hpp"
#include "store/series.hpp"

namespace cpupower::store {

// The counter's gain since its first sample, resets bridged (above).
struct Unwrapped {
  std::vector<double> t, u;
  std::vector<std::size_t> resets;  // i: the counter restarted between samples i - 1 and i

  std::size_t size() const { return t.size(); }
  bool reset_before(std::size_t i) const;  // a restart between samples i - 1 and i
};

// Samples that are not finite are left out (a store may hold NaN); times must ascend.
Unwrapped unwrap(const Samples& samples);

enum class Edge { start, end };

struct EdgeValue {
  double value = 0;
  std::size_t before = 0, after = 0;  // the samples around x; equal when one lies on x
  double fraction = 0;                // (x - t[before]) / (t[after] - t[before]); 0 on a sample
  double bracket_gain = 0;            // u[after] - u[before]
  bool across_reset = false;          // the counter restarted between the two

  // How far the interpolated value may be from the counter's true value (above).
  double error_bound() const;
};

// The counter's value at x. Fails when no sample lies within `lookback_s` before x, or none
// within `lookback_s` after it (a sample on x is both): "no sample of <name> within 300 s
// after the window's end (1754000100.000)".
Result<EdgeValue> value_at(const Unwrapped& c, double x, double lookback_s, std::string_view name,
                           Edge edge);

struct Increase {
  double gain = 0;  // value(end) - value(start)
  EdgeValue start, end;
  double error_bound = 0;  // start.error_bound() + end.error_bound()
  // Restarts between the samples the increase rests on, and the seconds of [start, end]
  // inside their lost stretches.
  std::size_t resets = 0;
  double lost_s = 0;
  double lost_from = 0, lost_to = 0;  // the first lost stretch (when resets > 0)
};

Result<Increase> increase(const Unwrapped& c, double start, double end, double lookback_s,
                          std::string_view name);

// The mean power of each interval between consecutive samples from `first` to `last` (its
// gain over its length), with the interval's midpoint and length; intervals across a restart
// are left out (their gain is only what the new counter counted).
struct IntervalRates {
  std::vector<double> mid, rate, dt;
};
IntervalRates interval_rates(const Unwrapped& c, std::size_t first, std::size_t last);

// A counter re-dated to what it counts up to. The exporter's counters at a scrape hold the
// energy up to the centre of the sensor's latest reading, which is
// `cpu_power_exporter_sample_age_seconds` before the scrape: each sample of `counter` moves
// back by the age sample of the same scrape (the same timestamp in the store). A sample
// without one keeps its time; a sample that would not come after the previous one (the same
// reading seen by several scrapes, a stale sensor) is dropped.
struct Redated {
  Samples samples;
  std::size_t without_age = 0;  // samples kept at their scrape time
};
Redated redate(const Samples& counter, const Samples& age);

// A gauge's trapezoid over [start, end] (dcgm-exporter's GPU power where the store has no
// GPU energy counter): from the gauge interpolated at start, through every sample inside,
// to the gauge interpolated at end; each edge needs a sample within the lookback on either
// side, as value_at. `first` and `last` are the samples around start and end.
struct GaugeIntegral {
  double joules = 0;
  std::size_t first = 0, last = 0;
};
Result<GaugeIntegral> gauge_integral(const Samples& gauge, double start, double end,
                                     double lookback_s, std::string_view name);

// The median spacing of the samples (0 for fewer than two).
double median_spacing(const std::vector<double>& t);

}  // namespace cpupower::store
