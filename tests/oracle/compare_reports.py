#!/usr/bin/python3
"""Compares our report JSON with the oracle's: every number to 1e-14 relative, every label,
count and error text equal, the same keys (free text - warnings, notes, sensor provenance -
and our error bars are ours alone). Prints each difference; exit 1 when there is any.

Why not bit for bit: most numbers are (the summary line counts them), but the GPU leg's
per-node and per-role series are sums over the GPUs of each timestamp, and the oracle sums
them with pandas' groupby().sum(), which is Kahan-compensated, where the report adds them
left to right. The two differ in the last bit or two of about a quarter of such sums (up to
3e-16 relative in the generated runs), and everything integrated from them - GPU node and
role joules and statistics, GPU and combined totals, per-token and per-watt figures - inherits
it. 1e-14 is about 45 units in the last place: it lets those through and catches anything an
arithmetic or edge mistake would cause. numpy's own summation, trapezoid and percentiles are
held bit for bit by report_integrate_test against numpy-made fixtures.

Usage: compare_reports.py OURS.json ORACLE.json
"""

import json
import math
import sys

REL = 1e-14
OURS_ONLY = {"warnings", "note", "cpu_sensors"}
# Our error bars (docs/formats.md, Coverage and uncertainty): a row's coverage (a number or
# null, unlike timing's coverage object, which both have), its uncertainty and the window's
# uncertainty object.
ERROR_BARS = {"uncertainty", "uncertainty_j", "uncertainty_pct"}


def ours_only(d):
    keys = set(OURS_ONLY) | ERROR_BARS
    if not isinstance(d.get("coverage"), dict):
        keys.add("coverage")
    return keys


def close(a, b):
    if isinstance(a, bool) or isinstance(b, bool):
        return a == b
    if math.isnan(a) and math.isnan(b):
        return True
    return a == b or abs(a - b) <= REL * max(abs(a), abs(b))


def walk(a, b, path, diffs, counter):
    if isinstance(a, dict) and isinstance(b, dict):
        keys_a = set(a) - ours_only(a)
        if keys_a != set(b):
            diffs.append(f"{path}: keys differ: ours-only {sorted(keys_a - set(b))}, oracle-only {sorted(set(b) - keys_a)}")
        for k in sorted(keys_a & set(b)):
            walk(a[k], b[k], f"{path}.{k}", diffs, counter)
    elif isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            diffs.append(f"{path}: {len(a)} entries vs oracle {len(b)}")
        for i, (x, y) in enumerate(zip(a, b)):
            walk(x, y, f"{path}[{i}]", diffs, counter)
    elif isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        counter[0] += 1
        counter[1] += a == b
        if not close(float(a), float(b)):
            diffs.append(f"{path}: {a!r} vs oracle {b!r}")
    elif a != b:
        diffs.append(f"{path}: {a!r} vs oracle {b!r}")


def main():
    ours = json.load(open(sys.argv[1]))
    oracle = json.load(open(sys.argv[2]))
    diffs, counter = [], [0, 0]
    walk(ours, oracle, "$", diffs, counter)
    for d in diffs[:50]:
        print(d)
    print(f"{counter[0]} numbers compared ({counter[1]} bit for bit), {len(diffs)} differences")
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
