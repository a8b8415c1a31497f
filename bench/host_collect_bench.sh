#!/usr/bin/env bash
# Per-node cost of `cpu-power host-collect` at 10 Hz on a simulated GB200 node whose every
# ACPI read takes READ_MS (a firmware round trip; 150 ms on Grace): CPU seconds per hour and
# RSS of the collector, and how often each rail and each sample refresh, next to the
# srtctl host collector's serial loop (sleep to the next slot, then read every channel in
# turn) run over the same tree.
# Usage: bench/host_collect_bench.sh BIN_DIR [DURATION_S] [READ_MS]
set -euo pipefail
BIN=${1:-build/bin}
DURATION=${2:-60}
READ_MS=${3:-150}
WORK=$(mktemp -d /tmp/cpu-power-hc-bench.XXXXXX)
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$WORK"' EXIT

faults=()
for k in total:0 total:1 cpu_rail:0 cpu_rail:1 soc:0 soc:1; do faults+=(--fault "$k=slow:$READ_MS"); done
# Two identical nodes: a slow channel is a FIFO served by the simulator, one reader at a time,
# so the two collectors must not share a tree.
for t in tree serial_tree; do
  "$BIN/cpu-power" sim-node --root "$WORK/$t" --profile gb200 --update-ms 50 "${faults[@]}" >"$WORK/$t.log" 2>&1 &
  PIDS+=($!)
  for _ in $(seq 200); do grep -q '^sim-node ready' "$WORK/$t.log" && break; sleep 0.05; done
done

"$BIN/cpu-power" host-collect --output-dir "$WORK/nodes" --ready-dir "$WORK/ready" --hostname bench \
  --hwmon-root "$WORK/tree" --interval-seconds 0.1 --no-nvml >"$WORK/hc.log" 2>&1 &
HC=$!
PIDS+=($HC)
for _ in $(seq 200); do [ -e "$WORK/ready/bench.ready.json" ] && break; sleep 0.05; done
[ -e "$WORK/ready/bench.ready.json" ] || { cat "$WORK/hc.log"; exit 1; }


# CPU time from the scheduler's own accounting (ns on CPU, summed over every thread), not
# from 10 ms ticks, which misattribute a process that runs in bursts far shorter than a tick.
ticks=1000000000
cpu_ticks() { cat /proc/"$HC"/task/*/schedstat | awk '{s += $1} END {printf "%d", s}'; }
c0=$(cpu_ticks)
rows0=$(($(wc -l <"$WORK/nodes/bench.csv") - 1))
t0=$(date +%s.%N)
sleep "$DURATION"
c1=$(cpu_ticks)
rows1=$(($(wc -l <"$WORK/nodes/bench.csv") - 1))
t1=$(date +%s.%N)
rss=$(awk '/^VmRSS/{print $2}' "/proc/$HC/status")
hwm=$(awk '/^VmHWM/{print $2}' "/proc/$HC/status")
kill -TERM "$HC"
wait "$HC" || true
# The reference's loop over an identical slow tree, after the collector has stopped
# (each read blocks READ_MS), so that neither competes with the other for the two cores.
/usr/bin/python3 - "$WORK/serial_tree" "$DURATION" >"$WORK/serial.txt" <<'PYEOF'
import glob, os, sys, time
root, duration = sys.argv[1], float(sys.argv[2])
paths = sorted(glob.glob(root + "/hwmon*/power*_average") + glob.glob(root + "/hwmon*/device/power*_average"))
interval, samples = 0.1, 0
start = nxt = time.monotonic()
while time.monotonic() - start < duration:
    nxt += interval
    time.sleep(max(0.0, nxt - time.monotonic()))
    for p in paths:
        with open(p) as f:
            f.read()
    samples += 1
print(len(paths), samples, time.monotonic() - start)
PYEOF
read -r channels serial_samples serial_s <"$WORK/serial.txt"

/usr/bin/python3 - "$c0" "$c1" "$ticks" "$t0" "$t1" "$rows0" "$rows1" "$rss" "$hwm" "$channels" "$serial_samples" "$serial_s" "$READ_MS" "$WORK/nodes/bench.csv" <<'PYEOF'
import csv, sys
c0, c1, ticks, t0, t1 = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5])
rows0, rows1, rss, hwm = int(sys.argv[6]), int(sys.argv[7]), int(sys.argv[8]), int(sys.argv[9])
channels, serial_samples, serial_s, read_ms = int(sys.argv[10]), int(sys.argv[11]), float(sys.argv[12]), int(sys.argv[13])
wall = t1 - t0
cpu = (c1 - c0) / ticks
samples = (rows1 - rows0) / 2  # two sockets per sample
print("| measure | cpu-power host-collect | serial loop (srtctl) |")
print("|---|---|---|")
print("| wall time measured | %.1f s | %.1f s |" % (wall, serial_s))
print("| CPU | %.3f s = %.1f CPU-s per hour = %.3f %% of one core | - |" % (cpu, cpu / wall * 3600, cpu / wall * 100))
print("| RSS at the end / peak | %.1f MiB / %.1f MiB | - |" % (rss / 1024, hwm / 1024))
print("| samples (rows per socket) per second | %.2f (%.0f ms apart) | %.2f (%.0f ms apart) |" % (
    samples / wall, 1000 * wall / samples, serial_samples / serial_s, 1000 * serial_s / serial_samples))
print("| channels, each read taking | %d, %d ms | %d, %d ms |" % (channels, read_ms, channels, read_ms))
# Per rail: the simulator's values carry noise and change every 50 ms, so every read gives a
# new value; a rail's refresh period is the time between changes of its column.
rows = list(csv.DictReader(open(sys.argv[14], newline="")))
for column in ("power_w", "cpu_rail_w", "soc_w"):
    periods = []
    for sock in ("0", "1"):
        series = [(float(r["timestamp_unix"]), r[column]) for r in rows if r["socket_id"] == sock]
        changes = sum(1 for a, b in zip(series, series[1:]) if a[1] != b[1])
        periods.append(1000 * (series[-1][0] - series[0][0]) / max(1, changes))
    print("| refresh period of `%s` (socket 0 / 1) | %.0f / %.0f ms | %.0f ms (every sample) |" % (
        column, periods[0], periods[1], 1000 * serial_s / serial_samples))
PYEOF
