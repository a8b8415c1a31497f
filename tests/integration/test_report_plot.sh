#!/usr/bin/env bash
# The report's SVG plot rendered to PNG by headless Chromium: it must show something - many
# distinct colours (series, shading, text), not a blank page. An empty SVG must fail the
# same check, so the check can fail.
source "$(dirname "$0")/lib.sh"
ORACLE=$(cd "$(dirname "$0")/../oracle" && pwd)
BROWSER=$(cd "$(dirname "$0")/../browser" && pwd)
PY=/usr/bin/python3
command -v chromium >/dev/null || fail "chromium is not installed (scripts/install-deps.sh installs it)"

"$PY" "$ORACLE/generate_runs.py" "$WORK/runs" --seed 3 >/dev/null
"$BIN/cpu-power" report "$WORK/runs/sabench_exporter_v3_gpu" --plot "$WORK/plot.svg" >/dev/null ||
  fail "report failed"
printf '<svg xmlns="http://www.w3.org/2000/svg" width="1200" height="900"></svg>\n' >"$WORK/blank.svg"

render() {
  timeout 60 chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --user-data-dir="$(mktemp -d "$WORK/chrome.XXXXXX")" --hide-scrollbars --window-size=1200,900 \
    --screenshot="$2" "file://$1" >"$WORK/chromium.log" 2>&1 || { cat "$WORK/chromium.log"; fail "chromium failed on $1"; }
  [ -s "$2" ] || fail "no screenshot for $1"
}

# Distinct colours of a PNG (tests/browser/png.py: zlib only).
count_colours() { "$PY" "$BROWSER/png.py" "$1"; }

render "$WORK/plot.svg" "$WORK/plot.png"
render "$WORK/blank.svg" "$WORK/blank.png"
plot=$(count_colours "$WORK/plot.png")
blank=$(count_colours "$WORK/blank.png")
[ "$blank" -lt 20 ] || fail "the blank page shows $blank colours: the check cannot tell"
ok "an empty SVG renders with $blank colour(s)"
[ "$plot" -ge 20 ] || fail "the plot renders with only $plot colours: blank"
ok "the plot renders with $plot distinct colours"
grep -q 'class="window"' "$WORK/plot.svg" || fail "no shaded windows in the plot"
[ "$(grep -c '<polyline' "$WORK/plot.svg")" -ge 9 ] || fail "fewer than 3 series x 3 nodes"
ok "windows shaded; CPU, GPU and module series for every node"
finish
