#!/usr/bin/env bash
# The report's SVG plot rendered to PNG by headless Chromium: it must show something - many
# distinct colours (series, shading, text), not a blank page. An empty SVG must fail the
# same check, so the check can fail.
source "$(dirname "$0")/lib.sh"
ORACLE=$(cd "$(dirname "$0")/../oracle" && pwd)
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

# Counts distinct colours of a PNG (8-bit RGB/RGBA, any filter) with zlib only.
count_colours() {
  "$PY" - "$1" <<'PYEOF'
import struct, sys, zlib
data = open(sys.argv[1], "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
pos, idat, w = 8, b"", 0
while pos < len(data):
    n, kind = struct.unpack(">I4s", data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + n]
    if kind == b"IHDR":
        w, h, depth, ctype = struct.unpack(">IIBB", body[:10])
        assert depth == 8 and ctype in (2, 6), (depth, ctype)
        bpp = 3 if ctype == 2 else 4
    elif kind == b"IDAT":
        idat += body
    pos += 12 + n
raw, stride, prev, colours = zlib.decompress(idat), w * bpp, bytearray(w * bpp), set()
for y in range(h):
    f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
    for i in range(stride):
        a = line[i - bpp] if i >= bpp else 0
        b, c = prev[i], prev[i - bpp] if i >= bpp else 0
        if f == 1: line[i] = (line[i] + a) & 255
        elif f == 2: line[i] = (line[i] + b) & 255
        elif f == 3: line[i] = (line[i] + (a + b) // 2) & 255
        elif f == 4:
            p = a + b - c; pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    colours.update(bytes(line[i:i + 3]) for i in range(0, stride, bpp * 2))
    prev = line
print(len(colours))
PYEOF
}

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
