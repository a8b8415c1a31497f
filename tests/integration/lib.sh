# Shared helpers for the integration tests: real processes, real HTTP on loopback.
# Every process started with `spawn` is stopped by PID when the test exits.
set -euo pipefail

: "${BIN:?BIN must point at the bin directory of a build}"
# Emulated runs (make test-arm64: arm64 binaries under qemu-user) are several times slower
# than native ones. CPUPOWER_TEST_TIME_SCALE (a whole number, 1 when unset; the cross build's
# ctest sets it, tests/CMakeLists.txt) multiplies every time bound a test asserts and every
# readiness wait: a bound that holds natively holds scaled under emulation, and the scale is
# named in the failure message. Order and accounting assertions are never scaled.
TIME_SCALE=${CPUPOWER_TEST_TIME_SCALE:-1}
[[ "$TIME_SCALE" =~ ^[1-9][0-9]*$ ]] || { echo "CPUPOWER_TEST_TIME_SCALE must be a whole number >= 1" >&2; exit 2; }
# scaled N: N (a whole number of ms or s) times TIME_SCALE.
scaled() { echo $(($1 * TIME_SCALE)); }
# scale_note: " (time bounds x N under emulation)" when scaled, else nothing.
scale_note() { [ "$TIME_SCALE" = 1 ] || echo " (time bounds x$TIME_SCALE under emulation)"; }
WORK=$(mktemp -d /tmp/cpupower-it.XXXXXX)
PIDS=()
CHECKS=0

cleanup() {
  local pid
  for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
  done
  rm -rf "$WORK"
}
trap cleanup EXIT

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

ok() {
  CHECKS=$((CHECKS + 1))
  echo "ok - $*"
}

# spawn NAME CMD...: runs CMD in the background with stdout+stderr in $WORK/NAME.log.
spawn() {
  local name=$1
  shift
  "$@" >"$WORK/$name.log" 2>&1 &
  PIDS+=($!)
  LAST_PID=$!
}

# wait_for_line FILE REGEX [TIMEOUT_S]: waits until FILE has a line matching REGEX.
wait_for_line() {
  local file=$1 re=$2 timeout=$((${3:-10} * TIME_SCALE))
  local end=$((SECONDS + timeout))
  while ((SECONDS < end)); do
    grep -qE "$re" "$file" 2>/dev/null && return 0
    sleep 0.05
  done
  echo "--- $file" >&2
  cat "$file" >&2 || true
  fail "timed out waiting for /$re/ in $file"
}

# wait_until TIMEOUT_S WHAT CMD...: runs CMD until it succeeds; fails naming WHAT after
# TIMEOUT_S (scaled). The readiness wait for a state with no log line of its own.
wait_until() {
  local timeout=$(($1 * TIME_SCALE)) what=$2
  shift 2
  local end=$((SECONDS + timeout))
  until "$@"; do
    ((SECONDS < end)) || fail "timed out after ${timeout} s waiting for: $what"
    sleep 0.05
  done
}

# free_port: a port nothing on loopback listens on now, for a server that cannot bind port 0
# and report the port it got (Prometheus). Chosen at random below the kernel's ephemeral
# range, so tests side by side rarely pick the same one.
free_port() {
  local port
  for _ in $(seq 20); do
    port=$((20000 + RANDOM % 12000))
    (echo >"/dev/tcp/127.0.0.1/$port") 2>/dev/null || break
  done
  echo "$port"
}

# gone PID: PID has exited (no such process, or a zombie its parent has not reaped yet).
gone() {
  local state
  state=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1) || return 0
  [ -z "$state" ] || [ "$state" = Z ]
}

# start_sim NAME ROOT [ARGS...]: a simulated node, ready when it says so.
start_sim() {
  local name=$1 root=$2
  shift 2
  spawn "$name" "$BIN/cpu-power" sim-node --root "$root" "$@"
  SIM_PID=$LAST_PID
  wait_for_line "$WORK/$name.log" '^sim-node ready' 10
}

# start_exporter NAME ARGS...: an exporter on an ephemeral loopback port; sets PORT.
start_exporter() {
  local name=$1
  shift
  spawn "$name" "$BIN/cpu-power-exporter" --bind 127.0.0.1 --port 0 "$@"
  EXPORTER_PID=$LAST_PID
  wait_for_line "$WORK/$name.log" 'listening addr=' 15
  PORT=$(grep -oE 'listening addr=[0-9.]+:[0-9]+' "$WORK/$name.log" | head -1 | sed 's/.*://')
}

# stop PID: SIGTERM, then wait for it to exit.
stop() {
  kill -TERM "$1" 2>/dev/null || true
  for _ in $(seq "$(scaled 100)"); do kill -0 "$1" 2>/dev/null || return 0; sleep 0.05; done
  fail "process $1 did not stop in $(scaled 5) s$(scale_note)"
}

finish() {
  echo "$CHECKS passed, 0 failed"
}

# demo_session CPU_POWER DIR SIM_GPUS IDLE_S [RUN_ARGS...]: the session of `make demo`
# (scripts/demo.sh: its recipe, every leg, two simulated GB200 nodes) into DIR with
# SIM_GPUS GPUs a node, around scripts/demo-bench.py (IDLE_S s idle, 3 s of load scaled, IDLE_S
# s idle; its sa-bench summary kept as DIR/benchmark.out, where the session finds the result
# it stamps a window for). The run's log is DIR.log; a non-zero exit fails the test.
demo_session() {
  local cpu_power=$1 dir=$2 gpus=$3 idle=$4
  shift 4
  local root
  root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
  cat >"$dir.recipe.yaml" <<'YAML'
benchmark: {type: sa-bench}
telemetry:
  enabled: true
  collect_interval_ms: 250
  dcgm_exporter: {container_image: dcgm-exporter, port: 9400}
  cpu_power_exporter: {port: 9405, source: auto}
  cpu_power:
    enabled: true
    sample_interval_seconds: 0.1
YAML
  mkdir -p "$dir"
  local rc=0
  "$cpu_power" run --simulate gb200 --nodes node1,node2 --sim-gpus "$gpus" --config "$dir.recipe.yaml" \
    --log-dir "$dir" "$@" -- \
    sh -c "/usr/bin/python3 $root/scripts/demo-bench.py $dir --seconds $(scaled 3) --idle $idle --concurrency 4 >$dir/benchmark.out" \
    >"$dir.log" 2>&1 || rc=$?
  [ "$rc" = 0 ] || fail "cpu-power run $* into $dir exited $rc (log: $(tail -20 "$dir.log"))"
}
