#!/usr/bin/env bash
# The Python fallback exporter walks the binary's ACPI liveness rule (`--source acpi`) before
# it listens: on a tree where every meter returns the firmware's error value, where no socket
# total ever reads positive, or where no channel is a socket total, both exit 1 with the same
# `Error:` line (so a session counts the node as failed, not healthy); a node with some
# sockets live starts with the binary's WARN; a healthy one with its INFO.
source "$(dirname "$0")/lib.sh"
FALLBACK="$(cd "$(dirname "$0")/../.." && pwd)/tools/cpu_power_exporter_fallback.py"
MAX_AGE=0.5

# both NAME ROOT: runs the binary (--source acpi) and the fallback on ROOT until they listen or
# exit; sets BIN_RC, PY_RC and the logs $WORK/NAME.{bin,py}.{out,err}.
both() {
  local name=$1 root=$2
  set +e
  timeout "$(scaled 20)" "$BIN/cpu-power-exporter" --bind 127.0.0.1 --port 0 --hwmon-root "$root" \
    --source acpi --max-age-s "$MAX_AGE" --no-nvml >"$WORK/$name.bin.out" 2>"$WORK/$name.bin.err"
  BIN_RC=$?
  timeout "$(scaled 20)" python3 "$FALLBACK" --bind 127.0.0.1 --port 0 --hwmon-root "$root" \
    --max-age-s "$MAX_AGE" >"$WORK/$name.py.out" 2>"$WORK/$name.py.err"
  PY_RC=$?
  set -e
}
# same_error NAME WANT: both exited 1 with exactly the Error line WANT.
same_error() {
  local name=$1 want=$2
  [ "$BIN_RC" = 1 ] || fail "$name: binary exit $BIN_RC ($(cat "$WORK/$name.bin.err"))"
  [ "$PY_RC" = 1 ] || fail "$name: fallback exit $PY_RC, want 1 (stdout: $(cat "$WORK/$name.py.out"); stderr: $(cat "$WORK/$name.py.err"))"
  grep -qxF "$want" "$WORK/$name.bin.err" || fail "$name: binary said $(cat "$WORK/$name.bin.err")"
  [ "$(cat "$WORK/$name.py.err")" = "$want" ] || fail "$name: fallback said $(cat "$WORK/$name.py.err"), want $want"
  grep -q 'listening addr=' "$WORK/$name.py.out" && fail "$name: the fallback listened"
  return 0
}

# --- every meter returns the firmware's error value --------------------------------------
faults=()
for k in total cpu_rail soc; do for s in 0 1; do faults+=(--fault "$k:$s=invalid"); done; done
"$BIN/cpu-power" sim-node --root "$WORK/invalid" --profile gb200 --once "${faults[@]}" >/dev/null
grep -qx 4294967295000 "$WORK/invalid/hwmon2/power1_average" || fail "the invalid fault wrote $(cat "$WORK/invalid/hwmon2/power1_average")"
both invalid "$WORK/invalid"
same_error invalid "Error: no ACPI socket-total power_meter sensor under $WORK/invalid read positive across 2 probe(s) (6 sensors discovered)"
ok "every meter at 4294967295000: the binary and the fallback both exit 1 with the same reason"

# --- the rails read, but no socket total ever reads positive ------------------------------
"$BIN/cpu-power" sim-node --root "$WORK/zero" --profile gb200 --once \
  --fault total:0=zero --fault total:1=empty >/dev/null
both zero "$WORK/zero"
same_error zero "Error: no ACPI socket-total power_meter sensor under $WORK/zero read positive across 2 probe(s) (6 sensors discovered)"
ok "socket totals at 0 and empty, rails live: both exit 1 (component rails never vouch for a socket)"

# --- no socket total at all -----------------------------------------------------------------
mkdir -p "$WORK/rails/hwmon3"
echo power_meter >"$WORK/rails/hwmon3/name"
echo "CPU Power Socket 0" >"$WORK/rails/hwmon3/power1_oem_info"
echo 50000000 >"$WORK/rails/hwmon3/power1_average"
both rails "$WORK/rails"
same_error rails "Error: no ACPI socket-total power_meter channels under $WORK/rails (found: CPU Power Socket 0)"
ok "no socket-total channel: both exit 1 naming the labels found"

# --- one socket live: both start, with the same WARN ----------------------------------------
"$BIN/cpu-power" sim-node --root "$WORK/half" --profile gb200 --once --fault total:1=invalid >/dev/null
spawn half_py python3 "$FALLBACK" --bind 127.0.0.1 --port 0 --hwmon-root "$WORK/half" --max-age-s "$MAX_AGE"
wait_for_line "$WORK/half_py.log" 'listening addr=' 15
port=$(grep -oE 'listening addr=[0-9.]+:[0-9]+' "$WORK/half_py.log" | sed 's/.*://')
warn='WARN cpu_power_exporter: ACPI socket totals report non-zero power on some sockets only; using ACPI, and the node'"'"'s power is incomplete while the others give none live=1 total=2 sockets_without_power=1'
grep -qF "$warn" "$WORK/half_py.log" || fail "fallback WARN: $(cat "$WORK/half_py.log")"
[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/health")" = 200 ] || fail "fallback /health"
curl -sf "http://127.0.0.1:$port/metrics" | grep -q 'type="total",socket="0"' || fail "socket 0 total not served"
stop "$LAST_PID"
start_exporter half_bin --hwmon-root "$WORK/half" --source acpi --max-age-s "$MAX_AGE" --no-nvml
grep -qF "$warn" "$WORK/half_bin.log" || fail "binary WARN differs: $(grep WARN "$WORK/half_bin.log")"
stop "$EXPORTER_PID"
ok "socket 1 invalid: both start and serve socket 0, with the same WARN"

# --- a healthy node: the INFO, then listening ------------------------------------------------
start_sim live "$WORK/live" --profile gb200 --update-ms 50
spawn live_py python3 "$FALLBACK" --bind 127.0.0.1 --port 0 --hwmon-root "$WORK/live" --max-age-s "$MAX_AGE"
wait_for_line "$WORK/live_py.log" 'listening addr=' 15
grep -qF 'INFO cpu_power_exporter: ACPI socket totals report non-zero power; using ACPI live=2 total=2' "$WORK/live_py.log" ||
  fail "fallback INFO: $(cat "$WORK/live_py.log")"
[ "$(grep -n 'using ACPI live=2' "$WORK/live_py.log" | cut -d: -f1)" -lt "$(grep -n 'listening addr=' "$WORK/live_py.log" | cut -d: -f1)" ] ||
  fail "listened before the probe"
stop "$LAST_PID"
ok "healthy node: the fallback probes (INFO live=2 total=2) before it listens"
finish
