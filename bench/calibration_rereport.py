#!/usr/bin/env python3
"""Report the runs a bench/fidelity.py replay kept (--keep DIR) again with another build's
`cpu-power report`, and print the calibration per trace, window kind and averaging (pooled
over legs, read intervals and edge modes; -v adds each case). The energies come from the same
samples, so two builds' tables differ only in what the model states (docs/performance.md,
Calibration of the uncertainty).

    calibration_rereport.py BIN_DIR KEPT_DIR FIDELITY_JSON [KEPT_DIR FIDELITY_JSON ...] [-v]

FIDELITY_JSON is the replay's --json output: it holds each window's exact energy. Several
replays (each its kept directory and JSON) are pooled into one table. --what-if adds one row:
the plateau's steady-edges case under 1 s averaging with its interpolated windows read once a
second stated at three times their own error (docs/performance.md, "Where the case's ratio
comes from")."""
import json, os, subprocess, sys
from concurrent.futures import ThreadPoolExecutor
args = [a for a in sys.argv[1:] if a not in ("-v", "--what-if")]
bin_dir, pairs = args[0], list(zip(args[1::2], args[2::2]))
if not pairs or len(args) % 2 != 1:
    sys.exit(__doc__)
runs = {}
for keep, res_json in pairs:
    for r in json.load(open(res_json))["results"]:
        if r["schedule"] != "ours": continue
        tag = f"{r['trace']}-{r['average_ms']}"
        d = f"{keep}/{tag}-{r['interval_ms']}ms" + ("-host" if r["leg"] == "host" else "")
        runs.setdefault((d, r["edges"], r["leg"]), []).append(r)
def report(key):
    d, edges, leg = key
    out = f"{d}/re-{edges}.json"
    argv = [f"{bin_dir}/cpu-power", "report", d, "--edges", edges, "--json-out", out]
    if leg == "host": argv += ["--cpu-samples", f"{d}/cpu_power/samples.csv"]
    subprocess.run(argv, capture_output=True, text=True)
    got = {}
    for w in json.load(open(out)):
        if "cpu_total_joules" not in w: continue
        got[w["concurrency"]] = (w["cpu_total_joules"], ((w.get("uncertainty") or {}).get("cpu_total") or {}).get("uncertainty_j"))
    return key, got
with ThreadPoolExecutor(2) as ex:
    outs = dict(ex.map(report, runs))
new = []
for key, rs in runs.items():
    got = outs[key]
    for r in rs:
        m, s = got.get(r["window"], (None, None))
        r = dict(r, measured_j=m, stated_j=s)
        r["inside"] = abs(m - r["exact_j"]) <= s if m and s is not None else None
        new.append(r)
def med(v):
    v = sorted(v); n = len(v); return (v[n//2] if n % 2 else (v[n//2-1]+v[n//2])/2) if v else float('nan')
def row(label, rs):
    rs = [r for r in rs if r["measured_j"] and r["stated_j"] is not None]
    true = [abs(r["measured_j"] - r["exact_j"]) / r["exact_j"] * 100 for r in rs]
    st = [r["stated_j"] / r["exact_j"] * 100 for r in rs]
    ins = sum(1 for r in rs if r["inside"])
    mt, ms = med(true), med(st)
    return f"{label:<58} {len(rs):4d} {ins:4d} ({ins/len(rs)*100:3.0f} %) true {mt:7.3f} % stated {ms:7.3f} % ratio {ms/mt:5.1f}"
groups = {}
for r in new:
    groups.setdefault((r["trace"], r["window_kind"], r["average_ms"]), []).append(r)
detail = "-v" in sys.argv
for k in sorted(groups):
    print(row(f"{k[0]} {k[1]} {k[2]} ms", groups[k]))
    if detail:
        sub = {}
        for r in groups[k]: sub.setdefault((r["leg"], r["interval_ms"], r["edges"]), []).append(r)
        for s in sorted(sub): print("    " + row(str(s), sub[s]))
print(row("every case", new))
if "--what-if" in sys.argv:
    case = ("plateau", "(c) short, edges in steady phases", 1000)
    restated = [dict(r, stated_j=3 * abs(r["measured_j"] - r["exact_j"]))
                if r["interval_ms"] == 1000 and r["edges"] == "interpolate" and r["measured_j"]
                else r for r in groups.get(case, [])]
    for r in restated:
        if r["measured_j"] and r["stated_j"] is not None:
            r["inside"] = abs(r["measured_j"] - r["exact_j"]) <= r["stated_j"]
    print(row("what-if: " + " ".join(map(str, case)) + " ms, 1 s interpolated at 3x", restated))
