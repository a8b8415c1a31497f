#!/usr/bin/python3
"""Checks the HTML report in real headless Chromium (tests/browser/cdp.py drives it):

- the page loads with no console message of level warning or error, no uncaught exception,
  and no network request but the file itself;
- the Pareto view has one point per window, each carrying the numbers of the JSON report
  (`cpu-power report --json-out`, given per run) read back from the DOM, on two axis pairs;
- hovering a point shows its tooltip; clicking one shows that window's power over time with
  one line per CPU socket, GPU and module row of the window's JSON report, and its warnings;
- a series with a sample gap is a path of two pieces split where the gap is, and a series
  without one is a single piece;
- clicking a legend entry hides its line, and clicking it again shows it;
- the Data tab has one table row per window, sorts by a column, and draws each run's
  whole-run charts with every window shaded;
- screenshots in the light and the dark colour scheme show something (many colours, unlike
  a blank page, which is checked to fail the same test) and differ in background brightness.

Usage: check_html_report.py REPORT.html OUT_DIR --json RUN.json [--json RUN.json ...]
       --gap-series LABEL --steady-series LABEL
Screenshots go to OUT_DIR (light.png, dark.png, blank.png, ...). Exit 0 when every check holds.
"""

import argparse
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cdp import Browser  # noqa: E402
from png import png_stats  # noqa: E402

CHECKS = 0


def ok(what):
    global CHECKS
    CHECKS += 1
    print("ok - " + what, flush=True)


def fail(what):
    print("FAIL: " + what, file=sys.stderr, flush=True)
    sys.exit(1)


def close(a, b):
    return a is not None and b is not None and abs(a - b) <= 1e-9 * max(1.0, abs(a), abs(b))


def subpaths(d):
    """The pieces of an SVG path (M starts one) as lists of (x, y)."""
    out = []
    for cmd, x, y in re.findall(r"([ML])([-\d.]+),([-\d.]+)", d):
        if cmd == "M":
            out.append([])
        out[-1].append((float(x), float(y)))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("html")
    ap.add_argument("out")
    ap.add_argument("--json", action="append", required=True)
    ap.add_argument("--gap-series", required=True)
    ap.add_argument("--steady-series", required=True)
    ap.add_argument("--single", nargs=2, metavar=("HTML", "JSON"),
                    help="a report of one window: it must open on that window")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    reports = [json.load(open(p)) for p in args.json]
    url = "file://" + os.path.abspath(args.html)

    with Browser() as browser:
        blank = browser.new_page(1280, 900)
        blank.screenshot(os.path.join(args.out, "blank.png"), full_page=False)

        page = browser.new_page(1280, 900)
        page.send("Emulation.setEmulatedMedia", {"features": [{"name": "prefers-color-scheme", "value": "light"}]})
        page.navigate(url)
        page.evaluate("new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")

        # ---- load: no console message, no exception, no request but the page ----------
        problems = [p for p in page.events("Runtime.consoleAPICalled") if p["type"] in ("error", "warning", "assert")]
        problems += page.events("Runtime.exceptionThrown")
        problems += [p for p in page.events("Log.entryAdded") if p["entry"]["level"] in ("error", "warning")]
        if problems:
            fail("console messages on load: %s" % json.dumps(problems)[:2000])
        ok("the page loads with no console warning or error and no exception")
        requests = [p["request"]["url"] for p in page.events("Network.requestWillBeSent")]
        others = [u for u in requests if u != url]
        if others or not requests:
            fail("network requests besides the page: %s (all: %s)" % (others, requests))
        ok("no network request but the page itself (%d request)" % len(requests))
        if page.evaluate("document.title").startswith("Energy report") is False:
            fail("title")

        # ---- Pareto: one point per window with the JSON report's numbers -------------------
        expected = sum(len(r) for r in reports)

        def check_points(xkey, ykey, xget, yget):
            pts = page.evaluate(
                "[...document.querySelectorAll('#pareto-chart .point')].map(p => "
                "[+p.dataset.run, +p.dataset.window, +p.dataset.x, +p.dataset.y])")
            if len(pts) != expected:
                fail("%d points for %d windows (%s/%s)" % (len(pts), expected, xkey, ykey))
            seen = set()
            for ri, wi, x, y in pts:
                w = reports[ri][wi]
                if not close(x, xget(w)) or not close(y, yget(w)):
                    fail("point run %d window %d: (%r, %r) != JSON (%r, %r)" % (ri, wi, x, y, xget(w), yget(w)))
                seen.add((ri, wi))
            if len(seen) != expected:
                fail("points repeat a window: %s" % sorted(seen))
            ok("%d points, one per window, at the JSON report's %s and %s" % (len(pts), xkey, ykey))

        check_points("output_tokens_per_second_per_gpu", "joules_per_output_token",
                     lambda w: w["perf_per_watt"]["output_tokens_per_second_per_gpu"],
                     lambda w: w["joules_per_output_token"])
        page.evaluate("(() => { for (const [id, v] of [['x-axis', 'otps'], ['y-axis', 'w_cpu']]) {"
                      " const s = document.getElementById(id); s.value = v;"
                      " s.dispatchEvent(new Event('change')); } })()")
        check_points("output_tokens_per_second", "cpu_avg_power_w",
                     lambda w: w["perf_per_watt"]["output_tokens_per_second"],
                     lambda w: w["perf_per_watt"]["cpu_avg_power_w"])
        frontiers = page.evaluate("document.querySelectorAll('#pareto-chart .frontier').length")
        if frontiers < 1:
            fail("no frontier line")
        ok("%d frontier line(s)" % frontiers)
        page.evaluate("(() => { for (const [id, v] of [['x-axis', 'otps_gpu'], ['y-axis', 'j_out']]) {"
                      " const s = document.getElementById(id); s.value = v;"
                      " s.dispatchEvent(new Event('change')); } })()")

        # ---- error bars: J/output-token's stated uncertainty on every point that has one -------
        bars = page.evaluate(
            "[...document.querySelectorAll('#pareto-chart g.error-bar')].map(g => "
            "[+g.dataset.run, +g.dataset.window, g.dataset.axis, +g.dataset.halfWidth])")
        want_bars = {}
        for ri, rows in enumerate(reports):
            for wi, w in enumerate(rows):
                u = ((w.get("uncertainty") or {}).get("joules_per_output_token") or {}).get("uncertainty")
                if "error" not in w and u and w["perf_per_watt"]["output_tokens_per_second_per_gpu"] is not None:
                    want_bars[(ri, wi)] = u
        got_bars = {(ri, wi): hw for ri, wi, axis, hw in bars if axis == "y"}
        if set(got_bars) != set(want_bars) or not want_bars:
            fail("error bars on %s, JSON uncertainties on %s" % (sorted(got_bars), sorted(want_bars)))
        for k, u in want_bars.items():
            if not close(got_bars[k], u):
                fail("error bar of run %d window %d: half-width %r, JSON %r" % (k[0], k[1], got_bars[k], u))
        if [b for b in bars if b[2] == "x"]:
            fail("error bars on output tok/s per GPU, which is exact")
        ok("%d error bars, each the JSON report's J/output-token uncertainty; none on token rates"
           % len(bars))

        # ---- tooltip and click: the window's power over time -------------------------------
        gap_run, gap_window = None, None
        for ri, rows in enumerate(reports):
            for wi, w in enumerate(rows):
                if gap_run is None and any(x.startswith(args.gap_series + ": samples ") for x in w["warnings"]):
                    gap_run, gap_window = ri, wi
        if gap_run is None:
            fail("no window's warnings name a gap of %s" % args.gap_series)
        point = "#pareto-chart .point[data-run='%d'][data-window='%d']" % (gap_run, gap_window)
        page.hover(point)
        tip = page.evaluate("(() => { const t = document.getElementById('tooltip');"
                            " return t.classList.contains('hidden') ? null : t.textContent; })()")
        w = reports[gap_run][gap_window]
        if not tip or "J/output-token" not in tip or "%.4f" % w["joules_per_output_token"] not in tip:
            fail("hover shows no tooltip with the window's J/output-token: %r" % tip)
        ok("hovering a point shows its key figures")
        page.click(point)
        series = page.evaluate(
            "[...document.querySelectorAll('#detail svg.power path.series')].map(p => [p.dataset.label, p.getAttribute('d')])")
        want = len(w["cpu_per_socket"]) + len(w["gpu_per_device"]) + len(w["module_per_node"])
        drawn = [label for label, d in series if d]
        if len(drawn) != want:
            fail("the window's chart has %d lines, the JSON report %d sockets + GPUs + modules: %s"
                 % (len(drawn), want, drawn))
        kinds = page.evaluate("[...document.querySelectorAll('#detail svg.power')].map(s => s.dataset.kind)")
        if kinds != ["cpu", "gpu", "module"]:
            fail("panels %s" % kinds)
        ok("clicking a point shows %d lines (CPU sockets, GPUs, modules) as in its JSON rows" % want)
        warn = page.evaluate("[...document.querySelectorAll('#detail ul.warnings li')].map(l => l.textContent)")
        if warn != w["warnings"]:
            fail("warnings shown %s, JSON %s" % (warn, w["warnings"]))
        ok("the window's %d warnings are shown beside its chart" % len(warn))
        rows_shown = page.evaluate(
            "[...document.querySelectorAll('#detail-error-bars tbody tr')].map(r => "
            "[r.dataset.label, ...[...r.cells].map(c => c.textContent)])")
        want_rows = [x for k in ("cpu_per_socket", "cpu_per_node", "gpu_per_node", "module_per_node")
                     for x in w.get(k, [])]
        if [r[0] for r in rows_shown] != [x["label"] for x in want_rows]:
            fail("error-bar table rows %s, JSON %s" % ([r[0] for r in rows_shown], [x["label"] for x in want_rows]))
        for shown_row, x in zip(rows_shown, want_rows):
            if " J" not in shown_row[3] or ("%.1f" % x["uncertainty_j"]).rstrip("0") not in shown_row[3].replace(",", ""):
                fail("error-bar table row %s: %r, JSON uncertainty %r" % (x["label"], shown_row, x["uncertainty_j"]))
        ok("the window's %d rows are listed with their uncertainty and coverage" % len(rows_shown))
        origin = page.evaluate("[...document.querySelectorAll('#detail .note')].map(n => n.textContent).join(' ')")
        if "seconds since the window's start" not in origin or " UTC" not in origin:
            fail("no stated time origin: %r" % origin)
        units = page.evaluate("[...document.querySelectorAll('#detail svg.power text')].map(t => t.textContent)")
        if not any(u.endswith(" W") for u in units) or not any(u.endswith(" s") for u in units):
            fail("axis labels without units")
        ok("time origin stated, W and s on the axes")

        # ---- a gap is a hole; no gap, no hole ------------------------------------------------
        by_label = dict(series)
        gap_d = by_label.get(args.gap_series)
        if not gap_d:
            fail("no line for %s" % args.gap_series)
        pieces = subpaths(gap_d)
        marks = page.evaluate(
            "[...document.querySelectorAll('#detail rect.gap-mark')].filter(r => r.dataset.key.endsWith('|%s'))"
            ".map(r => [+r.getAttribute('x'), +r.getAttribute('width')])" % args.gap_series)
        if len(pieces) != 2 or len(marks) != 1:
            fail("%s: %d path pieces and %d gap marks, want 2 and 1" % (args.gap_series, len(pieces), len(marks)))
        end_x, start_x = pieces[0][-1][0], pieces[1][0][0]
        mx, mw = marks[0]
        if not (end_x <= mx + 2 and start_x >= mx + mw - 2 and start_x - end_x >= mw - 4):
            fail("the hole (%.1f..%.1f) is not where the gap is (%.1f..%.1f)" % (end_x, start_x, mx, mx + mw))
        ok("%s: the sample gap is a hole in its path (x %.1f to %.1f), marked" % (args.gap_series, end_x, start_x))
        steady = by_label.get(args.steady_series)
        if not steady or len(subpaths(steady)) != 1:
            fail("%s (no gap) is not one piece" % args.steady_series)
        ok("%s, without a gap, is one piece" % args.steady_series)

        # ---- legend toggles its line ---------------------------------------------------------
        key = "%d|%s" % (gap_run, args.steady_series)
        sel = "#detail .legend button[data-key='%s']" % key
        visible = ("getComputedStyle(document.querySelector(\"#detail path.series[data-key='%s']\")).display"
                   " !== 'none'" % key)
        if not page.evaluate(visible):
            fail("line hidden before the toggle")
        page.click(sel)
        if page.evaluate(visible) or page.evaluate("document.querySelector(\"%s\").getAttribute('aria-pressed')" % sel) != "false":
            fail("clicking the legend entry did not hide %s" % key)
        page.click(sel)
        if not page.evaluate(visible):
            fail("clicking the legend entry again did not show %s" % key)
        ok("the legend entry hides and shows its line")
        page.screenshot(os.path.join(args.out, "light.png"))

        # ---- dark scheme ---------------------------------------------------------------------
        page.send("Emulation.setEmulatedMedia", {"features": [{"name": "prefers-color-scheme", "value": "dark"}]})
        page.evaluate("new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
        page.screenshot(os.path.join(args.out, "dark.png"))
        bg = page.evaluate("getComputedStyle(document.body).backgroundColor")
        if bg == "rgb(255, 255, 255)":
            fail("dark scheme: background still white")
        ok("prefers-color-scheme: dark gives a dark page (%s)" % bg)

        # ---- Data tab ------------------------------------------------------------------------
        page.send("Emulation.setEmulatedMedia", {"features": [{"name": "prefers-color-scheme", "value": "light"}]})
        page.click("#tab-data-button")
        rows = page.evaluate("document.querySelectorAll('#windows-table tbody tr').length")
        if rows != expected:
            fail("the table has %d rows for %d windows" % (rows, expected))
        page.click("#windows-table th:nth-child(9)")  # CPU J
        page.click("#windows-table th:nth-child(9)")
        order = page.evaluate("[...document.querySelectorAll('#windows-table tbody tr')].map(r => [+r.dataset.run, +r.dataset.window])")
        joules = [reports[ri][wi].get("cpu_total_joules") for ri, wi in order]
        if joules != sorted(joules, reverse=True):
            fail("sorted by CPU J descending: %s" % joules)
        ok("the Data tab has one row per window and sorts by CPU J (descending: %s)" % [round(j) for j in joules])
        for ri, rows_ in enumerate(reports):
            shaded = page.evaluate(
                "[...document.querySelectorAll(\".run-charts[data-run='%d'] svg.power\")].map(s => s.querySelectorAll('rect.window').length)" % ri)
            if not shaded or any(n != len(rows_) for n in shaded):
                fail("run %d: windows shaded per panel %s, want %d" % (ri, shaded, len(rows_)))
        whole = page.evaluate(
            "(() => { const p = document.querySelector(\".run-charts[data-run='%d'] path.series[data-label='%s']\");"
            " return p ? p.getAttribute('d') : ''; })()" % (gap_run, args.gap_series))
        if len(subpaths(whole)) != 2:
            fail("whole-run chart: %s is %d piece(s), want 2" % (args.gap_series, len(subpaths(whole))))
        ok("each run's whole-run charts shade its windows; the gap is a hole there too")
        page.screenshot(os.path.join(args.out, "data.png"))

        # ---- the page's own toggle ---------------------------------------------------------
        page.click("#tab-pareto-button")
        page.click("#theme-toggle")
        page.click("#theme-toggle")
        theme = page.evaluate("document.documentElement.dataset.theme || 'auto'")
        bg = page.evaluate("getComputedStyle(document.body).backgroundColor")
        if theme != "dark" or bg == "rgb(255, 255, 255)":
            fail("the toggle's second click: theme %s, background %s" % (theme, bg))
        ok("the page's colour toggle switches to dark over a light system scheme")
        problems = [p for p in page.events("Runtime.consoleAPICalled") if p["type"] in ("error", "warning", "assert")]
        problems += page.events("Runtime.exceptionThrown")
        if problems:
            fail("console messages while in use: %s" % json.dumps(problems)[:2000])
        if [p["request"]["url"] for p in page.events("Network.requestWillBeSent") if p["request"]["url"] != url]:
            fail("network requests while in use")
        ok("no console message and no request while in use")

        # ---- a report of one window opens on it ------------------------------------------------
        if args.single:
            one = browser.new_page(1280, 900)
            one.navigate("file://" + os.path.abspath(args.single[0]))
            one.evaluate("new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
            w1 = json.load(open(args.single[1]))[0]
            title = one.evaluate("(() => { const t = document.getElementById('detail-title'); return t ? t.textContent : null; })()")
            panels = one.evaluate("document.querySelectorAll('#detail svg.power').length")
            drawn1 = one.evaluate("[...document.querySelectorAll('#detail svg.power path.series')].filter(p => p.getAttribute('d')).length")
            want1 = len(w1["cpu_per_socket"]) + len(w1["gpu_per_device"]) + len(w1["module_per_node"])
            if not title or panels < 1 or drawn1 != want1:
                fail("a one-window report did not open on its window: title %r, %d panels, %d lines for %d "
                     "sockets, GPUs and modules" % (title, panels, drawn1, want1))
            ok("a report of one window opens on it: %r, %d lines at load" % (title, drawn1))

    # ---- screenshots are not blank -----------------------------------------------------------
    blank_colours, _ = png_stats(os.path.join(args.out, "blank.png"))
    if blank_colours >= 20:
        fail("a blank page shows %d colours: the check cannot tell" % blank_colours)
    light_colours, light_mean = png_stats(os.path.join(args.out, "light.png"))
    dark_colours, dark_mean = png_stats(os.path.join(args.out, "dark.png"))
    if light_colours < 20 or dark_colours < 20:
        fail("screenshots look blank: %d (light) and %d (dark) colours" % (light_colours, dark_colours))
    if not light_mean > 180 > 80 > dark_mean:
        fail("brightness light %.0f, dark %.0f" % (light_mean, dark_mean))
    ok("screenshots: light %d colours (mean %.0f), dark %d (mean %.0f), blank page %d"
       % (light_colours, light_mean, dark_colours, dark_mean, blank_colours))
    print("%d checks passed" % CHECKS)


if __name__ == "__main__":
    main()
