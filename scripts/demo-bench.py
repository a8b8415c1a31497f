#!/usr/bin/python3
"""A stand-in LLM serving benchmark for the demo: it loads this machine's CPUs the way a
benchmark keeps a node busy, counts "tokens" at a fixed rate while it does, and writes its
result where the energy report looks for sa-bench results, so the report's per-token figures
(J/token, tokens per joule) have something to divide by. It measures nothing about LLMs.

    demo-bench.py LOG_DIR [--seconds S] [--concurrency N] [--idle S] [--format F]

--format sa-bench (default) writes LOG_DIR/sa-bench_demo/results_concurrency_<N>_demo.json
(benchmark_start_time_unix, benchmark_end_time_unix, duration, total_input_tokens,
total_output_tokens, median_tpot_ms) and prints sa-bench's summary lines ("Successful
requests: ...") on stdout, which the caller keeps as LOG_DIR/benchmark.out.

--format aiperf writes what aiperf leaves instead: LOG_DIR/conc_<N>/aiperf_artifacts/
profile_export.jsonl (one record per request, with metadata.request_start_ns/request_end_ns
and benchmark_phase, a warmup request first) and profile_export_aiperf.json (total_osl,
total_isl, benchmark_duration, start_time/end_time in UTC, inter_token_latency), and prints
aiperf's profiling-phase NOTICE lines.
"""

import argparse
import datetime
import json
import multiprocessing
import os
import time

OUTPUT_TOKENS_PER_S_PER_STREAM = 40.0  # a made-up decode rate per concurrent stream
INPUT_TOKENS_PER_REQUEST = 512
OUTPUT_TOKENS_PER_REQUEST = 128


def spin(until):
    while time.time() < until:
        pass


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("log_dir")
    p.add_argument("--seconds", type=float, default=4.0, help="busy phase (default 4)")
    p.add_argument("--idle", type=float, default=1.0, help="idle before and after (default 1)")
    p.add_argument("--concurrency", type=int, default=4)
    p.add_argument("--format", choices=["sa-bench", "aiperf"], default="sa-bench")
    a = p.parse_args()

    time.sleep(a.idle)
    start = time.time()
    until = start + a.seconds
    workers = [multiprocessing.Process(target=spin, args=(until,)) for _ in range(os.cpu_count() or 1)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    end = time.time()
    time.sleep(a.idle)

    duration = end - start
    if a.format == "aiperf":
        write_aiperf(a.log_dir, a.concurrency, start, end)
        return
    output_tokens = int(OUTPUT_TOKENS_PER_S_PER_STREAM * a.concurrency * duration)
    requests = max(1, output_tokens // OUTPUT_TOKENS_PER_REQUEST)
    result = {
        "benchmark_start_time_unix": start,
        "benchmark_end_time_unix": end,
        "duration": duration,
        "completed": requests,
        "total_input_tokens": requests * INPUT_TOKENS_PER_REQUEST,
        "total_output_tokens": output_tokens,
        "max_concurrency": a.concurrency,
        "median_tpot_ms": 1000.0 / OUTPUT_TOKENS_PER_S_PER_STREAM,
    }
    out_dir = os.path.join(a.log_dir, "sa-bench_demo")
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, "results_concurrency_%d_demo.json" % a.concurrency)
    with open(path + ".tmp", "w") as f:
        json.dump(result, f)
    os.replace(path + ".tmp", path)
    print("============ Serving Benchmark Result ============")
    print("Successful requests: %d" % requests)
    print("Benchmark duration (s): %.2f" % duration)
    print("Total input tokens: %d" % result["total_input_tokens"])
    print("Total generated tokens: %d" % output_tokens)
    print("Result: %s" % path)


def write_aiperf(log_dir, concurrency, start, end):
    """Requests back to back on each of `concurrency` streams over [start, end]."""
    seconds_per_request = OUTPUT_TOKENS_PER_REQUEST / OUTPUT_TOKENS_PER_S_PER_STREAM
    ns = lambda t: int(round(t * 1e9))
    records = [{"metadata": {"benchmark_phase": "warmup", "request_start_ns": ns(start - 0.5),
                             "request_end_ns": ns(start - 0.1)}, "error": None}]
    for stream in range(concurrency):
        t = start + stream * 0.01  # streams start 10 ms apart
        while t < end:
            done = min(t + seconds_per_request, end)
            records.append({"metadata": {"benchmark_phase": "profiling", "request_start_ns": ns(t),
                                         "request_end_ns": ns(done)}, "error": None})
            t = done
    profiling = records[1:]
    first = min(r["metadata"]["request_start_ns"] for r in profiling) / 1e9
    duration = end - first
    output_tokens = OUTPUT_TOKENS_PER_S_PER_STREAM * sum(
        (r["metadata"]["request_end_ns"] - r["metadata"]["request_start_ns"]) / 1e9 for r in profiling)
    utc = lambda t: datetime.datetime.fromtimestamp(t, datetime.timezone.utc).isoformat()
    aggregate = {
        "total_osl": {"unit": "tokens", "avg": round(output_tokens, 3)},
        "total_isl": {"unit": "tokens", "avg": float(len(profiling) * INPUT_TOKENS_PER_REQUEST)},
        "benchmark_duration": {"unit": "sec", "avg": duration},
        "inter_token_latency": {"unit": "ms", "p50": 1000.0 / OUTPUT_TOKENS_PER_S_PER_STREAM,
                                "p90": 1000.0 / OUTPUT_TOKENS_PER_S_PER_STREAM},
        "start_time": utc(first),
        "end_time": utc(end),
    }
    out_dir = os.path.join(log_dir, "conc_%d" % concurrency, "aiperf_artifacts")
    os.makedirs(out_dir, exist_ok=True)
    for name, text in [("profile_export.jsonl", "".join(json.dumps(r) + "\n" for r in records)),
                       ("profile_export_aiperf.json", json.dumps(aggregate))]:
        path = os.path.join(out_dir, name)
        with open(path + ".tmp", "w") as f:
            f.write(text)
        os.replace(path + ".tmp", path)
    stamp = lambda t: datetime.datetime.fromtimestamp(t).strftime("%H:%M:%S.%f")[:-3]
    print("%s NOTICE   Phase profiling (profiling) started | target: %.1fs duration" % (stamp(first), duration))
    print("%s NOTICE   Phase profiling (profiling) complete | completed=%d | elapsed=%.2fs"
          % (stamp(end), len(profiling), duration))
    print("Result: %s" % out_dir)


if __name__ == "__main__":
    main()
