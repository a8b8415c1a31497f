#pragma once
// The report's outputs: the text table and JSON list in the layout existing consumers read,
// the SVG power plot and the self-contained HTML report.

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "report/window_report.hpp"

namespace cpupower::report {

// Our per-window figures, after the reference's: each is one line of the text block, after
// the window's totals (left out when the window has no value), and one JSON key, after every
// reference key (null when the window has no value), in this order. A new figure is a
// WindowReport field, the code that computes it and a row here.
struct WindowFigure {
  std::string_view key;    // JSON key
  std::string_view label;  // text label, padded to the totals' column
  std::optional<double> WindowReport::*value;
  std::string_view unit;  // after the number (two decimals, thousands commas) in the text line
};
inline constexpr WindowFigure kWindowFigures[] = {
    {"module_total_joules", "module total:   ", &WindowReport::module_total_joules,
     " J (superchip module_w: Grace + its GPUs + the rest of the module; GPU energy is already "
     "inside it, never add it on top)"},
};

// The text table, one block per window, then the grand total (trailing newline included).
std::string render_text(const std::vector<WindowReport>& reports, Edges edges);

// The JSON list: `json.dumps(list, indent=2) + "\n"`, keys in the order existing consumers
// read, the additions after them.
std::string render_json(const std::vector<WindowReport>& reports);
Json window_json(const WindowReport& report);

// Power over time per node (CPU total, GPU, module) with the windows shaded.
std::string render_svg(const RunData& run, const std::vector<WindowReport>& reports);

// One run of the HTML report: its name (the run directory as given) and the objects the JSON
// report is rendered from.
struct HtmlRun {
  std::string name;
  const RunData* data = nullptr;
  const std::vector<WindowReport>* windows = nullptr;
};

// One track reduced for the HTML report's charts: the smallest and largest value of every
// time bucket (bucket k covers [origin + k * bucket_s, origin + (k + 1) * bucket_s)), so a
// spike shorter than a bucket survives. The series is split into segments at every gap
// between consecutive samples wider than the report's gap rule (kMaxSampleGapS), so no chart
// can join across one; the gaps are listed too, as (last sample before, first sample after)
// in seconds since origin. Within a segment a bucket without a sample is empty, which is no
// hole by itself (a slow sampler leaves empty buckets between its samples).
struct Downsampled {
  struct Segment {
    long long first = 0;                        // bucket index of lo[0] and hi[0]
    std::vector<std::optional<double>> lo, hi;  // per bucket, up to the segment's last sample
  };
  std::vector<Segment> segments;
  std::vector<std::pair<double, double>> gaps;
};
Downsampled downsample(const Track& track, double origin, double bucket_s, double max_gap_s);

// The HTML report: one file with inline style sheet, script and data (every run's JSON
// report rows, window_json, and its power series downsampled), no external resource.
std::string render_html(const std::vector<HtmlRun>& runs);

}  // namespace cpupower::report
