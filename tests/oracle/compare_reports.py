#!/usr/bin/python3
"""Compares our report JSON with the oracle's: every number to 1e-9 relative, every label,
count and error text equal, the same keys (free text - warnings, notes, sensor provenance -
is ours alone). Prints each difference; exit 1 when there is any.

Usage: compare_reports.py OURS.json ORACLE.json
"""

import json
import math
import sys

REL = 1e-9
OURS_ONLY = {"warnings", "note", "cpu_sensors"}


def close(a, b):
    if isinstance(a, bool) or isinstance(b, bool):
        return a == b
    if math.isnan(a) and math.isnan(b):
        return True
    return a == b or abs(a - b) <= REL * max(abs(a), abs(b))


def walk(a, b, path, diffs, counter):
    if isinstance(a, dict) and isinstance(b, dict):
        keys_a = set(a) - OURS_ONLY
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
        if not close(float(a), float(b)):
            diffs.append(f"{path}: {a!r} vs oracle {b!r}")
    elif a != b:
        diffs.append(f"{path}: {a!r} vs oracle {b!r}")


def main():
    ours = json.load(open(sys.argv[1]))
    oracle = json.load(open(sys.argv[2]))
    diffs, counter = [], [0]
    walk(ours, oracle, "$", diffs, counter)
    for d in diffs[:50]:
        print(d)
    print(f"{counter[0]} numbers compared, {len(diffs)} differences")
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
