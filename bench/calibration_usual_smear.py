#!/usr/bin/env python3
"""How the run's usual smear compares with what all its readings' differences give
(docs/performance.md, Calibration of the uncertainty). For each run of the bursty trace under
1 s averaging that a bench/fidelity.py replay kept (--keep DIR), socket 0:

- whole run: the edge smear's many-changes figure (docs/formats.md, term 3) from the
  standard deviation of all the run's differences of consecutive readings,
  tau sd(d) sqrt(max(tau / (24 s), 1/4)), s their mean spacing;
- the same figure at each reading from its own few differences (those of the pairs within
  tau / 2 of it, and the pair around it with one on either side; 0 where they all go one
  way), as the report takes it, and the median and the 65th percentile of these over the
  run: the report's usual smear is that quantile (kUsualSmearQuantile).

    calibration_usual_smear.py KEPT_DIR [KEPT_DIR ...]"""
import math
import statistics
import sys

from kept_runs import runs, socket_rows

TAU = 1.0
ONE_WAY_SHARE = 0.01


def figure(diffs, spacing):
    m = statistics.fmean(diffs)
    rms = math.sqrt(max(0.0, statistics.fmean(d * d for d in diffs) - m * m))
    return TAU * rms * math.sqrt(max(TAU / (24 * spacing), 0.25))


def local(t, w, i, spacing):
    diffs = []
    for j in range(len(t) - 1):
        mid = (t[j] + t[j + 1]) / 2
        if abs(mid - t[i]) <= TAU / 2 or (j + 2 >= i and j <= i):
            diffs.append(w[j + 1] - w[j])
    total = sum(abs(d) for d in diffs)
    if not diffs or total - abs(sum(diffs)) <= 2 * ONE_WAY_SHARE * total:
        return 0.0
    return figure(diffs, spacing)


def main():
    print(f"{'run':<30} {'whole run':>9} {'median':>14} {'65th percentile':>16}")
    for keep in sys.argv[1:]:
        for tag, t0, samples in runs(keep, "bursty", 1000):
            rows = socket_rows(samples, t0, 0.0, float("inf")).get("0", [])
            t = [x for x, _ in rows]
            w = [y for _, y in rows]
            if len(t) < 8:
                continue
            spacing = min((t[-1] - t[0]) / (len(t) - 1), TAU)
            whole = figure([w[j + 1] - w[j] for j in range(len(w) - 1)], spacing)
            figures = sorted(local(t, w, i, spacing) for i in range(2, len(t) - 3))
            median = figures[len(figures) // 2]
            q65 = figures[int(0.65 * (len(figures) - 1))]
            print(f"{keep.rstrip('/').split('/')[-1] + ' ' + tag:<30} {whole:8.2f} J "
                  f"{median:6.2f} J ({median / whole:.2f}) {q65:7.2f} J ({q65 / whole:.2f})")


if __name__ == "__main__":
    main()
