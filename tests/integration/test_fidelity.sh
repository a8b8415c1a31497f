#!/usr/bin/env bash
# End-to-end energy fidelity, short: a known power trace replayed by sim-node with 1 s
# firmware averaging, read through 150 ms reads by the exporter, scraped every 250 ms,
# integrated by the report with exact (interpolated) edges, against the trace's exact
# integral: a long window (a) and short windows whose edges cut through steady phases (c)
# stay within 2 % (bench/fidelity.py measures the full matrix, docs/performance.md). A
# regression in row timing (age centring, request midpoint) or in the window edges fails it.
source "$(dirname "$0")/lib.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)

/usr/bin/python3 "$ROOT/bench/fidelity.py" "$BIN" --quick --keep "$WORK/run" --json "$WORK/fidelity.json" \
  >"$WORK/fidelity.txt" 2>&1 || { cat "$WORK/fidelity.txt"; fail "bench/fidelity.py --quick failed"; }
cat "$WORK/fidelity.txt"
/usr/bin/python3 - "$WORK/fidelity.json" <<'PY' || fail "energy error over the bound"
import json, sys
results = json.load(open(sys.argv[1]))["results"]
checked = [r for r in results if r["schedule"] == "ours" and r["edges"] == "interpolate"
           and r["window_kind"] in ("(a) long", "(c) short, edges in steady phases")]
assert len(checked) == 4, f"expected 1 long and 3 short windows, got {len(checked)}"
bad = [r for r in checked if r["error"] is None or abs(r["error"]) > 0.02]
for r in checked:
    print(f"{r['window_kind']}: {r['window_s']:.2f} s, exact {r['exact_j']:.1f} J, "
          f"measured {r['measured_j']}, error {r['error']}")
assert not bad, bad
PY
ok "fidelity: long and short windows within 2 % of the trace's exact energy (1 s averaging, 250 ms scrapes, interpolated edges)"
