#pragma once
// A channel's energy integrated on the node, at the rate its sensor is read, into counters
// that only grow while the process runs: the joules (trapezoid between consecutive good
// readings, each dated at the centre of what it averages), the seconds those readings'
// averaging intervals covered (between two centres: the later half of the earlier one's
// interval and the earlier half of the later one's), and the seconds bridged between them
// without a measurement.
// A stretch longer than the maximum age without a good reading is neither integrated nor
// counted: it is uncovered. A window's energy is then the difference of two counter values
// at any scrape rate (docs/formats.md, Energy counters).

#include <algorithm>
#include <optional>

#include "sources/sample_table.hpp"

namespace cpupower::sources {

struct EnergyCounter {
  double joules = 0;
  double covered_s = 0;
  double bridged_s = 0;

  // One good reading: `watts` averaged over `window_s` (unknown: nullopt) and centred at
  // `centre`. `max_gap_s`: the longest stretch between two readings still bridged.
  void add(double watts, SteadyTime centre, std::optional<double> window_s, double max_gap_s) {
    if (last_watts_ && centre <= last_centre_) return;  // no time passed: nothing to add
    if (last_watts_) {
      const double dt = std::chrono::duration<double>(centre - last_centre_).count();
      if (dt <= max_gap_s) {
        joules += (*last_watts_ + watts) / 2 * dt;
        // Between the two centres, the later half of the earlier reading's interval and the
        // earlier half of this one's were measured; an unknown interval measured nothing.
        const double covered = std::min(dt, last_half_s_ + half(window_s));
        covered_s += covered;
        bridged_s += dt - covered;
      }
    }
    last_watts_ = watts;
    last_centre_ = centre;
    last_half_s_ = half(window_s);
  }

 private:
  static double half(std::optional<double> window_s) {
    return window_s && *window_s > 0 ? *window_s / 2 : 0.0;
  }

  std::optional<double> last_watts_;
  SteadyTime last_centre_{};
  double last_half_s_ = 0;  // half the last reading's averaging interval, 0 when unknown
};

}  // namespace cpupower::sources
