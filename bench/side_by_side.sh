#!/usr/bin/env bash
# The steady-state cost of two builds' node processes, side by side on one simulated GB200 node
# (docs/performance.md, Telemetry overhead): the exporter at its defaults (not scraped) and the
# host collector at 10 Hz from BEFORE_BIN and from AFTER_BIN, all four running at once against
# the same tree, so that both builds see the same machine. `perf stat -e
# task-clock,context-switches -p PID` over SECONDS, SAMPLES times in a row, after a 10 s
# warm-up; the table gives each process's CPU milliseconds a second and wake-ups (context
# switches) a second, and the per-thread voluntary context switches and CPU (schedstat) of the
# AFTER exporter and host collector (and with FLOOR=1 the least reader, whose one thread then
# shows how schedstat's count compares with perf's) over the last sample.
# With TREE=static the simulated node writes its tree once and stops (`sim-node --once`): no
# value file is ever replaced, so the readers hold every one open and read it again in place
# (a `pread` and an `fstat`), as they do on a real node's sysfs, where the simulator's
# replacement of a file at each new value (a new file, opened for every read) is not there.
# With SCRAPE=1 each exporter is scraped once a second by the head node's collector (`cpu-power
# scrape` of the same build, on keep-alive connections, as a recipe scrapes it); the collector
# itself is not measured.
# With FLOOR=1, AFTER_BIN's wake_floor_bench runs beside them and is measured the same way: one
# thread that reads the same value files in place at the same 100 ms, and does nothing else,
# the least such a reader costs on this machine at this hour (row `floor`).
# Usage: [TREE=live|static] [SCRAPE=0|1] [FLOOR=0|1] bench/side_by_side.sh BEFORE_BIN AFTER_BIN [SECONDS] [SAMPLES]
set -euo pipefail
BEFORE=${1:?BEFORE_BIN}
AFTER=${2:?AFTER_BIN}
SECONDS_EACH=${3:-60}
SAMPLES=${4:-2}
TREE=${TREE:-live}
SCRAPE=${SCRAPE:-0}
FLOOR=${FLOOR:-0}
command -v perf >/dev/null || { echo "side_by_side: needs perf (linux-perf)" >&2; exit 2; }
WORK=$(mktemp -d /tmp/cpu-power-side-by-side.XXXXXX)
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT

if [ "$TREE" = static ]; then
  "$AFTER/cpu-power" sim-node --root "$WORK/tree" --profile gb200 --once >"$WORK/sim.log" 2>&1
else
  "$AFTER/cpu-power" sim-node --root "$WORK/tree" --profile gb200 >"$WORK/sim.log" 2>&1 &
  PIDS+=($!)
  for _ in $(seq 200); do grep -q '^sim-node ready' "$WORK/sim.log" && break; sleep 0.05; done
  grep -q '^sim-node ready' "$WORK/sim.log" || { cat "$WORK/sim.log"; exit 1; }
fi

declare -A PID
for build in before after; do
  bin=$BEFORE
  [ "$build" = after ] && bin=$AFTER
  mkdir -p "$WORK/$build"
  "$bin/cpu-power-exporter" --port 0 --bind 127.0.0.1 --hwmon-root "$WORK/tree" \
    >"$WORK/$build/exporter.log" 2>&1 &
  PID[$build-exporter]=$!
  PIDS+=($!)
  "$bin/cpu-power" host-collect --output-dir "$WORK/$build" --ready-dir "$WORK/$build" \
    --hostname "$build" --hwmon-root "$WORK/tree" >"$WORK/$build/host.log" 2>&1 &
  PID[$build-host]=$!
  PIDS+=($!)
done
if [ "$SCRAPE" = 1 ]; then
  for build in before after; do
    bin=$BEFORE
    [ "$build" = after ] && bin=$AFTER
    addr=
    for _ in $(seq 200); do
      addr=$(sed -n 's/.*listening addr=\([^ ]*\).*/\1/p' "$WORK/$build/exporter.log" | head -1)
      [ -n "$addr" ] && break
      sleep 0.05
    done
    [ -n "$addr" ] || { cat "$WORK/$build/exporter.log"; exit 1; }
    "$bin/cpu-power" scrape --endpoint "node=${addr#http://}" --out "$WORK/$build/scrape" \
      --interval-ms 1000 >"$WORK/$build/scrape.log" 2>&1 &
    PIDS+=($!)
  done
fi
NAMES=(before-exporter before-host after-exporter after-host)
THREADED=(after-exporter after-host)  # the processes whose threads are listed at the end
if [ "$FLOOR" = 1 ]; then
  [ -x "$AFTER/wake_floor_bench" ] || { echo "side_by_side: FLOOR=1 needs $AFTER/wake_floor_bench" >&2; exit 2; }
  mapfile -t VALUES < <(find "$WORK/tree/devices" -path '*/ACPI000D:*' -name 'power*_average' | sort)
  "$AFTER/wake_floor_bench" 100 "${VALUES[@]}" &
  PID[floor]=$!
  PIDS+=($!)
  NAMES+=(floor)
  THREADED+=(floor)
fi
sleep 10
for name in "${NAMES[@]}"; do
  kill -0 "${PID[$name]}" || { echo "side_by_side: $name exited" >&2; exit 1; }
done

threads() {  # "tid comm voluntary_ctxt_switches cpu_ns" for each thread of PID
  for t in /proc/"$1"/task/*; do
    printf '%s %s %s %s\n' "${t##*/}" "$(cat "$t/comm")" \
      "$(awk '/^voluntary_ctxt_switches/ {print $2}' "$t/status")" "$(cut -d' ' -f1 "$t/schedstat")"
  done 2>/dev/null
}

printf '%-16s %6s %14s %12s\n' process sample cpu_ms_per_s wakeups_per_s
for s in $(seq "$SAMPLES"); do
  for p in "${THREADED[@]}"; do threads "${PID[$p]}" >"$WORK/$p.threads.before"; done
  for name in "${NAMES[@]}"; do
    perf stat -x, -e task-clock,context-switches -p "${PID[$name]}" -o "$WORK/$name.$s.perf" \
      -- sleep "$SECONDS_EACH" &
  done
  wait_for=$(jobs -p | tail -"${#NAMES[@]}")
  # shellcheck disable=SC2086
  wait $wait_for
  for p in "${THREADED[@]}"; do threads "${PID[$p]}" >"$WORK/$p.threads.after"; done
  for name in "${NAMES[@]}"; do
    awk -F, -v name="$name" -v s="$s" -v secs="$SECONDS_EACH" '
      $3 == "task-clock" { ms = $1 }
      $3 == "context-switches" { cs = $1 }
      END { printf "%-16s %6d %14.2f %12.1f\n", name, s, ms / secs, cs / secs }' \
      "$WORK/$name.$s.perf"
  done
done
for p in "${THREADED[@]}"; do
  echo "$p, per thread over the last sample: voluntary context switches and CPU ms a second:"
  awk -v secs="$SECONDS_EACH" '
    NR == FNR { before[$1] = $3; cpu[$1] = $4; next }
    $1 in before { printf "  %-8s %-16s %6.1f %8.3f\n", $1, $2, ($3 - before[$1]) / secs, ($4 - cpu[$1]) / secs / 1e6 }' \
    "$WORK/$p.threads.before" "$WORK/$p.threads.after"
done
