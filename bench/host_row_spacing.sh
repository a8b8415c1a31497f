#!/usr/bin/env bash
# How evenly `cpu-power host-collect` writes its rows behind slow firmware reads
# (docs/performance.md, Calibration of the uncertainty: the host leg behind slow reads). A
# simulated GB200 node whose six ACPI channels each take 150 ms a read (a Grace firmware round
# trip), read by the host collector at INTERVAL_S for SECONDS; prints the number of row times,
# their median spacing and the five most common spacings (10 ms buckets). A row time between
# two of the reads' pace (80 ms behind 150 ms reads) is a snapshot of a cycle half finished.
# Usage: bench/host_row_spacing.sh BIN_DIR [INTERVAL_S] [SECONDS]
set -euo pipefail
BIN=${1:?BIN_DIR}
INTERVAL=${2:-0.1}
SECONDS_RUN=${3:-15}
WORK=$(mktemp -d)
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT
FAULTS=()
for s in 0 1; do for k in total cpu_rail soc; do FAULTS+=(--fault "$k:$s=slow:150"); done; done
"$BIN/cpu-power" sim-node --root "$WORK/hw" --profile gb200 "${FAULTS[@]}" >"$WORK/sim.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 200); do grep -q "sim-node ready" "$WORK/sim.log" && break; sleep 0.1; done
grep -q "sim-node ready" "$WORK/sim.log" || { echo "host_row_spacing: sim-node not ready" >&2; exit 1; }
"$BIN/cpu-power" host-collect --output-dir "$WORK/nodes" --ready-dir "$WORK/ready" --hostname node \
  --hwmon-root "$WORK/hw" --no-nvml --interval-seconds "$INTERVAL" >"$WORK/host.log" 2>&1 &
HOST=$!
PIDS+=($HOST)
sleep "$SECONDS_RUN"
kill "$HOST"
wait "$HOST" || true
/usr/bin/python3 - "$WORK/nodes" <<'PY'
import csv, glob, statistics, sys
from collections import Counter
rows = [r for f in glob.glob(sys.argv[1] + "/*.csv") for r in csv.DictReader(open(f))]
ts = sorted({float(r["timestamp_unix"]) for r in rows})
d = [b - a for a, b in zip(ts, ts[1:])]
print(f"row times {len(ts)}, median spacing {statistics.median(d):.3f} s, most common",
      Counter(round(x, 2) for x in d).most_common(5))
PY
grep -o "half_cycles_passed=[0-9]*" "$WORK/host.log" || true
