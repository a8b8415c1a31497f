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
import os
import random
import statistics
import sys

from kept_runs import runs, socket_rows, trace_means

START, END, TAU = 6.0, 42.0, 0.05


def main():
    rng = random.Random(1)
    print(f"{'run':<28} {'n':>4} {'readings':>9} {'exact@dates':>12} {'window':>7} "
          f"{'sampling error':>15} {'sd, grid shifted':>17} {'sd, independent':>16}")
    for keep in sys.argv[1:]:
        header, trace_mean = trace_means(f"{keep}/bursty-50.csv")
        column = header.index("total:0")

        def mean(a, b):
            return trace_mean(column, a, b)
        exact = mean(START, END)
        for tag, t0, samples in runs(keep, "bursty", 50):
            rows = socket_rows(samples, t0, START, END).get("0", [])
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
