#!/usr/bin/python3
"""Damage a copy of an accepted run directory in one way, for the validators' own tests.

Usage: damage.py RUN_DIR CASE

Edits RUN_DIR in place (give it a copy). Unless the case is about the digest itself, the GPU
manifest's samples_sha256 is recomputed after an edit of power/samples.csv, so that each case
breaks one rule. Cases:

  gpu-digest          one power_w cell of power/samples.csv changed, the digest left as it was
  gpu-job-id          manifest job_id ""
  gpu-header-v3       power/samples.csv rewritten with the v3 header (temperature_c appended)
  gpu-duplicate-row   the first data row of power/samples.csv written twice
  gpu-loss            inside the sa-bench window, every third scrape of one GPU dropped
  gpu-result          the sa-bench result's duration changed, its window left as it was
  gpu-equal-times     one GPU's second sample dated as its first (equal, not decreasing)
  cpu-header-v3       power/cpu/samples.csv rewritten with the v3 header (module_w added)
  cpu-socket-missing  every socket-1 row of the second host dropped
  cpu-source-mixed    the first data row's source set to dcgm
  cpu-duplicate-time  the first data row of power/cpu/samples.csv written twice
  cpu-gap             one socket's rows from 0.9 s before the sa-bench window to 0.9 s after
                      it dropped (a gap over 3.0 s inside the window)
"""

import csv
import hashlib
import io
import json
import sys
from pathlib import Path


def read_csv(path):
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.reader(f))


def write_csv(path, rows):
    out = io.StringIO()
    csv.writer(out).writerows(rows)  # the csv module's default dialect: CRLF, minimal quoting
    Path(path).write_text(out.getvalue(), encoding="utf-8", newline="")


def redigest(run):
    mpath = run / "power" / "manifest.json"
    m = json.loads(mpath.read_text())
    m["samples_sha256"] = hashlib.sha256((run / "power" / "samples.csv").read_bytes()).hexdigest()
    mpath.write_text(json.dumps(m, indent=2) + "\n")


def sa_bench_window(run):
    for path in sorted((run / "power" / "windows").glob("*.json")):
        w = json.loads(path.read_text())
        if w["benchmark_type"] == "sa-bench":
            return w
    raise SystemExit("no sa-bench window in " + str(run))


def main():
    run, case = Path(sys.argv[1]), sys.argv[2]
    gpu, cpu = run / "power" / "samples.csv", run / "power" / "cpu" / "samples.csv"
    if case == "gpu-digest":
        rows = read_csv(gpu)
        rows[1][6] = repr(float(rows[1][6]) + 1.0)
        write_csv(gpu, rows)
    elif case == "gpu-job-id":
        mpath = run / "power" / "manifest.json"
        m = json.loads(mpath.read_text())
        m["job_id"] = ""
        mpath.write_text(json.dumps(m, indent=2) + "\n")
    elif case == "gpu-header-v3":
        rows = read_csv(gpu)
        rows = [rows[0] + ["temperature_c"]] + [["3"] + r[1:] + ["40"] for r in rows[1:]]
        write_csv(gpu, rows)
        redigest(run)
    elif case == "gpu-duplicate-row":
        rows = read_csv(gpu)
        write_csv(gpu, rows[:2] + rows[1:])
        redigest(run)
    elif case == "gpu-loss":
        w = sa_bench_window(run)
        rows = read_csv(gpu)
        first = rows[1]
        inside = [r for r in rows[1:] if r[3] == first[3] and r[4] == first[4]
                  and w["benchmark_start_time_unix"] < float(r[1]) < w["benchmark_end_time_unix"]]
        drop = {id(r) for r in inside[1::3]}
        assert len(drop) >= 2, "window too short for the loss case"
        write_csv(gpu, [r for r in rows if id(r) not in drop])
        redigest(run)
    elif case == "gpu-result":
        w = sa_bench_window(run)
        rpath = run / w["result_path"]
        result = json.loads(rpath.read_text())
        result["duration"] = result["duration"] + 0.25
        rpath.write_text(json.dumps(result))
    elif case == "gpu-equal-times":
        rows = read_csv(gpu)
        first = rows[1]
        mine = [r for r in rows[1:] if r[3] == first[3] and r[4] == first[4]]
        mine[1][1] = mine[0][1]
        write_csv(gpu, rows)
        redigest(run)
    elif case == "cpu-header-v3":
        rows = read_csv(cpu)
        head = rows[0][:10] + ["module_w"] + rows[0][10:]
        write_csv(cpu, [head] + [["3"] + r[1:10] + [""] + r[10:] for r in rows[1:]])
    elif case == "cpu-socket-missing":
        rows = read_csv(cpu)
        hosts = sorted({r[2] for r in rows[1:]})
        write_csv(cpu, [r for r in rows if not (r[2] == hosts[-1] and r[5] == "1")])
    elif case == "cpu-source-mixed":
        rows = read_csv(cpu)
        rows[1][3] = "dcgm"
        write_csv(cpu, rows)
    elif case == "cpu-duplicate-time":
        rows = read_csv(cpu)
        write_csv(cpu, rows[:2] + rows[1:])
    elif case == "cpu-gap":
        w = sa_bench_window(run)
        lo, hi = w["benchmark_start_time_unix"] - 0.9, w["benchmark_end_time_unix"] + 0.9
        rows = read_csv(cpu)
        host, socket = rows[1][2], rows[1][5]
        write_csv(cpu, [rows[0]] + [r for r in rows[1:] if not (r[2] == host and r[5] == socket and lo < float(r[1]) < hi)])
    else:
        raise SystemExit(f"unknown case {case!r}")


if __name__ == "__main__":
    main()
