#!/usr/bin/env bash
# RAPL against ACPI on simulated nodes, two figures:
# 1. The exporter's cost per read: cpu_power_exporter_read_duration_seconds over a scrape every
#    0.5 s for DURATION_S, and the exporter's CPU time per second (utime + stime from
#    /proc/PID/stat), reading an x86-intel node's 8 RAPL zones, then a GB200 node's 6 ACPI
#    channels, both at 100 ms. On simulated trees a read is a file read on this machine's file
#    system: neither the MSR read behind a real energy_uj nor Grace's ~150 ms firmware round
#    trip is in it, so the figures compare the exporter's own work per read, not hardware.
# 2. The error of power from counter differences at 100 ms reads against the simulated trace:
#    an x86-intel node on a step trace (package:0 between 80 and 300 W, a step every 0.37 s,
#    the counter updated every --update-ms, 1 by default as on hardware), `cpu-power
#    host-collect --source rapl --interval-seconds 0.1`, and each row's power_w against the
#    trace's exact mean over the 100 ms the row's time centres; then the whole run's energy
#    from the rows against the trace's.
# Usage: bench/rapl_bench.sh BIN_DIR [DURATION_S] [UPDATE_MS]   (default 20 s, 1 ms)
set -euo pipefail
BIN=${1:-build/bin}
DUR=${2:-20}
UPDATE_MS=${3:-1}
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
mkdir -p "$WORK/empty"

# --- 1. cost per read ------------------------------------------------------------------------
cost() {  # cost NAME PROFILE: the node's tree under the root flag its profile needs
  local name=$1 profile=$2
  local roots=(--hwmon-root "$WORK/$name" --powercap-root "$WORK/empty")
  [ "$profile" = gb200 ] || roots=(--hwmon-root "$WORK/empty" --powercap-root "$WORK/$name")
  "$BIN/cpu-power" sim-node --root "$WORK/$name" --profile "$profile" --model constant --load 0.5 \
    --update-ms "$UPDATE_MS" >"$WORK/sim_$name.log" 2>&1 &
  local sim=$!
  PIDS+=("$sim")
  wait_line "$WORK/sim_$name.log" '^sim-node ready'
  "$BIN/cpu-power-exporter" --bind 127.0.0.1 --port 0 --no-nvml --read-interval-ms 100 \
    "${roots[@]}" >"$WORK/exp_$name.log" 2>&1 &
  local exp=$!
  PIDS+=("$exp")
  wait_line "$WORK/exp_$name.log" 'listening addr='
  local port
  port=$(grep -oE 'listening addr=[0-9.]+:[0-9]+' "$WORK/exp_$name.log" | head -1 | sed 's/.*://')
  local ticks0 ticks1
  ticks0=$(awk '{print $14 + $15}' "/proc/$exp/stat")
  : >"$WORK/durations_$name"
  local end=$((SECONDS + DUR))
  while ((SECONDS < end)); do
    curl -sf "http://127.0.0.1:$port/metrics" |
      awk '/^cpu_power_exporter_read_duration_seconds\{/ {print $2}' >>"$WORK/durations_$name"
    sleep 0.5
  done
  ticks1=$(awk '{print $14 + $15}' "/proc/$exp/stat")
  kill -TERM "$exp" "$sim"
  wait "$exp" "$sim" 2>/dev/null || true
  $PY - "$WORK/durations_$name" "$((ticks1 - ticks0))" "$(getconf CLK_TCK)" "$DUR" "$name" <<'PYEOF'
import statistics, sys
path, ticks, hz, dur, name = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
d = sorted(float(x) * 1e6 for x in open(path) if x.strip())
q = lambda p: d[min(len(d) - 1, int(p * len(d)))]
print(f"{name}: {len(d)} read durations sampled: median {statistics.median(d):.1f} us, "
      f"p99 {q(0.99):.1f} us, max {d[-1]:.1f} us; exporter CPU {ticks / hz / dur * 1000:.1f} ms/s")
PYEOF
}
echo "## cost per read (simulated trees; update every $UPDATE_MS ms; ${DUR} s each)"
cost rapl x86-intel
cost acpi gb200

# --- 2. error against the trace ----------------------------------------------------------------
$PY - "$WORK/trace.csv" "$DUR" <<'PYEOF'
import sys
path, dur = sys.argv[1], float(sys.argv[2])
with open(path, "w") as f:
    f.write("time_s,package:0\n")
    t, i = 0.0, 0
    while t < dur + 5:
        f.write(f"{t:.3f},{(80.0, 300.0, 150.0, 220.0)[i % 4]}\n")
        t += 0.37
        i += 1
PYEOF
"$BIN/cpu-power" sim-node --root "$WORK/trace_node" --profile x86-intel --model trace \
  --trace "$WORK/trace.csv" --update-ms "$UPDATE_MS" >"$WORK/sim_trace.log" 2>&1 &
PIDS+=($!)
SIM=$!
wait_line "$WORK/sim_trace.log" '^sim-node ready'
t0=$(grep -oE 't0_unix=[0-9.]+' "$WORK/sim_trace.log" | cut -d= -f2)
"$BIN/cpu-power" host-collect --output-dir "$WORK/hl" --ready-dir "$WORK/hl" --hostname x86 \
  --source rapl --powercap-root "$WORK/trace_node" --hwmon-root "$WORK/empty" --no-nvml \
  --interval-seconds 0.1 >"$WORK/hc.log" 2>&1 &
PIDS+=($!)
HC=$!
sleep "$DUR"
kill -TERM "$HC"
wait "$HC" || true
kill -TERM "$SIM"
echo "## power from counter differences at 100 ms reads against the trace (package:0, ${DUR} s)"
$PY - "$WORK/trace.csv" "$WORK/hl/x86.csv" "$t0" <<'PYEOF'
import bisect, csv, statistics, sys
steps = [(float(r["time_s"]), float(r["package:0"])) for r in csv.DictReader(open(sys.argv[1]))]
times = [t for t, _ in steps]
t0 = float(sys.argv[3])

def integral(a, b):  # exact energy of the step trace over [a, b] (s since start)
    e, t = 0.0, a
    while t < b:
        i = max(0, bisect.bisect_right(times, t) - 1)
        nxt = times[i + 1] if i + 1 < len(times) else b
        seg = min(b, nxt) - t
        e += seg * steps[i][1]
        t += seg
    return e

rows = [r for r in csv.DictReader(open(sys.argv[2], newline="")) if r["socket_id"] == "0"]
rows = rows[2:]  # the first samples may precede a full interval
errs, rel = [], []
for r in rows:
    c = float(r["timestamp_unix"]) - t0
    want = integral(c - 0.05, c + 0.05) / 0.1
    errs.append(float(r["power_w"]) - want)
    rel.append(abs(errs[-1]) / want)
rel.sort()
ts = [float(r["timestamp_unix"]) - t0 for r in rows]
got = sum((b - a) * (float(x["power_w"]) + float(y["power_w"])) / 2
          for a, b, x, y in zip(ts, ts[1:], rows, rows[1:]))
want = integral(ts[0], ts[-1])
print(f"{len(rows)} rows: mean error {statistics.mean(errs):+.2f} W, mean |error| "
      f"{statistics.mean(abs(e) for e in errs):.2f} W, median relative {statistics.median(rel) * 100:.1f} %, "
      f"p95 relative {rel[int(0.95 * len(rel))] * 100:.1f} % (each row against the trace's mean over "
      f"the 100 ms its time centres; a step inside an interval is averaged by both)")
print(f"energy over {ts[-1] - ts[0]:.1f} s: rows (trapezoid) {got:.1f} J, trace {want:.1f} J, "
      f"{(got - want) / want * 100:+.2f} %")
PYEOF
