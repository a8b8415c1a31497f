"""The runs a bench/fidelity.py replay kept (--keep DIR), for the calibration scripts beside
it: the trace each simulated node replayed, its start, and each run's rows."""
import bisect
import csv
import glob
import os


def trace_means(path):
    """The trace CSV's header, and mean(column, a, b): the exact mean of that column over
    [a, b] trace seconds (the trace is a step function)."""
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


def runs(keep, trace, average_ms):
    """(name, t0_unix, samples.csv path) of each kept run of `trace` under `average_ms`
    averaging: the scrape leg's and the host leg's at every read interval."""
    prefix = f"{keep}/{trace}-{average_ms}"
    out = []
    for d in sorted(glob.glob(f"{prefix}-*ms") + glob.glob(f"{prefix}-*ms-host")):
        tag = os.path.basename(d)
        host = tag.endswith("-host")
        interval = tag.split("-")[2][:-2]
        sim_log = f"{prefix}-host{interval}.sim.log" if host else f"{prefix}.sim.log"
        t0 = float(open(sim_log).read().split("t0_unix=")[1].split()[0])
        samples = f"{d}/cpu_power/samples.csv" if host else f"{d}/power/cpu/samples.csv"
        out.append((tag, t0, samples))
    return out


def socket_rows(samples, t0, start, end):
    """{socket: [(trace seconds, power_w), ...]} of the rows between start and end."""
    rows = {}
    with open(samples) as f:
        for row in csv.DictReader(f):
            t = float(row["timestamp_unix"]) - t0
            if start < t < end:
                rows.setdefault(row["socket_id"], []).append((t, float(row["power_w"])))
    return rows
