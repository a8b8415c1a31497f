#!/usr/bin/env python3
"""A run with many hosts and few samples each, for the report's cost per host.

make_hosts_run.py DIR HOSTS [--scrapes N]: DIR/benchmark.out, one sa-bench window,
DIR/power/cpu/samples.csv (exporter v3, two sockets per host, one scrape a second) and
DIR/power/samples.csv with manifest.json (one GPU per host). The report's time and memory
should grow linearly with HOSTS (docs/performance.md, "Many hosts").
"""
import argparse
import json
import os

ap = argparse.ArgumentParser()
ap.add_argument("dir")
ap.add_argument("hosts", type=int)
ap.add_argument("--scrapes", type=int, default=6)
a = ap.parse_args()
T0 = 1_000_000.0
os.makedirs(os.path.join(a.dir, "power", "cpu"), exist_ok=True)
os.makedirs(os.path.join(a.dir, "sa-bench_isl_1_osl_1"), exist_ok=True)
with open(os.path.join(a.dir, "benchmark.out"), "w") as f:
    f.write("Successful requests: 1\n")
with open(os.path.join(a.dir, "sa-bench_isl_1_osl_1", "results_concurrency_1_gpus_1.json"), "w") as f:
    json.dump({"benchmark_start_time_unix": T0 + 0.5, "benchmark_end_time_unix": T0 + a.scrapes - 1.5,
               "duration": a.scrapes - 2.0, "total_input_tokens": 1000, "total_output_tokens": 500}, f)
hosts = ["node-%06d" % i for i in range(a.hosts)]
with open(os.path.join(a.dir, "power", "cpu", "samples.csv"), "w", newline="") as f:
    f.write("schema_version,timestamp_unix,hostname,source,sensor,socket_id,power_w,cpu_rail_w,soc_w,"
            "dram_w,module_w,total_power_w\r\n")
    for k in range(a.scrapes):
        t = T0 + k
        f.write("".join("3,%r,%s,acpi,CPU%d:cpuSidePowerUsageW,%d,%d,,,,,%d\r\n" % (t, h, s, s, 100 + s, 201)
                        for h in hosts for s in (0, 1)))
with open(os.path.join(a.dir, "power", "samples.csv"), "w", newline="") as f:
    f.write("schema_version,timestamp_unix,scrape_seq,hostname,gpu_index,gpu_uuid,power_w\r\n")
    for k in range(a.scrapes):
        t = T0 + k
        f.write("".join("1,%r,%d,%s,0,GPU-%s,300\r\n" % (t, k, h, h) for h in hosts))
with open(os.path.join(a.dir, "power", "manifest.json"), "w") as f:
    json.dump({"expected_devices": [{"hostname": h, "gpu_index": 0, "assignments": [
        {"worker_role": "agg", "worker_index": 0, "worker_process": 0, "het_group": None}]} for h in hosts]}, f)
