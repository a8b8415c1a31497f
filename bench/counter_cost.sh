#!/usr/bin/env bash
# What the energy counters cost the node: two exporter binaries (one built before the counters,
# one with them) take turns on the same simulated GB200 node (6 ACPI channels read every
# 100 ms), ROUNDS rounds of DURATION_S each in alternating order (A B, B A, ...) so that drift
# on the machine cancels; each turn records the exporter's CPU time per second (utime + stime
# from /proc/PID/stat) and the read durations it publishes
# (cpu_power_exporter_read_duration_seconds, sampled by a scrape every 0.5 s) and its
# threads' context switches per second (voluntary and not, from /proc/PID/task/*/status: its
# wake-ups). Prints each turn, then each binary's means with the paired CPU difference's 95 %
# interval. Any two exporter builds compare the same way (the reader pool's wake-ups too).
# Usage: bench/counter_cost.sh BASE_EXPORTER NEW_EXPORTER CPU_POWER [ROUNDS] [DURATION_S]
set -euo pipefail
BASE=$1
NEW=$2
CPU_POWER=$3
ROUNDS=${4:-6}
DUR=${5:-20}
PY=/usr/bin/python3
WORK=$(mktemp -d /tmp/cpupower-bench.XXXXXX)
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done; wait 2>/dev/null; rm -rf "$WORK"' EXIT

wait_line() {  # FILE REGEX: up to 15 s
  for _ in $(seq 300); do grep -qE "$2" "$1" 2>/dev/null && return 0; sleep 0.05; done
  echo "timed out waiting for /$2/ in $1" >&2
  cat "$1" >&2
  exit 1
}

"$CPU_POWER" sim-node --root "$WORK/node" --profile gb200 --model constant --load 0.5 \
  >"$WORK/sim.log" 2>&1 &
PIDS+=($!)
wait_line "$WORK/sim.log" '^sim-node ready'

switches() {  # switches PID: context switches of all its threads so far
  cat /proc/"$1"/task/*/status 2>/dev/null | awk '/^(non)?voluntary_ctxt_switches/ {n += $2} END {print n + 0}'
}
turn() {  # turn NAME BINARY: one turn; appends "NAME ms_per_s median_read_us wakeups_per_s"
  local name=$1 bin=$2
  "$bin" --bind 127.0.0.1 --port 0 --no-nvml --read-interval-ms 100 --hwmon-root "$WORK/node" \
    >"$WORK/exp.log" 2>&1 &
  local exp=$!
  wait_line "$WORK/exp.log" 'listening addr='
  local port
  port=$(grep -oE 'listening addr=[0-9.]+:[0-9]+' "$WORK/exp.log" | head -1 | sed 's/.*://')
  sleep 1  # past start-up (discovery, the first reads)
  local ticks0 ticks1 sw0 sw1
  ticks0=$(awk '{print $14 + $15}' "/proc/$exp/stat")
  sw0=$(switches "$exp")
  : >"$WORK/durations"
  local end=$((SECONDS + DUR))
  while ((SECONDS < end)); do
    curl -sf "http://127.0.0.1:$port/metrics" |
      awk '/^cpu_power_exporter_read_duration_seconds\{/ {print $NF}' >>"$WORK/durations"
    sleep 0.5
  done
  ticks1=$(awk '{print $14 + $15}' "/proc/$exp/stat")
  sw1=$(switches "$exp")
  kill -TERM "$exp"
  wait "$exp" 2>/dev/null || true
  $PY - "$WORK/durations" "$((ticks1 - ticks0))" "$(getconf CLK_TCK)" "$DUR" "$name" \
    "$((sw1 - sw0))" >>"$WORK/results" <<'PYEOF'
import statistics, sys
path, ticks, hz, dur, name = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
d = [float(x) * 1e6 for x in open(path) if x.strip()]
print(f"{name} {ticks / hz / dur * 1000:.2f} {statistics.median(d):.1f} {int(sys.argv[6]) / dur:.0f}")
PYEOF
  tail -1 "$WORK/results"
}

echo "## exporter CPU (ms/s), median read (us), wake-ups (/s): $ROUNDS rounds of $DUR s, alternating"
for r in $(seq "$ROUNDS"); do
  if ((r % 2)); then turn base "$BASE"; turn new "$NEW"; else turn new "$NEW"; turn base "$BASE"; fi
done
$PY - "$WORK/results" <<'PYEOF'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
base = [float(r[1]) for r in rows if r[0] == "base"]
new = [float(r[1]) for r in rows if r[0] == "new"]
reads_b = [float(r[2]) for r in rows if r[0] == "base"]
reads_n = [float(r[2]) for r in rows if r[0] == "new"]
wake_b = [float(r[3]) for r in rows if r[0] == "base"]
wake_n = [float(r[3]) for r in rows if r[0] == "new"]
diff = [n - b for b, n in zip(base, new)]
m, s = statistics.fmean(diff), statistics.stdev(diff) if len(diff) > 1 else 0.0
# Student's t, 95 %, for up to 10 pairs.
t = {1: 12.71, 2: 4.30, 3: 3.18, 4: 2.78, 5: 2.57, 6: 2.45, 7: 2.36, 8: 2.31, 9: 2.26}.get(len(diff) - 1, 2.0)
h = t * s / len(diff) ** 0.5
print(f"base:  {statistics.fmean(base):.2f} ms/s CPU, median read {statistics.median(reads_b):.1f} us, "
      f"{statistics.fmean(wake_b):.0f} wake-ups/s")
print(f"new:   {statistics.fmean(new):.2f} ms/s CPU, median read {statistics.median(reads_n):.1f} us, "
      f"{statistics.fmean(wake_n):.0f} wake-ups/s")
print(f"CPU difference (new - base): {m:+.2f} ms/s, 95 % interval {m - h:+.2f} .. {m + h:+.2f} ms/s "
      f"({len(diff)} pairs)")
PYEOF
