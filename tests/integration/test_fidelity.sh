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
           and r.get("leg") == "scrape"
           and r["window_kind"] in ("(a) long", "(c) short, edges in steady phases")]
assert len(checked) == 4, f"expected 1 long and 3 short windows, got {len(checked)}"
bad = [r for r in checked if r["error"] is None or abs(r["error"]) > 0.02]
for r in checked:
    print(f"{r['window_kind']}: {r['window_s']:.2f} s, exact {r['exact_j']:.1f} J, "
          f"measured {r['measured_j']}, error {r['error']}")
assert not bad, bad
PY
ok "fidelity: long and short windows within 2 % of the trace's exact energy (1 s averaging, 250 ms scrapes, interpolated edges)"

# The stated uncertainty, loosely: every window of both legs and both edge modes has one, the
# true error lies inside it in at least 80 % of them (docs/performance.md has the full
# calibration), and it is no wider than 10 times the true error in the median. A replay whose
# true errors happen to be tiny must not fail that: the median true error is taken as at
# least 0.5 % (one quiet replay measured 0.47 %, its stated 4.3 %, as wide as usual).
/usr/bin/python3 - "$WORK/fidelity.json" <<'PY' || fail "the stated uncertainty does not hold"
import json, sys
results = [r for r in json.load(open(sys.argv[1]))["results"] if r["schedule"] == "ours"]
assert {r["leg"] for r in results} == {"scrape", "host"}, {r["leg"] for r in results}
assert all(r["measured_j"] is not None and r["stated_j"] is not None for r in results), results
inside = sum(1 for r in results if r["inside"])
true = sorted(100 * abs(r["measured_j"] - r["exact_j"]) / r["exact_j"] for r in results)
stated = sorted(100 * r["stated_j"] / r["exact_j"] for r in results)
ratio = stated[len(stated) // 2] / max(true[len(true) // 2], 0.5)
print(f"{len(results)} windows, {inside} inside the stated uncertainty, median stated "
      f"{stated[len(stated) // 2]:.2f} % / true {true[len(true) // 2]:.2f} % (at least 0.5): {ratio:.1f}")
assert inside >= 0.8 * len(results) and ratio <= 10, (inside, len(results), ratio)
PY
ok "fidelity: the true error lies inside the stated uncertainty in at least 80 % of the windows, both legs"
