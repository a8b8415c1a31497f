#!/usr/bin/env python3
"""Are the rows dated where their power was drawn? For each run a bench/fidelity.py replay kept
(--keep DIR) of the given trace and averaging, and each socket, the shift of the row times
that best matches each row's power_w to the trace's exact mean over the averaging interval
centred on the shifted time (docs/performance.md, Calibration of the uncertainty). A right
date gives a best shift near 0 and a small mean difference; a row date shared by sockets read
at different instants gives shifts of opposite sign.

    calibration_dating.py KEPT_DIR [TRACE AVERAGE_MS]   (default: plateau 1000)

Each socket's power is compared with that socket's total in the trace; rows between trace
seconds 6 and 42 (the long window)."""
import bisect
import csv
import glob
import os
import sys

START, END = 6.0, 42.0
SHIFTS_MS = list(range(-600, 601, 50))


def load_trace(path):
    with open(path) as f:
        rows = csv.reader(f)
        header = next(rows)
        steps = [[float(x) for x in row] for row in rows]
    times = [s[0] for s in steps]

    def mean(column, a, b):
        total, i = 0.0, max(0, bisect.bisect_right(times, a) - 1)
        while i < len(steps) and steps[i][0] < b:
            nxt = steps[i + 1][0] if i + 1 < len(steps) else float("inf")
            lo, hi = max(a, steps[i][0]), min(b, nxt)
            if hi > lo:
                total += steps[i][column] * (hi - lo)
            i += 1
        return total / (b - a)
    return header, mean


def main():
    keep = sys.argv[1]
    trace, average_ms = (sys.argv[2], int(sys.argv[3])) if len(sys.argv) > 3 else ("plateau", 1000)
    tau = average_ms / 1000
    header, mean = load_trace(f"{keep}/{trace}-{average_ms}.csv")
    print(f"{'run':<32} {'socket':>6} {'rows':>5} {'best shift':>11} {'mean |diff| there':>18} {'at 0':>8}")
    for d in sorted(glob.glob(f"{keep}/{trace}-{average_ms}-*ms") + glob.glob(f"{keep}/{trace}-{average_ms}-*ms-host")):
        tag = os.path.basename(d)
        host = tag.endswith("-host")
        interval = tag.split("-")[2][:-2]
        sim_log = f"{keep}/{trace}-{average_ms}-host{interval}.sim.log" if host else f"{keep}/{trace}-{average_ms}.sim.log"
        t0 = float(open(sim_log).read().split("t0_unix=")[1].split()[0])
        path = f"{d}/cpu_power/samples.csv" if host else f"{d}/power/cpu/samples.csv"
        rows = {}
        with open(path) as f:
            for row in csv.DictReader(f):
                t = float(row["timestamp_unix"]) - t0
                if START < t < END:
                    rows.setdefault(row["socket_id"], []).append((t, float(row["power_w"])))
        for socket, rs in sorted(rows.items()):
            column = header.index(f"total:{socket}")

            def diff(shift_ms):
                sh = shift_ms / 1000
                return sum(abs(w - mean(column, t + sh - tau / 2, t + sh + tau / 2)) for t, w in rs) / len(rs)
            best = min(SHIFTS_MS, key=diff)
            print(f"{tag:<32} {socket:>6} {len(rs):5d} {best:+8d} ms {diff(best):15.2f} W {diff(0):6.2f} W")


if __name__ == "__main__":
    main()
