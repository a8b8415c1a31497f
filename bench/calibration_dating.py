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
import sys

from kept_runs import runs, socket_rows, trace_means

START, END = 6.0, 42.0
SHIFTS_MS = list(range(-600, 601, 50))


def main():
    keep = sys.argv[1]
    trace, average_ms = (sys.argv[2], int(sys.argv[3])) if len(sys.argv) > 3 else ("plateau", 1000)
    tau = average_ms / 1000
    header, mean = trace_means(f"{keep}/{trace}-{average_ms}.csv")
    print(f"{'run':<32} {'socket':>6} {'rows':>5} {'best shift':>11} {'mean |diff| there':>18} {'at 0':>8}")
    for tag, t0, samples in runs(keep, trace, average_ms):
        rows = socket_rows(samples, t0, START, END)
        for socket, rs in sorted(rows.items()):
            column = header.index(f"total:{socket}")

            def diff(shift_ms):
                sh = shift_ms / 1000
                return sum(abs(w - mean(column, t + sh - tau / 2, t + sh + tau / 2)) for t, w in rs) / len(rs)
            best = min(SHIFTS_MS, key=diff)
            print(f"{tag:<32} {socket:>6} {len(rs):5d} {best:+8d} ms {diff(best):15.2f} W {diff(0):6.2f} W")


if __name__ == "__main__":
    main()
