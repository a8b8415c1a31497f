#!/usr/bin/env bash
# How many nodes one Prometheus scrapes at 15 s on this machine, and what a window's energy
# report across all of them costs from Prometheus and from VictoriaMetrics (remote write).
#
# Running a simulated node and an exporter per target is too heavy for a small machine, so
# EXPORTERS exporters (each on its own simulated GB200 node, constant power) are each scraped
# as ALIASES targets, every one with its own `node` and `instance` labels: Prometheus scrapes
# EXPORTERS x ALIASES targets (200 by default) and stores every target's series apart, as it
# would for that many nodes. ADDRESSES=loopback gives each alias its own address instead
# (127.0.0.1, 127.0.0.2, ...: the exporters then bind 0.0.0.0, reachable from the network
# while the benchmark runs); the default, ADDRESSES=labels, keeps them on 127.0.0.1.
#
# Figures: scrapes in the window (missed ones, failed ones, `up == 0`),
# scrape_duration_seconds, prometheus_target_interval_length_seconds, Prometheus' and
# VictoriaMetrics' CPU and memory, remote write's lag, the exporters' CPU; then
# `cpu-power report --prometheus` over the window [S, E] across all targets, from each store:
# its wall time, its rows, its energy against the simulated power x window, and the store's
# query cost (Prometheus: the HTTP API's and prometheus_engine_query_duration_seconds' time;
# VictoriaMetrics: vmselect_request_duration_seconds).
#
# The window defaults to 60 s for a quick run; the goal it measures is a 1 h window
# (WINDOW_S=3600, about 1 h 5 min in all). It needs `cpu-power report --prometheus` and the
# exporter's energy counters, and is not run in CI.
#
# Usage: [EXPORTERS=20] [ALIASES=10] [INTERVAL_S=15] [ADDRESSES=labels|loopback] [LOOKBACK=S]
#        bench/store_scale.sh BIN_DIR [WINDOW_S]
set -euo pipefail
BIN=${1:-build/bin}
WINDOW_S=${2:-${WINDOW_S:-60}}
EXPORTERS=${EXPORTERS:-20}
ALIASES=${ALIASES:-10}
INTERVAL_S=${INTERVAL_S:-15}
ADDRESSES=${ADDRESSES:-labels}
PY=/usr/bin/python3
DEPLOY="$(cd "$(dirname "$0")/../deploy/prometheus" && pwd)"
case "$ADDRESSES" in labels | loopback) ;; *) echo "ADDRESSES is labels or loopback" >&2; exit 2 ;; esac
((ALIASES <= 250)) || { echo "ALIASES is at most 250 (127.0.0.1..250)" >&2; exit 2; }
for tool in prometheus victoria-metrics curl; do
  command -v "$tool" >/dev/null || { echo "$tool is not installed (scripts/install-deps.sh)" >&2; exit 1; }
done
TARGETS=$((EXPORTERS * ALIASES))

WORK=$(mktemp -d /tmp/cpupower-store-bench.XXXXXX)
PIDS=()       # stopped last, in order
PROM_PID=""   # stopped first, while the store still takes its remote write
cleanup() {
  local pid
  if [ -n "$PROM_PID" ]; then
    kill -TERM "$PROM_PID" 2>/dev/null || true
    for _ in $(seq 100); do kill -0 "$PROM_PID" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$PROM_PID" 2>/dev/null || true
  fi
  for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
  done
  rm -rf "$WORK"
}
trap cleanup EXIT
die() { echo "store_scale: $*" >&2; exit 1; }
say() { echo "store_scale: $*" >&2; }
# until_ok TIMEOUT_S WHAT CMD...: CMD until it succeeds, every 0.5 s.
until_ok() {
  local end=$((SECONDS + $1)) what=$2
  shift 2
  until "$@"; do
    ((SECONDS < end)) || die "timed out after $1 s waiting for $what"
    sleep 0.5
  done
}
free_port() {
  local port
  for _ in $(seq 50); do
    port=$((20000 + RANDOM % 12000))
    case " ${TAKEN:-} " in *" $port "*) continue ;; esac
    (echo >"/dev/tcp/127.0.0.1/$port") 2>/dev/null || { TAKEN="${TAKEN:-} $port"; echo "$port"; return 0; }
  done
  die "no free port"
}

# --- simulated nodes and their exporters ---------------------------------------------------
bind=127.0.0.1
[ "$ADDRESSES" = loopback ] && bind=0.0.0.0
say "$EXPORTERS simulated nodes and exporters (bind $bind), $ALIASES targets each: $TARGETS targets"
EXP_PIDS=()
EXP_PORTS=()
for i in $(seq "$EXPORTERS"); do
  "$BIN/cpu-power" sim-node --root "$WORK/node$i" --profile gb200 --model constant --load 0.5 \
    --no-noise >"$WORK/sim$i.log" 2>&1 &
  PIDS+=($!)
done
for i in $(seq "$EXPORTERS"); do
  until_ok 30 "sim-node $i" grep -q '^sim-node ready' "$WORK/sim$i.log"
  "$BIN/cpu-power-exporter" --bind "$bind" --port 0 --hwmon-root "$WORK/node$i" >"$WORK/exp$i.log" 2>&1 &
  PIDS+=($!)
  EXP_PIDS+=($!)
done
for i in $(seq "$EXPORTERS"); do
  until_ok 30 "exporter $i" grep -q 'listening addr=' "$WORK/exp$i.log"
  EXP_PORTS+=("$(grep -oE 'listening addr=[0-9.]+:[0-9]+' "$WORK/exp$i.log" | head -1 | sed 's/.*://')")
done
# Each simulated node's socket envelopes (W): every alias of exporter i draws node i's power.
$PY - "$WORK" "$EXPORTERS" >"$WORK/power.json" <<'PY'
import glob, json, sys
work, n = sys.argv[1], int(sys.argv[2])
power = {}
for i in range(1, n + 1):
    w = 0.0
    for info in glob.glob(f"{work}/node{i}/hwmon*/power*_oem_info"):
        if open(info).read().startswith("Grace Power Socket"):
            w += int(open(info[:-len("oem_info")] + "average").read()) / 1e6
    power[str(i)] = w
json.dump(power, sys.stdout)
PY

# --- the stores ----------------------------------------------------------------------------
VM_PORT=$(free_port)
PROM_PORT=$(free_port)
VM="http://127.0.0.1:$VM_PORT"
PROM="http://127.0.0.1:$PROM_PORT"
# -search.latencyOffset=5s: by default VictoriaMetrics hides the last 30 s from queries.
victoria-metrics -storageDataPath="$WORK/vm" -httpListenAddr="127.0.0.1:$VM_PORT" \
  -retentionPeriod=1d -search.latencyOffset=5s -loggerLevel=WARN >"$WORK/vm.log" 2>&1 &
PIDS+=($!)
until_ok 30 "VictoriaMetrics" curl -sf "$VM/health" -o /dev/null

# One target group per target: its address and its own node and instance labels. The
# deployment's rules (recording.yml, energy.yml) are evaluated, as a site's Prometheus would.
$PY - "$ADDRESSES" "$ALIASES" "$INTERVAL_S" "$VM/api/v1/write" "$DEPLOY" "${EXP_PORTS[@]}" \
  >"$WORK/prometheus.yml" <<'PY'
import sys, yaml
mode, aliases, interval, url, deploy, ports = sys.argv[1], int(sys.argv[2]), sys.argv[3], \
    sys.argv[4], sys.argv[5], sys.argv[6:]
groups = []
for i, port in enumerate(ports, 1):
    for j in range(1, aliases + 1):
        host = f"127.0.0.{j}" if mode == "loopback" else "127.0.0.1"
        node = f"n{i:03d}-{j:03d}"
        groups.append({"targets": [f"{host}:{port}"],
                       "labels": {"node": node, "instance": f"{node}:9405"}})
timeout = f"{min(int(interval), 10)}s"
config = {
    "global": {"scrape_interval": f"{interval}s", "evaluation_interval": f"{interval}s"},
    "rule_files": [f"{deploy}/recording.yml", f"{deploy}/energy.yml"],
    "scrape_configs": [{"job_name": "cpu_power_scale", "scrape_interval": f"{interval}s",
                        "scrape_timeout": timeout, "static_configs": groups}],
    "remote_write": [{"url": url, "metadata_config": {"send": False}}],
}
yaml.safe_dump(config, sys.stdout, sort_keys=False)
PY
prometheus --config.file="$WORK/prometheus.yml" --storage.tsdb.path="$WORK/tsdb" \
  --web.listen-address="127.0.0.1:$PROM_PORT" >"$WORK/prom.log" 2>&1 &
PROM_PID=$!

# q URL QUERY [TIME]: the first result's value of an instant query, or empty.
q() {
  local args=(--data-urlencode "query=$2")
  [ -n "${3:-}" ] && args+=(--data-urlencode "time=$3")
  { curl -sf -G "$1/api/v1/query" "${args[@]}" || true; } | $PY -c '
import json, sys
try:
    r = json.load(sys.stdin)["data"]["result"]
except ValueError:  # no answer (yet)
    r = []
print(r[0]["value"][1] if r else "")'
}
# m URL REGEX: the sum of the samples in URL/metrics whose name and labels match REGEX.
m() {
  curl -sf "$1/metrics" | $PY -c '
import re, sys
pat = re.compile(sys.argv[1])
total = 0.0
for line in sys.stdin:
    if line.startswith("#") or not line.strip():
        continue
    key, _, value = line.rstrip("\n").rpartition(" ")
    if pat.fullmatch(key):
        total += float(value)
print(f"{total:.6g}")' "$2"
}
# cpu_ticks PID...: the CPU time the processes used so far, in clock ticks.
cpu_ticks() {
  local pid t=0
  for pid in "$@"; do t=$((t + $(awk '{print $14 + $15}' "/proc/$pid/stat"))); done
  echo "$t"
}
TCK=$(getconf CLK_TCK)

all_up() { [ "$(q "$PROM" 'count(up{job="cpu_power_scale"} == 1)')" = "$TARGETS" ]; }
until_ok $((INTERVAL_S * 3 + 30)) "all $TARGETS targets up" all_up
S=$((EPOCHSECONDS + 1))
E=$((S + WINDOW_S))
say "all $TARGETS targets up; window $S..$E ($WINDOW_S s)"
sleep $((S - EPOCHSECONDS))
prom_cpu0=$(m "$PROM" 'process_cpu_seconds_total')
vm_cpu0=$(m "$VM" 'process_cpu_seconds_total')
exp_ticks0=$(cpu_ticks "${EXP_PIDS[@]}")
# Past E by one scrape interval and the stores' delays (remote write's batches, the store's
# latency offset), so that both have a sample after E of every target.
sleep $((E - EPOCHSECONDS))
prom_cpu1=$(m "$PROM" 'process_cpu_seconds_total')
vm_cpu1=$(m "$VM" 'process_cpu_seconds_total')
exp_ticks1=$(cpu_ticks "${EXP_PIDS[@]}")
sleep $((INTERVAL_S + 10))

# --- the scrapes in the window --------------------------------------------------------------
W="${WINDOW_S}s"
sel='{job="cpu_power_scale"}'
per_target=$((WINDOW_S / INTERVAL_S))
up_at_e=$(q "$PROM" "count(up$sel == 1)" "$E")
down_at_e=$(q "$PROM" "count(up$sel == 0) or vector(0)" "$E")
scrapes=$(q "$PROM" "sum(count_over_time(up${sel}[$W]))" "$E")
failed=$(q "$PROM" "sum(count_over_time(up${sel}[$W])) - sum(sum_over_time(up${sel}[$W]))" "$E")
short=$(q "$PROM" "count(count_over_time(up${sel}[$W]) < $per_target) or vector(0)" "$E")
dur_p50=$(q "$PROM" "quantile(0.5, quantile_over_time(0.5, scrape_duration_seconds${sel}[$W]))" "$E")
dur_p99=$(q "$PROM" "quantile(0.99, quantile_over_time(0.99, scrape_duration_seconds${sel}[$W]))" "$E")
dur_max=$(q "$PROM" "max(max_over_time(scrape_duration_seconds${sel}[$W]))" "$E")
samples_per_scrape=$(q "$PROM" "avg(scrape_samples_scraped$sel)" "$E")
int_p50=$(m "$PROM" "prometheus_target_interval_length_seconds\\{interval=\"${INTERVAL_S}s\",quantile=\"0.5\"\\}")
int_p99=$(m "$PROM" "prometheus_target_interval_length_seconds\\{interval=\"${INTERVAL_S}s\",quantile=\"0.99\"\\}")
head_series=$(m "$PROM" 'prometheus_tsdb_head_series')
prom_rss=$(m "$PROM" 'process_resident_memory_bytes')
rules_s=$(m "$PROM" 'prometheus_rule_group_last_duration_seconds\{.*\}')
rw_sent=$(m "$PROM" 'prometheus_remote_storage_samples_total\{.*\}')
rw_failed=$(m "$PROM" 'prometheus_remote_storage_samples_failed_total\{.*\}')
rw_pending=$(m "$PROM" 'prometheus_remote_storage_samples_pending\{.*\}')
rw_lag=$($PY -c 'import sys; print(f"{float(sys.argv[1]) - float(sys.argv[2]):.3g}")' \
  "$(m "$PROM" 'prometheus_remote_storage_highest_timestamp_in_seconds')" \
  "$(m "$PROM" 'prometheus_remote_storage_queue_highest_sent_timestamp_seconds\{.*\}')")
vm_rss=$(m "$VM" 'process_resident_memory_bytes')
vm_rows=$(m "$VM" 'vm_rows_inserted_total\{type="promremotewrite"\}')
vm_series=$(q "$VM" "count({__name__=~\".+\",job=\"cpu_power_scale\"})")

# --- the report across all targets, from each store ----------------------------------------
# report NAME URL COST_BEFORE_CMD...: runs the report; sets REPORT_S (wall s).
lookback=()
[ -n "${LOOKBACK:-}" ] && lookback=(--lookback "$LOOKBACK")
report() {
  local name=$1 url=$2 t0 rc=0
  t0=$EPOCHREALTIME
  "$BIN/cpu-power" report --prometheus "$url" --window "$S" "$E" --match "$sel" "${lookback[@]}" \
    --json-out "$WORK/$name.json" >"$WORK/$name.txt" 2>&1 || rc=$?
  REPORT_S=$($PY -c 'import sys; print(f"{float(sys.argv[2]) - float(sys.argv[1]):.3f}")' "$t0" "$EPOCHREALTIME")
  [ "$rc" = 0 ] || { tail -20 "$WORK/$name.txt" >&2; die "cpu-power report --prometheus $url exited $rc"; }
}
# The HTTP API's and the engine's time in Prometheus, and vmselect's in VictoriaMetrics.
prom_http_sum() { m "$PROM" 'prometheus_http_request_duration_seconds_sum\{handler="/api/v1/[^"]*".*\}'; }
prom_http_count() { m "$PROM" 'prometheus_http_request_duration_seconds_count\{handler="/api/v1/[^"]*".*\}'; }
prom_engine_sum() { m "$PROM" 'prometheus_engine_query_duration_seconds_sum\{.*\}'; }
vm_sel_sum() { m "$VM" 'vmselect_request_duration_seconds_sum'; }
vm_sel_count() { m "$VM" 'vmselect_request_duration_seconds_count'; }

# VictoriaMetrics' /metrics lags its requests by up to a second: each reading waits 2 s.
p_http0=$(prom_http_sum); p_n0=$(prom_http_count); p_eng0=$(prom_engine_sum)
report prom "$PROM"
prom_report_s=$REPORT_S
sleep 2
p_http1=$(prom_http_sum); p_n1=$(prom_http_count); p_eng1=$(prom_engine_sum)
v_sum0=$(vm_sel_sum); v_n0=$(vm_sel_count)
report vm "$VM"
vm_report_s=$REPORT_S
sleep 2
v_sum1=$(vm_sel_sum); v_n1=$(vm_sel_count)

# Energy per target against the simulated power x window; the two stores against each other.
read -r prom_rows prom_j prom_err vm_rows_n vm_j vm_err stores_diff < <($PY - "$WORK/prom.json" \
  "$WORK/vm.json" "$WORK/power.json" "$WINDOW_S" <<'PY'
import json, sys
power = json.load(open(sys.argv[3]))
seconds = float(sys.argv[4])
def load(path):
    d = json.load(open(path))
    if isinstance(d, list):
        d = d[0]
    return {r["label"]: r["joules"] for r in d["cpu_per_node"]}
def expected(label):  # cpu/nIII-JJJ draws exporter III's node's power
    return power[str(int(label[len("cpu/n"):].split("-")[0]))] * seconds
out = []
rows = {}
for path in sys.argv[1:3]:
    r = load(path)
    rows[path] = r
    worst = max((abs(j - expected(l)) / expected(l) for l, j in r.items()), default=float("nan"))
    out += [len(r), f"{sum(r.values()):.6g}", f"{100 * worst:.3f}"]
a, b = rows[sys.argv[1]], rows[sys.argv[2]]
diff = max((abs(a[l] - b[l]) / a[l] for l in a if l in b), default=float("nan"))
out.append(f"{100 * diff:.4f}")
print(*out)
PY
)

f() { $PY -c 'import sys; print(f"{float(sys.argv[1]):.{int(sys.argv[2])}f}")' "$1" "${2:-3}"; }
mib() { $PY -c 'import sys; print(f"{float(sys.argv[1]) / 2**20:.0f}")' "$1"; }
diff_s() { $PY -c 'import sys; print(f"{float(sys.argv[2]) - float(sys.argv[1]):.3f}")' "$1" "$2"; }
want_j=$($PY -c 'import json,sys; p=json.load(open(sys.argv[1])); print(f"{sum(p.values()) * int(sys.argv[2]) * int(sys.argv[3]):.6g}")' \
  "$WORK/power.json" "$ALIASES" "$WINDOW_S")

echo "| figure | value |"
echo "|---|---|"
echo "| targets | $TARGETS ($EXPORTERS exporters x $ALIASES addresses, ADDRESSES=$ADDRESSES) |"
echo "| scrape interval, window | ${INTERVAL_S} s, $WINDOW_S s ($S..$E) |"
echo "| targets up / down at E | $up_at_e / $down_at_e |"
echo "| scrapes in the window (about $per_target per target) | $scrapes of about $((TARGETS * per_target)) |"
echo "| failed scrapes (up == 0) in the window | $failed |"
echo "| targets with a missed scrape (< $per_target in the window) | $short |"
echo "| samples per scrape | $(f "$samples_per_scrape" 0) |"
echo "| scrape_duration_seconds p50 / p99 / max | $(f "$dur_p50" 4) / $(f "$dur_p99" 4) / $(f "$dur_max" 4) s |"
echo "| prometheus_target_interval_length_seconds p50 / p99 | $(f "$int_p50") / $(f "$int_p99") s |"
echo "| Prometheus head series, RSS | $(f "$head_series" 0), $(mib "$prom_rss") MiB |"
echo "| Prometheus CPU in the window | $(diff_s "$prom_cpu0" "$prom_cpu1") s ($WINDOW_S s) |"
echo "| rule groups' last evaluation (recording.yml + energy.yml) | $(f "$rules_s" 4) s |"
echo "| remote write: samples sent / failed / pending, lag | $(f "$rw_sent" 0) / $(f "$rw_failed" 0) / $(f "$rw_pending" 0), $rw_lag s |"
echo "| VictoriaMetrics series, rows inserted, RSS | $vm_series, $(f "$vm_rows" 0), $(mib "$vm_rss") MiB |"
echo "| VictoriaMetrics CPU in the window | $(diff_s "$vm_cpu0" "$vm_cpu1") s |"
echo "| exporters' CPU in the window (all $EXPORTERS) | $($PY -c 'import sys; print(f"{(int(sys.argv[2]) - int(sys.argv[1])) / int(sys.argv[3]):.2f}")' "$exp_ticks0" "$exp_ticks1" "$TCK") s |"
echo "| simulated energy, all targets | $want_j J |"
echo "| report from Prometheus: wall, rows, energy, worst row vs simulated | $prom_report_s s, $prom_rows, $prom_j J, $prom_err % |"
echo "| Prometheus query cost: API requests, API time, engine time | $(f "$(diff_s "$p_n0" "$p_n1")" 0), $(diff_s "$p_http0" "$p_http1") s, $(diff_s "$p_eng0" "$p_eng1") s |"
echo "| report from VictoriaMetrics: wall, rows, energy, worst row vs simulated | $vm_report_s s, $vm_rows_n, $vm_j J, $vm_err % |"
echo "| VictoriaMetrics query cost: requests, vmselect time | $(f "$(diff_s "$v_n0" "$v_n1")" 0), $(diff_s "$v_sum0" "$v_sum1") s |"
echo "| the stores' reports, largest row difference | $stores_diff % |"
if [ "$prom_rows" != "$TARGETS" ] || [ "$vm_rows_n" != "$TARGETS" ]; then
  say "a report has fewer rows than the $TARGETS targets (Prometheus $prom_rows, VictoriaMetrics $vm_rows_n)"
fi
