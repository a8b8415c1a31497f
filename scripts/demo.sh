#!/usr/bin/env bash
# The main job on a simulated node, no hardware needed: a GB200 node whose Grace sockets
# follow this machine's real CPU load, the exporter reading it exactly as it reads
# /sys/class/hwmon on a real node, and a short CPU load that shows the power rise.
set -euo pipefail
BIN=${1:-build/bin}
WORK=$(mktemp -d /tmp/cpu-power-demo.XXXXXX)
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do
    for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
  done
  rm -rf "$WORK"
}
trap cleanup EXIT

echo "== simulated GB200 node (2 Grace sockets, kernel >= 6.15 layout) under $WORK/hwmon"
"$BIN/cpu-power" sim-node --root "$WORK/hwmon" --profile gb200 --model load >"$WORK/sim.log" 2>&1 &
PIDS+=($!)
until grep -q '^sim-node ready' "$WORK/sim.log" 2>/dev/null; do sleep 0.05; done
grep -v '^sim-node ready' "$WORK/sim.log"

echo
echo "== cpu-power-exporter --hwmon-root $WORK/hwmon"
"$BIN/cpu-power-exporter" --bind 127.0.0.1 --port 0 --hwmon-root "$WORK/hwmon" >"$WORK/exporter.log" 2>&1 &
PIDS+=($!)
until grep -q 'listening addr=' "$WORK/exporter.log" 2>/dev/null; do sleep 0.05; done
cat "$WORK/exporter.log"
PORT=$(grep -oE 'listening addr=[0-9.]+:[0-9]+' "$WORK/exporter.log" | sed 's/.*://')
URL="http://127.0.0.1:$PORT/metrics"

echo
echo "== one scrape of $URL (ACPI family)"
curl -s "$URL" | grep -E '^(# (HELP|TYPE) )?cpu_power_acpi_watts'

# One row per scrape: Grace socket totals and CPU rails, in watts.
row() {
  curl -s "$URL" | awk -v phase="$1" '
    /^cpu_power_acpi_watts\{/ {
      match($0, /type="[a-z_]+"/); t = substr($0, RSTART + 6, RLENGTH - 7)
      match($0, /socket="[0-9]*"/); s = substr($0, RSTART + 8, RLENGTH - 9)
      v[t s] = $NF
    }
    END { printf "%-22s %9.1f %9.1f %9.1f %9.1f\n", phase, v["total0"], v["total1"], v["cpu_rail0"], v["cpu_rail1"] }'
}
burn() { timeout "$2" taskset -c "$1" sh -c 'while :; do :; done' || true; }

echo
printf '%-22s %9s %9s %9s %9s\n' phase "total0 W" "total1 W" "rail0 W" "rail1 W"
for _ in 1 2 3; do row idle; sleep 0.5; done
burn 0 3 & b0=$!
for _ in 1 2 3 4 5; do sleep 0.5; row "load on CPU 0"; done
wait "$b0"
burn 0 3 & b0=$!
burn 1 3 & b1=$!
for _ in 1 2 3 4 5; do sleep 0.5; row "load on CPUs 0 and 1"; done
wait "$b0" "$b1"
for _ in 1 2 3; do sleep 0.5; row "idle again"; done
echo
echo "Socket N follows CPUs with index % 2 == N: loading CPU 0 raises socket 0 (about 96 W idle"
echo "to about 258 W at full load, as measured on GB200), loading both raises both."
