// The HTML report: one self-contained file (inline style sheet, script and data, no network)
// with a Pareto view of every window of every run given, power over time per window and per
// run, and a sortable table. The numbers are the JSON report's own rows (window_json), never
// computed a second time; the charts get every CPU socket, GPU and superchip module track
// reduced to min/max per time bucket, with the sample gaps the report's gap rule flags kept as
// holes. The script and style sheet are src/report/html/report.{js,css}, embedded at build
// time (cmake/embed_text.cmake).

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "report/html/report.css.hpp"
#include "report/html/report.js.hpp"
#include "report/render.hpp"

namespace cpupower::report {
namespace {

// Buckets across a run's whole span: each window's chart gets its share of them (a window
// of a tenth of the run gets 300). Never narrower than kMinBucketS, a 10 Hz sampler's period,
// nor than the run's typical time between samples.
constexpr double kBuckets = 3000;
constexpr double kMinBucketS = 0.1;
// Chart values travel as whole tenths of a watt.
constexpr double kValueScale = 10;
constexpr double kValueLimit = 1e15;  // beyond it a value is no power reading

struct SeriesRef {
  std::string host, kind, device, label;
  const Track* track;
};

std::vector<SeriesRef> series_of(const RunData& run) {
  // By host, then CPU sockets, GPUs and the module, each in index order.
  std::vector<SeriesRef> out;
  if (run.cpu) {
    for (const auto& s : run.cpu->sockets) {
      out.push_back({s.host, "cpu", "socket" + std::to_string(s.socket), s.label(), &s.power});
    }
  }
  if (run.gpu) {
    for (const auto& d : run.gpu->devices) {
      out.push_back({d.host, "gpu", "gpu" + std::to_string(d.index), d.label(), &d.power});
    }
  }
  for (const auto& node : run.module_nodes) {
    out.push_back({node->host(), "module", "module", "module/" + node->host(), &node->whole()});
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const SeriesRef& a, const SeriesRef& b) { return a.host < b.host; });
  return out;
}

// The run's time origin and span: its first and last sample over every charted track, and
// every window (as the SVG plot's).
std::pair<double, double> time_range(const std::vector<SeriesRef>& series,
                                     const std::vector<WindowReport>& windows) {
  double t0 = std::numeric_limits<double>::infinity(), t1 = -t0;
  for (const auto& s : series) {
    const Track& tr = *s.track;
    for (std::size_t i = 0; i < tr.size(); ++i) {
      if (!tr.has(i) || !std::isfinite(tr.time(i))) continue;
      t0 = std::min(t0, tr.time(i));
      break;
    }
    for (std::size_t i = tr.size(); i-- > 0;) {
      if (!tr.has(i) || !std::isfinite(tr.time(i))) continue;
      t1 = std::max(t1, tr.time(i));
      break;
    }
  }
  for (const auto& r : windows) {
    if (!r.error.empty()) continue;
    t0 = std::min(t0, r.window.start_unix);
    t1 = std::max(t1, r.window.end_unix);
  }
  if (!std::isfinite(t0) || !std::isfinite(t1)) t0 = 0, t1 = 1;
  if (t1 <= t0) t1 = t0 + 1;
  return {t0, t1};
}

// The median over the series of each one's mean time between samples: a bucket narrower
// than that would hold no more than one sample and leave the rest empty, a bigger file with
// nothing more in it.
double typical_interval(const std::vector<SeriesRef>& series) {
  std::vector<double> intervals;
  for (const auto& s : series) {
    const Track& tr = *s.track;
    std::size_t n = 0;
    double first = 0, last = 0;
    for (std::size_t i = 0; i < tr.size(); ++i) {
      if (!tr.has(i) || !std::isfinite(tr.time(i))) continue;
      if (n++ == 0) first = tr.time(i);
      last = tr.time(i);
    }
    if (n > 1 && last > first) intervals.push_back((last - first) / static_cast<double>(n - 1));
  }
  if (intervals.empty()) return 0;
  std::nth_element(intervals.begin(), intervals.begin() + intervals.size() / 2, intervals.end());
  return intervals[intervals.size() / 2];
}

std::string json_string(const std::string& s) {
  return Json(s).dump(-1, ' ', false, Json::error_handler_t::replace);
}

long long scaled(double w) {
  return std::llround(w * kValueScale);
}

void series_json(const SeriesRef& s, double origin, double bucket_s, std::string& out) {
  const Downsampled d = downsample(*s.track, origin, bucket_s, kMaxSampleGapS);
  out += fmt::format("{{\"label\":{},\"host\":{},\"kind\":\"{}\",\"device\":{},\"segs\":[",
                     json_string(s.label), json_string(s.host), s.kind, json_string(s.device));
  for (std::size_t g = 0; g < d.segments.size(); ++g) {
    const Downsampled::Segment& seg = d.segments[g];
    // lo in tenths of a watt, d = hi - lo (small numbers: the file stays small); null = empty.
    std::string lo = fmt::format("{}{{\"first\":{},\"lo\":[", g ? "," : "", seg.first);
    std::string hi = "],\"d\":[";
    for (std::size_t k = 0; k < seg.lo.size(); ++k) {
      const char* sep = k ? "," : "";
      if (!seg.lo[k]) {
        lo += sep, lo += "null";
        hi += sep, hi += "null";
        continue;
      }
      const long long l = scaled(*seg.lo[k]);
      lo += fmt::format("{}{}", sep, l);
      hi += fmt::format("{}{}", sep, scaled(*seg.hi[k]) - l);
    }
    out += lo + hi + "]}";
  }
  out += "],\"gaps\":[";
  for (std::size_t g = 0; g < d.gaps.size(); ++g) {
    out += fmt::format("{}[{:.3f},{:.3f}]", g ? "," : "", d.gaps[g].first, d.gaps[g].second);
  }
  out += "]}";
}

void run_json(const HtmlRun& run, std::string& out) {
  const std::vector<SeriesRef> series = series_of(*run.data);
  const auto [t0, t1] = time_range(series, *run.windows);
  const double bucket_s = std::max({(t1 - t0) / kBuckets, kMinBucketS, typical_interval(series)});
  out +=
      fmt::format("{{\"name\":{},\"origin_unix\":{},\"end_unix\":{},\"bucket_s\":{},",
                  json_string(run.name), Json(t0).dump(), Json(t1).dump(), Json(bucket_s).dump());
  out += "\"windows\":[";
  for (std::size_t i = 0; i < run.windows->size(); ++i) {
    if (i) out += ",";
    out += window_json((*run.windows)[i]).dump(-1, ' ', false, Json::error_handler_t::replace);
  }
  out += "],\"series\":[";
  for (std::size_t i = 0; i < series.size(); ++i) {
    if (i) out += ",";
    series_json(series[i], t0, bucket_s, out);
  }
  out += "]}";
}

// Inside <script>, "</script" or "<!--" would end or bend the element: every '<' (only ever
// inside a JSON string) becomes its \u escape, which JSON.parse reads back unchanged.
std::string script_safe(const std::string& json) {
  std::string out;
  out.reserve(json.size());
  for (const char c : json) out += c == '<' ? std::string_view("\\u003c") : std::string_view(&c, 1);
  return out;
}

}  // namespace

Downsampled downsample(const Track& track, double origin, double bucket_s, double max_gap_s) {
  Downsampled out;
  double last = 0;
  for (std::size_t i = 0; i < track.size(); ++i) {
    const double t = track.time(i), v = track.v[i];
    if (!std::isfinite(t) || !std::isfinite(v) || std::abs(v) > kValueLimit) continue;
    const auto k = static_cast<long long>(std::floor((t - origin) / bucket_s));
    if (out.segments.empty() || t - last > max_gap_s) {
      if (!out.segments.empty()) out.gaps.emplace_back(last - origin, t - origin);
      out.segments.emplace_back().first = k;
    }
    last = t;  // a track's times ascend
    Downsampled::Segment& seg = out.segments.back();
    const auto idx = static_cast<std::size_t>(std::max(k - seg.first, 0LL));
    if (idx >= seg.lo.size()) {
      seg.lo.resize(idx + 1);
      seg.hi.resize(idx + 1);
    }
    seg.lo[idx] = seg.lo[idx] ? std::min(*seg.lo[idx], v) : v;
    seg.hi[idx] = seg.hi[idx] ? std::max(*seg.hi[idx], v) : v;
  }
  return out;
}

std::string render_html(const std::vector<HtmlRun>& runs) {
  std::string data = fmt::format("{{\"format\":1,\"gap_rule_s\":{},\"value_scale\":{},\"runs\":[",
                                 Json(kMaxSampleGapS).dump(), kValueScale);
  for (std::size_t i = 0; i < runs.size(); ++i) {
    if (i) data += ",";
    run_json(runs[i], data);
  }
  data += "]}";
  std::string out =
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      // Nothing may be fetched: the page is its own data, style and script.
      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
      "style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
      "<title>Energy report</title>\n<style>\n";
  out += embed::kReportCss;
  out +=
      "</style>\n</head>\n<body>\n<noscript>This report draws its views with JavaScript; the "
      "same numbers are in power_energy_report.json and .txt.</noscript>\n"
      "<script type=\"application/json\" id=\"report-data\">";
  out += script_safe(data);
  out += "</script>\n<script>\n";
  out += embed::kReportJs;
  out += "</script>\n</body>\n</html>\n";
  return out;
}

}  // namespace cpupower::report
