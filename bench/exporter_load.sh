#!/usr/bin/env bash
# /metrics under load with wrk at 1, 16 and 64 connections; exporter RSS and CPU seconds per
# 10,000 scrapes. The exporter reads a simulated GB200 node (6 rails) at its default cadence.
# Usage: bench/exporter_load.sh BIN_DIR [SECONDS_PER_RUN]
set -euo pipefail
BIN=${1:-build/bin}
DUR=${2:-5}
WORK=$(mktemp -d /tmp/cpupower-bench.XXXXXX)
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done; wait 2>/dev/null; rm -rf "$WORK"' EXIT

"$BIN/cpu-power" sim-node --root "$WORK/hwmon" --profile gb200 --model constant >"$WORK/sim.log" 2>&1 &
PIDS+=($!)
until grep -q '^sim-node ready' "$WORK/sim.log" 2>/dev/null; do sleep 0.05; done
"$BIN/cpu-power-exporter" --bind 127.0.0.1 --port 0 --hwmon-root "$WORK/hwmon" >"$WORK/exp.log" 2>&1 &
EXP=$!
PIDS+=($EXP)
until grep -q 'listening addr=' "$WORK/exp.log" 2>/dev/null; do sleep 0.05; done
PORT=$(grep -oE 'listening addr=[0-9.]+:[0-9]+' "$WORK/exp.log" | sed 's/.*://')
URL="http://127.0.0.1:$PORT/metrics"
BYTES=$(curl -s "$URL" | wc -c)
TCK=$(getconf CLK_TCK)
cpu_ticks() { awk '{print $14 + $15}' "/proc/$EXP/stat"; }

echo "| connections | scrapes/s | p50 | p90 | p99 | max | errors |"
echo "|---|---|---|---|---|---|---|"
for c in 1 16 64; do
  t=$((c < 2 ? 1 : 2))
  before=$(cpu_ticks)
  out=$(wrk -t"$t" -c"$c" -d"${DUR}s" --latency "$URL")
  after=$(cpu_ticks)
  rps=$(awk '/^Requests\/sec/ {print $2}' <<<"$out")
  reqs=$(awk '/requests in/ {print $1}' <<<"$out")
  p50=$(awk '$1=="50%" {print $2}' <<<"$out")
  p90=$(awk '$1=="90%" {print $2}' <<<"$out")
  p99=$(awk '$1=="99%" {print $2}' <<<"$out")
  max=$(awk '/^    Latency/ {print $4}' <<<"$out")
  errs=$(awk '/Non-2xx|Socket errors/ {print}' <<<"$out" | tr '\n' ' ')
  echo "| $c | $rps | $p50 | $p90 | $p99 | $max | ${errs:-none} |"
  if [ "$c" = 64 ]; then
    CPU_PER_10K=$(awk -v d=$((after - before)) -v t="$TCK" -v n="$reqs" 'BEGIN {printf "%.3f", d / t / n * 10000}')
  fi
done
RSS_KB=$(awk '/^VmRSS/ {print $2}' "/proc/$EXP/status")
HWM_KB=$(awk '/^VmHWM/ {print $2}' "/proc/$EXP/status")
idle_before=$(cpu_ticks); sleep 5; idle_after=$(cpu_ticks)
echo
echo "- body: $BYTES bytes (6 ACPI rails plus self metrics)"
echo "- exporter RSS after the runs: $((RSS_KB / 1024)).$(((RSS_KB % 1024) * 10 / 1024)) MiB (peak $((HWM_KB / 1024)).$(((HWM_KB % 1024) * 10 / 1024)) MiB)"
echo "- CPU per 10,000 scrapes at 64 connections: ${CPU_PER_10K} s"
echo "- CPU while idle (reading 6 rails every 100 ms, no scrapes): $(awk -v d=$((idle_after - idle_before)) -v t="$TCK" 'BEGIN {printf "%.3f", d / t / 5}') s per s"
