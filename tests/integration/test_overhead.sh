#!/usr/bin/env bash
# `cpu-power overhead` on a simulated GB200 node: a tiny CPU loop in two rounds of the four
# arms gives a finite 95 % interval for every telemetry arm, the cost figures of both legs
# (during the runs and, with --duration, on the idle node), and leaves no exporter or host
# collector running; --metric compares a number the workload prints; a failing workload and
# telemetry that cannot start exit 1 naming the round, the arm and the command line; usage
# errors exit 2.
source "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3
start_sim sim "$WORK/tree" --profile gb200 --update-ms 50
LOOP='i=0; while [ $i -lt 20000 ]; do i=$((i + 1)); done'
TIMEOUT=$(scaled 30)

# overhead NAME ARGS...: runs it in the foreground on the simulated node's tree (HWMON, when
# set, instead); RC, and $WORK/NAME.{out,err}.
overhead() {
  local name=$1
  shift
  RC=0
  "$BIN/cpu-power" overhead --hwmon-root "${HWMON:-$WORK/tree}" --startup-timeout-s "$TIMEOUT" \
    "$@" >"$WORK/$name.out" 2>"$WORK/$name.err" || RC=$?
}
# no_telemetry_left JSON DIR: every exporter and host collector the report names has exited,
# and no process's command line holds the work directory DIR.
no_telemetry_left() {
  local pid
  for pid in $($PY -c 'import json, sys
for r in json.load(open(sys.argv[1]))["runs"]:
    for k in ("exporter_pid", "host_collector_pid"):
        if r[k] is not None: print(r[k])' "$1"); do
    gone "$pid" || fail "telemetry process $pid still running after the command: $(tr '\0' ' ' <"/proc/$pid/cmdline")"
  done
  if pgrep -f -- "$2" >/dev/null; then fail "a process still names $2: $(pgrep -af -- "$2")"; fi
  return 0
}

# --- two rounds of a tiny CPU loop, and one idle second -----------------------------------
overhead basic --pairs 2 --duration 1 --work-dir "$WORK/basic" --json "$WORK/basic.json" \
  -- sh -c "$LOOP"
[ "$RC" = 0 ] || fail "exit $RC: $(cat "$WORK/basic.err")"
$PY - "$WORK/basic.json" <<'PYEOF' || fail "basic.json: $(cat "$WORK/basic.json")"
import json, math, sys
j = json.load(open(sys.argv[1]))
assert j["rounds"] == 2 and j["warmup_runs"] == 1 and j["compared"] == "wall_seconds", j
assert [a["arm"] for a in j["arms"]] == ["baseline", "exporter", "host_collector", "both"], j["arms"]
for a in j["arms"]:
    assert a["n"] == 2 and a["mean"] > 0, a
    if a["arm"] == "baseline":
        continue
    lo, d, hi = a["ci_low_pct"], a["difference_pct"], a["ci_high_pct"]
    assert all(isinstance(v, (int, float)) and math.isfinite(v) for v in (lo, d, hi)), a
    assert lo <= d <= hi, a
assert len(j["runs"]) == 8, j["runs"]
for r in j["runs"]:
    assert (r["exporter_pid"] is not None) == (r["arm"] in ("exporter", "both")), r
    assert (r["host_collector_pid"] is not None) == (r["arm"] in ("host_collector", "both")), r
# Each leg ran in two arms of two rounds: four measured windows, every figure a number.
for when in ("cost_during_runs", "cost_idle"):
    assert [c["process"] for c in j[when]] == ["exporter", "host collector"], j[when]
    for c in j[when]:
        assert c["windows"] == (4 if when == "cost_during_runs" else 1), c
        assert c["seconds"] > 0 and c["peak_rss_bytes"] > 0, c
        for k in ("cpu_seconds_per_hour", "core_pct", "wakeups_per_second"):
            assert isinstance(c[k], (int, float)) and math.isfinite(c[k]) and c[k] >= 0, (k, c)
assert j["idle_seconds"] == 1 and all(c["seconds"] >= 1 for c in j["cost_idle"]), j
assert j["exporter"]["argv"][1:3] == ["--port", "0"] and "--hwmon-root" in j["exporter"]["argv"], j
assert "host-collect" in j["host_collector"]["argv"] and "0.1" in j["host_collector"]["argv"], j
PYEOF
[ -e "$WORK/basic/runs/warmup-1.log" ] && [ -e "$WORK/basic/runs/r02-4-baseline.log" ] ||
  fail "no warm-up or run output: $(ls "$WORK/basic/runs")"
ok "two rounds after a warm-up run: 4 arms, 8 runs, a finite 95 % interval for each telemetry arm, both legs' costs"
for arm in baseline exporter 'host collector' both; do
  grep -qE "^  $arm +2 " "$WORK/basic.out" || fail "no '$arm' row in the table: $(cat "$WORK/basic.out")"
done
grep -q '95 % CI' "$WORK/basic.out" || fail "no interval column: $(cat "$WORK/basic.out")"
grep -q 'telemetry cost on the idle node, both running 1 s' "$WORK/basic.out" || fail "no idle figures"
grep -q 'together (sum)' "$WORK/basic.out" || fail "no sum of the legs"
ok "the text table: a row per arm, the interval, the costs during the runs and on the idle node"
# Every run's telemetry was ready before its workload: the exporter listened, the collector
# wrote its ready marker; and each was stopped by SIGTERM (exit 0 after its stop line).
ls "$WORK"/basic/telemetry/r0?-?-exporter/exporter.log >/dev/null || fail "no exporter logs"
for log in "$WORK"/basic/telemetry/*/exporter.log; do
  grep -q 'listening addr=127.0.0.1:' "$log" || fail "$log: never listened"
done
for d in "$WORK"/basic/telemetry/*host_collector "$WORK"/basic/telemetry/*both "$WORK/basic/telemetry/idle"; do
  [ -e "$d/host/ready/overhead.ready.json" ] || fail "$d: no ready marker"
  grep -q 'received SIGTERM' "$d/host-collect.log" || fail "$d: not stopped by SIGTERM: $(cat "$d/host-collect.log")"
done
no_telemetry_left "$WORK/basic.json" "$WORK/basic"
ok "every run's telemetry was ready before the workload, stopped by SIGTERM, and is gone"

# --- a throughput the workload prints -----------------------------------------------------
overhead metric --pairs 1 --work-dir "$WORK/metric" --json "$WORK/metric.json" --metric 'rate: ([0-9.]+) ops/s' \
  -- sh -c "$LOOP; echo 'rate: 1.5 ops/s'; echo 'rate: 42.25 ops/s'"
[ "$RC" = 0 ] || fail "--metric: exit $RC: $(cat "$WORK/metric.err")"
$PY - "$WORK/metric.json" <<'PYEOF' || fail "metric.json: $(cat "$WORK/metric.json")"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["compared"] == "metric" and j["higher_is_better"] is True, j
assert all(r["metric"] == 42.25 for r in j["runs"]), j["runs"]
assert all(a["ci_low_pct"] is None for a in j["arms"]), j["arms"]  # one pair: no interval
assert any("odd number of pairs" in w for w in j["warnings"]), j["warnings"]
PYEOF
grep -q 'higher is better: a negative difference is a cost' "$WORK/metric.out" || fail "metric direction not said"
no_telemetry_left "$WORK/metric.json" "$WORK/metric"
ok "--metric: the last match's number compared, higher is better, no interval from one pair"

# --- failures -----------------------------------------------------------------------------
overhead fails --pairs 1 --warmup 0 --work-dir "$WORK/fails" -- sh -c 'exit 3'
[ "$RC" = 1 ] || fail "a failing workload: exit $RC, want 1"
grep -q 'round 1 of 1, arm baseline: the workload .* failed (exit 3)' "$WORK/fails.err" ||
  fail "a failing workload: $(cat "$WORK/fails.err")"
overhead fails_warmup --pairs 1 --work-dir "$WORK/fails_warmup" -- sh -c 'exit 4'
[ "$RC" = 1 ] || fail "a failing warm-up run: exit $RC, want 1"
grep -q 'warm-up run 1 of 1: the workload .* failed (exit 4)' "$WORK/fails_warmup.err" ||
  fail "a failing warm-up run: $(cat "$WORK/fails_warmup.err")"
pgrep -f -- "$WORK/fails" >/dev/null && fail "telemetry left running after a failed workload"
ok "a failing workload exits 1 naming the round and the arm, or the warm-up run, and its exit status"

mkdir -p "$WORK/no-sensors"
HWMON="$WORK/no-sensors" overhead nosensors --pairs 1 --work-dir "$WORK/nosensors" -- true
[ "$RC" = 1 ] || fail "telemetry that cannot start: exit $RC, want 1"
grep -qE 'arm (exporter|host collector): the (exporter|host collector) `[^`]*(cpu-power-exporter|host-collect)[^`]*--hwmon-root [^`]*no-sensors' "$WORK/nosensors.err" ||
  fail "telemetry that cannot start: $(cat "$WORK/nosensors.err")"
pgrep -f -- "$WORK/nosensors" >/dev/null && fail "telemetry left running after a failed start"
ok "telemetry that cannot start exits 1 naming the arm and its command line"

for bad in "--pairs 0 -- true" "--warmup -1 -- true" "--metric rate -- true" "--lower-is-better -- true" \
  "--duration -1 -- true" "--exporter-command '' -- true" "--pairs 2"; do
  RC=0
  eval "\"\$BIN/cpu-power\" overhead $bad" >"$WORK/usage.out" 2>&1 || RC=$?
  [ "$RC" = 2 ] || fail "overhead $bad: exit $RC, want 2 ($(cat "$WORK/usage.out"))"
done
ok "usage errors exit 2 (--pairs 0, a --metric without a group, --lower-is-better alone, no command)"

finish
