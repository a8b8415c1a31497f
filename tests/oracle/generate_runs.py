#!/usr/bin/python3
"""Generates benchmark runs for the oracle cross-check: aiperf and sa-bench, several nodes
and sockets, uneven sampling, gaps, blank totals, every CPU layout (exporter v1/v2/v3, host
v1..v5), GPU legs with and without manifest roles, a window without coverage, and a
`cpu-power run` session without benchmark artifacts.

Usage: generate_runs.py OUT_DIR [--seed N]   (prints one run directory per line)
"""

import argparse
import json
import pathlib
import random

T0 = 1788310000.0
EXPORTER = {
    1: "schema_version,timestamp_unix,hostname,source,sensor,socket_id,power_w,total_power_w",
    2: "schema_version,timestamp_unix,hostname,source,sensor,socket_id,power_w,cpu_rail_w,soc_w,dram_w,total_power_w",
    3: "schema_version,timestamp_unix,hostname,source,sensor,socket_id,power_w,cpu_rail_w,soc_w,dram_w,module_w,total_power_w",
}
UTIL = "cpu_util_total,cpu_util_user,cpu_util_nice,cpu_util_sys,cpu_util_irq"
HOST = {
    1: EXPORTER[1],
    2: "schema_version,timestamp_unix,timestamp_local,hostname,source,sensor,socket_id,power_w,total_power_w",
    3: "schema_version,timestamp_unix,timestamp_local,hostname,source,sensor,socket_id,power_w,total_power_w," + UTIL,
    4: "schema_version,timestamp_unix,timestamp_local,hostname,source,sensor,socket_id,power_w,cpu_rail_w,soc_w,dram_w,total_power_w," + UTIL,
    5: "schema_version,timestamp_unix,timestamp_local,hostname,source,sensor,socket_id,power_w,cpu_rail_w,soc_w,dram_w,module_w,total_power_w," + UTIL,
}


def fmt(x):
    return repr(float(x))


def scrape_times(rng, start, end, gap=None):
    """Uneven scrape instants; `gap` = (from, to) leaves a hole."""
    t, out = start, []
    while t < end:
        if not gap or not gap[0] <= t <= gap[1]:
            out.append(round(t, 6))
        t += rng.uniform(0.3, 1.3)
    return out


def socket_power(rng, t, sock):
    return round(90 + 10 * sock + 15 * ((t // 7) % 3) + rng.uniform(-4, 4), 3)


def cpu_rows(rng, layout, version, hosts, sockets, span, gaps, dcgm_host=None):
    """Rows of one CPU samples file; blank totals now and then."""
    rows = []
    for h in hosts:
        for t in scrape_times(rng, span[0], span[1], gaps.get(h)):
            powers = [socket_power(rng, t, s) for s in range(sockets)]
            blank_total = rng.random() < 0.05
            total = "" if blank_total else fmt(sum(powers))
            src = "dcgm" if h == dcgm_host else "acpi"
            local = "2026-09-03T14:32:07.891234-07:00"
            for s, p in enumerate(powers):
                util = [fmt(round(rng.uniform(0, 1), 4)) if rng.random() < 0.9 else "" for _ in range(5)]
                if layout == "long":
                    rails = [("CPU%d:cpuSidePowerUsageW" % s, p), ("CPU%d:cpuRailPowerUsageW" % s, round(p * 0.45, 3)),
                             ("CPU%d:socPowerUsageW" % s, round(p * 0.1, 3))]
                    if version == 1 and layout == "long" and s == 1:
                        rails = [("Grace Power Socket 1", p), ("CPU Power Socket 1", round(p * 0.45, 3)),
                                 ("SysIO Power Socket 1", round(p * 0.07, 3))]
                    for sensor, v in rails:
                        cells = [str(version), fmt(t)] + ([local] if version >= 2 else [])
                        cells += [h, src, sensor, str(s), fmt(v), total]
                        if version == 3:
                            cells += util
                        rows.append(cells)
                else:
                    rail = [fmt(round(p * 0.45, 3)), fmt(round(p * 0.1, 3)) if rng.random() < 0.95 else "", ""]
                    module = fmt(round(p + 700 + rng.uniform(-20, 20), 2)) if rng.random() < 0.97 else ""
                    sensor = "CPU%d:cpuPowerUsageW" % s if src == "dcgm" else "CPU%d:cpuSidePowerUsageW" % s
                    cells = [str(version), fmt(t)] + ([local] if version >= 4 else [])
                    cells += [h, src, sensor, str(s), fmt(p)] + rail
                    if version in (3, 5):
                        cells.append(module)
                    cells.append(total)
                    if version >= 4:
                        cells += util
                    rows.append(cells)
    return rows


def write_csv(path, header, rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as f:
        f.write(header + "\r\n")
        for r in rows:
            f.write(",".join(r) + "\r\n")


def gpu_leg(rng, d, hosts, gpus, span, version, roles):
    header = "schema_version,timestamp_unix,scrape_seq,hostname,gpu_index,gpu_uuid,power_w"
    if version >= 2:
        header += ",gpu_util_pct,sm_active"
    rows = []
    for h in hosts:
        for seq, t in enumerate(scrape_times(rng, span[0], span[1])):
            for g in range(gpus):
                w = fmt(round(300 + 50 * g + rng.uniform(-30, 30), 2)) if rng.random() < 0.98 else ""
                cells = [str(version), fmt(t), str(seq), h, str(g), "GPU-%s-%d" % (h, g), w]
                if version >= 2:
                    cells += [fmt(round(rng.uniform(0, 100), 1)), fmt(round(rng.uniform(0, 1), 3)) if g % 2 else ""]
                rows.append(cells)
    write_csv(d / "power" / "samples.csv", header, rows)
    if roles:
        devices = [{"hostname": h, "gpu_index": g,
                    "assignments": [{"worker_role": "prefill" if g < gpus // 2 else "decode", "worker_index": 0,
                                     "worker_process": g, "het_group": None}]} for h in hosts for g in range(gpus)]
        (d / "power" / "manifest.json").write_text(json.dumps({"expected_devices": devices}))


def sa_bench(d, windows, int_stamps=False):
    d.mkdir(parents=True, exist_ok=True)
    (d / "benchmark.out").write_text("============ Serving Benchmark Result ============\nSuccessful requests: 40\n")
    for c, (s, e) in windows.items():
        r = {"benchmark_start_time_unix": int(s) if int_stamps else s, "benchmark_end_time_unix": int(e) if int_stamps else e,
             "duration": round(e - s - 0.2, 3), "total_input_tokens": 1000 * c, "total_output_tokens": 333 * c,
             "median_tpot_ms": 12.5, "percentiles_tpot_ms": [[50, 12.5], [90, 18.7]]}
        p = d / "sa-bench_isl_128_osl_128" / ("results_concurrency_%d_gpus_8.json" % c)
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(json.dumps(r))


def aiperf(rng, d, windows, offset=None):
    d.mkdir(parents=True, exist_ok=True)
    (d / "benchmark.out").write_text("14:32:00.646 NOTICE   Phase profiling (profiling) started | target: 60.0s\n")
    for c, (s, e) in windows.items():
        art = d / "agentic" / ("conc_%d" % c) / "aiperf_artifacts"
        art.mkdir(parents=True, exist_ok=True)
        recs = [{"metadata": {"benchmark_phase": "warmup", "request_start_ns": int((s - 20) * 1e9), "request_end_ns": int((s - 12) * 1e9)}, "error": None}]
        for _ in range(30):
            a = rng.uniform(s, e - 2)
            recs.append({"metadata": {"benchmark_phase": "profiling", "request_start_ns": int(a * 1e9),
                                      "request_end_ns": int(min(a + rng.uniform(1, 6), e + 4) * 1e9)}})
        recs.append({"metadata": {"benchmark_phase": "profiling", "request_start_ns": int(s * 1e9), "request_end_ns": int((s + 3) * 1e9)}})
        recs.append({"metadata": {"benchmark_phase": "profiling", "request_start_ns": int((e - 5) * 1e9), "request_end_ns": int((e + 2.5) * 1e9)}})
        recs.append({"metadata": {"benchmark_phase": "profiling", "request_start_ns": 0, "request_end_ns": 1}, "error": {"code": 500}})
        (art / "profile_export.jsonl").write_text("\n".join(json.dumps(r) for r in recs) + "\n\n")
        agg = {"total_osl": {"avg": 4200.0 * c}, "total_isl": {"avg": 900.0 * c},
               "benchmark_duration": {"unit": "sec", "avg": e - s}, "inter_token_latency": {"p50": 8.86, "p90": 10.44},
               "start_time": "2026-09-06T14:32:00.646759", "end_time": "2026-09-06T14:33:40.146759"}
        (art / "profile_export_aiperf.json").write_text(json.dumps(agg))
        if offset:
            (art.parent / "agentic_power_timezone_offset.txt").write_text(offset + "\n")


def make_runs(out, seed):
    rng = random.Random(seed)
    runs = []
    span = (T0, T0 + 400)
    sa_windows = {1: (T0 + 20.25, T0 + 80.5), 4: (T0 + 100.125, T0 + 190.75), 16: (T0 + 210.5, T0 + 330.0)}
    ai_windows = {2: (T0 + 30.0, T0 + 120.0), 8: (T0 + 150.0, T0 + 260.0)}

    d = out / "sabench_exporter_v3_gpu"
    sa_bench(d, sa_windows)
    write_csv(d / "power" / "cpu" / "samples.csv", EXPORTER[3],
              cpu_rows(rng, "wide", 3, ["node-a", "node-b", "node-c"], 2, span, {"node-b": (T0 + 120, T0 + 125.5)}))
    gpu_leg(rng, d, ["node-a", "node-b", "node-c"], 4, span, 2, roles=True)
    runs.append(d)

    d = out / "aiperf_exporter_v1_gpu_v1"
    aiperf(rng, d, ai_windows, offset="-0700")
    write_csv(d / "power" / "cpu" / "samples.csv", EXPORTER[1], cpu_rows(rng, "long", 1, ["node-a", "node-b"], 2, span, {}))
    gpu_leg(rng, d, ["node-a", "node-b"], 2, span, 1, roles=False)
    runs.append(d)

    d = out / "aiperf_host_v4"
    aiperf(rng, d, ai_windows)
    write_csv(d / "cpu_power" / "samples.csv", HOST[4], cpu_rows(rng, "wide", 4, ["n1", "n2", "n3", "n4"], 2, span, {}, dcgm_host="n3"))
    runs.append(d)

    d = out / "sabench_host_v3"
    sa_bench(d, sa_windows, int_stamps=True)
    write_csv(d / "cpu_power" / "samples.csv", HOST[3], cpu_rows(rng, "long", 3, ["n1", "n2"], 2, span, {}))
    runs.append(d)

    d = out / "sabench_host_v2_uncovered"
    sa_bench(d, {**sa_windows, 32: (T0 + 395.0, T0 + 460.0)})
    write_csv(d / "cpu_power" / "samples.csv", HOST[2], cpu_rows(rng, "long", 2, ["n1"], 4, span, {}))
    runs.append(d)

    d = out / "sabench_exporter_v2_gpu_v3"
    sa_bench(d, sa_windows)
    write_csv(d / "power" / "cpu" / "samples.csv", EXPORTER[2], cpu_rows(rng, "wide", 2, ["a", "b"], 1, span, {"a": (T0 + 40, T0 + 44)}))
    gpu_leg(rng, d, ["a", "b"], 8, span, 2, roles=True)
    runs.append(d)

    d = out / "sabench_host_v5"
    sa_bench(d, sa_windows)
    write_csv(d / "cpu_power" / "samples.csv", HOST[5], cpu_rows(rng, "wide", 5, ["n1", "n2"], 2, span, {}))
    runs.append(d)

    d = out / "session_exporter_v3"
    d.mkdir(parents=True, exist_ok=True)
    (d / "session.json").write_text(json.dumps({"schema_version": 1, "command": ["python3", "bench.py"],
                                                "start_unix": T0 + 12.345, "end_unix": T0 + 377.5, "exit_code": 0}))
    write_csv(d / "power" / "cpu" / "samples.csv", EXPORTER[3], cpu_rows(rng, "wide", 3, ["node-a", "node-b"], 2, span, {}))
    runs.append(d)

    d = out / "sabench_host_v1"
    sa_bench(d, sa_windows)
    write_csv(d / "cpu_power" / "samples.csv", HOST[1], cpu_rows(rng, "long", 1, ["x", "y"], 2, span, {}))
    runs.append(d)
    return runs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    for d in make_runs(pathlib.Path(args.out), args.seed):
        print(d)


if __name__ == "__main__":
    main()
