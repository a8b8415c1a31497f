#!/usr/bin/python3
"""Writes an aiperf run directory for timing the report's record parsing:
RUN_DIR/conc_64/aiperf_artifacts/profile_export.jsonl with N records in aiperf's own shape
(metadata with ids and request times, per-request metrics including the inter-chunk latency
list of every output token, error null; 1% failed requests with an error object, 2% warmup),
its aggregate profile_export_aiperf.json, benchmark.out and a one-node CPU leg at 10 Hz.

Usage: make_aiperf_run.py RUN_DIR N [OSL]   (OSL: output tokens per request, default 100)
"""

import json
import pathlib
import random
import sys
import uuid


def main():
    run, n = pathlib.Path(sys.argv[1]), int(sys.argv[2])
    osl = int(sys.argv[3]) if len(sys.argv) > 3 else 100
    rng = random.Random(5)
    art = run / "conc_64" / "aiperf_artifacts"
    art.mkdir(parents=True, exist_ok=True)
    t0 = 1_788_310_140_000_000_000
    step = 50_000_000  # a request every 50 ms: 200,000 requests in about 2.8 hours
    lines = []
    for i in range(n):
        start = t0 + i * step + rng.randrange(step)
        latency = rng.randrange(2_000_000_000, 9_000_000_000)
        ttft = rng.uniform(100, 900)
        chunks = [round(rng.uniform(3, 12), 6) for _ in range(osl - 1)]
        phase = "warmup" if i < n // 50 else "profiling"
        failed = rng.random() < 0.01
        meta = {
            "session_num": i, "x_request_id": str(uuid.UUID(int=rng.getrandbits(128))),
            "x_correlation_id": str(uuid.UUID(int=rng.getrandbits(128))),
            "conversation_id": str(uuid.UUID(int=rng.getrandbits(128))), "turn_index": 0,
            "request_start_ns": start, "request_ack_ns": None if failed else start + 1_000_000,
            "request_end_ns": start + latency, "worker_id": f"worker_{rng.getrandbits(32):08x}",
            "record_processor_id": f"record_processor_{rng.getrandbits(32):08x}",
            "benchmark_phase": phase, "was_cancelled": False, "cancellation_time_ns": None,
        }
        if failed:
            rec = {"metadata": meta, "metrics": {"error_isl": {"value": 550, "unit": "tokens"}},
                   "error": {"code": 500, "type": "InternalServerError",
                             "message": "Server encountered an internal error"}}
        else:
            rec = {"metadata": meta, "metrics": {
                "input_sequence_length": {"value": 550, "unit": "tokens"},
                "time_to_first_token": {"value": ttft, "unit": "ms"},
                "request_latency": {"value": latency / 1e6, "unit": "ms"},
                "output_token_count": {"value": osl, "unit": "tokens"},
                "inter_chunk_latency": {"value": chunks, "unit": "ms"},
                "output_sequence_length": {"value": osl, "unit": "tokens"},
                "inter_token_latency": {"value": sum(chunks) / len(chunks), "unit": "ms"},
                "output_token_throughput_per_user": {"value": 1000 * osl / (latency / 1e6),
                                                     "unit": "tokens/sec/user"}},
                   "error": None}
        lines.append(json.dumps(rec))
    (art / "profile_export.jsonl").write_text("\n".join(lines) + "\n")
    (art / "profile_export_aiperf.json").write_text(json.dumps({
        "total_osl": {"unit": "tokens", "avg": float(osl * n)},
        "total_isl": {"unit": "tokens", "avg": float(550 * n)},
        "inter_token_latency": {"unit": "ms", "p50": 7.5, "p90": 11.0}}))
    (run / "benchmark.out").write_text("00:00:00.000 NOTICE  Phase profiling (profiling) started\n")
    cpu = run / "power" / "cpu"
    cpu.mkdir(parents=True, exist_ok=True)
    first, last = t0 / 1e9 - 5, (t0 + n * step) / 1e9 + 15
    rows = ["schema_version,timestamp_unix,hostname,source,sensor,socket_id,power_w,total_power_w"]
    t = first
    while t <= last:
        rows.append(f"1,{t:.3f},node-a,acpi,Grace Power Socket 0,0,250,250")
        t += 0.1
    (cpu / "samples.csv").write_text("\n".join(rows) + "\n")


if __name__ == "__main__":
    main()
