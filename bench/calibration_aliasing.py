#!/usr/bin/env python3
"""How much of a bursty long window's error is where its readings fell (docs/performance.md,
Calibration of the uncertainty). For each run of the bursty trace under 50 ms averaging that a
bench/fidelity.py replay kept (--keep DIR), over the long window (trace seconds 6 to 42):

- the readings' mean against the trace's exact 50 ms means at the readings' dates (the dates
  are right when these agree) and against the window's exact mean power: the difference is
  the error of sampling at those instants, before any integration;
- the standard deviation of that sampling error over the same reading instants shifted by a
  uniform offset in [-1, 1] s (the read grid's phase against the bursts drawn again), and over
  as many independent uniform instants (what a rule that treats readings as independent
  samples expects).

    calibration_aliasing.py KEPT_DIR [KEPT_DIR ...]

Socket 0's total is used; both sockets replay the same trace."""
import bisect
import csv
import glob
import os
import random
import statistics
import sys

START, END, TAU = 6.0, 42.0, 0.05


def trace_mean(path):
    steps = []
    with open(path) as f:
        rows = csv.reader(f)
        next(rows)
        for row in rows:
            steps.append((float(row[0]), float(row[1])))  # total:0
    times = [t for t, _ in steps]

    def mean(a, b):
        total, i = 0.0, max(0, bisect.bisect_right(times, a) - 1)
        while i < len(steps) and steps[i][0] < b:
            nxt = steps[i + 1][0] if i + 1 < len(steps) else float("inf")
            lo, hi = max(a, steps[i][0]), min(b, nxt)
            if hi > lo:
                total += steps[i][1] * (hi - lo)
            i += 1
        return total / (b - a)
    return mean


def t0_of(sim_log):
    return float(open(sim_log).read().split("t0_unix=")[1].split()[0])


def main():
    rng = random.Random(1)
    print(f"{'run':<28} {'n':>4} {'readings':>9} {'exact@dates':>12} {'window':>7} "
          f"{'sampling error':>15} {'sd, grid shifted':>17} {'sd, independent':>16}")
    for keep in sys.argv[1:]:
        mean = trace_mean(f"{keep}/bursty-50.csv")
        exact = mean(START, END)
        for d in sorted(glob.glob(f"{keep}/bursty-50-*ms") + glob.glob(f"{keep}/bursty-50-*ms-host")):
            tag = os.path.basename(d)
            host = tag.endswith("-host")
            interval = tag.split("-")[2][:-2]
            t0 = t0_of(f"{keep}/bursty-50-host{interval}.sim.log" if host else f"{keep}/bursty-50.sim.log")
            path = f"{d}/cpu_power/samples.csv" if host else f"{d}/power/cpu/samples.csv"
            rows = []
            with open(path) as f:
                for row in csv.DictReader(f):
                    if row["socket_id"] == "0":
                        rows.append((float(row["timestamp_unix"]) - t0, float(row["power_w"])))
            rows = [r for r in rows if START < r[0] < END]
            if len(rows) < 2:
                print(f"{keep}/{tag}: fewer than 2 readings in the window")
                continue
            at = [mean(t - TAU / 2, t + TAU / 2) for t, _ in rows]

            def sampling_error(instants):
                m = statistics.mean(mean(t - TAU / 2, t + TAU / 2) for t in instants)
                return 100 * (m - exact) / exact
            shifted = []
            for _ in range(400):
                s = rng.uniform(-1, 1)
                shifted.append(sampling_error([t + s for t, _ in rows]))
            independent = [sampling_error([rng.uniform(START, END) for _ in rows]) for _ in range(400)]
            print(f"{os.path.basename(os.path.normpath(keep)) + '/' + tag:<28} {len(rows):4d} "
                  f"{statistics.mean(w for _, w in rows):9.1f} {statistics.mean(at):12.1f} {exact:7.1f} "
                  f"{100 * (statistics.mean(at) - exact) / exact:+14.1f}% "
                  f"{statistics.pstdev(shifted):16.2f}% {statistics.pstdev(independent):15.2f}%")


if __name__ == "__main__":
    main()
