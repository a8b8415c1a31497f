#!/usr/bin/env bash
# /metrics under load with wrk at 1, 16 and 64 connections; exporter RSS and CPU seconds per
# 10,000 scrapes. The exporter reads a simulated GB200 node (6 rails) at its default cadence.
# With MODE=hang (and STANDINS=<build>/standins) the exporter serves DCGM and NVML from
# the stand-in libraries whose every read takes 2 s, to show that slow library calls never
# reach the HTTP path.
# Usage: [MODE=hang STANDINS=DIR] bench/exporter_load.sh BIN_DIR [SECONDS_PER_RUN]
set -euo pipefail
BIN=${1:-build/bin}
DUR=${2:-5}
MODE=${MODE:-acpi}
WORK=$(mktemp -d /tmp/cpupower-bench.XXXXXX)
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done; wait 2>/dev/null; rm -rf "$WORK"' EXIT

"$BIN/cpu-power" sim-node --root "$WORK/hwmon" --profile gb200 --model constant >"$WORK/sim.log" 2>&1 &
PIDS+=($!)
until grep -q '^sim-node ready' "$WORK/sim.log" 2>/dev/null; do sleep 0.05; done
extra=()
if [ "$MODE" = hang ]; then
  : "${STANDINS:?MODE=hang needs STANDINS}"
  mkdir -p "$WORK/empty" "$WORK/pci/0008:01:00.0"
  echo 0 >"$WORK/pci/0008:01:00.0/numa_node"
  printf 'entities=0,1\nvalue.0.1130=50\nvalue.0.1132=6\nvalue.1.1130=51\nvalue.1.1132=6\n' >"$WORK/dcgm.ctl"
  printf 'gpus=1\ngpu.0.bus=0008:01:00.0\ngpu.0.mw=498720\n' >"$WORK/nvml.ctl"
  export FAKE_DCGM_CONTROL="$WORK/dcgm.ctl" FAKE_NVML_CONTROL="$WORK/nvml.ctl"
  extra=(--hwmon-root "$WORK/empty" --source dcgm --dcgm-lib "$STANDINS/libdcgm.so.4"
         --nvml-lib "$STANDINS/libnvidia-ml.so.1" --pci-root "$WORK/pci" --max-age-s 5)
else
  extra=(--hwmon-root "$WORK/hwmon")
fi
# Server and client each get one of the two cores (PIN=0 to share both), so that the
# client's own scheduling does not show up as server latency.
PIN=${PIN:-0}
server=() client=()
if [ "$PIN" = 1 ]; then server=(taskset -c 0); client=(taskset -c 1); fi
"${server[@]}" "$BIN/cpu-power-exporter" --bind 127.0.0.1 --port 0 "${extra[@]}" >"$WORK/exp.log" 2>&1 &
EXP=$!
PIDS+=($EXP)
until grep -q 'listening addr=' "$WORK/exp.log" 2>/dev/null; do sleep 0.05; done
PORT=$(grep -oE 'listening addr=[0-9.]+:[0-9]+' "$WORK/exp.log" | sed 's/.*://')
URL="http://127.0.0.1:$PORT/metrics"
if [ "$MODE" = hang ]; then
  sleep 1  # first readings in, then every DCGM and NVML call takes 2 s
  echo 'latest=hang:2000' >>"$WORK/dcgm.ctl"
  sed -i 's/^gpu.0.mw=.*/gpu.0.mw=hang:2000/' "$WORK/nvml.ctl"
  sleep 2.5
fi
BYTES=$(curl -s "$URL" | wc -c)
TCK=$(getconf CLK_TCK)
cpu_ticks() { awk '{print $14 + $15}' "/proc/$EXP/stat"; }

echo "| connections | scrapes/s | p50 | p90 | p99 | max | errors |"
echo "|---|---|---|---|---|---|---|"
for c in 1 16 64; do
  before=$(cpu_ticks)
  out=$("${client[@]}" wrk -t1 -c"$c" -d"${DUR}s" --latency "$URL")
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
# Paced: 64 connections, each waiting a random think time after a response before its next
# request (random, so that the connections do not fire in lock-step bursts): 5-15 ms for a
# light load, 1-3 ms for a heavy one (docs/performance.md has the throughput each gives). A
# saturated closed loop (the rows above) measures queueing (64 connections / throughput), not
# the exporter's response time.
for think in "5, 15" "1, 3"; do
  printf 'function delay()\n  return math.random(%s)\nend\n' "$think" >"$WORK/paced.lua"
  out=$("${client[@]}" wrk -t1 -c64 -d"${DUR}s" --latency -s "$WORK/paced.lua" "$URL")
  echo "| 64, paced (${think/, /-} ms think time) | $(awk '/^Requests\/sec/ {print $2}' <<<"$out") | $(awk '$1=="50%" {print $2}' <<<"$out") | $(awk '$1=="90%" {print $2}' <<<"$out") | $(awk '$1=="99%" {print $2}' <<<"$out") | $(awk '/^    Latency/ {print $4}' <<<"$out") | $(awk '/Non-2xx|Socket errors/ {print}' <<<"$out" | tr '\n' ' ')none |"
done
# Churn: every request on a new connection (Connection: close), 64 at a time, for three
# times as long; open descriptors and RSS before and after, which must come back to where
# they were (no descriptor or memory kept per closed connection).
fds() { find "/proc/$EXP/fd" -mindepth 1 -maxdepth 1 | wc -l; }
rss_kb() { awk '/^VmRSS/ {print $2}' "/proc/$EXP/status"; }
fds_before=$(fds); rss_before=$(rss_kb)
out=$("${client[@]}" wrk -t1 -c64 -d"$((DUR * 3))s" --latency -H 'Connection: close' "$URL")
sleep 1  # the server's side of the last connections closes
fds_after=$(fds); rss_after=$(rss_kb)
echo "| 64, a new connection per request | $(awk '/^Requests\/sec/ {print $2}' <<<"$out") | $(awk '$1=="50%" {print $2}' <<<"$out") | $(awk '$1=="90%" {print $2}' <<<"$out") | $(awk '$1=="99%" {print $2}' <<<"$out") | $(awk '/^    Latency/ {print $4}' <<<"$out") | $(awk '/Non-2xx|Socket errors/ {print}' <<<"$out" | tr '\n' ' ')none |"
CHURN="$(awk '/requests in/ {print $1}' <<<"$out") connections opened and closed: descriptors $fds_before before, $fds_after after; RSS $((rss_before / 1024)).$(((rss_before % 1024) * 10 / 1024)) MiB before, $((rss_after / 1024)).$(((rss_after % 1024) * 10 / 1024)) MiB after"
RSS_KB=$(awk '/^VmRSS/ {print $2}' "/proc/$EXP/status")
HWM_KB=$(awk '/^VmHWM/ {print $2}' "/proc/$EXP/status")
idle_before=$(cpu_ticks); sleep 5; idle_after=$(cpu_ticks)
echo
echo "- body: $BYTES bytes ($MODE mode, with self metrics); load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "- exporter RSS after the runs: $((RSS_KB / 1024)).$(((RSS_KB % 1024) * 10 / 1024)) MiB (peak $((HWM_KB / 1024)).$(((HWM_KB % 1024) * 10 / 1024)) MiB)"
echo "- CPU per 10,000 scrapes at 64 connections: ${CPU_PER_10K} s"
echo "- churn: $CHURN"
echo "- CPU while idle (reading 6 rails every 100 ms, no scrapes): $(awk -v d=$((idle_after - idle_before)) -v t="$TCK" 'BEGIN {printf "%.3f", d / t / 5}') s per s"
