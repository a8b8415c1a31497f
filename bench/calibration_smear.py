#!/usr/bin/env python3
"""What a 1 s average smears across a window edge, against what the readings' differences
say (docs/formats.md, Coverage and uncertainty, term 3), on the calibration's bursty power:
150 W with 40 ms bursts of +250 W per socket (two sockets), their gaps drawn from 120-400 ms
("regular", as bench/fidelity.py's trace) or at random ("random": exponential gaps of the
same mean). For each read spacing s, 4,000 edges at random instants of a 4,000 s trace, each
with readings every s at a random phase: the true smear (the energy the trapezoid of the
readings moves across the edge against the exact integral) and the model's standard
deviation from the differences near the edge, with the factor tau / (24 s) alone ("white"),
with its floor of 1/4, and at least the median of the latter over all edges (the run's usual
smear). Prints the spread of each and how many single edges lie within k = 2 of it. Needs numpy (Debian's python3-numpy).

    /usr/bin/python3 bench/calibration_smear.py [--seed N]
"""
import argparse
import numpy as np

TAU, DT, SECONDS, EDGES = 1.0, 0.001, 4000.0, 4000


def power(rng, kind):
    p = np.full(int(SECONDS / DT), 300.0)
    t = 0.5
    while t < SECONDS - 1:
        i = int(round(t / DT))
        p[i:i + 40] = 800.0
        gap = rng.uniform(0.12, 0.40) if kind == "regular" else rng.exponential(0.26)
        t += 0.04 + gap
    return p


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    rng = np.random.default_rng(a.seed)
    half = int(round(TAU / DT / 2))
    print("| bursts | read every | true smear sd | model sd, white | inside | model sd, floor 1/4 | inside "
          "| at least the median | inside |")
    print("|---|---|---|---|---|---|---|---|---|")
    for kind in ("regular", "random"):
        p = power(rng, kind)
        cum = np.concatenate([[0.0], np.cumsum(p) * DT])
        reading = lambda c: (cum[np.round(c / DT).astype(int) + half] - cum[np.round(c / DT).astype(int) - half]) / TAU
        for s in (0.147, 0.25, 1.0):
            true, white, floor = [], [], []
            for x in rng.uniform(5, SECONDS - 10, EDGES):
                u = np.arange(x - TAU / 2, x + TAU / 2, DT)
                g = (u - x + TAU / 2) / TAU - (u > x)  # the trapezoid's weight less the window's
                true.append(np.sum(p[np.round(u / DT).astype(int)] * g) * DT)
                dates = np.arange(x - 3 + rng.uniform(0, s), x + 3, s)
                d = np.diff(reading(dates))
                mids = (dates[:-1] + dates[1:]) / 2
                j = np.searchsorted(dates, x)
                near = np.abs(mids - x) <= TAU / 2
                near[max(j - 2, 0):j + 1] = True
                step = min(float(np.mean(np.diff(dates))), TAU)
                rms = d[near].std()
                white.append(TAU * rms * np.sqrt(TAU / (24 * step)))
                floor.append(TAU * rms * np.sqrt(max(TAU / (24 * step), 0.25)))
            true, white, floor = map(np.array, (true, white, floor))
            inside = lambda m: f"{np.mean(np.abs(true) <= 2 * m) * 100:.0f} %"
            rms_of = lambda m: f"{np.sqrt(np.mean(m ** 2)):.2f} J"
            usual = np.maximum(floor, np.median(floor))  # the run's usual smear, if more
            print(f"| {kind} | {s * 1000:.0f} ms | {true.std():.2f} J | {rms_of(white)} | {inside(white)} "
                  f"| {rms_of(floor)} | {inside(floor)} | {rms_of(usual)} | {inside(usual)} |")


if __name__ == "__main__":
    main()
