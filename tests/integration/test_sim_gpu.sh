#!/usr/bin/env bash
# cpu-power sim-gpu as a process: the ready line on an ephemeral port, the dcgm-exporter body
# (promtool) and another exporter's names (--flavour amd), GPU faults observed over time by polling, endpoint faults, usage errors and
# start failures, SIGTERM.
source "$(dirname "$0")/lib.sh"

# start_gpu NAME ARGS...: a simulated dcgm-exporter on an ephemeral loopback port, ready when
# it says so; sets GPU_PID and GPU_PORT.
start_gpu() {
  local name=$1
  shift
  spawn "$name" "$BIN/cpu-power" sim-gpu --listen 127.0.0.1:0 "$@"
  GPU_PID=$LAST_PID
  wait_for_line "$WORK/$name.log" '^sim-gpu: listening on http://127\.0\.0\.1:[0-9]+/metrics$' 15
  GPU_PORT=$(grep -oE '^sim-gpu: listening on http://127\.0\.0\.1:[0-9]+' "$WORK/$name.log" | head -1 | sed 's/.*://')
}

metrics() { curl -sf --max-time "$(scaled 10)" "http://127.0.0.1:$GPU_PORT/metrics"; }
# power_line BODY GPU: the DCGM_FI_DEV_POWER_USAGE sample of GPU (whole GPU).
power_line() { grep -E "^DCGM_FI_DEV_POWER_USAGE\{gpu=\"$2\"," <<<"$1" || true; }
uuid_of() { power_line "$1" "$2" | grep -oE 'UUID="[^"]*"' | cut -d'"' -f2; }

# expect_status STATUS DESCRIPTION -- ARGS...: a run that must end by itself.
expect_status() {
  local want=$1 what=$2
  shift 3
  local got=0
  timeout "$(scaled 30)" "$BIN/cpu-power" sim-gpu "$@" >"$WORK/out" 2>"$WORK/err" || got=$?
  [ "$got" = "$want" ] || fail "$what: exit $got, want $want; stderr: $(cat "$WORK/err")"
}

# --- usage errors exit 2 and name the option; start failures exit 1 ------------------------
expect_status 2 "bad power" -- --listen 127.0.0.1:0 --power burst:5
grep -q -- '--power' "$WORK/err" || fail "bad power: $(cat "$WORK/err")"
expect_status 2 "bad fault" -- --listen 127.0.0.1:0 --fault melt
grep -q -- '--fault' "$WORK/err" || fail "bad fault: $(cat "$WORK/err")"
expect_status 2 "fault on a missing GPU" -- --listen 127.0.0.1:0 --gpus 2 --fault vanish:2
grep -q "names gpu 2, but --gpus is 2" "$WORK/err" || fail "missing GPU: $(cat "$WORK/err")"
expect_status 2 "bad listen" -- --listen 127.0.0.1
grep -q -- '--listen' "$WORK/err" || fail "bad listen: $(cat "$WORK/err")"
expect_status 2 "MIG GPU out of range" -- --listen 127.0.0.1:0 --gpus 2 --mig 0,2
expect_status 2 "max below idle" -- --listen 127.0.0.1:0 --idle-w 300 --max-w 200
expect_status 2 "no GPUs" -- --listen 127.0.0.1:0 --gpus 0
expect_status 1 "missing trace" -- --listen 127.0.0.1:0 --power "trace:$WORK/nope.csv"
grep -q "^Error: cannot read trace $WORK/nope.csv" "$WORK/err" || fail "missing trace: $(cat "$WORK/err")"
printf 'time_s,all\n0,100\n1,oops\n' >"$WORK/bad.csv"
expect_status 1 "bad trace" -- --listen 127.0.0.1:0 --power "trace:$WORK/bad.csv"
grep -q "bad.csv:3" "$WORK/err" || fail "bad trace: $(cat "$WORK/err")"
expect_status 1 "missing proc stat" -- --listen 127.0.0.1:0 --proc-stat "$WORK/nope"
grep -q "^Error: .*$WORK/nope" "$WORK/err" || fail "missing proc stat: $(cat "$WORK/err")"
ok "usage errors exit 2 naming the option; a bad trace or CPU source exits 1"

# --- the exposition ----------------------------------------------------------------------------
start_gpu plain --gpus 4 --hostname simnode --power constant:250 --port-file "$WORK/port"
[ "$(cat "$WORK/port")" = "$GPU_PORT" ] || fail "--port-file holds '$(cat "$WORK/port")', ready line says $GPU_PORT"
body=$(metrics) || fail "GET /metrics failed"
[ "$(grep -c '^DCGM_FI_DEV_POWER_USAGE{' <<<"$body")" = 4 ] || fail "expected 4 power samples: $body"
uuid0=$(uuid_of "$body" 0)
[[ $uuid0 =~ ^GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$ ]] || fail "UUID shape: $uuid0"
grep -qxF "DCGM_FI_DEV_POWER_USAGE{gpu=\"0\",UUID=\"$uuid0\",pci_bus_id=\"00000009:01:00.0\",device=\"nvidia0\",modelName=\"NVIDIA GH200 480GB\",Hostname=\"simnode\",DCGM_FI_DRIVER_VERSION=\"570.133.20\"} 250.000000" <<<"$body" ||
  fail "power line of GPU 0: $(power_line "$body" 0)"
grep -qx '# HELP DCGM_FI_DEV_POWER_USAGE Power draw (in W).' <<<"$body" || fail "HELP line"
grep -qx '# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter' <<<"$body" || fail "TYPE line"
grep -qE '^DCGM_FI_DEV_GPU_UTIL\{gpu="0",.*\} 26$' <<<"$body" || fail "util is an integer: $(grep '^DCGM_FI_DEV_GPU_UTIL{gpu="0"' <<<"$body")"
! grep -q '^DCGM_FI_PROF_' <<<"$body" || fail "profiling fields without --profiling"
ok "4 GPUs: dcgm-exporter's labels in order, HELP/TYPE, float power, integer util"

# promtool: no syntax problem. Real dcgm-exporter output draws the same lint remarks (the
# camelCase modelName label, counters without _total, DCGM_FI_DEV_PCIE_REPLAY_COUNTER naming
# its type); nothing else may appear.
rc=0
promtool check metrics <<<"$body" >"$WORK/promtool.out" 2>&1 || rc=$?
[ "$rc" = 0 ] || [ "$rc" = 3 ] || { cat "$WORK/promtool.out"; fail "promtool check metrics: exit $rc"; }
grep -v -e "label names should be written in 'snake_case' not 'camelCase'" \
  -e 'counter metrics should have "_total" suffix' \
  -e "^DCGM_FI_DEV_PCIE_REPLAY_COUNTER metric name should not include type 'counter'" \
  "$WORK/promtool.out" >"$WORK/promtool.rest" || true
[ ! -s "$WORK/promtool.rest" ] || { cat "$WORK/promtool.rest"; fail "promtool reported other problems"; }
ok "promtool check metrics: parses; only the lint remarks real dcgm-exporter output draws"

# --- another exporter's names (a kind: custom exporter) ------------------------------------
plain_pid=$GPU_PID plain_port=$GPU_PORT
start_gpu amd --gpus 2 --hostname simnode --power constant:250 --flavour amd
amd_body=$(metrics) || fail "GET /metrics (amd) failed"
[ "$(grep -E '^# HELP ' <<<"$amd_body" | cut -d' ' -f3 | tr '\n' ' ')" = "gpu_junction_temperature gpu_power_usage gpu_gfx_activity " ] ||
  fail "amd flavour families: $(grep -E '^# HELP ' <<<"$amd_body")"
grep -qE "^gpu_power_usage\{gpu_id=\"1\",serial_number=\"GPU-[0-9a-f-]+\",.*\} 250\.000000$" <<<"$amd_body" ||
  fail "amd flavour power line: $(grep '^gpu_power_usage' <<<"$amd_body")"
! grep -q '^DCGM_FI_' <<<"$amd_body" || fail "amd flavour serves DCGM families"
rc=0
promtool check metrics <<<"$amd_body" >"$WORK/promtool-amd.out" 2>&1 || rc=$?
[ "$rc" = 0 ] || [ "$rc" = 3 ] || { cat "$WORK/promtool-amd.out"; fail "promtool (amd): exit $rc"; }
grep -v -e "label names should be written in 'snake_case' not 'camelCase'" \
  "$WORK/promtool-amd.out" >"$WORK/promtool-amd.rest" || true
[ ! -s "$WORK/promtool-amd.rest" ] || { cat "$WORK/promtool-amd.rest"; fail "promtool (amd) reported other problems"; }
stop "$GPU_PID"
start_gpu named --gpus 1 --power constant:100 --power-metric board_watts --util-metric '' \
  --temperature-metric '' --sm-active-metric sm_busy --index-label idx --identity-label id
named_body=$(metrics) || fail "GET /metrics (named) failed"
[ "$(grep -E '^# HELP ' <<<"$named_body" | cut -d' ' -f3 | tr '\n' ' ')" = "board_watts sm_busy " ] ||
  fail "named families: $(grep -E '^# HELP ' <<<"$named_body")"
grep -qE '^board_watts\{idx="0",id="GPU-' <<<"$named_body" || fail "named labels: $named_body"
stop "$GPU_PID"
expect_status 2 "unknown flavour" -- --listen 127.0.0.1:0 --flavour nvidia
grep -q -- '--flavour' "$WORK/err" || fail "unknown flavour: $(cat "$WORK/err")"
expect_status 2 "index label as identity" -- --listen 127.0.0.1:0 --index-label gpu --identity-label gpu
grep -q -- '--identity-label' "$WORK/err" || fail "same labels: $(cat "$WORK/err")"
ok "--flavour amd and --*-metric/--*-label: only the leg's families, renamed, promtool-clean; bad names exit 2"
GPU_PID=$plain_pid GPU_PORT=$plain_port

headers=$(curl -sf -D - -o /dev/null "http://127.0.0.1:$GPU_PORT/metrics")
grep -qi '^content-type: text/plain; charset=utf-8' <<<"$headers" || fail "content type: $headers"
[ "$(curl -s "http://127.0.0.1:$GPU_PORT/health")" = OK ] || fail "/health"
[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$GPU_PORT/nope")" = 404 ] || fail "404"
ok "routes: /metrics text/plain, /health OK, others 404"

# The energy counter integrates the power: it grows.
energy() { grep -E '^DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION\{gpu="0",' <<<"$1" | awk '{print $NF}'; }
e0=$(energy "$body")
energy_grew() { [ "$(energy "$(metrics)")" -gt "$e0" ]; }
wait_until 20 "the energy counter to grow" energy_grew
ok "energy counter grows with the collections"

# The same port twice: the second cannot bind.
expect_status 1 "port in use" -- --listen "127.0.0.1:$GPU_PORT" --power constant:1
grep -q "^Error: bind 127.0.0.1:$GPU_PORT" "$WORK/err" || fail "port in use: $(cat "$WORK/err")"

# SIGTERM: exit 0 with the stop line.
kill -TERM "$GPU_PID"
status=0
wait "$GPU_PID" || status=$?
[ "$status" = 0 ] || fail "SIGTERM: exit $status"
grep -qx 'sim-gpu: stopped reason=SIGTERM' "$WORK/plain.log" || fail "stop line: $(cat "$WORK/plain.log")"
ok "a second instance on the same port exits 1; SIGTERM exits 0"

# --- a trace, MIG, profiling, no hostname ------------------------------------------------------
printf '# per-GPU board power\ntime_s,all,gpu1\n0,111,222\n3600,111,222\n' >"$WORK/trace.csv"
start_gpu trace --gpus 3 --power "trace:$WORK/trace.csv" --mig 2 --profiling --no-hostname
body=$(metrics) || fail "GET /metrics (trace)"
power_line "$body" 0 | grep -q '} 111.000000$' || fail "trace: GPU 0 $(power_line "$body" 0)"
power_line "$body" 1 | grep -q '} 222.000000$' || fail "trace: GPU 1 $(power_line "$body" 1)"
[ "$(grep -c '^DCGM_FI_DEV_POWER_USAGE{gpu="2",.*GPU_I_PROFILE="[^"]*",GPU_I_ID="[12]"' <<<"$body")" = 2 ] ||
  fail "MIG: two instances of GPU 2: $body"
grep -q '^DCGM_FI_PROF_SM_ACTIVE{gpu="0",' <<<"$body" || fail "--profiling: no SM_ACTIVE"
! grep -q 'Hostname=' <<<"$body" || fail "--no-hostname"
stop "$GPU_PID"
ok "trace per GPU and for all, MIG instances, profiling fields, no Hostname"

# --- GPU faults observed over time -------------------------------------------------------------
# The baseline UUIDs of simnode come from the plain run above (deterministic).
at=$(scaled 2500)
until_ms=$(scaled 5000)
start_gpu faults --gpus 4 --hostname simnode --collect-interval-ms 50 \
  --fault "vanish:1@$at-$until_ms" --fault "uuid-change:2@$at"
body=$(metrics) || fail "GET /metrics (faults)"
[ -n "$(power_line "$body" 1)" ] || fail "GPU 1 gone before its vanish time"
[ "$(uuid_of "$body" 0)" = "$uuid0" ] || fail "the UUID of GPU 0 differs between runs"
uuid2=$(uuid_of "$body" 2)
[ -n "$uuid2" ] || fail "GPU 2 has no UUID"
gpu1_gone() { [ -z "$(power_line "$(metrics)" 1)" ]; }
wait_until 30 "GPU 1 to vanish" gpu1_gone
body=$(metrics)
[ "$(grep -c '^DCGM_FI_DEV_POWER_USAGE{' <<<"$body")" = 3 ] || fail "vanish: the others stay: $body"
! grep -q 'gpu="1"' <<<"$body" || fail "vanish: a series of GPU 1 is left"
uuid2_changed() {
  local now
  now=$(uuid_of "$(metrics)" 2)
  [ -n "$now" ] && [ "$now" != "$uuid2" ]
}
wait_until 30 "GPU 2's UUID to change" uuid2_changed
[ "$(uuid_of "$(metrics)" 0)" = "$uuid0" ] || fail "uuid-change touched GPU 0"
gpu1_back() { [ -n "$(power_line "$(metrics)" 1)" ]; }
wait_until 30 "GPU 1 to come back" gpu1_back
stop "$GPU_PID"
ok "GPU 1 vanishes and comes back, GPU 2 changes UUID, the others stay"

# --- endpoint faults ---------------------------------------------------------------------------
start_gpu http500 --gpus 1 --power constant:100 --fault "http500@0-$(scaled 1500)"
code=$(curl -s -o "$WORK/500.body" -w '%{http_code}' "http://127.0.0.1:$GPU_PORT/metrics")
[ "$code" = 500 ] || fail "http500: status $code"
[ "$(cat "$WORK/500.body")" = "internal server error" ] || fail "http500 body: $(cat "$WORK/500.body")"
served() { [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$GPU_PORT/metrics")" = 200 ]; }
wait_until 30 "the 500s to end" served
stop "$GPU_PID"
ok "http500 window: 500 'internal server error', then 200"

start_gpu garbage --gpus 1 --power constant:100 --fault garbage
curl -sf "http://127.0.0.1:$GPU_PORT/metrics" >"$WORK/garbage.body" || fail "garbage: not 200"
! promtool check metrics <"$WORK/garbage.body" >/dev/null 2>&1 || fail "garbage parsed as metrics"
stop "$GPU_PID"
ok "garbage: 200 with a body no parser accepts"

start_gpu slow --gpus 1 --power constant:100 --fault slow:400
t=$(curl -sf -o /dev/null -w '%{time_total}' "http://127.0.0.1:$GPU_PORT/metrics") || fail "slow: no answer"
awk -v t="$t" 'BEGIN { exit !(t >= 0.4) }' || fail "slow: answered in $t s"
stop "$GPU_PID"
ok "slow:400: the answer takes at least 0.4 s"

start_gpu hang --gpus 1 --power constant:100 --fault hang
rc=0
curl -s -o /dev/null --max-time 1 "http://127.0.0.1:$GPU_PORT/metrics" || rc=$?
[ "$rc" = 28 ] || fail "hang: curl exit $rc, want 28 (connected, no answer in time)"
# A request is still held when SIGTERM comes: the stop releases it. (The pause only gives the
# request time to arrive; the checks hold whether it did or not.)
curl -s -o /dev/null --max-time "$(scaled 30)" "http://127.0.0.1:$GPU_PORT/metrics" &
held=$!
sleep 0.2
kill -TERM "$GPU_PID"
status=0
wait "$GPU_PID" || status=$?
[ "$status" = 0 ] || fail "hang: SIGTERM exit $status"
wait "$held" || true
ok "hang: the connection is accepted, never answered; SIGTERM still exits 0"

# --duration-s ends on its own; load power (the default) stays within idle..max.
expect_status 0 "duration" -- --listen 127.0.0.1:0 --duration-s 0.5 --gpus 1
grep -qx 'sim-gpu: stopped reason=duration' "$WORK/out" || fail "duration: $(cat "$WORK/out")"
start_gpu load --gpus 2
w=$(power_line "$(metrics)" 0 | awk '{print $NF}')
awk -v w="$w" 'BEGIN { exit !(w >= 80 && w <= 740) }' || fail "load power $w W outside 90..700 W (+noise)"
stop "$GPU_PID"
ok "--duration-s exits 0; load power within idle..max"

finish
