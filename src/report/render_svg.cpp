// The power plot: one panel per node with its CPU total, GPU sum and superchip module
// power over the run, benchmark windows shaded and labelled. Plain SVG, no script, readable
// in a browser or an image viewer; every series is reduced to one point per pixel column so
// that a day-long run stays a small file.

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "common/text.hpp"
#include "report/render.hpp"

namespace cpupower::report {
namespace {

constexpr double kWidth = 1200, kLeft = 80, kRight = 30, kTop = 60, kPanel = 200, kGap = 50;
constexpr double kPlotWidth = kWidth - kLeft - kRight;
constexpr int kColumns = 1100;

struct Line {
  const char* color;
  const Track* track;
};

struct Panel {
  std::string host;
  std::vector<Line> lines;
};

// Host names and tags come from the run's files: escaped for XML, with control characters and
// bytes that are not UTF-8 as visible escapes, so that the plot stays well-formed XML.
std::string esc(std::string_view s) {
  return common::escape_untrusted_xml(s);
}

std::vector<Panel> panels(const RunData& run) {
  std::map<std::string, Panel> by_host;
  if (run.cpu) {
    for (const auto& n : run.cpu->nodes) by_host[n.host].lines.push_back({"#d62728", &n.total});
  }
  if (run.gpu) {
    for (const auto& n : run.gpu->nodes) by_host[n.host].lines.push_back({"#1f77b4", &n.power});
  }
  for (const auto& node : run.module_nodes) {
    by_host[node->host()].lines.push_back({"#2ca02c", &node->whole()});
  }
  std::vector<Panel> out;
  for (auto& [host, p] : by_host) {
    p.host = host;
    out.push_back(std::move(p));
  }
  return out;
}

// Mean per pixel column; an empty column breaks the line so gaps stay visible.
std::vector<std::vector<std::pair<double, double>>> reduce(const Track& tr, double t0, double t1) {
  std::vector<double> sum(kColumns, 0.0);
  std::vector<int> count(kColumns, 0);
  const double span = std::max(t1 - t0, 1e-9);
  for (std::size_t i = 0; i < tr.size(); ++i) {
    if (!tr.has(i)) continue;
    int c = static_cast<int>((tr.time(i) - t0) / span * (kColumns - 1));
    c = std::clamp(c, 0, kColumns - 1);
    sum[c] += tr.v[i];
    ++count[c];
  }
  std::vector<std::vector<std::pair<double, double>>> runs(1);
  int last = -1;
  for (int c = 0; c < kColumns; ++c) {
    if (count[c] == 0) continue;
    // A hole wider than ~1% of the run (or 2 columns) means no samples there: break.
    if (last >= 0 && c - last > std::max(2, kColumns / 100) && !runs.back().empty())
      runs.emplace_back();
    runs.back().emplace_back(c, sum[c] / count[c]);
    last = c;
  }
  return runs;
}

std::pair<double, double> time_range(const std::vector<WindowReport>& reports,
                                     const std::vector<Panel>& ps) {
  double t0 = std::numeric_limits<double>::infinity(), t1 = -t0;
  for (const auto& p : ps) {
    for (const auto& l : p.lines) {
      if (l.track->size() == 0) continue;
      t0 = std::min(t0, l.track->time(0));
      t1 = std::max(t1, l.track->time(l.track->size() - 1));
    }
  }
  for (const auto& r : reports) {
    if (!r.window.error.empty()) continue;
    t0 = std::min(t0, r.window.start_unix);
    t1 = std::max(t1, r.window.end_unix);
  }
  if (!std::isfinite(t0)) t0 = 0, t1 = 1;
  if (t1 <= t0) t1 = t0 + 1;
  return {t0, t1};
}

double nice_ceiling(double v) {
  if (v <= 0) return 1;
  const double mag = std::pow(10, std::floor(std::log10(v)));
  for (const double m : {1.0, 2.0, 2.5, 5.0, 10.0}) {
    if (m * mag >= v) return m * mag;
  }
  return 10 * mag;
}

void panel_svg(const Panel& p, const std::vector<WindowReport>& reports, double t0, double t1,
               double top, std::string& out) {
  double ymax = 0;
  for (const auto& l : p.lines) {
    for (std::size_t i = 0; i < l.track->size(); ++i) {
      if (l.track->has(i)) ymax = std::max(ymax, l.track->v[i]);
    }
  }
  ymax = nice_ceiling(ymax * 1.05);
  const auto X = [&](double t) { return kLeft + (t - t0) / (t1 - t0) * kPlotWidth; };
  const auto Y = [&](double w) { return top + kPanel - w / ymax * kPanel; };
  out += fmt::format("<text x=\"{}\" y=\"{:.1f}\" class=\"title\">{}</text>\n", kLeft, top - 8,
                     esc(p.host));
  for (const auto& r : reports) {
    if (!r.window.error.empty()) continue;
    const double x0 = X(r.window.start_unix), x1 = X(r.window.end_unix);
    out += fmt::format(
        "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{}\" class=\"window\"/>\n", x0,
        top, std::max(x1 - x0, 1.0), kPanel);
    const std::string tag =
        r.window.concurrency ? fmt::format("c={}", *r.window.concurrency) : r.window.benchmark_type;
    out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" class=\"tag\">{}</text>\n", x0 + 2,
                       top + 12, esc(tag));
  }
  for (int i = 0; i <= 4; ++i) {
    const double w = ymax * i / 4, y = Y(w);
    out += fmt::format("<line x1=\"{}\" x2=\"{}\" y1=\"{:.1f}\" y2=\"{:.1f}\" class=\"grid\"/>\n",
                       kLeft, kLeft + kPlotWidth, y, y);
    out += fmt::format("<text x=\"{}\" y=\"{:.1f}\" class=\"ylabel\">{:g} W</text>\n", kLeft - 6,
                       y + 4, w);
  }
  for (const auto& l : p.lines) {
    for (const auto& run : reduce(*l.track, t0, t1)) {
      if (run.empty()) continue;
      out += fmt::format("<polyline stroke=\"{}\" class=\"series\" points=\"", l.color);
      for (const auto& [c, w] : run) {
        out += fmt::format("{:.1f},{:.1f} ", kLeft + c / (kColumns - 1) * kPlotWidth, Y(w));
      }
      out += "\"/>\n";
    }
  }
  out += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" class=\"frame\"/>\n",
                     kLeft, top, kPlotWidth, kPanel);
}

void axis_svg(double t0, double t1, double y, std::string& out) {
  for (int i = 0; i <= 6; ++i) {
    const double x = kLeft + kPlotWidth * i / 6;
    out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" class=\"xlabel\">+{:.0f} s</text>\n", x,
                       y + 16, (t1 - t0) * i / 6);
  }
  out += fmt::format(
      "<text x=\"{:.1f}\" y=\"{:.1f}\" class=\"xlabel\">seconds since {:.3f} (unix)</text>\n",
      kLeft + kPlotWidth / 2, y + 34, t0);
}

}  // namespace

std::string render_svg(const RunData& run, const std::vector<WindowReport>& reports) {
  const std::vector<Panel> ps = panels(run);
  const auto [t0, t1] = time_range(reports, ps);
  const double height = kTop + std::max<std::size_t>(ps.size(), 1) * (kPanel + kGap) + 40;
  std::string out = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} "
      "{1}\" font-family=\"sans-serif\">\n",
      kWidth, height);
  out +=
      "<style>.title{font-size:14px;font-weight:bold}.tag{font-size:10px;fill:#555}"
      ".ylabel{font-size:11px;text-anchor:end}.xlabel{font-size:11px;text-anchor:middle}"
      ".grid{stroke:#ddd;stroke-width:1}.frame{fill:none;stroke:#888}"
      ".window{fill:#f5a623;fill-opacity:0.18}.series{fill:none;stroke-width:1.6}"
      ".legend{font-size:12px}</style>\n";
  out += fmt::format("<rect width=\"{}\" height=\"{}\" fill=\"#ffffff\"/>\n", kWidth, height);
  out += fmt::format(
      "<text x=\"{}\" y=\"22\" class=\"title\">Power per node (shaded: benchmark "
      "windows)</text>\n",
      kLeft);
  const char* legend[][2] = {{"CPU total", "#d62728"},
                             {"GPU", "#1f77b4"},
                             {"module (superchip, includes its GPUs)", "#2ca02c"}};
  double lx = kLeft;
  for (const auto& [name, color] : legend) {
    out += fmt::format("<rect x=\"{:.0f}\" y=\"32\" width=\"14\" height=\"4\" fill=\"{}\"/>", lx,
                       color);
    out += fmt::format("<text x=\"{:.0f}\" y=\"38\" class=\"legend\">{}</text>\n", lx + 18, name);
    lx += 40 + 7.0 * std::string_view(name).size();
  }
  double top = kTop + 20;
  for (const auto& p : ps) {
    panel_svg(p, reports, t0, t1, top, out);
    top += kPanel + kGap;
  }
  axis_svg(t0, t1, top - kGap, out);
  out += "</svg>\n";
  return out;
}

}  // namespace cpupower::report
