#!/usr/bin/env bash
# cpu-power sim-node as a process: the ready protocol, the tree it leaves, exit statuses and
# signal handling. Needs BIN=<build>/bin.
set -euo pipefail

: "${BIN:?BIN must point at the bin directory of the build}"
SIM="$BIN/cpu-power"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/test_sim_node.XXXXXX")
PID=""
cleanup() {
  if [[ -n "$PID" ]] && kill -0 "$PID" 2>/dev/null; then kill -KILL "$PID" 2>/dev/null || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

expect_status() {  # expect_status STATUS DESCRIPTION -- ARGS...
  local want=$1 what=$2
  shift 3
  local got=0
  "$SIM" sim-node "$@" >"$WORK/out" 2>"$WORK/err" || got=$?
  [[ $got == "$want" ]] || fail "$what: exit $got, want $want; stderr: $(cat "$WORK/err")"
}

# --- one-shot tree ------------------------------------------------------------------------
expect_status 0 "once" -- --root "$WORK/once" --profile platform-uw --layout legacy \
  --model constant --load 0.5 --fault dram:1=zero --once
[[ $(grep -c '^hwmon' "$WORK/out") == 8 ]] || fail "once: expected 8 channel lines: $(cat "$WORK/out")"
grep -qx "sim-node ready root=$WORK/once profile=platform-uw layout=legacy channels=8 t0_unix=[0-9]*\.[0-9]\{6\}" "$WORK/out" ||
  fail "once: no ready line: $(cat "$WORK/out")"
grep -q '^hwmon10 .* soc:0 .*"SoC Rail Power in uW socket 0"' "$WORK/out" ||
  fail "once: table line for soc:0 missing"
[[ $(cat "$WORK/once/hwmon2/device/name") == power_meter ]] || fail "once: legacy name placement"
[[ ! -e "$WORK/once/hwmon2/name" ]] || fail "once: legacy layout has a class-dir name"
[[ $(cat "$WORK/once/hwmon3/power1_average") == 122000000 ]] || fail "once: cpu_rail:0 value"
[[ $(cat "$WORK/once/hwmon15/power1_average") == 0 ]] || fail "once: zero fault on dram:1"
[[ $(readlink "$WORK/once/hwmon10") == devices/platform/ACPI000D:02/hwmon/hwmon10 ]] ||
  fail "once: class link not relative"

# A second run may reuse its own root; a foreign directory is refused.
expect_status 0 "rerun on own root" -- --root "$WORK/once" --profile gh200 --once
[[ ! -e "$WORK/once/hwmon11" ]] || fail "rerun: stale hwmon11 left behind"
mkdir -p "$WORK/foreign" && echo keep >"$WORK/foreign/file"
expect_status 1 "foreign root" -- --root "$WORK/foreign" --once
grep -q '^Error: .*not empty' "$WORK/err" || fail "foreign root: $(cat "$WORK/err")"
[[ $(cat "$WORK/foreign/file") == keep ]] || fail "foreign root: file touched"

# --- usage errors exit 2 and name the option --------------------------------------------
expect_status 2 "missing --root" -- --once
grep -q -- '--root' "$WORK/err" || fail "missing --root: $(cat "$WORK/err")"
expect_status 2 "bad profile" -- --root "$WORK/x" --profile gb300
grep -q -- '--profile' "$WORK/err" || fail "bad profile: $(cat "$WORK/err")"
expect_status 2 "bad fault" -- --root "$WORK/x" --fault total:0=melt
grep -q -- '--fault' "$WORK/err" || fail "bad fault: $(cat "$WORK/err")"
expect_status 2 "fault on a missing channel" -- --root "$WORK/x" --fault dram:0=zero
grep -q -- 'dram:0' "$WORK/err" || fail "missing channel: $(cat "$WORK/err")"
expect_status 2 "slow with --once" -- --root "$WORK/x" --fault total:0=slow:100 --once
expect_status 2 "trace model without file" -- --root "$WORK/x" --model trace
expect_status 2 "load out of range" -- --root "$WORK/x" --model constant --load 1.5
[[ ! -e "$WORK/x" ]] || fail "usage errors must not write a tree"

# --- start failures exit 1 ----------------------------------------------------------------
expect_status 1 "missing proc stat" -- --root "$WORK/y" --proc-stat "$WORK/nope" --once
grep -q "^Error: .*$WORK/nope" "$WORK/err" || fail "missing proc stat: $(cat "$WORK/err")"
printf 'time_s,total:0\n0,100\n1,oops\n' >"$WORK/bad.csv"
expect_status 1 "bad trace" -- --root "$WORK/y" --trace "$WORK/bad.csv" --once
grep -q "bad.csv:3" "$WORK/err" || fail "bad trace: $(cat "$WORK/err")"

# --- running node: values move, faults end, SIGTERM stops it cleanly ------------------------
printf 'time_s,total:0\n0,100\n0.5,250\n' >"$WORK/trace.csv"
"$SIM" sim-node --root "$WORK/run" --trace "$WORK/trace.csv" --update-ms 20 \
  --fault cpu_rail:1=hang@0-400 >"$WORK/run.out" 2>"$WORK/run.err" &
PID=$!
for _ in $(seq 100); do
  grep -q '^sim-node ready' "$WORK/run.out" 2>/dev/null && break
  sleep 0.05
done
grep -q '^sim-node ready root=.* channels=6 t0_unix=[0-9.]*$' "$WORK/run.out" || fail "run: not ready: $(cat "$WORK/run.out" "$WORK/run.err")"
[[ $(cat "$WORK/run/hwmon2/power1_average") == 100000000 ]] || fail "run: first trace value"
# The hang window releases the read by itself.
value=$(timeout 5 cat "$WORK/run/hwmon12/power1_average") || fail "run: hang never released"
[[ -n "$value" ]] || fail "run: released hang read was empty"
for _ in $(seq 100); do
  [[ $(cat "$WORK/run/hwmon2/power1_average") == 250000000 ]] && break
  sleep 0.02
done
[[ $(cat "$WORK/run/hwmon2/power1_average") == 250000000 ]] || fail "run: trace did not advance"
kill -TERM "$PID"
status=0
wait "$PID" || status=$?
PID=""
[[ $status == 0 ]] || fail "run: SIGTERM exit $status"
grep -q '^sim-node stopped reason=SIGTERM' "$WORK/run.out" || fail "run: $(cat "$WORK/run.out")"

# --duration-s ends on its own.
timeout 10 "$SIM" sim-node --root "$WORK/dur" --model constant --duration-s 0.3 >"$WORK/dur.out" ||
  fail "duration: exit $?"
grep -q '^sim-node stopped reason=duration' "$WORK/dur.out" || fail "duration: $(cat "$WORK/dur.out")"

echo "test_sim_node: OK"
