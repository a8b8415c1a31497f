#!/usr/bin/env bash
# The exporter's DCGM and NVML paths, loaded with dlopen from stand-in libraries that export
# the same C symbols (tests/standins): the complete --source ladder, exact bodies and log
# lines, cleanup order, exit codes, and HTTP that stays fast while a library call hangs.
source "$(dirname "$0")/lib.sh"
: "${STANDINS:?STANDINS must point at the stand-in libraries}"
DCGM="$STANDINS/libdcgm.so.4"
NVML="$STANDINS/libnvidia-ml.so.1"
export FAKE_DCGM_CONTROL="$WORK/dcgm.ctl" FAKE_NVML_CONTROL="$WORK/nvml.ctl"
mkdir -p "$WORK/empty"

# base_family BODY FAMILY: the family's lines up to the next family.
base_family() { awk -v f="$2" '/^# HELP /{on = ($3 == f)} on' <<<"$1"; }
run_exporter() {
  set +e
  timeout 20 "$BIN/cpu-power-exporter" --bind 127.0.0.1 --port 0 "$@" >"$WORK/run.out" 2>"$WORK/run.err"
  RC=$?
  set -e
}
ms_of() { curl -s -o /dev/null -w '%{time_total}' "$1" | awk '{printf "%d", $1 * 1000}'; }
# The slowest of 15 rounds of /health and /metrics, in ms. A request blocked behind the hung
# library would take its 10 s; 1 s tells that apart from a busy machine's scheduling delays.
worst_ms() {
  local worst=0 t u
  for _ in $(seq 15); do
    for u in health metrics; do t=$(ms_of "http://127.0.0.1:$PORT/$u"); [ "$t" -gt "$worst" ] && worst=$t; done
    sleep 0.1
  done
  echo "$worst"
}

# --- auto: no ACPI -> DCGM 1130 + 1132 ---------------------------------------------------
cat >"$FAKE_DCGM_CONTROL" <<CTL
entities=0,1
value.0.1130=50.149
value.0.1132=6.125
value.1.1130=46.765
value.1.1132=status:-6
calls=$WORK/calls
CTL
start_exporter dcgm --hwmon-root "$WORK/empty" --powercap-root "$WORK/empty" --dcgm-lib "$DCGM" --nvml-lib "$NVML" --max-age-s 1
body=$(curl -sf "http://127.0.0.1:$PORT/metrics")
want='# HELP cpu_power_dcgm_watts Grace CPU power via DCGM CPU-entity fields (W): field_id=1130 is the CPU rail (ACPI '"'"'CPU Power Socket N'"'"'), 1132 the SysIO rail; DCGM has no socket-envelope field.
# TYPE cpu_power_dcgm_watts gauge
cpu_power_dcgm_watts{socket="0",field_id="1130",source="dcgm"} 50.149000
cpu_power_dcgm_watts{socket="0",field_id="1132",source="dcgm"} 6.125000
cpu_power_dcgm_watts{socket="1",field_id="1130",source="dcgm"} 46.765000'
[ "$(base_family "$body" cpu_power_dcgm_watts)" = "$want" ] || { echo "$body"; fail "DCGM body differs"; }
grep -qF 'cpu_power_exporter_info{version="0.1.0",source="dcgm"} 1' <<<"$body" || fail "info gauge"
grep -qF 'cpu_power_exporter_sample_age_seconds{sensor="dcgm/cpu0/1130",socket="0",field_id="1130",source="dcgm"}' <<<"$body" || fail "DCGM sample age"
for counter in joules covered_seconds bridged_seconds; do
  grep -qE "^cpu_power_dcgm_${counter}_total\{socket=\"0\",field_id=\"1130\",source=\"dcgm\"\} [0-9]+\.[0-9]{6}\$" <<<"$body" ||
    { echo "$body"; fail "DCGM $counter counter"; }
done
# DCGM publishes no averaging interval: its integrated time is all bridged, none covered.
grep -qxF 'cpu_power_dcgm_covered_seconds_total{socket="0",field_id="1130",source="dcgm"} 0.000000' <<<"$body" ||
  fail "DCGM covered seconds without an averaging interval"
promtool check metrics <<<"$body" >"$WORK/pt" 2>&1 && [ ! -s "$WORK/pt" ] || { cat "$WORK/pt"; fail "promtool"; }
log="$WORK/dcgm.log"
grep -qF 'WARN cpu_power_exporter: ACPI unusable; falling back to RAPL reason="no ACPI power_meter hwmon sensors found under' "$log" || fail "no ACPI step-down WARN"
grep -qF 'WARN cpu_power_exporter: RAPL unusable; falling back to DCGM reason="no RAPL: no intel-rapl package zones under' "$log" || fail "no RAPL step-down WARN"
grep -qF 'INFO cpu_power_exporter::dcgm: no running DCGM daemon; starting embedded instance reason="dcgmConnect: error -2"' "$log" || fail "embedded INFO"
grep -qF 'INFO cpu_power_exporter::dcgm: DCGM reader initialised (CPU rail + SysIO; no socket envelope) cpu_count=2 cpu_ids=[0, 1] fields=[1130, 1132]' "$log" || fail "initialised INFO"
grep -q '^dcgmConnect_v2$' "$WORK/calls" || fail "the bounded connect (dcgmConnect_v2) was not used"
ok "auto without ACPI: DCGM 1130 + 1132, exact body, non-OK status dropped, log lines, promtool clean"

# A DCGM call that hangs: HTTP stays fast, the readings go stale and are withheld.
echo 'latest=hang:10000' >>"$FAKE_DCGM_CONTROL"
sleep 0.3
worst=$(worst_ms)
[ "$worst" -lt "$(scaled 1000)" ] || fail "HTTP took $worst ms while DCGM hangs$(scale_note)"
wait_for_line "$log" 'WARN cpu_power_exporter::dcgm: DCGM reading is stale; withholding it sensor=dcgm/cpu0/1130' 5
[ -z "$(base_family "$(curl -sf "http://127.0.0.1:$PORT/metrics")" cpu_power_dcgm_watts | grep '^cpu_power_dcgm_watts{')" ] || fail "stale DCGM values still served"
ok "DCGM read hanging: /metrics and /health worst $worst ms, stale values withheld with a WARN"
stop "$EXPORTER_PID"
sed -i '/^latest=/d' "$FAKE_DCGM_CONTROL"

# --- 1132 refused: 1130 alone ------------------------------------------------------------
echo 'refuse=1132' >>"$FAKE_DCGM_CONTROL"
start_exporter refuse --hwmon-root "$WORK/empty" --powercap-root "$WORK/empty" --dcgm-lib "$DCGM" --no-nvml
body=$(curl -sf "http://127.0.0.1:$PORT/metrics")
[ "$(base_family "$body" cpu_power_dcgm_watts | grep -c '^cpu_power_dcgm_watts{')" = 2 ] || fail "1130-only body: $body"
grep -q 'field_id="1132"' <<<"$body" && fail "1132 served although refused"
grep -qF 'WARN cpu_power_exporter::dcgm: DCGM refused the full CPU power field set; watching the CPU rail only (no SysIO) fields=[1130] wanted=[1130, 1132] reason="dcgmWatchFields: error -6"' "$WORK/refuse.log" || fail "refusal WARN"
grep -qF 'DCGM reader initialised (CPU rail only; no socket envelope)' "$WORK/refuse.log" || fail "rail-only INFO"
stop "$EXPORTER_PID"
ok "1132 refused: WARN, then 1130 alone"
sed -i '/^refuse=/d' "$FAKE_DCGM_CONTROL"

# --- DCGM without a live 1130 ------------------------------------------------------------
cat >"$FAKE_DCGM_CONTROL" <<CTL
entities=0,1
calls=$WORK/calls
CTL
: >"$WORK/calls"
run_exporter --hwmon-root "$WORK/empty" --powercap-root "$WORK/empty" --dcgm-lib "$DCGM" --no-nvml
[ "$RC" = 1 ] || fail "all blank: exit $RC"
grep -qF "Error: no CPU power source could be established: ACPI: no ACPI power_meter hwmon sensors found under $WORK/empty; RAPL: no RAPL: no intel-rapl package zones under $WORK/empty; DCGM: DCGM yielded no live data: no CPU entity returned a positive field 1130 (every value blank: the embedded engine usually lacks hardware access" "$WORK/run.err" ||
  fail "all-blank message: $(cat "$WORK/run.err")"
order=$(grep -E '^dcgm(UnwatchFields|FieldGroupDestroy|GroupDestroy|StopEmbedded|Shutdown)$' "$WORK/calls" | tr '\n' ' ')
[ "$order" = "dcgmUnwatchFields dcgmFieldGroupDestroy dcgmGroupDestroy dcgmStopEmbedded dcgmShutdown " ] || fail "cleanup order: $order"
ok "all blank: exit 1 naming every rung, the hardware-access hint, and a full cleanup in order"

printf 'entities=0\nvalue.0.1132=6.1\n' >"$FAKE_DCGM_CONTROL"
run_exporter --hwmon-root "$WORK/empty" --powercap-root "$WORK/empty" --dcgm-lib "$DCGM" --no-nvml --source dcgm
[ "$RC" = 1 ] && grep -qF 'Error: DCGM yielded no live data: no CPU entity returned a positive field 1130' "$WORK/run.err" ||
  fail "a live 1132 alone must not vouch: rc=$RC $(cat "$WORK/run.err")"
ok "a live SysIO field alone does not vouch for DCGM"

printf 'embedded=fail\ncalls=%s\n' "$WORK/calls" >"$FAKE_DCGM_CONTROL"
: >"$WORK/calls"
run_exporter --hwmon-root "$WORK/empty" --powercap-root "$WORK/empty" --dcgm-lib "$DCGM" --no-nvml --source dcgm
[ "$RC" = 1 ] && grep -qF 'Error: DCGM unavailable: dcgmStartEmbedded: error -3' "$WORK/run.err" || fail "embedded failure: $(cat "$WORK/run.err")"
[ "$(tail -1 "$WORK/calls")" = dcgmShutdown ] || fail "no dcgmShutdown after a failed start"
run_exporter --hwmon-root "$WORK/empty" --powercap-root "$WORK/empty" --dcgm-lib /nonexistent/libdcgm.so.4 --no-nvml --source dcgm
[ "$RC" = 1 ] && grep -qF 'Error: DCGM unavailable: libdcgm not found: /nonexistent/libdcgm.so.4' "$WORK/run.err" || fail "missing library: $(cat "$WORK/run.err")"
ok "DCGM start failures: exit 1 with the reason, dcgmShutdown on the way out"

# --- explicit sources never touch the other one ------------------------------------------
start_sim sim "$WORK/gb200" --profile gb200 --model constant --no-noise
printf 'connect=ok\nentities=0,1\nvalue.0.1130=50\nvalue.1.1130=51\ncalls=%s\n' "$WORK/calls" >"$FAKE_DCGM_CONTROL"
: >"$WORK/calls"
start_exporter acpi_only --hwmon-root "$WORK/gb200" --dcgm-lib "$DCGM" --no-nvml --source acpi
[ ! -s "$WORK/calls" ] || fail "--source acpi loaded DCGM: $(cat "$WORK/calls")"
stop "$EXPORTER_PID"
start_exporter dcgm_only --hwmon-root "$WORK/gb200" --dcgm-lib "$DCGM" --no-nvml --source dcgm
body=$(curl -sf "http://127.0.0.1:$PORT/metrics")
grep -q '^cpu_power_acpi_watts{' <<<"$body" && fail "--source dcgm served ACPI"
grep -qF 'cpu_power_dcgm_watts{socket="1",field_id="1130",source="dcgm"} 51.000000' <<<"$body" || fail "--source dcgm body"
grep -qF 'connected to existing DCGM daemon (root-level access)' "$WORK/dcgm_only.log" || fail "host engine connect INFO"
stop "$EXPORTER_PID"
grep -q '^dcgmDisconnect$' "$WORK/calls" && [ "$(tail -1 "$WORK/calls")" = dcgmShutdown ] || fail "no disconnect/shutdown at exit: $(tr '\n' ' ' <"$WORK/calls")"
ok "--source acpi never loads DCGM; --source dcgm serves DCGM beside live ACPI; disconnect + shutdown at exit"

# --- NVML module power -------------------------------------------------------------------
PCI="$WORK/pci"
for b in 0008:01:00.0:0 0009:01:00.0:0 0018:01:00.0:1 0019:01:00.0:1 0020:01:00.0:-1; do
  mkdir -p "$PCI/${b%:*}"; echo "${b##*:}" >"$PCI/${b%:*}/numa_node"
done
cat >"$FAKE_NVML_CONTROL" <<CTL
gpus=5
gpu.0.bus=0008:01:00.0
gpu.1.bus=0009:01:00.0
gpu.2.bus=0018:01:00.0
gpu.3.bus=0019:01:00.0
gpu.4.bus=0020:01:00.0
gpu.0.mw=498720
gpu.1.mw=498720
gpu.2.mw=600000
gpu.3.mw=620000
gpu.4.mw=700000
CTL
start_exporter nvml --hwmon-root "$WORK/gb200" --pci-root "$PCI" --nvml-lib "$NVML"
nlog="$WORK/nvml.log"
wait_for_line "$nlog" 'NVML module reader initialised gpu_count=4 sockets=\[0, 1\]' 5
both_sockets() { [ "$(curl -sf "http://127.0.0.1:$PORT/metrics" | grep -c '^cpu_power_nvml_watts{')" = 2 ]; }
wait_until 5 "NVML module power of both sockets" both_sockets
body=$(curl -sf "http://127.0.0.1:$PORT/metrics")
nv=$(base_family "$body" cpu_power_nvml_watts | grep '^cpu_power_nvml_watts{')
want='cpu_power_nvml_watts{type="module",socket="0",gpus="0,1",source="nvml"} 498.720000
cpu_power_nvml_watts{type="module",socket="1",gpus="2,3",source="nvml"} 610.000000'
[ "$nv" = "$want" ] || { echo "$body"; fail "NVML samples: $nv"; }
[ "$(grep '^# HELP cpu_power_[a-z]*_watts ' <<<"$body" | cut -d' ' -f3 | tr '\n' ' ')" = "cpu_power_acpi_watts cpu_power_nvml_watts " ] || fail "family order"
[ "$(grep '^# HELP cpu_power_nvml_' <<<"$body" | cut -d' ' -f3 | tr '\n' ' ')" = "cpu_power_nvml_watts cpu_power_nvml_joules_total cpu_power_nvml_covered_seconds_total cpu_power_nvml_bridged_seconds_total " ] || fail "NVML counters follow their family"
grep -qE '^cpu_power_nvml_joules_total\{type="module",socket="0",gpus="0,1",source="nvml"\} [0-9]+\.[0-9]{6}$' <<<"$body" || fail "NVML joules counter"
grep -qF 'WARN cpu_power_exporter::nvml: GPU has no known NUMA socket; module power skips it gpu=4 bus_id=0020:01:00.0' "$nlog" || fail "numa -1 WARN"
promtool check metrics <<<"$body" >"$WORK/pt" 2>&1 && [ ! -s "$WORK/pt" ] || { cat "$WORK/pt"; fail "promtool"; }
ok "NVML: mean per socket over GPUs 3.3 % apart, gpus label, numa_node -1 skipped with a WARN"

sed -i 's/^gpu.3.mw=.*/gpu.3.mw=640000/' "$FAKE_NVML_CONTROL"   # 6.5 % apart
wait_for_line "$nlog" 'WARN .*GPU module power readings of a socket disagree by more than 5% of their mean; withholding the socket socket=1 gpus=2,3' 5
withheld() { ! grep -q 'socket="1",gpus' <<<"$(curl -sf "http://127.0.0.1:$PORT/metrics")"; }
wait_until 5 "the disagreeing socket to be withheld" withheld
body=$(curl -sf "http://127.0.0.1:$PORT/metrics")
for want in 'cpu_power_exporter_module_withheld{socket="1",reason="disagree"} 1' \
  'cpu_power_exporter_module_withheld{socket="1",reason="stale"} 0' \
  'cpu_power_exporter_module_withheld{socket="0",reason="disagree"} 0'; do
  grep -qxF "$want" <<<"$body" || { echo "$body"; fail "withheld by reason: no '$want'"; }
done
sed -i 's/^gpu.3.mw=.*/gpu.3.mw=620000/' "$FAKE_NVML_CONTROL"
wait_for_line "$nlog" 'INFO .*GPU module power readings of a socket agree again; publishing it socket=1' 5
[ "$(grep -c 'disagree by more than' "$nlog")" = 1 ] || fail "disagreement warned more than once"
ok "GPUs 6.5 % apart: socket withheld (module_withheld reason=disagree), warned once; INFO when they agree again"

sed -i 's/^gpu.0.mw=.*/gpu.0.mw=hang:10000/' "$FAKE_NVML_CONTROL"
worst=$(worst_ms)
[ "$worst" -lt "$(scaled 1000)" ] || fail "HTTP took $worst ms while NVML hangs$(scale_note)"
wait_for_line "$nlog" 'WARN cpu_power_exporter::nvml: NVML module readings missing or stale; withholding the socket socket=0' 6
body=$(curl -sf "http://127.0.0.1:$PORT/metrics")
grep -q '^cpu_power_nvml_watts{' <<<"$body" && fail "stale module power served"
grep -qxF 'cpu_power_exporter_module_withheld{socket="0",reason="stale"} 1' <<<"$body" ||
  { echo "$body"; fail "the stale socket is not withheld as stale"; }
ok "NVML read hanging 10 s: HTTP worst $worst ms, stale module power withheld (reason=stale) with a WARN (no scrape needed)"
stop "$EXPORTER_PID"

# --max-age-s is NVML's maximum age too: a read hanging 5 s is still fresh under 12 s.
sed -i 's/^gpu.0.mw=.*/gpu.0.mw=498720/' "$FAKE_NVML_CONTROL"
start_exporter nvml_age --hwmon-root "$WORK/gb200" --pci-root "$PCI" --nvml-lib "$NVML" --max-age-s 12
wait_until 5 "NVML module power of both sockets" both_sockets
sed -i 's/^gpu.0.mw=.*/gpu.0.mw=hang:8000/' "$FAKE_NVML_CONTROL"
sleep 5
body=$(curl -sf "http://127.0.0.1:$PORT/metrics")
grep -qxF 'cpu_power_exporter_module_withheld{socket="0",reason="stale"} 0' <<<"$body" ||
  { echo "$body"; fail "module power withheld as stale within --max-age-s 12"; }
grep -q 'missing or stale' "$WORK/nvml_age.log" && fail "stale WARN within --max-age-s 12"
ok "NVML takes --max-age-s: a 5 s old module reading is served under --max-age-s 12"
stop "$EXPORTER_PID"

cat >"$FAKE_NVML_CONTROL" <<CTL
init=hang:4500
gpus=1
gpu.0.bus=0018:01:00.0
gpu.0.mw=500000
CTL
start_sim gh "$WORK/gh200" --profile gh200 --model constant --no-noise
start_exporter slow --hwmon-root "$WORK/gh200" --pci-root "$PCI" --nvml-lib "$NVML"
[ "$(base_family "$(curl -sf "http://127.0.0.1:$PORT/metrics")" cpu_power_nvml_watts | grep -c '^cpu_power_nvml_watts{')" = 0 ] || fail "module series before NVML is ready"
wait_for_line "$WORK/slow.log" 'WARN cpu_power_exporter::nvml: NVML initialization is taking longer than 3 s' 5
wait_for_line "$WORK/slow.log" 'INFO cpu_power_exporter::nvml: NVML initialization completed' 5
wait_for_line "$WORK/slow.log" 'WARN .*module power socket has no CPU socket in the base source; the collector will not attach it socket=1' 2
stop "$EXPORTER_PID"
ok "slow NVML init: series omitted, WARN after 3 s, INFO on completion; module socket without a CPU socket warned"

printf 'init=fail\n' >"$FAKE_NVML_CONTROL"
start_exporter nofail --hwmon-root "$WORK/gh200" --pci-root "$PCI" --nvml-lib "$NVML"
wait_for_line "$WORK/nofail.log" 'INFO cpu_power_exporter::nvml: NVML module power unavailable; module series not exported reason="nvmlInit_v2: NVML error 9"' 5
grep -q 'cpu_power_nvml_watts' <<<"$(curl -sf "http://127.0.0.1:$PORT/metrics")" && fail "family served although NVML is unavailable"
stop "$EXPORTER_PID"
ok "NVML unavailable: INFO with the reason, family omitted, exporter serves on"
finish
