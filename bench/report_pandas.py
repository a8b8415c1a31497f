#!/usr/bin/python3
"""The plain pandas method for a run's node energy, applied per benchmark window: read_csv,
skip scrapes without a node total, de-duplicate per (hostname, timestamp), sort, then
np.trapezoid per node over each window's samples, snapped to the nearest sample at each edge
as the reference report does. Prints {"hosts": {host: [joules per window]}} as
JSON, windows in (concurrency, path) order.

pandas' default float parser is fast but not correctly rounded: 17-digit time.time()
stamps come back a few ulps off, which moves joules by about 1e-9 relative. --exact reads
with float_precision="round_trip" (correctly rounded, slower), the form that can agree to
1e-9.

Usage: report_pandas.py SAMPLES_CSV LOG_DIR [--exact]
"""

import json
import pathlib
import re
import sys

import numpy as np
import pandas as pd

trapz = getattr(np, "trapezoid", None) or np.trapz


def windows(log_dir):
    found = []
    for p in pathlib.Path(log_dir).rglob("sa-bench_*/results_concurrency_*.json"):
        m = re.match(r"^results_concurrency_(\d+)_", p.name)
        if m:
            r = json.loads(p.read_text())
            found.append((int(m.group(1)), p, r["benchmark_start_time_unix"], r["benchmark_end_time_unix"]))
    found.sort(key=lambda w: (w[0], w[1]))
    return [(s, e) for _c, _p, s, e in found]


def snapped_joules(t, w, start, end):
    def nearest(x):
        i = int(np.searchsorted(t, x, side="left"))
        if i == 0:
            return 0
        if i == len(t):
            return len(t) - 1
        return i - 1 if (x - t[i - 1]) <= (t[i] - x) else i

    si, ei = nearest(start), nearest(end)
    return float(trapz(w[si:ei + 1], x=t[si:ei + 1]))


def main():
    exact = "--exact" in sys.argv[3:]
    df = pd.read_csv(sys.argv[1], float_precision="round_trip" if exact else None)
    df = df[df["total_power_w"].notna()]  # pandas reads blank cells as NaN, not ""
    per_node_ts = (
        df[["hostname", "timestamp_unix", "total_power_w"]]
        .drop_duplicates(subset=["hostname", "timestamp_unix"], keep="last")
        .sort_values(["hostname", "timestamp_unix"])
    )
    spans = windows(sys.argv[2])
    out = {}
    for host, g in per_node_ts.groupby("hostname"):
        t = g["timestamp_unix"].to_numpy(dtype=float)
        w = g["total_power_w"].to_numpy(dtype=float)
        out[host] = [snapped_joules(t, w, s, e) for s, e in spans]
    json.dump({"hosts": out}, sys.stdout)


if __name__ == "__main__":
    main()
