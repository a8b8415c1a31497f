#!/usr/bin/python3
"""Window energy from a metrics store against the exact integral of a known power trace.

Goal: the window energy that `cpu-power report --prometheus URL --window S E --match SELECTOR
--json-out F` reads from the exporter's energy counters in a Prometheus that scrapes every
15 s and every 60 s is within 0.5 % of the exact integral of the simulated trace on windows
of 60 s or more, on a plateau trace and on a bursty trace. Beside it, on the same run:

- what today's power gauges give at the same scrape rate: the trapezoid of the
  `cpu_power_acpi_watts{type="total"}` raw samples the store holds, dated by their scrapes,
  with the window's edges interpolated, summed over the node's sockets;
- the CSV collector at 10 Hz (`cpu-power scrape --interval-ms 100`), integrated by
  `cpu-power report LOG_DIR --edges interpolate`;
- "edge interpolation alone": the exact integral of the trace up to each scrape (re-dated by
  its sample age, as the report does), interpolated linearly at S and E as the report
  interpolates the counter. Its error is what reading a perfect counter between scrapes
  costs; the report's error minus it is the exporter's own integration and dating.

    store_fidelity.py BIN_DIR [--run-s 480] [--seed 7] [--windows 6] [--average-ms 50]
                      [--json OUT] [--keep DIR]
    store_fidelity.py --from-json OUT   (the tables of a saved run again)

One run, both traces at once, each on its own simulated GB200 node (`cpu-power sim-node
--model trace`, firmware averaging --average-ms, values updated every 10 ms) and its own
`cpu-power-exporter` (reads every 100 ms). One Prometheus scrapes both exporters in two jobs,
`s15` (every 15 s) and `s60` (every 60 s), each target labelled with its trace as `node`; one
`cpu-power scrape` collects both at 10 Hz. Traces (seeded): plateau, each socket constant at
100-400 W with a step every 120 s; bursty, both sockets stepping every 0.5-3 s to a level of
80-300 W each. The run starts once the store holds both jobs' counters of both nodes and
lasts --run-s (RUN_S in the environment, default 480); --windows windows of 60 s and as many
of 120 s are placed at random (seeded) in it, at least 30 s after its start and 90 s before
its end (a 60 s scrape after each end). Error = (measured - exact) / exact of the node's CPU
energy (both socket totals). About 1.5 min of start-up, --run-s, then the reports: about
10 minutes at the defaults. A benchmark, not a test: nothing fails on the figures.
"""

import argparse
import json
import os
import random
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

import numpy as np

# The trace file's shape, its writer and the readiness wait are the end-to-end replay's
# (fidelity.py, beside this file).
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fidelity import SOCKETS, wait_for, write_trace  # noqa: E402

TRACES = ("plateau", "bursty")
JOBS = {"s15": 15, "s60": 60}
GOAL = 0.005
WINDOW_LENGTHS = (60, 120)
LEAD_S, TAIL_S = 30, 90  # windows start at least LEAD_S after the run's start, end TAIL_S before its end


def say(msg):
    print(f"store_fidelity: {msg}", file=sys.stderr, flush=True)


# ---- traces: step functions, held from each row's time to the next (sim/power_model.hpp) ---

def plateau_trace(rng, seconds, step_s=120):
    return [(float(t), [round(rng.uniform(100, 400), 1) for _ in range(SOCKETS)])
            for t in range(0, int(seconds) + step_s, step_s)]


def bursty_trace(rng, seconds):
    steps, t = [], 0.0
    while t < seconds:
        steps.append((round(t, 3), [round(rng.uniform(80, 300), 1) for _ in range(SOCKETS)]))
        t += rng.uniform(0.5, 3.0)
    return steps


class Exact:
    """The trace's socket totals integrated exactly on the sim's clock (time 0 at t0_unix).
    The trace file holds values with three decimals: integrate those."""

    def __init__(self, steps, t0_unix):
        self.t = np.array([t0_unix + t for t, _ in steps])
        self.w = np.array([[float(f"{w:.3f}") for w in watts] for _, watts in steps])  # [row, socket]
        seg = np.diff(self.t)[:, None] * self.w[:-1]
        self.cum = np.vstack([np.zeros((1, SOCKETS)), np.cumsum(seg, axis=0)])

    def cumulative(self, socket, x):
        """Energy of one socket from the trace's first row to x (unix seconds)."""
        k = int(np.searchsorted(self.t, x, side="right")) - 1
        if k < 0:
            return float(self.w[0, socket] * (x - self.t[0]))
        return float(self.cum[k, socket] + self.w[k, socket] * (x - self.t[k]))

    def joules(self, start, end):
        return sum(self.cumulative(s, end) - self.cumulative(s, start) for s in range(SOCKETS))


# ---- processes ---------------------------------------------------------------------------

class Procs:
    def __init__(self):
        self.procs = []

    def start(self, argv, log):
        p = subprocess.Popen(argv, stdout=open(log, "w"), stderr=subprocess.STDOUT)
        self.procs.append(p)
        return p

    def stop(self, p, timeout=15):
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
        try:
            p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()

    def stop_all(self):
        for p in reversed(self.procs):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in reversed(self.procs):
            self.stop(p, timeout=10)
        self.procs = []


def free_port():
    for _ in range(50):
        port = random.randint(20000, 31999)
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) != 0:
                return port
    raise SystemExit("store_fidelity: no free port")


# ---- the store ---------------------------------------------------------------------------

def prom_query(url, expr, at=None):
    form = {"query": expr}
    if at is not None:
        form["time"] = f"{at:.3f}"
    req = urllib.request.Request(f"{url}/api/v1/query", data=urllib.parse.urlencode(form).encode())
    with urllib.request.urlopen(req, timeout=30) as r:
        body = json.load(r)
    if body.get("status") != "success":
        raise SystemExit(f"store_fidelity: query {expr}: {body}")
    return body["data"]["result"]


def raw_series(url, expr, start, end):
    """{(node, sensor, socket): [(t, value), ...]} of every raw sample of expr in [start, end]."""
    out = {}
    for s in prom_query(url, f"{expr}[{int((end - start) * 1000)}ms]", end):
        m = s["metric"]
        out[(m.get("node"), m.get("sensor"), m.get("socket"))] = [(float(t), float(v)) for t, v in s["values"]]
    return out


def store_ready(url):
    try:
        r = prom_query(url, 'count by (job) (cpu_power_acpi_joules_total{type="total"})')
    except OSError:
        return False
    have = {s["metric"].get("job"): int(float(s["value"][1])) for s in r}
    return all(have.get(job) == SOCKETS * len(TRACES) for job in JOBS)


# ---- the three measures besides the report -------------------------------------------------

def interp_at(samples, x):
    """Linear between the samples around x (a sample on x as is); None when not bracketed."""
    for (ta, va), (tb, vb) in zip(samples, samples[1:]):
        if ta <= x <= tb:
            return va if tb == ta else va + (vb - va) * (x - ta) / (tb - ta)
    return None


def trapezoid(samples, start, end):
    """The trapezoid of (t, w) over [start, end] with both edges interpolated."""
    ws, we = interp_at(samples, start), interp_at(samples, end)
    if ws is None or we is None:
        return None
    pts = [(start, ws)] + [(t, w) for t, w in samples if start < t < end] + [(end, we)]
    t, w = np.array([p[0] for p in pts]), np.array([p[1] for p in pts])
    return float(np.trapz(w, t))


def gauge_joules(gauges, node, start, end):
    total = 0.0
    for s in range(SOCKETS):
        (samples,) = [v for (n, _, sock), v in gauges.items() if n == node and sock == str(s)]
        j = trapezoid(samples, start, end)
        if j is None:
            return None
        total += j
    return total


def redated(counter, ages):
    """The counter's scrape times moved back by the same scrape's sample age; a sample not
    after the previous one (the same reading again) dropped: the report's re-dating."""
    age_at = dict(ages)
    out = []
    for t, v in counter:
        x = t - age_at.get(t, 0.0)
        if not out or x > out[-1][0]:
            out.append((x, v))
    return out


def ideal_joules(counters, ages, exact, node, start, end):
    """The exact trace integral at each re-dated scrape, interpolated at the edges."""
    total = 0.0
    for s in range(SOCKETS):
        ((key, samples),) = [(k, v) for k, v in counters.items() if k[0] == node and k[2] == str(s)]
        times = [x for x, _ in redated(samples, ages.get((node, key[1]), []))]
        cum = [(x, exact.cumulative(s, x)) for x in times]
        a, b = interp_at(cum, start), interp_at(cum, end)
        if a is None or b is None:
            return None
        total += b - a
    return total


# ---- the report -------------------------------------------------------------------------------

def node_rows(window):
    """{node: (joules, uncertainty_j, coverage)} of a report window's cpu_per_node rows."""
    return {r["label"].split("/", 1)[1]: (r["joules"], r.get("uncertainty_j"), r.get("coverage"))
            for r in window.get("cpu_per_node") or []}


def store_report(bin_dir, url, job, start, end, out):
    argv = [f"{bin_dir}/cpu-power", "report", "--prometheus", url, "--window", f"{start:.3f}",
            f"{end:.3f}", "--match", f'{{job="{job}"}}', "--json-out", out]
    r = subprocess.run(argv, capture_output=True, text=True)
    if not os.path.exists(out):
        say(f"report --prometheus {job} {start:.3f} {end:.3f} exited {r.returncode}: {r.stderr.strip()}")
        return {}, f"exit {r.returncode}: {r.stderr.strip()}"
    (w,) = json.load(open(out))
    if "error" in w:
        say(f"report --prometheus {job} {start:.3f} {end:.3f}: {w['error']}")
    return node_rows(w), w.get("error")


def write_windows(log_dir, windows):
    """Each window as a sa-bench result (concurrency = its number), so the report takes it."""
    d = os.path.join(log_dir, "sa-bench_store_fidelity")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(log_dir, "benchmark.out"), "w") as f:
        f.write("============ Serving Benchmark Result ============\nSuccessful requests: 1\n")
    for n, (start, end) in enumerate(windows, 1):
        with open(os.path.join(d, f"results_concurrency_{n}_store_fidelity.json"), "w") as f:
            json.dump({"benchmark_start_time_unix": start, "benchmark_end_time_unix": end,
                       "duration": end - start, "total_input_tokens": 1, "total_output_tokens": 1}, f)


def csv_report(bin_dir, log_dir):
    """{window number: {node: (joules, uncertainty_j, coverage)}} from the 10 Hz samples."""
    out = os.path.join(log_dir, "report-csv.json")
    r = subprocess.run([f"{bin_dir}/cpu-power", "report", log_dir, "--edges", "interpolate",
                        "--json-out", out], capture_output=True, text=True)
    if not os.path.exists(out):
        raise SystemExit(f"store_fidelity: report on {log_dir} failed:\n{r.stdout}{r.stderr}")
    if r.returncode != 0:
        say(f"report on {log_dir} exited {r.returncode}: a window failed")
    return {w["concurrency"]: node_rows(w) for w in json.load(open(out))}


# ---- the run ------------------------------------------------------------------------------------

def place_windows(rng, t0, run_s, per_length):
    windows = []
    for length in WINDOW_LENGTHS:
        latest = run_s - TAIL_S - length
        if latest < LEAD_S:
            raise SystemExit(f"store_fidelity: --run-s {run_s} leaves no room for a {length} s window "
                             f"({LEAD_S} s after the start, {TAIL_S} s before the end)")
        for _ in range(per_length):
            s = round(t0 + rng.uniform(LEAD_S, latest), 3)
            windows.append((s, round(s + length, 3)))
    return windows


def run(args, work):
    rng = random.Random(args.seed)
    trace_s = args.run_s + 300  # start-up (up to a 60 s scrape's first) and the reports
    steps = {"plateau": plateau_trace(rng, trace_s), "bursty": bursty_trace(rng, trace_s)}
    window_rng = random.Random(args.seed * 1000 + 1)
    procs = Procs()
    log_dir = os.path.join(work, "run")
    try:
        sims, ports = {}, {}
        for name in TRACES:
            trace = os.path.join(work, f"{name}.csv")
            write_trace(trace, steps[name])
            log = os.path.join(work, f"{name}.sim.log")
            procs.start([f"{args.bin}/cpu-power", "sim-node", "--root", os.path.join(work, name),
                         "--profile", "gb200", "--model", "trace", "--trace", trace,
                         "--average-interval-ms", str(args.average_ms), "--update-ms", "10"], log)
        for name in TRACES:
            m = wait_for(os.path.join(work, f"{name}.sim.log"), r"sim-node ready .*t0_unix=([0-9.]+)")
            sims[name] = Exact(steps[name], float(m.group(1)))
            log = os.path.join(work, f"{name}.exporter.log")
            procs.start([f"{args.bin}/cpu-power-exporter", "--bind", "127.0.0.1", "--port", "0",
                         "--hwmon-root", os.path.join(work, name), "--no-nvml"], log)
            ports[name] = int(wait_for(log, r"listening addr=[0-9.]+:(\d+)").group(1))
        scrape = procs.start([f"{args.bin}/cpu-power", "scrape", "--out", os.path.join(log_dir, "power", "cpu"),
                              "--interval-ms", "100", "--request-timeout-s", "0.5"]
                             + [a for n in TRACES for a in ("--endpoint", f"{n}=127.0.0.1:{ports[n]}")],
                             os.path.join(work, "scrape.log"))
        prom_port = free_port()
        url = f"http://127.0.0.1:{prom_port}"
        groups = [{"targets": [f"127.0.0.1:{ports[n]}"], "labels": {"node": n}} for n in TRACES]
        config = {"global": {"scrape_interval": "15s"},
                  "scrape_configs": [{"job_name": job, "scrape_interval": f"{iv}s", "scrape_timeout": "10s",
                                      "static_configs": groups} for job, iv in JOBS.items()]}
        with open(os.path.join(work, "prometheus.yml"), "w") as f:
            json.dump(config, f, indent=1)  # JSON is YAML
        procs.start(["prometheus", f"--config.file={work}/prometheus.yml", f"--storage.tsdb.path={work}/tsdb",
                     f"--web.listen-address=127.0.0.1:{prom_port}"], os.path.join(work, "prometheus.log"))
        say("waiting for the store to hold both jobs' counters (a 60 s job's first scrape takes up to a minute)")
        deadline = time.time() + 150
        while not store_ready(url):
            if time.time() > deadline:
                raise SystemExit("store_fidelity: the store has no counters of both jobs after 150 s:\n" +
                                 open(os.path.join(work, "prometheus.log")).read()[-3000:])
            time.sleep(1)
        t0 = time.time()
        windows = place_windows(window_rng, t0, args.run_s, args.windows)
        say(f"run from {t0:.3f} for {args.run_s} s; {len(windows)} windows")
        time.sleep(max(0.0, t0 + args.run_s - time.time()))
        procs.stop(scrape)
        run_end = time.time()

        say("reports")
        write_windows(log_dir, windows)
        csv = csv_report(args.bin, log_dir)
        span = (t0 - 200, run_end)
        results = []
        for job, interval in JOBS.items():
            gauges = raw_series(url, f'cpu_power_acpi_watts{{type="total",job="{job}"}}', *span)
            counters = raw_series(url, f'cpu_power_acpi_joules_total{{type="total",job="{job}"}}', *span)
            ages = {(n, sensor): v for (n, sensor, _), v in
                    raw_series(url, f'cpu_power_exporter_sample_age_seconds{{job="{job}"}}', *span).items()}
            for n, (start, end) in enumerate(windows, 1):
                rows, error = store_report(args.bin, url, job, start, end,
                                           os.path.join(work, f"store-{job}-{n}.json"))
                for name in TRACES:
                    exact = sims[name].joules(start, end)
                    base = {"trace": name, "window": n, "start": start, "end": end,
                            "window_s": round(end - start), "exact_j": exact}
                    j, unc, cov = rows.get(name, (None, None, None))
                    results.append(dict(base, method="counters", interval_s=interval, measured_j=j,
                                        stated_j=unc, coverage=cov, error_text=error if j is None else None))
                    results.append(dict(base, method="ideal", interval_s=interval,
                                        measured_j=ideal_joules(counters, ages, sims[name], name, start, end)))
                    results.append(dict(base, method="gauge", interval_s=interval,
                                        measured_j=gauge_joules(gauges, name, start, end)))
                    if job == "s15":
                        j, unc, cov = csv.get(n, {}).get(name, (None, None, None))
                        results.append(dict(base, method="csv", interval_s=0.1, measured_j=j,
                                            stated_j=unc, coverage=cov))
        for r in results:
            m, e = r["measured_j"], r["exact_j"]
            r["error"] = (m - e) / e if m is not None else None
            # A stated 0 J (no change of power near the window) holds against rounding.
            r["inside"] = bool(abs(m - e) <= r["stated_j"] + 1e-9 * e) if m is not None and r.get("stated_j") is not None else None
        return results
    finally:
        procs.stop_all()


# ---- tables ---------------------------------------------------------------------------------

METHODS = [("counters", "counters from the store (`report --prometheus`)"),
           ("ideal", "edge interpolation alone (exact counter at the scrapes)"),
           ("gauge", "gauge trapezoid from the store"),
           ("csv", "CSV collector at 10 Hz (`report --edges interpolate`)")]


def pct(x, digits=3):
    return "n/a" if x is None else f"{100 * x:.{digits}f} %"


def tables(results):
    lines = []
    for trace in TRACES:
        lines += [f"**{trace}**", "",
                  "| windows | scrapes | measure | n | median \\|error\\| | max \\|error\\| | within 0.5 % "
                  "| median stated | median coverage | error within stated |",
                  "|---|---|---|---|---|---|---|---|---|---|"]
        for length in WINDOW_LENGTHS:
            cases = [(iv, m) for iv in JOBS.values() for m in METHODS if m[0] != "csv"]
            for iv, (method, label) in cases + [(0.1, m) for m in METHODS if m[0] == "csv"]:
                rs = [r for r in results if r["trace"] == trace and r["window_s"] == length
                      and r["method"] == method and r["interval_s"] == iv]
                if not rs:
                    continue
                errs = [abs(r["error"]) for r in rs if r["error"] is not None]
                failed = len(rs) - len(errs)
                within = sum(e <= GOAL for e in errs)
                stated = [r["stated_j"] / r["measured_j"] for r in rs
                          if r.get("stated_j") is not None and r["measured_j"]]
                covs = [r["coverage"] for r in rs if r.get("coverage") is not None]
                inside = [r["inside"] for r in rs if r.get("inside") is not None]
                scrapes = "10 Hz" if iv == 0.1 else f"{iv} s"
                lines.append(
                    f"| {length} s | {scrapes} | {label} | {len(rs)} | "
                    f"{pct(statistics.median(errs)) if errs else 'n/a'} | {pct(max(errs)) if errs else 'n/a'} | "
                    f"{within} of {len(rs)}{f' ({failed} failed)' if failed else ''} | "
                    f"{pct(statistics.median(stated)) if stated else '-'} | "
                    f"{f'{statistics.median(covs):.3f}' if covs else '-'} | "
                    f"{f'{sum(inside)} of {len(inside)}' if inside else '-'} |")
        by = {(r["window"], r["interval_s"], r["method"]): r for r in results if r["trace"] == trace}
        diffs = [abs(r["measured_j"] - by[(w, iv, "ideal")]["measured_j"]) / r["exact_j"]
                 for (w, iv, m), r in by.items() if m == "counters" and r["measured_j"] is not None
                 and by.get((w, iv, "ideal"), {}).get("measured_j") is not None]
        if diffs:
            lines += ["", f"The report against edge interpolation alone, window by window (the exporter's "
                      f"integration and dating): median {pct(statistics.median(diffs), 4)}, "
                      f"max {pct(max(diffs), 4)} of the exact energy."]
        lines.append("")
    return "\n".join(lines)


def header(params):
    return (f"run {params['run_s']} s, seed {params['seed']}, {params['windows']} windows each of "
            f"{' and '.join(f'{w} s' for w in WINDOW_LENGTHS)}, meters averaging {params['average_ms']} ms; "
            f"error = (measured - exact) / exact of the node's CPU energy\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("bin", nargs="?", help="the build's bin directory (cpu-power, cpu-power-exporter)")
    ap.add_argument("--run-s", type=int, default=int(os.environ.get("RUN_S", 480)))
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--windows", type=int, default=6, help="windows of each length (60 s, 120 s)")
    ap.add_argument("--average-ms", type=int, choices=(50, 1000), default=50,
                    help="the simulated meters' averaging interval")
    ap.add_argument("--json", help="write every window's figures here")
    ap.add_argument("--keep", help="run in this directory and keep it")
    ap.add_argument("--from-json", help="print the tables of a run saved with --json, without running")
    args = ap.parse_args()
    if args.from_json:
        saved = json.load(open(args.from_json))
        print(header(saved["params"]))
        print(tables(saved["results"]))
        return
    if not args.bin:
        ap.error("BIN_DIR is required (unless --from-json)")
    for tool in ("prometheus",):
        if not shutil.which(tool):
            raise SystemExit(f"store_fidelity: {tool} is not installed (scripts/install-deps.sh)")
    if args.keep:
        os.makedirs(args.keep, exist_ok=True)
        work = args.keep
    else:
        work = tempfile.mkdtemp(prefix="cpupower-store-fidelity.")
    try:
        results = run(args, work)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    params = {"run_s": args.run_s, "seed": args.seed, "windows": args.windows, "average_ms": args.average_ms}
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"params": params, "results": results}, f, indent=1)
    print(header(params))
    print(tables(results))


if __name__ == "__main__":
    main()
