#!/usr/bin/env bash
# Sample gaps against the collect interval: two simulated GB200 nodes, each behind its own
# exporter (default read cadence, 100 ms), scraped by one `cpu-power scrape` per interval, all
# at once, for DURATION_S; then, per interval and host, the largest gap between consecutive
# row times in samples.csv and how far it exceeds the interval. Row time is the request's
# midpoint minus the sensors' age, so a gap exceeds the interval by scheduling jitter plus
# the spread of the sensors' read age. The rule in config/validate.hpp (kGapJitterMarginMs)
# rests on these figures (docs/reliability.md).
# Usage: bench/sample_gaps.sh BIN_DIR [DURATION_S] [INTERVAL_MS...]
#        (default 45 s; 1000 2000 2500 3000 ms)
set -euo pipefail
BIN=${1:-build/bin}
DUR=${2:-45}
shift $(($# > 2 ? 2 : $#))
INTERVALS=("$@")
[ ${#INTERVALS[@]} -gt 0 ] || INTERVALS=(1000 2000 2500 3000)
WORK=$(mktemp -d /tmp/cpupower-bench.XXXXXX)
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done; wait 2>/dev/null; rm -rf "$WORK"' EXIT

wait_line() {  # FILE REGEX: up to 15 s
  for _ in $(seq 300); do grep -qE "$2" "$1" 2>/dev/null && return 0; sleep 0.05; done
  echo "timed out waiting for /$2/ in $1" >&2
  cat "$1" >&2
  exit 1
}

endpoints=()
for n in a b; do
  "$BIN/cpu-power" sim-node --root "$WORK/$n" --profile gb200 --seed "$RANDOM" >"$WORK/sim_$n.log" 2>&1 &
  PIDS+=($!)
  wait_line "$WORK/sim_$n.log" '^sim-node ready'
  "$BIN/cpu-power-exporter" --bind 127.0.0.1 --port 0 --hwmon-root "$WORK/$n" >"$WORK/exp_$n.log" 2>&1 &
  PIDS+=($!)
  wait_line "$WORK/exp_$n.log" 'listening addr='
  port=$(grep -oE 'listening addr=[0-9.]+:[0-9]+' "$WORK/exp_$n.log" | head -1 | sed 's/.*://')
  endpoints+=(--endpoint "node-$n=127.0.0.1:$port")
done

scrapes=()
for iv in "${INTERVALS[@]}"; do
  "$BIN/cpu-power" scrape "${endpoints[@]}" --out "$WORK/iv$iv" --interval-ms "$iv" \
    --duration-s "$DUR" >"$WORK/scrape_$iv.log" 2>&1 &
  scrapes+=($!)
done
for p in "${scrapes[@]}"; do wait "$p"; done

echo "$(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg) at the end; ${DUR} s per interval"
echo
/usr/bin/python3 - "$WORK" "${INTERVALS[@]}" <<'EOF'
import csv, sys

work, intervals = sys.argv[1], [int(x) for x in sys.argv[2:]]
print("| interval | host | row times | gaps | max gap | max gap - interval | p99 gap | min gap "
      "| gaps over 3.0 s |")
print("|---|---|---|---|---|---|---|---|---|")
for iv in intervals:
    times = {}
    with open("%s/iv%d/samples.csv" % (work, iv), newline="") as f:
        for row in csv.DictReader(f):
            times.setdefault(row["hostname"], set()).add(float(row["timestamp_unix"]))
    for host in sorted(times):
        t = sorted(times[host])
        # The last row is the final scrape after stop, off the slot grid: left out.
        gaps = sorted(b - a for a, b in zip(t, t[1:-1]))
        if not gaps:
            print("| %d ms | %s | %d | 0 | | | | | |" % (iv, host, len(t)))
            continue
        p99 = gaps[min(len(gaps) - 1, int(0.99 * len(gaps)))]
        over = sum(g > 3.0 for g in gaps)
        print("| %d ms | %s | %d | %d | %.3f s | %+.0f ms | %.3f s | %.3f s | %d |" % (
            iv, host, len(t), len(gaps), gaps[-1], (gaps[-1] - iv / 1000) * 1000, p99, gaps[0],
            over))
EOF
