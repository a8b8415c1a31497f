#pragma once
// Energy of one track over one benchmark window, and the power statistics of the samples the
// integral rests on. Two edge modes:
//  - snap: each window edge moves to the nearest sample (ties to the earlier one, at most
//    3 s away) and the trapezoid runs between the snapped samples, so the energy can include
//    up to 3 s of power outside the window on either side; it gives upstream's numbers;
//  - interpolate (ours, the default): the trapezoid runs exactly from start to end, with the
//    power at each edge interpolated linearly between the samples around it (each within
//    3 s); a sample exactly on an edge is used as it is.
// In both modes avg_power_w is joules / (end - start), the window's own duration.

#include <optional>
#include <string>
#include <string_view>

#include "common/sample_gap.hpp"
#include "report/track.hpp"
#include "report/uncertainty.hpp"

namespace cpupower::report {

enum class Edges { interpolate, snap };

std::string_view edges_name(Edges edges);
std::optional<Edges> parse_edges(std::string_view name);

// Farthest a sample may be from a window edge it stands for, and the largest interior gap we
// accept without a warning: the one bound of common/sample_gap.hpp, which the recipe rules
// hold collect intervals to.
using common::kMaxSampleGapS;

struct PowerStats {
  double joules = 0;
  double avg_power_w = 0;
  double sample_start_unix = 0;  // first sample the integral rests on
  double sample_end_unix = 0;    // last one
  std::size_t samples = 0;
  double mean_w = 0, min_w = 0, p5_w = 0, p50_w = 0, p95_w = 0, p99_w = 0, max_w = 0;
  double largest_gap_s = 0;        // between consecutive samples the integral rests on
  double largest_gap_at_unix = 0;  // where that gap starts
  // How well the joules were measured (report/uncertainty.hpp): the share of the window the
  // readings' averaging intervals covered (unset when the interval is unknown) and the
  // expanded uncertainty.
  std::optional<double> coverage;
  double uncertainty_j = 0;
};

struct Breakdown {
  std::string label;
  PowerStats stats;
};

struct Integration {
  std::optional<Breakdown> row;
  std::string error;  // "<label>: ..." when row is empty
};

// Every sample an integral can rest on lies within this of the window.
inline constexpr double kWindowMargin = kMaxSampleGapS + 1.0;

// `with_stats` false skips the sample statistics (mean, percentiles) when only the energy
// is wanted. `averaging`: what the readings average, for the coverage and uncertainty.
Integration integrate_window(const Track& track, double start_unix, double end_unix, Edges edges,
                             const std::string& label, bool with_stats = true,
                             const Averaging& averaging = {});

// The same over samples gathered by the caller: every valued sample of the series within
// kWindowMargin of the window, ascending. A success equals integrate_window's; a failure's
// text lacks what only the whole series tells (the distance to the nearest sample), so a
// caller that reports it asks integrate_window.
Integration integrate_samples(const Series& samples, double start_unix, double end_unix,
                              Edges edges, const std::string& label, bool with_stats = true,
                              const Averaging& averaging = {});

}  // namespace cpupower::report
