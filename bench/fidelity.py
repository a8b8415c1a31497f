#!/usr/bin/python3
"""End-to-end energy fidelity: a known power trace replayed by `cpu-power sim-node` (with the
firmware's averaging modelled), read by `cpu-power-exporter`, scraped by `cpu-power scrape`
and integrated by `cpu-power report`, against the exact integral of the trace over each
window. Beside it, the reference's schedule on the same trace: read every channel in turn
after sleeping 1 s, rows stamped with the head clock when the response arrives, edges
snapped to the nearest sample.

    fidelity.py BIN_DIR [--quick] [--json OUT] [--seconds S] [--calibration OUT.md]

Cases: trace (plateau: phases of seconds; bursty: 40 ms bursts at random spacing, shorter
than a read), firmware averaging (50 or 1000 ms), scrape interval (100, 250, 1000 ms), edges
(interpolate, snap). Windows: on the plateau trace, long windows (a) and short windows of
2-5 s whose edges fall inside phases (c); on the bursty trace, long windows (b). Every read
of a channel takes 150 ms (the firmware round trip). The error of a window is
(measured - exact) / exact for the node's CPU energy, summed over its sockets.

Both legs read the same simulated node: the exporter scraped by `cpu-power scrape`, and
`cpu-power host-collect` (merged by `cpu-power merge`) at the same intervals. Each window's
stated uncertainty (the report's `uncertainty.cpu_total.uncertainty_j`) is kept beside its
true error; the calibration table (--calibration) gives, per case, how often the true error
lies inside the stated uncertainty and the medians of both.

--quick: the plateau trace only, 1000 ms averaging, 250 ms scrapes, a short trace; used by
`make test` (tests/integration/test_fidelity.sh) with a loose bound.
"""

import argparse
import glob
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

SOCKETS = 2
READ_MS = 150  # every channel read blocks this long, like the firmware's round trip
CHANNELS = [f"{k}:{s}" for s in range(SOCKETS) for k in ("total", "cpu_rail", "soc")]
RAIL_SHARE = {"total": 1.0, "cpu_rail": 0.7, "soc": 0.2}


def wait_for(path, pattern, timeout=30):
    end = time.time() + timeout
    while time.time() < end:
        try:
            m = re.search(pattern, open(path).read(), re.M)
            if m:
                return m
        except FileNotFoundError:
            pass
        time.sleep(0.02)
    raise SystemExit(f"fidelity: timed out waiting for {pattern!r} in {path}:\n" +
                     (open(path).read() if os.path.exists(path) else "(no file)"))


# ---- traces ------------------------------------------------------------------------------

def plateau_trace(rng, seconds):
    """Socket power in phases of 1.5 to 4 s, alternating between low (100..160 W) and busy
    (360..420 W) levels, each socket its own level within the band."""
    steps = []  # (t, [socket watts])
    t = 0.0
    busy = False
    while t < seconds:
        lo, hi = (360, 420) if busy else (100, 160)
        steps.append((round(t, 3), [round(rng.uniform(lo, hi), 1) for _ in range(SOCKETS)]))
        t += rng.uniform(1.5, 4.0)
        busy = not busy
    return steps


def bursty_trace(rng, seconds):
    """150 W base with 40 ms bursts of +250 W, 120 to 400 ms apart: shorter than a read."""
    steps = [(0.0, [150.0] * SOCKETS)]
    t = 0.5
    while t < seconds:
        steps.append((round(t, 3), [400.0] * SOCKETS))
        steps.append((round(t + 0.04, 3), [150.0] * SOCKETS))
        t += 0.04 + rng.uniform(0.12, 0.40)
    return steps


def write_trace(path, steps):
    with open(path, "w") as f:
        f.write("time_s," + ",".join(CHANNELS) + "\n")
        for t, watts in steps:
            cells = [f"{watts[int(c.split(':')[1])] * RAIL_SHARE[c.split(':')[0]]:.3f}"
                     for c in CHANNELS]
            f.write(f"{t:.3f}," + ",".join(cells) + "\n")


def exact_joules(steps, t0_unix, start, end):
    """Integral over [start, end] (unix seconds) of the socket totals: a step function."""
    total = 0.0
    for i, (t, watts) in enumerate(steps):
        a = t0_unix + t
        b = t0_unix + steps[i + 1][0] if i + 1 < len(steps) else float("inf")
        lo, hi = max(a, start), min(b, end)
        if hi > lo:
            total += sum(watts) * (hi - lo)
    return total


# ---- processes ---------------------------------------------------------------------------

class Procs:
    def __init__(self):
        self.procs = []

    def start(self, argv, log):
        p = subprocess.Popen(argv, stdout=open(log, "w"), stderr=subprocess.STDOUT)
        self.procs.append(p)
        return p

    def stop_all(self):
        for p in reversed(self.procs):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in reversed(self.procs):
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        self.procs = []


def start_sim(procs, bin_dir, work, name, trace, average_ms):
    root = os.path.join(work, name, "hwmon")
    log = os.path.join(work, name + ".sim.log")
    faults = []
    for c in CHANNELS:
        faults += ["--fault", f"{c}=slow:{READ_MS}"]
    procs.start([f"{bin_dir}/cpu-power", "sim-node", "--root", root, "--profile", "gb200",
                 "--model", "trace", "--trace", trace, "--average-interval-ms", str(average_ms),
                 "--update-ms", "10"]
                + faults, log)
    m = wait_for(log, r"sim-node ready .*t0_unix=([0-9.]+)")
    return root, float(m.group(1)) + LEAD_IN_S  # where the trace itself starts


# ---- the reference's schedule --------------------------------------------------------------

def reference_schedule(hwmon_root, until, interval_s, rows):
    """Its poller: sleep 1 s, then read every channel in turn, keeping the last value. Its
    collector: every interval, the poller's values stamped with the head clock after the
    response (modelled here without the HTTP hop, which costs about a millisecond)."""
    channels = []  # (socket or None, value file): every channel, totals with their socket
    seen = set()
    for pattern in ("hwmon*/power*_oem_info", "hwmon*/device/power*_oem_info"):  # both layouts
        for f in sorted(glob.glob(os.path.join(hwmon_root, pattern))):
            value = f.replace("_oem_info", "_average")
            if os.path.realpath(value) in seen or not os.path.exists(value):
                continue
            seen.add(os.path.realpath(value))
            m = re.match(r"Grace Power Socket (\d+)$", open(f).read().strip())
            channels.append((int(m.group(1)) if m else None, value))
    sockets = sorted(s for s, _ in channels if s is not None)
    if len(sockets) != SOCKETS:
        raise SystemExit(f"fidelity: reference schedule found sockets {sockets} under {hwmon_root}")
    last = {}
    lock = threading.Lock()
    stop = threading.Event()

    def poller():
        while not stop.is_set():
            time.sleep(1.0)
            for socket, path in channels:
                try:
                    uw = int(open(path).read().strip())
                except (OSError, ValueError):
                    continue
                if socket is not None:
                    with lock:
                        last[socket] = uw / 1e6

    t = threading.Thread(target=poller, daemon=True)
    t.start()
    next_at = time.time()
    while time.time() < until:
        next_at += interval_s
        time.sleep(max(0.0, next_at - time.time()))
        with lock:
            snapshot = dict(last)
        stamp = time.time()
        for socket, w in sorted(snapshot.items()):
            rows.append((stamp, socket, w))
    stop.set()


def write_reference_samples(path, rows):
    """Our samples.csv v3: power_w is the socket's, total_power_w the node's at that stamp."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    node_total = {}
    for stamp, _, w in rows:
        node_total[stamp] = node_total.get(stamp, 0.0) + w
    with open(path, "w") as f:
        f.write("schema_version,timestamp_unix,hostname,source,sensor,socket_id,power_w,"
                "cpu_rail_w,soc_w,dram_w,module_w,total_power_w\r\n")
        for stamp, socket, w in rows:
            f.write(f"3,{stamp!r},node,acpi,CPU{socket}:cpuSidePowerUsageW,{socket},{w!r},,,,,"
                    f"{node_total[stamp]!r}\r\n")


# ---- windows and the report ----------------------------------------------------------------

def write_windows(log_dir, windows):
    """Each window as a sa-bench result (concurrency = its number), so the report takes it."""
    d = os.path.join(log_dir, "sa-bench_fidelity")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(log_dir, "benchmark.out"), "w") as f:
        f.write("============ Serving Benchmark Result ============\nSuccessful requests: 1\n")
    for n, (start, end) in enumerate(windows, 1):
        with open(os.path.join(d, f"results_concurrency_{n}_fidelity.json"), "w") as f:
            json.dump({"benchmark_start_time_unix": start, "benchmark_end_time_unix": end,
                       "duration": end - start, "total_input_tokens": 1, "total_output_tokens": 1}, f)


def report_joules(bin_dir, log_dir, edges, cpu_samples=None):
    """{window: (cpu joules, stated uncertainty in joules or None)}."""
    out = os.path.join(log_dir, f"report-{edges}.json")
    argv = [f"{bin_dir}/cpu-power", "report", log_dir, "--edges", edges, "--json-out", out]
    if cpu_samples:
        argv += ["--cpu-samples", cpu_samples]
    r = subprocess.run(argv, capture_output=True, text=True)
    if r.returncode != 0 and not os.path.exists(out):
        raise SystemExit(f"fidelity: report on {log_dir} failed:\n{r.stdout}{r.stderr}")
    if r.returncode != 0:  # some window failed: it counts as one without energy
        print(f"fidelity: report on {log_dir}: {r.returncode}, a window failed", file=sys.stderr)
    got = {}
    for w in json.load(open(out)):
        if "cpu_total_joules" not in w:
            continue
        stated = ((w.get("uncertainty") or {}).get("cpu_total") or {}).get("uncertainty_j")
        got[w["concurrency"]] = (w["cpu_total_joules"], stated)
    return got


def window_results(got, steps, t0, windows, base):
    """One result per window: the measured energy against the exact one, and the stated
    uncertainty against the true error."""
    out = []
    for n, (start, end) in enumerate(windows, 1):
        exact = exact_joules(steps, t0, start, end)
        measured, stated = got.get(n, (None, None))
        r = dict(base, window=n, window_s=end - start, exact_j=exact, measured_j=measured,
                 stated_j=stated, error=(measured - exact) / exact if measured else None)
        r["inside"] = (abs(measured - exact) <= stated) if measured and stated is not None else None
        out.append(r)
    return out


# ---- one run -----------------------------------------------------------------------------

# Seconds of the trace's first level that every sim-node replays before the trace itself: the
# exporter, the collectors and the other sim-nodes start in that time, so each leg has rows
# before the first window opens however slowly the machine starts processes (a sanitizer
# build on a loaded machine took 2.5 s). Times on the trace (t0) count from the end of it.
LEAD_IN_S = 4.0


def with_lead_in(steps):
    return [(0.0, steps[0][1])] + [(t + LEAD_IN_S, watts) for t, watts in steps]


def run_case(bin_dir, work, trace_name, steps, seconds, average_ms, intervals, windows_of, rng,
             exporter_args=()):
    """One sim-node and exporter scraped at every interval at once, and a second sim-node
    on the same trace read on the reference's schedule. Returns rows of results."""
    tag = f"{trace_name}-{average_ms}"
    trace = os.path.join(work, tag + ".csv")
    write_trace(trace, with_lead_in(steps))
    procs = Procs()
    results = []
    try:
        root, t0 = start_sim(procs, bin_dir, work, tag, trace, average_ms)
        log = os.path.join(work, tag + ".exporter.log")
        procs.start([f"{bin_dir}/cpu-power-exporter", "--bind", "127.0.0.1", "--port", "0",
                     "--hwmon-root", root, "--no-nvml", *exporter_args], log)
        port = wait_for(log, r"listening addr=[0-9.]+:(\d+)").group(1)
        ref_root, ref_t0 = start_sim(procs, bin_dir, work, tag + "-ref", trace, average_ms)
        runs = {}
        host_runs = {}
        for ms in intervals:
            run_dir = os.path.join(work, f"{tag}-{ms}ms")
            runs[ms] = run_dir
            procs.start([f"{bin_dir}/cpu-power", "scrape", "--endpoint", f"node=127.0.0.1:{port}",
                         "--out", os.path.join(run_dir, "power", "cpu"), "--interval-ms", str(ms),
                         "--request-timeout-s", "0.5"], os.path.join(work, f"{tag}-{ms}.scrape.log"))
            # The host leg: its own simulated node replaying the same trace (a slow channel
            # serves one reader at a time, as the exporter's is), read by `host-collect`.
            host_root, host_t0 = start_sim(procs, bin_dir, work, f"{tag}-host{ms}", trace, average_ms)
            host_dir = os.path.join(work, f"{tag}-{ms}ms-host")
            host_runs[ms] = (host_dir, host_t0)
            leg = os.path.join(host_dir, "cpu_power")
            procs.start([f"{bin_dir}/cpu-power", "host-collect", "--output-dir",
                         os.path.join(leg, "nodes"), "--ready-dir", os.path.join(leg, "ready"),
                         "--hostname", "node", "--hwmon-root", host_root, "--no-nvml",
                         "--interval-seconds", str(ms / 1000)],
                        os.path.join(work, f"{tag}-{ms}.host.log"))
        ref_rows = []
        failed = []

        def reference():
            try:
                reference_schedule(ref_root, ref_t0 + seconds, 1.0, ref_rows)
            except BaseException as e:  # noqa: B036 - reported by the main thread
                failed.append(e)

        ref_thread = threading.Thread(target=reference)
        ref_thread.start()
        last_t0 = max([t0] + [t for _, t in host_runs.values()])
        late = time.time() - (t0 - LEAD_IN_S)
        if late > LEAD_IN_S:
            print(f"fidelity: {tag}: the legs took {late:.1f} s to start, longer than the "
                  f"{LEAD_IN_S:.0f} s lead-in; early windows may lack a sample before them",
                  file=sys.stderr)
        # 1.5 s past the trace's end: a 1 s average read at the end is dated half a second
        # earlier, and the last window must still have a sample after it.
        time.sleep(max(0.0, last_t0 + seconds + 1.5 - time.time()))
        ref_thread.join()
        if failed:
            raise SystemExit(f"fidelity: the reference schedule failed: {failed[0]}")
    finally:
        procs.stop_all()

    windows = windows_of(t0)
    for ms, run_dir in runs.items():
        write_windows(run_dir, windows)
        for edges in ("interpolate", "snap"):
            got = report_joules(bin_dir, run_dir, edges)
            results += window_results(got, steps, t0, windows, {
                "trace": trace_name, "average_ms": average_ms, "schedule": "ours", "leg": "scrape",
                "interval_ms": ms, "edges": edges})
    for ms, (host_dir, host_t0) in host_runs.items():
        leg = os.path.join(host_dir, "cpu_power")
        r = subprocess.run([f"{bin_dir}/cpu-power", "merge", leg, "--expected-nodes", "node"],
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise SystemExit(f"fidelity: merge of {leg} failed:\n{r.stdout}{r.stderr}")
        host_windows = windows_of(host_t0)
        write_windows(host_dir, host_windows)
        for edges in ("interpolate", "snap"):
            got = report_joules(bin_dir, host_dir, edges, os.path.join(leg, "samples.csv"))
            results += window_results(got, steps, host_t0, host_windows, {
                "trace": trace_name, "average_ms": average_ms, "schedule": "ours", "leg": "host",
                "interval_ms": ms, "edges": edges})
    ref_dir = os.path.join(work, f"{tag}-reference")
    write_reference_samples(os.path.join(ref_dir, "power", "cpu", "samples.csv"), ref_rows)
    ref_windows = windows_of(ref_t0)
    write_windows(ref_dir, ref_windows)
    got = report_joules(bin_dir, ref_dir, "snap")
    results += window_results(got, steps, ref_t0, ref_windows, {
        "trace": trace_name, "average_ms": average_ms, "schedule": "reference", "leg": "reference",
        "interval_ms": 1000, "edges": "snap"})
    return results


def long_windows(seconds):
    return lambda t0: [(t0 + 2.0, t0 + seconds - 2.0)]


def short_windows(rng, steps, seconds, count, near):
    """Windows of 2 to 5 s. near=False: one edge in a low phase and the other in a busy one,
    each at least 0.6 s from the phase's ends (more than half of a 1 s averaging interval):
    the power differs across the window, so a row time off by L seconds is an energy error
    of about L times that difference. near=True: each edge within 0.1-0.4 s of a change,
    inside the interval the firmware's averaging smears."""
    bounds = [t for t, _ in steps][1:]
    phase = lambda x: sum(1 for y in bounds if y <= x) % 2
    chosen = []
    while len(chosen) < count:
        a = rng.uniform(2.0, seconds - 7.0)
        b = a + rng.uniform(2.0, 5.0)
        da, db = (min(abs(x - y) for y in bounds) for x in (a, b))
        if near:
            good = 0.1 <= da <= 0.4 and 0.1 <= db <= 0.4
        else:
            good = da > 0.6 and db > 0.6 and phase(a) != phase(b)
        if good:
            chosen.append((a, b))
    return lambda t0: [(t0 + a, t0 + b) for a, b in chosen]


def summarize(results):
    groups = {}
    for r in results:
        if r["schedule"] == "reference":
            key = (r["trace"], r["window_kind"], r["average_ms"], "reference (1 s poll, stamped on arrival)", "snap")
        elif r["leg"] == "host":
            continue  # the calibration table has the host leg
        else:
            key = (r["trace"], r["window_kind"], r["average_ms"], f"ours, {r['interval_ms']} ms", r["edges"])
        groups.setdefault(key, []).append(r)
    lines = ["| case | firmware averaging | schedule | edges | windows | worst error | mean abs error |",
             "|---|---|---|---|---|---|---|"]
    for key in sorted(groups):
        rs = groups[key]
        errs = [r["error"] for r in rs if r["error"] is not None]
        missing = len(rs) - len(errs)
        worst = max(errs, key=abs) if errs else float("nan")
        mean = sum(abs(e) for e in errs) / len(errs) if errs else float("nan")
        lines.append(f"| {key[0]} {key[1]} | {key[2]} ms | {key[3]} | {key[4]} | {len(rs)}"
                     f"{f' ({missing} without energy)' if missing else ''} | {worst * 100:+.3f} % | {mean * 100:.3f} % |")
    return "\n".join(lines)


def median(values):
    v = sorted(values)
    if not v:
        return float("nan")
    return v[len(v) // 2] if len(v) % 2 else (v[len(v) // 2 - 1] + v[len(v) // 2]) / 2


def calibration(results):
    """Per case (trace and window kind, averaging, leg, interval, edges): windows, how many
    have the true error inside the stated uncertainty, the medians of both (percent of the
    exact energy) and their ratio. Then every case pooled."""
    groups = {}
    for r in results:
        if r["schedule"] != "ours" or r["measured_j"] is None or r["stated_j"] is None:
            continue
        key = (r["trace"], r["window_kind"], r["average_ms"], r["leg"], r["interval_ms"], r["edges"])
        groups.setdefault(key, []).append(r)
    lines = ["| case | averaging | leg | reads | edges | windows | inside | median true error | median stated | ratio |",
             "|---|---|---|---|---|---|---|---|---|---|"]

    def row(label, rs):
        true = [abs(r["measured_j"] - r["exact_j"]) / r["exact_j"] * 100 for r in rs]
        stated = [r["stated_j"] / r["exact_j"] * 100 for r in rs]
        inside = sum(1 for r in rs if r["inside"])
        mt, ms = median(true), median(stated)
        return (f"| {label} | {len(rs)} | {inside} ({inside / len(rs) * 100:.0f} %) | {mt:.3f} % | "
                f"{ms:.3f} % | {ms / mt if mt > 0 else float('inf'):.1f} |")

    for key in sorted(groups):
        trace, kind, avg, leg, ms, edges = key
        lines.append(row(f"{trace} {kind} | {avg} ms | {leg} | {ms} ms | {edges}", groups[key]))
    every = [r for rs in groups.values() for r in rs]
    if every:
        lines.append(row("every case | | | | ", every))
    return "\n".join(lines)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("bin_dir")
    p.add_argument("--quick", action="store_true")
    p.add_argument("--json")
    p.add_argument("--seconds", type=float)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--keep", help="keep the work directory here")
    p.add_argument("--calibration", help="write the calibration table (markdown) here")
    p.add_argument("--bursty-short", type=int, default=12,
                   help="short windows on the bursty trace (calibration)")
    p.add_argument("--exporter-read-ms", type=int,
                   help="the exporter's --read-interval-ms (default: its own default)")
    a = p.parse_args()
    rng = random.Random(a.seed)
    seconds = a.seconds or (16.0 if a.quick else 40.0)
    work = a.keep or tempfile.mkdtemp(prefix="fidelity.")
    os.makedirs(work, exist_ok=True)
    results = []
    averagings = [1000] if a.quick else [50, 1000]
    intervals = [250] if a.quick else [100, 250, 1000]
    plateau = plateau_trace(rng, seconds)
    plateau_short = short_windows(rng, plateau, seconds, 3 if a.quick else 8, near=False)
    plateau_near = short_windows(rng, plateau, seconds, 3 if a.quick else 8, near=True)
    cases = [("plateau", plateau)] + ([] if a.quick else [("bursty", bursty_trace(rng, seconds))])
    bursty_windows = []
    for _ in range(0 if a.quick else a.bursty_short):
        start = rng.uniform(2.0, seconds - 7.0)
        bursty_windows.append((start, start + rng.uniform(2.0, 5.0)))
    bursty_short = lambda t0: [(t0 + x, t0 + y) for x, y in bursty_windows]
    for trace_name, steps in cases:
        for average_ms in averagings:
            def windows_of(t0, steps=steps, trace_name=trace_name):
                ws = long_windows(seconds)(t0)
                if trace_name == "plateau":
                    ws += plateau_short(t0) + plateau_near(t0)
                else:
                    ws += bursty_short(t0)
                return ws
            exporter_args = ([] if a.exporter_read_ms is None
                             else ["--read-interval-ms", str(a.exporter_read_ms)])
            rs = run_case(a.bin_dir, work, trace_name, steps, seconds, average_ms, intervals,
                          windows_of, rng, exporter_args)
            shorts = 3 if a.quick else 8
            for r in rs:
                if trace_name == "bursty":
                    r["window_kind"] = "(b) long" if r["window"] == 1 else "(d) bursty, short"
                elif r["window"] == 1:
                    r["window_kind"] = "(a) long"
                elif r["window"] <= 1 + shorts:
                    r["window_kind"] = "(c) short, edges in steady phases"
                else:
                    r["window_kind"] = "(c') short, a change near each edge"
            results += rs
            print(f"fidelity: {trace_name}, {average_ms} ms averaging: {len(rs)} window results",
                  file=sys.stderr)
    print(summarize(results))
    table = calibration(results)
    print()
    print(table)
    if a.calibration:
        with open(a.calibration, "w") as f:
            f.write(table + "\n")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"seconds": seconds, "seed": a.seed, "results": results}, f, indent=1)
    if not a.keep:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
