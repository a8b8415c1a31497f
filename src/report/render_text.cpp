// The text table, in the layout existing consumers read, plus the module and edge-mode lines.
// Every text that comes from outside (host names in labels, paths in errors and warnings, the
// session's command line) is printed through common::escape_untrusted: a name holding a
// terminal escape, a line break or bytes that are not UTF-8 shows them as visible escapes.

#include <fmt/core.h>

#include <algorithm>

#include "common/text.hpp"
#include "report/numeric.hpp"
#include "report/render.hpp"

namespace cpupower::report {
namespace {

std::string shown(std::string_view untrusted) {
  return common::escape_untrusted(untrusted);
}

std::string c2(double v) {
  return py_fixed_commas(v, 2);
}
// "n/a" when there is no value; else c2, or with `plain` > 0 that many decimals without commas.
std::string or_na(const std::optional<double>& v, int plain = 0) {
  if (!v) return "n/a";
  return plain > 0 ? fmt::format("{:.{}f}", *v, plain) : c2(*v);
}

// A percentage to two significant figures (at most one decimal from 1 %): "0.42", "3.1", "12";
// "<0.01" below a hundredth of a percent.
std::string pct_text(double pct) {
  if (pct == 0) return "0";
  if (pct < 0.01) return "<0.01";
  if (pct >= 9.95) return fmt::format("{:.0f}", pct);
  if (pct >= 0.995) return fmt::format("{:.1f}", pct);
  return fmt::format("{:.2g}", pct);
}

// " ± 0.4 % (coverage 100 %)" after a total: its uncertainty and the share of the window the
// readings' averaging covered ("coverage unknown" where the files do not record it).
std::string error_suffix(const TotalError& e, double joules) {
  const auto pct = uncertainty_pct(e.uncertainty_j, joules);
  if (!pct) return "";
  std::string coverage = "unknown";
  if (e.coverage) {
    const double c = *e.coverage * 100;
    coverage = (c >= 99.95 ? std::string("100") : fmt::format("{:.1f}", c)) + " %";
  }
  return " \u00b1 " + pct_text(*pct) + " % (coverage " + coverage + ")";
}

std::string header(const Window& w) {
  if (!w.concurrency) return fmt::format("[{}]", shown(w.benchmark_type));
  return fmt::format("[{} concurrency={}]", shown(w.benchmark_type), *w.concurrency);
}

std::string timing_line(const WindowReport& r) {
  const Window& w = r.window;
  const double D = w.duration_s();
  std::string out =
      fmt::format("computed start={:.3f} end={:.3f} duration={:.2f}s", w.start_unix, w.end_unix, D);
  const ReportedTiming& rep = w.reported;
  if (rep.source == "unavailable") {
    out += " | reported: n/a";
    if (rep.note) out += " (" + shown(*rep.note) + ")";
  } else {
    out += " | reported[" + shown(rep.source) + "]";
    if (rep.start_unix || rep.end_unix) {
      out += " start=" + or_na(rep.start_unix, 3) + " end=" + or_na(rep.end_unix, 3);
    }
    if (rep.duration_seconds) {
      out += fmt::format(" duration={:.2f}s (computed-reported={:+.2f}s)", *rep.duration_seconds,
                         D - *rep.duration_seconds);
    }
  }
  if (r.coverage) {
    out += fmt::format(" | samples cover {:.3f}..{:.3f} ({:.2f}s)", r.coverage->start_unix,
                       r.coverage->end_unix, r.coverage->end_unix - r.coverage->start_unix);
  }
  return out;
}

std::string leg(const char* name, const std::optional<double>& watts,
                const std::optional<double>& o, const std::optional<double>& t) {
  if (!watts) return fmt::format("{}: n/a", name);
  const std::string ratios =
      o || t ? "output " + or_na(o, 4) + " tok/s/W, total " + or_na(t, 4) + " tok/s/W" : "n/a";
  return fmt::format("{} avg={} W -> {}", name, c2(*watts), ratios);
}

std::string perf_line(const PerfPerWatt& p) {
  std::string out =
      fmt::format("output={} tok/s ({} tok/s/gpu across {} gpu(s)) total={} tok/s",
                  or_na(p.output_tps), or_na(p.output_tps_per_gpu), p.num_gpus, or_na(p.total_tps));
  out += " | " + leg("gpu", p.gpu_w, p.o_gpu, p.t_gpu);
  out += " | " + leg("cpu", p.cpu_w, p.o_cpu, p.t_cpu);
  out += " | " + leg("combined", p.combined_w, p.o_comb, p.t_comb);
  return out;
}

void row_lines(const std::vector<Breakdown>& rows, std::string& out) {
  for (const auto& row : rows) {
    const PowerStats& s = row.stats;
    out +=
        fmt::format("    {}: {} J{} ({} W avg; p50={} p95={} p99={} max={} W)\n", shown(row.label),
                    c2(s.joules), error_suffix({s.uncertainty_j, s.coverage}, s.joules),
                    c2(s.avg_power_w), c2(s.p50_w), c2(s.p95_w), c2(s.p99_w), c2(s.max_w));
  }
}

void utilization_lines(const WindowReport& r, std::string& out) {
  std::vector<std::pair<std::string, std::string>> groups;  // label -> text, first-seen order
  for (const auto* rows : {&r.cpu_utilization, &r.gpu_utilization}) {
    for (const auto& u : *rows) {
      const std::string part =
          fmt::format("{} mean={} max={}", shown(u.column), c2(u.mean), c2(u.max));
      auto it = std::find_if(groups.begin(), groups.end(),
                             [&](const auto& g) { return g.first == u.label; });
      if (it == groups.end()) {
        groups.emplace_back(u.label, part);
      } else {
        it->second += "; " + part;
      }
    }
  }
  for (const auto& [label, text] : groups) {
    out += "    " + shown(label) + " utilization: " + text + "\n";
  }
}

void window_block(const WindowReport& r, std::string& out) {
  const Window& w = r.window;
  if (!r.error.empty()) {
    out += header(w) + " error: " + shown(r.error) + "\n";
    return;
  }
  out += fmt::format("{} window={:.2f}s\n", header(w), w.duration_s());
  for (const auto& warning : r.warnings) out += "  warning: " + shown(warning) + "\n";
  const double cpu = r.cpu_total_joules.get<double>(), gpu = r.gpu_total_joules.get<double>();
  out += "  cpu total:      " + c2(cpu) + " J" + error_suffix(r.cpu_total_error, cpu) + "\n";
  out += "  gpu total:      " + c2(gpu) + " J" + error_suffix(r.gpu_total_error, gpu) + "\n";
  out += "  combined total: " + c2(r.combined_total_joules) + " J" +
         error_suffix(r.combined_total_error, r.combined_total_joules) + "\n";
  for (const WindowFigure& f : kWindowFigures) {
    if (const auto& v = r.*f.value) {
      out += "  " + std::string(f.label) + c2(*v) + std::string(f.unit) + "\n";
    }
  }
  if (w.output_tokens && w.input_tokens) {
    out += fmt::format("  tokens: output={} input={}\n", py_fixed_commas(*w.output_tokens, 0),
                       py_fixed_commas(*w.input_tokens, 0));
  } else {
    out += "  tokens: n/a\n";
  }
  const auto ms = [](const std::optional<double>& v) { return v ? c2(*v) + " ms" : "n/a"; };
  out += "  TPOT: p50=" + ms(w.tpot_p50_ms) + " p90=" + ms(w.tpot_p90_ms) + "\n";
  const auto per_token = [](const std::optional<double>& v, const std::optional<double>& u) {
    const auto pct = v && u ? uncertainty_pct(*u, *v) : std::nullopt;
    return or_na(v) + (pct ? " \u00b1 " + pct_text(*pct) + " %" : "");
  };
  out += "  J/output-token: " +
         per_token(r.joules_per_output_token, r.joules_per_output_token_uncertainty) + "\n";
  out += "  J/total-token:  " +
         per_token(r.joules_per_total_token, r.joules_per_total_token_uncertainty) + "\n";
  out += "  timing: " + timing_line(r) + "\n";
  out += "  perf/W: " + perf_line(r.perf) + "\n";
  row_lines(r.cpu_per_socket, out);
  row_lines(r.gpu_per_device, out);
  row_lines(r.gpu_per_role, out);
  row_lines(r.module_per_socket, out);
  utilization_lines(r, out);
}

}  // namespace

std::string render_text(const std::vector<WindowReport>& reports, Edges edges) {
  std::string out;
  double total = 0;
  for (const auto& r : reports) {
    window_block(r, out);
    if (r.error.empty()) total += r.combined_total_joules;
  }
  out += "\ntotal energy across all concurrency points: " + c2(total) + " J\n";
  out += edges == Edges::snap
             ? "edges: snap (each window edge moved to its nearest sample, as the reference does)\n"
             : "edges: interpolate (exact window, edge power interpolated between samples)\n";
  // A metrics store's counters (store/): one source for every window of the report.
  const auto source = std::find_if(reports.begin(), reports.end(), [](const WindowReport& r) {
    return r.energy_source.has_value();
  });
  if (source != reports.end()) {
    out += "energy: " + shown(source->energy_source->kind) + " " +
           shown(source->energy_source->url) +
           " (the exporters' energy counters, interpolated at each window edge)\n";
  }
  return out;
}

}  // namespace cpupower::report
