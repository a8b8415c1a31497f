// The HTML report's script (embedded by cmake/embed_text.cmake). It reads the data block the
// report wrote (render_html.cpp) and draws every view as inline SVG: nothing is fetched.
// Every figure shown is a field of the JSON report's rows, or a ratio of two of them where
// the label says so; the power charts reduce the report's min/max buckets further to one
// column per pixel, keeping the smallest and largest value of each column, and never join
// two segments across a sample gap.
"use strict";
(function () {
  const SVGNS = "http://www.w3.org/2000/svg";
  const DATA = JSON.parse(document.getElementById("report-data").textContent);
  const SCALE = DATA.value_scale;
  const root = document.documentElement;

  // ---- small helpers ------------------------------------------------------------------
  function h(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v !== undefined && v !== null) e.setAttribute(k, v);
    }
    for (const c of children) e.append(c);
    return e;
  }
  function s(tag, attrs, text) {
    const e = document.createElementNS(SVGNS, tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v !== undefined && v !== null) e.setAttribute(k, v);
    }
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function num(v) {
    return typeof v === "number" && Number.isFinite(v) ? v : null;
  }
  function ratio(a, b) {
    a = num(a);
    b = num(b);
    return a === null || b === null || b === 0 ? null : a / b;
  }
  function fmt(v, digits) {
    if (num(v) === null) return "n/a";
    const d = digits === undefined ? (Math.abs(v) >= 100 ? 1 : Math.abs(v) >= 1 ? 2 : 4) : digits;
    return v.toLocaleString("en-US", { minimumFractionDigits: d, maximumFractionDigits: d });
  }
  function isoUtc(unix) {
    return new Date(unix * 1000).toISOString().replace("T", " ").replace(/\.\d+Z$/, " UTC");
  }
  function niceStep(span, count) {
    const raw = span / Math.max(count, 1);
    const mag = Math.pow(10, Math.floor(Math.log10(raw)));
    for (const m of [1, 2, 2.5, 5, 10]) if (m * mag >= raw) return m * mag;
    return 10 * mag;
  }
  function ticks(lo, hi, count) {
    const step = niceStep(hi - lo || 1, count);
    const out = [];
    for (let v = Math.ceil(lo / step - 1e-9) * step; v <= hi + step * 1e-9; v += step) {
      out.push(Math.abs(v) < step * 1e-9 ? 0 : v);
    }
    return { step, values: out };
  }
  function tickText(v, step) {
    const d = step >= 1 ? 0 : Math.min(6, Math.ceil(-Math.log10(step)));
    return fmt(v, d);
  }
  function isDark() {
    const t = root.dataset.theme;
    return t ? t === "dark" : window.matchMedia("(prefers-color-scheme: dark)").matches;
  }
  function windowName(w) {
    if (w.concurrency !== null && w.concurrency !== undefined) {
      return w.benchmark_type + " c=" + w.concurrency;
    }
    return w.benchmark_type;
  }

  // ---- what the axes and the table can show --------------------------------------------
  const pp = (w) => w.perf_per_watt || {};
  // Relative uncertainties (fractions) from the window's "uncertainty" object: token counts
  // and rates are exact, so a per-token or per-watt figure carries its energy's share.
  const un = (w) => w.uncertainty || {};
  const rel = (e) => (e && typeof e.uncertainty_pct === "number" ? e.uncertainty_pct / 100 : null);
  const relCpu = (w) => rel(un(w).cpu_total), relGpu = (w) => rel(un(w).gpu_total);
  const relComb = (w) => rel(un(w).combined_total), relModule = (w) => rel(un(w).module_total);
  const FIGURES = [
    { id: "otps_gpu", label: "Output tokens/s per GPU", unit: "tok/s/GPU", better: "high",
      get: (w) => num(pp(w).output_tokens_per_second_per_gpu) },
    { id: "ttps_gpu", label: "Total tokens/s per GPU (total tok/s ÷ GPUs)", unit: "tok/s/GPU",
      better: "high", get: (w) => ratio(pp(w).total_tokens_per_second, pp(w).num_gpus) },
    { id: "otps", label: "Output tokens/s", unit: "tok/s", better: "high",
      get: (w) => num(pp(w).output_tokens_per_second) },
    { id: "ttps", label: "Total tokens/s", unit: "tok/s", better: "high",
      get: (w) => num(pp(w).total_tokens_per_second) },
    { id: "j_out", label: "J per output token, CPU + GPU", unit: "J/token", better: "low",
      get: (w) => num(w.joules_per_output_token), rel: (w) => rel(un(w).joules_per_output_token) },
    { id: "j_out_cpu", label: "J per output token, CPU (1 ÷ output tok/s per CPU W)",
      unit: "J/token", better: "low",
      get: (w) => ratio(1, pp(w).output_tokens_per_second_per_cpu_watt), rel: relCpu },
    { id: "j_out_gpu", label: "J per output token, GPU (1 ÷ output tok/s per GPU W)",
      unit: "J/token", better: "low",
      get: (w) => ratio(1, pp(w).output_tokens_per_second_per_gpu_watt), rel: relGpu },
    { id: "j_tot", label: "J per total token, CPU + GPU", unit: "J/token", better: "low",
      get: (w) => num(w.joules_per_total_token), rel: (w) => rel(un(w).joules_per_total_token) },
    { id: "j_tot_cpu", label: "J per total token, CPU (1 ÷ total tok/s per CPU W)",
      unit: "J/token", better: "low",
      get: (w) => ratio(1, pp(w).total_tokens_per_second_per_cpu_watt), rel: relCpu },
    { id: "j_tot_gpu", label: "J per total token, GPU (1 ÷ total tok/s per GPU W)",
      unit: "J/token", better: "low",
      get: (w) => ratio(1, pp(w).total_tokens_per_second_per_gpu_watt), rel: relGpu },
    { id: "w_cpu", label: "Average power, CPU", unit: "W", better: "low",
      get: (w) => num(pp(w).cpu_avg_power_w), rel: relCpu },
    { id: "w_gpu", label: "Average power, GPU", unit: "W", better: "low",
      get: (w) => num(pp(w).gpu_avg_power_w), rel: relGpu },
    { id: "w_comb", label: "Average power, CPU + GPU", unit: "W", better: "low",
      get: (w) => num(pp(w).combined_avg_power_w), rel: relComb },
    { id: "w_module", label: "Average power, superchip modules (module J ÷ window s)",
      unit: "W", better: "low",
      get: (w) => ratio(w.module_total_joules, w.timing && w.timing.computed.duration_seconds),
      rel: relModule },
  ];
  const FIG = Object.fromEntries(FIGURES.map((f) => [f.id, f]));
  // A figure's error bar half-width in its own unit; null when it has none.
  function errorOf(f, w, v) {
    const r = f.rel ? f.rel(w) : null;
    return r === null || v === null ? null : Math.abs(v) * r;
  }
  // "1,234 J ± 0.4 % (coverage 100 %)": an energy with its error bar.
  function withError(joules, e) {
    if (joules === null || joules === undefined) return "n/a";
    let text = fmt(joules, 0) + " J";
    if (e && typeof e.uncertainty_pct === "number") {
      text += " ± " + fmt(e.uncertainty_pct, e.uncertainty_pct < 1 ? 2 : 1) + " %";
      text += " (coverage " + (typeof e.coverage === "number" ? fmt(e.coverage * 100, 1) + " %" : "unknown") + ")";
    }
    return text;
  }

  // ---- identity: hue per host (per run in the Pareto view), shade per device, dashes ----
  const hosts = [...new Set(DATA.runs.flatMap((r) => r.series.map((x) => x.host)))].sort();
  const hostIndex = new Map(hosts.map((host, i) => [host, i]));
  const hueOf = (i, offset) => (offset + i * 137.508) % 360;
  const KIND_DASH = { cpu: null, gpu: "7 3", module: "2 2" };
  const MARKERS = ["circle", "square", "triangle", "diamond", "down", "plus"];
  const RUN_DASH = [null, "7 3", "2 3", "9 3 2 3", "4 4", "12 4"];
  function seriesStyle(run, x) {
    const dark = isDark();
    const same = run.series.filter((y) => y.host === x.host && y.kind === x.kind);
    const j = same.indexOf(x);
    const f = same.length > 1 ? j / (same.length - 1) : 0.5;
    const [l0, l1] = dark ? [52, 80] : [26, 52];
    const hue = hueOf(hostIndex.get(x.host), 8);
    return {
      color: `hsl(${hue.toFixed(0)}, ${dark ? 75 : 70}%, ${(l0 + f * (l1 - l0)).toFixed(0)}%)`,
      dash: KIND_DASH[x.kind],
      name: x.host + " " + x.device,
    };
  }
  function runColor(i) {
    return `hsl(${hueOf(i, 212).toFixed(0)}, 70%, ${isDark() ? 66 : 40}%)`;
  }
  function markerPath(kind, x, y, r) {
    switch (kind) {
      case "square":
        return `M${x - r},${y - r}h${2 * r}v${2 * r}h${-2 * r}Z`;
      case "triangle":
        return `M${x},${y - 1.2 * r}L${x + 1.1 * r},${y + 0.8 * r}L${x - 1.1 * r},${y + 0.8 * r}Z`;
      case "down":
        return `M${x},${y + 1.2 * r}L${x + 1.1 * r},${y - 0.8 * r}L${x - 1.1 * r},${y - 0.8 * r}Z`;
      case "diamond":
        return `M${x},${y - 1.3 * r}L${x + 1.3 * r},${y}L${x},${y + 1.3 * r}L${x - 1.3 * r},${y}Z`;
      case "plus": {
        const a = r * 0.45;
        return `M${x - a},${y - r}h${2 * a}v${r - a}h${r - a}v${2 * a}h${a - r}v${r - a}` +
          `h${-2 * a}v${a - r}h${a - r}v${-2 * a}h${r - a}Z`;
      }
      default:
        return `M${x - r},${y}a${r},${r} 0 1,0 ${2 * r},0a${r},${r} 0 1,0 ${-2 * r},0`;
    }
  }

  // ---- page skeleton -------------------------------------------------------------------
  const windowCount = DATA.runs.reduce((n, r) => n + r.windows.length, 0);
  document.title = "Energy report: " + DATA.runs.map((r) => r.name).join(", ");
  const themeButton = h("button", { id: "theme-toggle", type: "button", title: "Colour scheme" });
  const tabPareto = h("button", { type: "button", role: "tab", id: "tab-pareto-button" }, "Pareto");
  const tabData = h("button", { type: "button", role: "tab", id: "tab-data-button" }, "Data");
  const xSelect = h("select", { id: "x-axis" });
  const ySelect = h("select", { id: "y-axis" });
  for (const f of FIGURES) {
    xSelect.append(h("option", { value: f.id }, f.label + " (" + f.unit + ")"));
    ySelect.append(h("option", { value: f.id }, f.label + " (" + f.unit + ")"));
  }
  xSelect.value = "otps_gpu";
  ySelect.value = "j_out";
  const paretoChart = h("div", { id: "pareto-chart" });
  const paretoLegend = h("div", { class: "legend", id: "pareto-legend" });
  const paretoNote = h("p", { class: "note", id: "pareto-note" });
  const detail = h("div", { class: "detail", id: "detail" });
  const tableWrap = h("div", { class: "table-wrap" });
  const runCharts = h("div", { id: "run-charts" });
  const tooltip = h("div", { class: "tooltip hidden", id: "tooltip", role: "tooltip" });
  const paretoTab = h("section", { id: "tab-pareto", role: "tabpanel" },
    h("div", { class: "controls" },
      h("label", {}, "x: ", xSelect), h("label", {}, "y: ", ySelect),
      h("span", { class: "note" },
        "One point per (run, window); lines: each run's Pareto frontier. Click a point for its power over time.")),
    paretoChart, paretoLegend, paretoNote, detail);
  const dataTab = h("section", { id: "tab-data", role: "tabpanel", class: "hidden" },
    h("p", { class: "note" }, "Every window of every run, as in the text and JSON reports; click a column to sort."),
    tableWrap, runCharts);
  document.body.append(
    h("header", {}, h("h1", {}, "Energy report"),
      h("span", { class: "runs" },
        `${DATA.runs.length} run(s), ${windowCount} window(s): ` +
        DATA.runs.map((r) => r.name).join(", ") +
        `. Sample gaps over ${DATA.gap_rule_s} s are drawn as gaps.`),
      themeButton),
    h("nav", { class: "tabs", role: "tablist" }, tabPareto, tabData),
    paretoTab, dataTab, tooltip);

  let tab = "pareto";
  function showTab(name) {
    tab = name;
    paretoTab.classList.toggle("hidden", name !== "pareto");
    dataTab.classList.toggle("hidden", name !== "data");
    tabPareto.setAttribute("aria-selected", String(name === "pareto"));
    tabData.setAttribute("aria-selected", String(name === "data"));
    if (name === "data" && !runCharts.hasChildNodes()) renderRunCharts();
  }
  tabPareto.addEventListener("click", () => showTab("pareto"));
  tabData.addEventListener("click", () => showTab("data"));

  // ---- tooltip -------------------------------------------------------------------------
  function keyFigures(run, w) {
    const rows = [
      ["run", run.name],
      ["window", windowName(w)],
      ["duration", fmt(w.timing.computed.duration_seconds, 2) + " s"],
      ["output tok/s", fmt(pp(w).output_tokens_per_second)],
      ["output tok/s per GPU", fmt(pp(w).output_tokens_per_second_per_gpu) +
        (pp(w).num_gpus ? ` (${pp(w).num_gpus} GPUs)` : "")],
      ["J/output-token", fmt(w.joules_per_output_token, 4)],
      ["J/total-token", fmt(w.joules_per_total_token, 4)],
      ["CPU / GPU / combined avg", [pp(w).cpu_avg_power_w, pp(w).gpu_avg_power_w,
        pp(w).combined_avg_power_w].map((v) => fmt(v, 1)).join(" / ") + " W"],
      ["CPU / GPU / combined energy", [w.cpu_total_joules, w.gpu_total_joules,
        w.combined_total_joules].map((v) => fmt(v, 0)).join(" / ") + " J"],
      ["module energy", w.module_total_joules === null ? "n/a" : fmt(w.module_total_joules, 0) + " J"],
      ["CPU energy ± (coverage)", withError(w.cpu_total_joules, un(w).cpu_total)],
      ["GPU energy ± (coverage)", withError(w.gpu_total_joules, un(w).gpu_total)],
      ["combined energy ± (coverage)", withError(w.combined_total_joules, un(w).combined_total)],
      ["warnings", String(w.warnings.length)],
    ];
    return h("table", {}, h("tbody", {}, ...rows.map(([k, v]) => h("tr", {}, h("td", {}, k), h("td", {}, v)))));
  }
  function showTooltip(run, w, x, y) {
    tooltip.replaceChildren(keyFigures(run, w));
    tooltip.classList.remove("hidden");
    const r = tooltip.getBoundingClientRect();
    const left = Math.min(x + 14, window.innerWidth - r.width - 8);
    const top = y + 14 + r.height > window.innerHeight ? y - r.height - 10 : y + 14;
    tooltip.style.left = Math.max(4, left) + "px";
    tooltip.style.top = Math.max(4, top) + "px";
  }
  function hideTooltip() {
    tooltip.classList.add("hidden");
  }

  // ---- Pareto view ---------------------------------------------------------------------
  let selected = null; // [run index, window index]
  function dominates(a, b, fx, fy) {
    const bx = fx.better === "high" ? a.x >= b.x : a.x <= b.x;
    const by = fy.better === "high" ? a.y >= b.y : a.y <= b.y;
    return bx && by && (a.x !== b.x || a.y !== b.y);
  }
  function renderPareto() {
    hideTooltip();
    const fx = FIG[xSelect.value], fy = FIG[ySelect.value];
    const pts = [], missing = [];
    DATA.runs.forEach((run, ri) => run.windows.forEach((w, wi) => {
      const label = run.name + " " + windowName(w);
      if (w.error) return missing.push(label + " (failed: " + w.error + ")");
      const x = fx.get(w), y = fy.get(w);
      if (x === null || y === null) return missing.push(label);
      pts.push({ ri, wi, x, y, run, w, ex: errorOf(fx, w, x), ey: errorOf(fy, w, y) });
    }));
    const W = 980, H = 460, L = 84, R = 24, T = 16, B = 56;
    const svg = s("svg", { viewBox: `0 0 ${W} ${H}`, width: "100%", role: "img",
      "aria-label": `Pareto view: ${fy.label} against ${fx.label}`, class: "pareto",
      style: `max-width:${W}px` });
    const ext = (vals) => {
      let lo = Math.min(...vals), hi = Math.max(...vals);
      if (!vals.length) lo = 0, hi = 1;
      const pad = (hi - lo) * 0.08 || Math.abs(hi) * 0.1 || 1;
      return [lo - pad, hi + pad];
    };
    const [x0, x1] = ext(pts.flatMap((p) => [p.x - (p.ex || 0), p.x + (p.ex || 0)]));
    const [y0, y1] = ext(pts.flatMap((p) => [p.y - (p.ey || 0), p.y + (p.ey || 0)]));
    const X = (v) => L + (v - x0) / (x1 - x0) * (W - L - R);
    const Y = (v) => T + (1 - (v - y0) / (y1 - y0)) * (H - T - B);
    const xt = ticks(x0, x1, 8), yt = ticks(y0, y1, 6);
    for (const v of xt.values) {
      svg.append(s("line", { class: "grid", x1: X(v), x2: X(v), y1: T, y2: H - B }));
      svg.append(s("text", { x: X(v), y: H - B + 16, "text-anchor": "middle" }, tickText(v, xt.step)));
    }
    for (const v of yt.values) {
      svg.append(s("line", { class: "grid", x1: L, x2: W - R, y1: Y(v), y2: Y(v) }));
      svg.append(s("text", { x: L - 6, y: Y(v) + 4, "text-anchor": "end" }, tickText(v, yt.step)));
    }
    svg.append(s("rect", { class: "frame", x: L, y: T, width: W - L - R, height: H - T - B }));
    svg.append(s("text", { class: "axis-label", x: L + (W - L - R) / 2, y: H - 14, "text-anchor": "middle" },
      `${fx.label} (${fx.unit}), ${fx.better === "high" ? "higher" : "lower"} is better`));
    svg.append(s("text", { class: "axis-label", x: 16, y: T + (H - T - B) / 2, "text-anchor": "middle",
      transform: `rotate(-90 16 ${T + (H - T - B) / 2})` },
    `${fy.label} (${fy.unit}), ${fy.better === "high" ? "higher" : "lower"} is better`));
    DATA.runs.forEach((run, ri) => {
      const mine = pts.filter((p) => p.ri === ri);
      const front = mine.filter((p) => !mine.some((q) => q !== p && dominates(q, p, fx, fy)))
        .sort((a, b) => a.x - b.x || a.y - b.y);
      if (front.length > 1) {
        svg.append(s("polyline", { class: "frontier", "data-run": ri, stroke: runColor(ri),
          "stroke-dasharray": RUN_DASH[ri % RUN_DASH.length],
          points: front.map((p) => `${X(p.x).toFixed(1)},${Y(p.y).toFixed(1)}`).join(" ") }));
      }
    });
    // Error bars (the window's stated uncertainty), under the markers.
    for (const p of pts) {
      const bars = [];
      if (p.ex) bars.push(["x", X(p.x - p.ex), Y(p.y), X(p.x + p.ex), Y(p.y)]);
      if (p.ey) bars.push(["y", X(p.x), Y(p.y - p.ey), X(p.x), Y(p.y + p.ey)]);
      for (const [axis, ax, ay, bx, by] of bars) {
        const cap = 4, g = s("g", { class: "error-bar", "data-axis": axis, "data-run": p.ri,
          "data-window": p.wi, "data-half-width": String(axis === "x" ? p.ex : p.ey), stroke: runColor(p.ri) });
        g.append(s("line", { x1: ax, y1: ay, x2: bx, y2: by }));
        for (const [cx, cy] of [[ax, ay], [bx, by]]) {
          g.append(axis === "x" ? s("line", { x1: cx, x2: cx, y1: cy - cap, y2: cy + cap })
            : s("line", { x1: cx - cap, x2: cx + cap, y1: cy, y2: cy }));
        }
        svg.append(g);
      }
    }
    for (const p of pts) {
      const isSel = selected && selected[0] === p.ri && selected[1] === p.wi;
      const m = s("path", {
        class: "point" + (isSel ? " selected" : ""), tabindex: 0, role: "button",
        d: markerPath(MARKERS[p.ri % MARKERS.length], X(p.x), Y(p.y), 6.5),
        fill: runColor(p.ri), "data-run": p.ri, "data-window": p.wi,
        "data-x": String(p.x), "data-y": String(p.y),
        "data-x-err": p.ex === null ? "" : String(p.ex), "data-y-err": p.ey === null ? "" : String(p.ey),
        "aria-label": `${p.run.name} ${windowName(p.w)}: ${fx.label} ${fmt(p.x)}, ${fy.label} ${fmt(p.y)}`,
      });
      m.addEventListener("mouseenter", (e) => showTooltip(p.run, p.w, e.clientX, e.clientY));
      m.addEventListener("mousemove", (e) => showTooltip(p.run, p.w, e.clientX, e.clientY));
      m.addEventListener("mouseleave", hideTooltip);
      m.addEventListener("focus", () => {
        const r = m.getBoundingClientRect();
        showTooltip(p.run, p.w, r.right, r.bottom);
      });
      m.addEventListener("blur", hideTooltip);
      m.addEventListener("click", () => selectWindow(p.ri, p.wi));
      m.addEventListener("keydown", (e) => {
        if (e.key === "Enter" || e.key === " ") {
          e.preventDefault();
          selectWindow(p.ri, p.wi);
        }
      });
      svg.append(m);
    }
    paretoChart.replaceChildren(svg);
    paretoLegend.replaceChildren(...DATA.runs.map((run, ri) => {
      const sw = s("svg", { width: 46, height: 16, "aria-hidden": "true" });
      sw.append(s("line", { x1: 2, x2: 44, y1: 8, y2: 8, class: "frontier", stroke: runColor(ri),
        "stroke-dasharray": RUN_DASH[ri % RUN_DASH.length] }));
      sw.append(s("path", { d: markerPath(MARKERS[ri % MARKERS.length], 23, 8, 5), fill: runColor(ri) }));
      return h("span", { class: "legend-run" }, sw, " " + run.name);
    }));
    paretoNote.textContent = missing.length
      ? `Not plotted (no ${fx.label} or no ${fy.label}): ${missing.join("; ")}.`
      : "";
    if (!pts.length) paretoNote.textContent = "No window has both figures. " + paretoNote.textContent;
  }
  xSelect.addEventListener("change", renderPareto);
  ySelect.addEventListener("change", renderPareto);

  // ---- power over time -----------------------------------------------------------------
  // One series reduced to `cols` pixel columns over [ta, tb] (seconds since the run's
  // origin): per segment (the report splits a series at every sample gap), the smallest and
  // largest value of the report's buckets whose centre falls in each column.
  function reduce(run, x, ta, tb, cols) {
    const dt = run.bucket_s;
    const out = [];
    for (const seg of x.segs) {
      const lo = new Float64Array(cols).fill(NaN), hi = new Float64Array(cols).fill(NaN);
      let any = false;
      const kFrom = Math.max(0, Math.floor(ta / dt) - seg.first - 1);
      const kTo = Math.min(seg.lo.length - 1, Math.ceil(tb / dt) - seg.first + 1);
      for (let k = kFrom; k <= kTo; k++) {
        const v = seg.lo[k];
        if (v === null) continue;
        const t = (seg.first + k + 0.5) * dt;
        if (t < ta || t > tb) continue;
        const c = Math.min(cols - 1, Math.floor((t - ta) / (tb - ta) * cols));
        const a = v / SCALE, b = (v + seg.d[k]) / SCALE;
        if (!(lo[c] <= a)) lo[c] = a;
        if (!(hi[c] >= b)) hi[c] = b;
        any = true;
      }
      if (any) out.push({ lo, hi });
    }
    return out;
  }
  const PANELS = [
    ["cpu", "CPU sockets (power_w)"],
    ["gpu", "GPUs (power_w)"],
    ["module", "Superchip module power (module_w: Grace, its GPUs and the rest of the module; never added to the others)"],
  ];
  // Panels for CPU sockets, GPUs and modules on one time axis: t in seconds since the run's
  // origin from ta to tb, tick labels in seconds since `zero`, windows shaded.
  function powerPanels(run, ri, ta, tb, zero, zeroText, shade) {
    const box = h("div", { class: "power-panels" });
    const W = 1100, L = 70, R = 150, T = 10, PH = 190, B = 26;
    const cols = W - L - R;
    const X = (t) => L + (t - ta) / (tb - ta) * cols;
    const legendEntries = [];
    const xt = ticks(ta - zero, tb - zero, 10);
    let drawn = 0;
    for (const [kind, title] of PANELS) {
      const list = run.series.filter((x) => x.kind === kind)
        .map((x) => ({ x, segs: reduce(run, x, ta, tb, cols) }))
        .filter((e) => e.segs.length);
      if (!list.length) continue;
      drawn++;
      let ymax = 0;
      for (const e of list) for (const g of e.segs) for (const v of g.hi) if (v > ymax) ymax = v;
      const ystep = niceStep(ymax * 1.05 || 1, 4);
      const ytop = Math.ceil((ymax * 1.05 || 1) / ystep) * ystep;
      const yt = ticks(0, ytop, Math.round(ytop / ystep));
      const Y = (v) => T + (1 - v / ytop) * PH;
      const svg = s("svg", { viewBox: `0 0 ${W} ${T + PH + B}`, width: "100%", class: "power",
        "data-kind": kind, role: "img", "aria-label": title, style: `max-width:${W}px` });
      for (const [a, b, tag] of shade) {
        const xa = Math.max(L, X(a)), xb = Math.min(L + cols, X(b));
        if (xb <= xa) continue;
        svg.append(s("rect", { class: "window", x: xa, y: T, width: Math.max(xb - xa, 1), height: PH }));
        if (tag) svg.append(s("text", { class: "window-tag", x: xa + 3, y: T + 12 }, tag));
      }
      for (const v of yt.values) {
        svg.append(s("line", { class: "grid", x1: L, x2: L + cols, y1: Y(v), y2: Y(v) }));
        svg.append(s("text", { x: L - 6, y: Y(v) + 4, "text-anchor": "end" }, tickText(v, yt.step) + " W"));
      }
      for (const v of xt.values) {
        const x = X(v + zero);
        svg.append(s("line", { class: "grid", x1: x, x2: x, y1: T + PH, y2: T + PH + 4 }));
        svg.append(s("text", { x, y: T + PH + 17, "text-anchor": "middle" }, tickText(v, xt.step) + " s"));
      }
      svg.append(s("rect", { class: "frame", x: L, y: T, width: cols, height: PH }));
      const labels = [];
      for (const { x, segs } of list) {
        const st = seriesStyle(run, x);
        const key = ri + "|" + x.label;
        let d = "", lastX = 0, lastY = 0;
        for (const g of segs) {
          let first = true;
          for (let c = 0; c < cols; c++) {
            if (Number.isNaN(g.lo[c])) continue;
            const px = (L + c + 0.5).toFixed(1);
            d += `${first ? "M" : "L"}${px},${Y(g.lo[c]).toFixed(1)}`;
            if (g.hi[c] !== g.lo[c]) d += `L${px},${Y(g.hi[c]).toFixed(1)}`;
            first = false;
            lastX = L + c + 0.5;
            lastY = Y((g.lo[c] + g.hi[c]) / 2);
          }
        }
        svg.append(s("path", { class: "series", d, stroke: st.color, "stroke-dasharray": st.dash,
          "data-key": key, "data-label": x.label }, undefined));
        svg.lastChild.append(s("title", {}, x.label));
        labels.push({ key, text: st.name, color: st.color, x: lastX + 4, y: lastY + 4 });
        for (const [a, b] of x.gaps) {
          if (b < ta || a > tb) continue;
          const xa = Math.max(L, X(a)), xb = Math.min(L + cols, X(b));
          const mark = s("rect", { class: "gap-mark", x: xa, y: T + PH - 4, width: Math.max(xb - xa, 2),
            height: 4, "data-key": key });
          mark.append(s("title", {}, `${x.label}: no sample for ${fmt(b - a, 1)} s`));
          svg.append(mark);
        }
        if (!legendEntries.some((e) => e.key === key)) legendEntries.push({ key, st, label: x.label, kind });
      }
      // Direct labels at the line ends, pushed apart so that none overlaps the next.
      labels.sort((a, b) => a.y - b.y);
      for (let i = 1; i < labels.length; i++) labels[i].y = Math.max(labels[i].y, labels[i - 1].y + 11);
      const over = labels.length ? labels[labels.length - 1].y - (T + PH + B - 2) : 0;
      if (over > 0) for (const l of labels) l.y -= over;
      for (let i = labels.length - 2; i >= 0; i--) labels[i].y = Math.min(labels[i].y, labels[i + 1].y - 11);
      for (const l of labels) {
        svg.append(s("text", { class: "end-label", x: Math.max(l.x, L + cols + 4), y: l.y, fill: l.color,
          "data-key": l.key }, l.text));
      }
      box.append(h("p", { class: "panel-title" }, title), svg);
    }
    if (!drawn) {
      box.append(h("p", { class: "note" }, "No power samples in this span."));
      return box;
    }
    box.append(h("p", { class: "note" },
      `Time: seconds since ${zeroText}. Each pixel column shows the smallest and largest reading in it; ` +
      `a gap of more than ${DATA.gap_rule_s} s between samples is a hole in the line, marked by a red bar at the bottom of the plot.`));
    const legend = h("div", { class: "legend", role: "group", "aria-label": "Series (click to hide or show)" });
    for (const e of legendEntries) {
      const sw = s("svg", { width: 30, height: 10, "aria-hidden": "true" });
      sw.append(s("line", { x1: 1, x2: 29, y1: 5, y2: 5, stroke: e.st.color, "stroke-width": 2,
        "stroke-dasharray": e.st.dash }));
      const b = h("button", { type: "button", "aria-pressed": "true", "data-key": e.key, title: e.label },
        sw, e.label);
      b.addEventListener("click", () => {
        const on = b.getAttribute("aria-pressed") !== "true";
        b.setAttribute("aria-pressed", String(on));
        for (const n of box.querySelectorAll(`svg [data-key="${CSS.escape(e.key)}"]`)) {
          n.classList.toggle("hidden", !on);
        }
      });
      legend.append(b);
    }
    box.append(legend);
    return box;
  }

  function selectWindow(ri, wi) {
    selected = [ri, wi];
    for (const p of paretoChart.querySelectorAll(".point")) {
      p.classList.toggle("selected", +p.dataset.run === ri && +p.dataset.window === wi);
    }
    renderDetail();
    detail.scrollIntoView({ block: "nearest" });
  }
  function renderDetail() {
    if (!selected) {
      detail.replaceChildren(h("p", { class: "note" }, "Click a point to see that window's power over time."));
      return;
    }
    const [ri, wi] = selected;
    const run = DATA.runs[ri], w = run.windows[wi];
    const start = w.start_unix - run.origin_unix, end = w.end_unix - run.origin_unix;
    const dur = end - start;
    const pad = Math.max(dur * 0.04, DATA.gap_rule_s);
    const warnings = w.warnings.length
      ? h("ul", { class: "warnings" }, ...w.warnings.map((t) => h("li", {}, t)))
      : h("ul", { class: "warnings none" }, h("li", {}, "No warnings for this window."));
    const rowsWithError = [];
    for (const key of ["cpu_per_socket", "cpu_per_node", "gpu_per_node", "module_per_node"]) {
      for (const r of w[key] || []) rowsWithError.push(r);
    }
    const errorTable = h("table", { class: "error-bars", id: "detail-error-bars" },
      h("thead", {}, h("tr", {}, ...["row", "energy", "±", "coverage"].map((t) => h("th", { scope: "col" }, t)))),
      h("tbody", {}, ...rowsWithError.map((r) => h("tr", { "data-label": r.label },
        h("td", {}, r.label), h("td", {}, fmt(r.joules, 1) + " J"),
        h("td", {}, typeof r.uncertainty_j === "number"
          ? fmt(r.uncertainty_j, 1) + " J" + (typeof r.uncertainty_pct === "number" ? ` (${fmt(r.uncertainty_pct, 2)} %)` : "")
          : "n/a"),
        h("td", {}, typeof r.coverage === "number" ? fmt(r.coverage * 100, 1) + " %" : "unknown")))));
    detail.replaceChildren(
      h("h2", { id: "detail-title" }, `${run.name} · ${windowName(w)} · ${fmt(dur, 2)} s`),
      h("div", { class: "detail-head" }, keyFigures(run, w), warnings),
      errorTable,
      powerPanels(run, ri, start - pad, end + pad, start,
        `the window's start, ${isoUtc(w.start_unix)} (unix ${w.start_unix}); shaded: the window`,
        [[start, end, null]]));
  }

  // ---- Data tab ------------------------------------------------------------------------
  const COLUMNS = [
    ["run", (r) => r.name, null],
    ["window", (r, w) => windowName(w), null],
    ["duration (s)", (r, w) => w.timing && w.timing.computed.duration_seconds, 2],
    ["output tok/s", (r, w) => FIG.otps.get(w), 1],
    ["total tok/s", (r, w) => FIG.ttps.get(w), 1],
    ["output tok/s/GPU", (r, w) => FIG.otps_gpu.get(w), 1],
    ["J/output-token", (r, w) => FIG.j_out.get(w), 4],
    ["J/total-token", (r, w) => FIG.j_tot.get(w), 4],
    ["CPU J", (r, w) => num(w.cpu_total_joules), 1],
    ["GPU J", (r, w) => num(w.gpu_total_joules), 1],
    ["combined J", (r, w) => num(w.combined_total_joules), 1],
    ["module J", (r, w) => num(w.module_total_joules), 1],
    ["CPU W", (r, w) => FIG.w_cpu.get(w), 1],
    ["GPU W", (r, w) => FIG.w_gpu.get(w), 1],
    ["combined W", (r, w) => FIG.w_comb.get(w), 1],
    ["warnings", (r, w) => (w.error ? "failed: " + w.error : w.warnings.length), 0],
  ];
  let sortBy = -1, sortDir = 1;
  function renderTable() {
    const rows = [];
    DATA.runs.forEach((run, ri) => run.windows.forEach((w, wi) => rows.push({ run, w, ri, wi })));
    if (sortBy >= 0) {
      const get = COLUMNS[sortBy][1];
      rows.sort((a, b) => {
        const va = get(a.run, a.w), vb = get(b.run, b.w);
        const na = va === null || va === undefined, nb = vb === null || vb === undefined;
        if (na || nb) return na - nb; // n/a last either way
        return (typeof va === "number" && typeof vb === "number" ? va - vb : String(va).localeCompare(String(vb))) * sortDir;
      });
    }
    const head = h("tr", {}, ...COLUMNS.map(([name], i) => {
      const th = h("th", { scope: "col", tabindex: 0,
        "aria-sort": i === sortBy ? (sortDir > 0 ? "ascending" : "descending") : "none" }, name);
      const go = () => {
        sortDir = sortBy === i ? -sortDir : 1;
        sortBy = i;
        renderTable();
      };
      th.addEventListener("click", go);
      th.addEventListener("keydown", (e) => e.key === "Enter" && go());
      return th;
    }));
    const body = rows.map(({ run, w, ri, wi }) => h("tr", { "data-run": ri, "data-window": wi },
      ...COLUMNS.map(([, get, digits]) => {
        const v = w.error && digits !== null && digits !== 0 ? null : get(run, w);
        return h("td", {}, digits === null || typeof v !== "number" ? String(v === null ? "n/a" : v) : fmt(v, digits));
      })));
    tableWrap.replaceChildren(h("table", { class: "windows", id: "windows-table" },
      h("thead", {}, head), h("tbody", {}, ...body)));
  }
  function renderRunCharts() {
    runCharts.replaceChildren(...DATA.runs.map((run, ri) => {
      const shade = run.windows.filter((w) => !w.error).map((w) =>
        [w.start_unix - run.origin_unix, w.end_unix - run.origin_unix, windowName(w)]);
      return h("div", { class: "run-charts", "data-run": ri },
        h("h2", {}, `${run.name}: the whole run`),
        powerPanels(run, ri, 0, run.end_unix - run.origin_unix, 0,
          `the run's first sample, ${isoUtc(run.origin_unix)} (unix ${run.origin_unix}); shaded: the benchmark windows`,
          shade));
    }));
  }

  // ---- colour scheme -------------------------------------------------------------------
  const THEMES = ["auto", "light", "dark"];
  function renderAll() {
    const t = root.dataset.theme || "auto";
    root.dataset.scheme = isDark() ? "dark" : "light";  // what the style sheet keys on
    themeButton.textContent = "Colours: " + t + (t === "auto" ? (isDark() ? " (dark)" : " (light)") : "");
    renderPareto();
    renderDetail();
    renderTable();
    runCharts.replaceChildren();
    if (tab === "data") renderRunCharts();
  }
  themeButton.addEventListener("click", () => {
    const next = THEMES[(THEMES.indexOf(root.dataset.theme || "auto") + 1) % THEMES.length];
    if (next === "auto") delete root.dataset.theme;
    else root.dataset.theme = next;
    renderAll();
  });
  window.matchMedia("(prefers-color-scheme: dark)").addEventListener("change", renderAll);

  // One window in all: open on it, so its power over time is on screen at load.
  const allWindows = DATA.runs.flatMap((run, ri) => run.windows.map((w, wi) => [ri, wi, w]));
  if (allWindows.length === 1 && !allWindows[0][2].error) selected = [allWindows[0][0], allWindows[0][1]];
  showTab("pareto");
  renderAll();
})();
