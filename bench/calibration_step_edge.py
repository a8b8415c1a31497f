#!/usr/bin/env python3
"""The worst error one step of power near a window edge leaves in the interpolated
trapezoid, by how far apart the readings are (docs/performance.md, Calibration of the
uncertainty). A step of H at instant c, read as exact averages over tau centred on a grid of
spacing s (phase drawn over the grid), integrated over [0, 10] with the edge values
interpolated between the readings around them, against the exact integral: the largest
error over c within tau of the edge at 0 and over the grid's phase, in units of H tau. The
averaging alone misplaces up to tau H / 8 across the edge (docs/formats.md, term 3); the
straight line between sparse readings adds the rest.

    calibration_step_edge.py

Needs Debian's python3-numpy."""
import numpy as np

TAU = 1.0
LENGTH = 10.0


def reading(t, c):
    """The average over [t - tau/2, t + tau/2] of a unit step at c."""
    return np.clip((t + TAU / 2 - c) / TAU, 0, 1)


def error(c, phase, spacing):
    ts = np.arange(phase - 5, LENGTH + 5, spacing)
    w = reading(ts, c)
    inside = (ts > 0) & (ts < LENGTH)
    xs = np.concatenate([[0.0], ts[inside], [LENGTH]])
    ws = np.concatenate([[np.interp(0.0, ts, w)], w[inside], [np.interp(LENGTH, ts, w)]])
    exact = LENGTH - max(c, 0.0)
    return np.trapz(ws, xs) - exact


def main():
    print(f"{'s / tau':>8} {'worst |error| / (H tau)':>24} {'x 8':>6} {'1 + (s/tau)^2':>14}")
    for spacing in (0.15, 0.25, 0.5, 0.75, 1.0):
        worst = max(abs(error(c, phase, spacing))
                    for c in np.linspace(-TAU, TAU, 81)
                    for phase in np.linspace(0, spacing, 25, endpoint=False))
        print(f"{spacing:8.2f} {worst:24.4f} {8 * worst:6.2f} {1 + spacing ** 2:14.2f}")


if __name__ == "__main__":
    main()
