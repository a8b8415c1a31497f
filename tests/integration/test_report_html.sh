#!/usr/bin/env bash
# The HTML report (`cpu-power report RUN [RUN ...] --html`) in real headless Chromium, driven
# over the DevTools protocol by tests/browser/check_html_report.py: no console error, no
# network request, one Pareto point per window carrying the JSON report's numbers, a
# window's chart with one line per socket, GPU and module, legend toggles, sample gaps drawn
# as holes, light and dark screenshots that are not blank. Two oracle runs are compared, one
# with a 5.5 s hole in node-b's CPU samples. On failure the screenshots and the page are kept
# in <build>/test-artifacts/report_html/. CPUPOWER_HTML_SCREENSHOT=PATH copies the light
# screenshot there (how docs/html-report.png is made).
source "$(dirname "$0")/lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
BIN=$(cd "$BIN" && pwd)
PY=/usr/bin/python3
ARTIFACTS=$(cd "$BIN/.." && pwd)/test-artifacts/report_html
rm -rf "$ARTIFACTS"
command -v chromium >/dev/null || fail "chromium is not installed (scripts/install-deps.sh installs it)"

"$PY" "$HERE/../oracle/generate_runs.py" "$WORK/runs" --seed 3 >/dev/null
# Relative run directories: they are the runs' names on the page (and in its screenshot).
cd "$WORK"
A=runs/sabench_exporter_v3_gpu
B=runs/sabench_exporter_v2_gpu_v3
"$BIN/cpu-power" report "$A" --json-out "$WORK/a.json" >"$WORK/a.txt" || fail "report of $A failed"
"$BIN/cpu-power" report "$B" --json-out "$WORK/b.json" >"$WORK/b.txt" || fail "report of $B failed"

# Several runs: one table per run under its directory, the HTML report of both.
"$BIN/cpu-power" report "$A" "$B" --html "$WORK/report.html" >"$WORK/both.txt" ||
  fail "report of both runs failed"
{ echo "== $A"; cat "$WORK/a.txt"; echo; echo "== $B"; cat "$WORK/b.txt"; } | diff - "$WORK/both.txt" >&2 ||
  fail "the text of two runs is not each run's table under its directory"
ok "two runs: each run's text table under its directory"
rc=0
"$BIN/cpu-power" report "$A" "$B" --json-out "$WORK/x.json" >/dev/null 2>"$WORK/usage.err" || rc=$?
[ "$rc" = 2 ] && grep -q "take one LOG_DIR" "$WORK/usage.err" && [ ! -e "$WORK/x.json" ] ||
  fail "--json-out with two runs: exit $rc, $(cat "$WORK/usage.err")"
ok "--json-out with two runs is a usage error (exit 2)"
rc=0
"$BIN/cpu-power" report "$A" runs/nope --html "$WORK/y.html" >"$WORK/y.out" 2>"$WORK/y.err" || rc=$?
[ "$rc" = 1 ] && [ ! -e "$WORK/y.html" ] && [ ! -s "$WORK/y.out" ] && grep -q "nope" "$WORK/y.err" ||
  fail "a run that cannot be reported: exit $rc, stdout $(wc -c <"$WORK/y.out") bytes"
ok "a run that cannot be reported: exit 1, nothing written"
size=$(stat -c %s "$WORK/report.html")
! grep -Eq '(src|href)="' "$WORK/report.html" || fail "the page refers to something outside it"
ok "one self-contained file, $size bytes"

# A run of one window (a `cpu-power run` session): the page opens on it.
"$BIN/cpu-power" report runs/session_exporter_v3 --html "$WORK/single.html" --json-out "$WORK/single.json" \
  >/dev/null || fail "report of the session run failed"
if ! "$PY" "$HERE/../browser/check_html_report.py" "$WORK/report.html" "$WORK/shots" \
  --json "$WORK/a.json" --json "$WORK/b.json" \
  --gap-series cpu/node-b/socket0 --steady-series cpu/node-a/socket0 \
  --single "$WORK/single.html" "$WORK/single.json"; then
  mkdir -p "$ARTIFACTS"
  cp -r "$WORK/shots/." "$WORK/report.html" "$ARTIFACTS/" 2>/dev/null || true
  fail "the page failed in Chromium; screenshots and page kept in $ARTIFACTS"
fi
CHECKS=$((CHECKS + 1))
if [ -n "${CPUPOWER_HTML_SCREENSHOT:-}" ]; then
  cp "$WORK/shots/light.png" "$CPUPOWER_HTML_SCREENSHOT"
  echo "screenshot: $CPUPOWER_HTML_SCREENSHOT"
fi
finish
