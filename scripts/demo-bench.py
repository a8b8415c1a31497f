#!/usr/bin/python3
"""A stand-in LLM serving benchmark for the demo: it loads this machine's CPUs the way a
benchmark keeps a node busy, counts "tokens" at a fixed rate while it does, and writes its
result where the energy report looks for sa-bench results, so the report's per-token figures
(J/token, tokens per joule) have something to divide by. It measures nothing about LLMs.

    demo-bench.py LOG_DIR [--seconds S] [--concurrency N] [--idle S]

Writes LOG_DIR/sa-bench_demo/results_concurrency_<N>_demo.json (benchmark_start_time_unix,
benchmark_end_time_unix, duration, total_input_tokens, total_output_tokens, median_tpot_ms)
and prints sa-bench's summary lines ("Successful requests: ...") on stdout, which the caller
keeps as LOG_DIR/benchmark.out.
"""

import argparse
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


if __name__ == "__main__":
    main()
