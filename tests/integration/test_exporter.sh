#!/usr/bin/env bash
# The exporter binary against simulated Grace nodes over real HTTP: exposition, promtool,
# routes and limits, readiness, a hung channel, the source ladder's exits, shutdown.
source "$(dirname "$0")/lib.sh"

# --- a gb200 node in the >= 6.15 layout ------------------------------------------------
start_sim sim "$WORK/gb200" --profile gb200 --layout modern --model constant --load 0.5 --no-noise
start_exporter exp --hwmon-root "$WORK/gb200"
body=$(curl -sf "http://127.0.0.1:$PORT/metrics")
n=$(grep -c '^cpu_power_acpi_watts{' <<<"$body")
[ "$n" = 6 ] || fail "expected 6 ACPI samples, got $n: $body"
grep -qF 'cpu_power_acpi_watts{sensor="hwmon2/power1",type="total",socket="0",oem_info="Grace Power Socket 0",source="acpi"} 177.250000' <<<"$body" ||
  fail "socket 0 total line missing: $body"
grep -qF 'type="cpu_rail",socket="1",oem_info="CPU Power Socket 1",source="acpi"} 122.000000' <<<"$body" ||
  fail "socket 1 CPU rail line missing"
ok "gb200 modern: 6 rails with exact labels and values"

# Numeric order: hwmon2, hwmon3 before hwmon10.
order=$(grep -oE '^cpu_power_acpi_watts\{sensor="hwmon[0-9]+' <<<"$body" | grep -oE '[0-9]+$' | tr '\n' ' ')
[ "$order" = "2 3 10 11 12 13 " ] || fail "sensor order is '$order'"
ok "hwmon nodes ordered numerically"

promtool check metrics <<<"$body" >"$WORK/promtool.out" 2>&1 || { cat "$WORK/promtool.out"; fail "promtool check metrics failed"; }
[ ! -s "$WORK/promtool.out" ] || { cat "$WORK/promtool.out"; fail "promtool reported problems"; }
ok "promtool check metrics: no problems"

# The reference's parser (prometheus_client's text parser, then the samples named
# cpu_power_acpi_watts) reads the body with the energy counters as before.
printf '%s\n' "$body" >"$WORK/body.txt"
/usr/bin/python3 - "$WORK/body.txt" <<'PYEOF' || fail "the reference's parser on a body with counters"
import sys
from prometheus_client.parser import text_string_to_metric_families
samples = [s for f in text_string_to_metric_families(open(sys.argv[1]).read()) for s in f.samples]
watts = [s for s in samples if s.name == "cpu_power_acpi_watts"]
assert len(watts) == 6, watts
joules = {s.labels["sensor"]: s for s in samples if s.name == "cpu_power_acpi_joules_total"}
assert sorted(joules) == sorted(s.labels["sensor"] for s in watts), joules
assert all(j.labels == w.labels for w in watts for j in [joules[w.labels["sensor"]]]), joules
PYEOF
# Between two scrapes the socket's energy counter grows by its constant power times the time
# its counters integrated (covered + bridged), and no counter goes down.
counters() {  # counters BODY: joules covered+bridged of socket 0's total
  awk '/^cpu_power_acpi_(joules|covered_seconds|bridged_seconds)_total\{sensor="hwmon2\/power1"/ {
    if ($1 ~ /joules/) j = $NF; else s += $NF } END { printf "%s %s\n", j, s }' <<<"$1"
}
read -r j1 s1 <<<"$(counters "$body")"
grown() { read -r j2 s2 <<<"$(counters "$(curl -sf "http://127.0.0.1:$PORT/metrics")")"; /usr/bin/python3 -c "import sys; sys.exit(0 if $s2 - $s1 >= 1.0 else 1)"; }
wait_until 10 "a second of integrated time on socket 0" grown
/usr/bin/python3 - "$j1" "$s1" "$j2" "$s2" <<'PYEOF' || fail "socket 0 energy counter: $j1 J / $s1 s, then $j2 J / $s2 s"
import sys
j1, s1, j2, s2 = map(float, sys.argv[1:])
assert j2 >= j1 and s2 >= s1
assert abs((j2 - j1) - 177.25 * (s2 - s1)) <= 1e-3 * 177.25 * (s2 - s1) + 1e-5, (j2 - j1, s2 - s1)
PYEOF
ok "energy counters: the reference's parser reads the body as before; socket 0 gained 177.25 W x $(awk "BEGIN{print $s2 - $s1}") s"

# Routes, methods, headers.
code() { curl -s -o /dev/null -w '%{http_code}' "$@"; }
[ "$(curl -sf "http://127.0.0.1:$PORT/health")" = "ok" ] || fail "/health body"
[ "$(code "http://127.0.0.1:$PORT/metrics?collect%5B%5D=x")" = 200 ] || fail "query string"
[ "$(code "http://127.0.0.1:$PORT/nope")" = 404 ] || fail "404"
hdrs=$(curl -s -D - -o /dev/null -X POST "http://127.0.0.1:$PORT/metrics")
grep -q '^HTTP/1.1 405' <<<"$hdrs" || fail "POST is not 405: $hdrs"
grep -qi '^Allow: GET, HEAD' <<<"$hdrs" || fail "405 without Allow"
ctype=$(curl -s -D - -o /dev/null "http://127.0.0.1:$PORT/metrics" | grep -i '^Content-Type' | tr -d '\r')
[ "$ctype" = "Content-Type: text/plain; version=0.0.4; charset=utf-8" ] || fail "content type '$ctype'"
head_len=$(curl -s -I "http://127.0.0.1:$PORT/metrics" | grep -i '^Content-Length' | tr -dc 0-9)
[ "${head_len:-0}" -gt 1000 ] || fail "HEAD Content-Length '$head_len'"
big=$(head -c 9000 /dev/zero | tr '\0' a)
[ "$(code -H "X-Big: $big" "http://127.0.0.1:$PORT/metrics")" = 431 ] || fail "oversized header not 431"
small=$(head -c 7000 /dev/zero | tr '\0' a)
[ "$(code -H "X-Big: $small" "http://127.0.0.1:$PORT/metrics")" = 200 ] || fail "7 KB header refused"
ok "routes: /health, query ignored, 404, 405 + Allow, content type, HEAD, 431 over 8 KiB"

# Values follow the files over time.
stop "$SIM_PID"
start_sim sim2 "$WORK/gb200" --profile gb200 --layout modern --model constant --load 1.0 --no-noise
full_load() { grep -qF 'socket="0",oem_info="Grace Power Socket 0",source="acpi"} 258.500000' <<<"$(curl -sf "http://127.0.0.1:$PORT/metrics")"; }
wait_until 5 "the value to follow the sim to full load" full_load
ok "values follow the hwmon files"

# SIGTERM: exit 0, promptly.
t0=$(date +%s%N)
kill -TERM "$EXPORTER_PID"
wait "$EXPORTER_PID" && rc=0 || rc=$?
ms=$((($(date +%s%N) - t0) / 1000000))
[ "$rc" = 0 ] || fail "exit status $rc after SIGTERM"
[ "$ms" -lt "$(scaled 5000)" ] || fail "shutdown took $ms ms$(scale_note)"
grep -q 'received SIGTERM, shutting down' "$WORK/exp.log" || fail "no shutdown log line"
ok "SIGTERM: exit 0 in $ms ms"

# --- legacy layout (<= 6.14), gh200 and platform-uw spellings ---------------------------
start_sim legacy "$WORK/legacy" --profile gb200 --layout legacy --model constant --no-noise
start_exporter exp_legacy --hwmon-root "$WORK/legacy"
n=$(curl -sf "http://127.0.0.1:$PORT/metrics" | grep -c '^cpu_power_acpi_watts{')
[ "$n" = 6 ] || fail "legacy layout: $n samples (aliases must be de-duplicated)"
ok "gb200 legacy layout: 6 rails, aliases de-duplicated"

start_sim uw "$WORK/uw" --profile platform-uw --model constant --no-noise
start_exporter exp_uw --hwmon-root "$WORK/uw"
body=$(curl -sf "http://127.0.0.1:$PORT/metrics")
[ "$(grep -c '^cpu_power_acpi_watts{.*type="dram"' <<<"$body")" = 2 ] || fail "platform-uw: no dram rails"
[ "$(grep -c '^cpu_power_acpi_watts{.*type="total"' <<<"$body")" = 2 ] || fail "platform-uw: no totals"
ok "platform-uw spellings classified"

# --- a channel whose read never returns -------------------------------------------------
start_sim hang "$WORK/hang" --profile gb200 --model constant --no-noise --fault 'total:1=hang'
start_exporter exp_hang --hwmon-root "$WORK/hang" --max-age-s 1
# A read that never returns must not hold /health: each answers (a blocked one would not
# within --max-time) and well under a second, however busy the machine is.
worst=0
for _ in $(seq 20); do
  t=$(curl -sf --max-time 5 -o /dev/null -w '%{time_total}' "http://127.0.0.1:$PORT/health") ||
    fail "/health did not answer with a hung channel"
  worst=$(python3 -c "print(max($worst, $t))")
done
python3 -c "import sys; sys.exit(0 if $worst < 1.0 * $TIME_SCALE else 1)" ||
  fail "/health took ${worst}s with a hung channel$(scale_note)"
wait_for_line "$WORK/exp_hang.log" 'WARN .*no ACPI reading yet; withholding the sensor sensor=hwmon11/power1' 5
body=$(curl -sf --max-time 1 "http://127.0.0.1:$PORT/metrics")
grep -q '^cpu_power_acpi_watts{.*oem_info="Grace Power Socket 1"' <<<"$body" && fail "hung total still published"
grep -q 'oem_info="Grace Power Socket 0"' <<<"$body" || fail "healthy total missing"
grep -qF 'cpu_power_exporter_stale{sensor="hwmon11/power1"} 1' <<<"$body" || fail "stale flag not set"
ok "hung channel: /health worst ${worst}s, hung total withheld with a WARN, others served"
t0=$(date +%s%N)
kill -TERM "$EXPORTER_PID"
wait "$EXPORTER_PID" && rc=0 || rc=$?
ms=$((($(date +%s%N) - t0) / 1000000))
[ "$rc" = 0 ] && [ "$ms" -lt "$(scaled 5000)" ] || fail "shutdown with a hung read: rc=$rc after $ms ms$(scale_note)"
ok "SIGTERM with a hung read: exit 0 in $ms ms"

# A meter that has never produced a value is not fresh: stale 1 from the first scrape, not
# only once --max-age-s has passed (the WARN keeps that grace: no WARN yet at 30 s).
start_sim hang_rail "$WORK/hang_rail" --profile gb200 --model constant --no-noise --fault 'cpu_rail:1=hang'
spawn exp_never "$BIN/cpu-power-exporter" --bind 127.0.0.1 --port 0 --hwmon-root "$WORK/hang_rail" --max-age-s "$(scaled 30)"
NEVER_PID=$LAST_PID
wait_for_line "$WORK/exp_never.log" 'listening addr=' 15
nport=$(grep -oE 'listening addr=[0-9.]+:[0-9]+' "$WORK/exp_never.log" | head -1 | sed 's/.*://')
body=$(curl -sf --max-time 5 "http://127.0.0.1:$nport/metrics")
grep -qF 'cpu_power_exporter_stale{sensor="hwmon12/power1"} 1' <<<"$body" ||
  fail "never-read rail not stale: $(grep -E 'exporter_stale|reads_total\{sensor="hwmon12' <<<"$body")"
grep -qF 'cpu_power_exporter_reads_total{sensor="hwmon12/power1"} 0' <<<"$body" || fail "the hung rail completed a read"
grep -q '^cpu_power_acpi_watts{.*oem_info="CPU Power Socket 1"' <<<"$body" && fail "never-read rail published"
grep -qF 'cpu_power_exporter_stale{sensor="hwmon2/power1"} 0' <<<"$body" || fail "live total stale"
grep -q 'WARN .*withholding the sensor sensor=hwmon12' "$WORK/exp_never.log" && fail "WARN before --max-age-s"
stop "$NEVER_PID"
stop "$SIM_PID"
ok "never-read meter: stale 1 from the first scrape (no WARN inside the --max-age-s grace)"

# --- a channel that read well, then hangs: the stale WARN names why ---------------------
# The last completed read succeeded, so its (empty) problem is not the reason: the WARN says
# no read completed since.
start_sim hang_late "$WORK/hang_late" --profile gb200 --model constant --no-noise \
  --fault "total:1=hang@$(scaled 4000)"
start_exporter exp_hang_late --hwmon-root "$WORK/hang_late" --max-age-s 1
body=$(curl -sf --max-time 5 "http://127.0.0.1:$PORT/metrics")
grep -q 'oem_info="Grace Power Socket 1"' <<<"$body" ||
  fail "socket 1 not served before its reads hang$(scale_note)"
wait_for_line "$WORK/exp_hang_late.log" 'WARN .*ACPI reading is stale; withholding it sensor=hwmon11/power1' 15
line=$(grep 'is stale; withholding it sensor=hwmon11/power1' "$WORK/exp_hang_late.log")
grep -q 'last_problem=""' <<<"$line" && fail "stale WARN with an empty last_problem: $line"
grep -q 'last_problem="no read completed since the last good one"' <<<"$line" ||
  fail "stale WARN does not say why: $line"
ok "a channel that hangs after good reads: the stale WARN says no read completed since"
stop "$EXPORTER_PID"

# --- the ladder's exits ------------------------------------------------------------------
run_exporter() {
  set +e
  timeout 20 "$BIN/cpu-power-exporter" --bind 127.0.0.1 --port 0 "$@" >"$WORK/run.out" 2>"$WORK/run.err"
  RC=$?
  set -e
}
mkdir -p "$WORK/empty"
# --powercap-root too: on an x86 host with RAPL, auto would otherwise stop at its RAPL rung.
run_exporter --hwmon-root "$WORK/empty" --powercap-root "$WORK/empty"
[ "$RC" = 1 ] || fail "empty root: exit $RC"
grep -qF "Error: no CPU power source could be established: ACPI: no ACPI power_meter hwmon sensors found under $WORK/empty; RAPL: no RAPL: no intel-rapl package zones under $WORK/empty; DCGM" "$WORK/run.err" ||
  fail "empty root message: $(cat "$WORK/run.err")"
grep -qF 'WARN cpu_power_exporter: ACPI unusable; falling back to RAPL reason=' "$WORK/run.out" || fail "no step-down WARN"
grep -qF 'WARN cpu_power_exporter: RAPL unusable; falling back to DCGM reason=' "$WORK/run.out" || fail "no RAPL step-down WARN"
ok "empty root: exit 1 with every rung's reason and a WARN step-down"

start_sim zero "$WORK/zero" --profile gb200 --model constant --fault 'total:0=zero' --fault 'total:1=zero'
run_exporter --hwmon-root "$WORK/zero" --source acpi
[ "$RC" = 1 ] || fail "all-zero totals: exit $RC"
grep -qF "Error: no ACPI socket-total power_meter sensor under $WORK/zero read positive across 2 probe(s) (6 sensors discovered)" "$WORK/run.err" ||
  fail "all-zero message: $(cat "$WORK/run.err")"
ok "all-zero totals with --source acpi: exit 1, live rails do not vouch"

mkdir -p "$WORK/rails/hwmon2" "$WORK/rails/hwmon3"
printf 'power_meter\n' >"$WORK/rails/hwmon2/name"; printf '50000000\n' >"$WORK/rails/hwmon2/power1_average"
printf 'CPU Power Socket 0\n' >"$WORK/rails/hwmon2/power1_oem_info"
printf 'power_meter\n' >"$WORK/rails/hwmon3/name"; printf '6000000\n' >"$WORK/rails/hwmon3/power1_average"
printf 'SysIO Power Socket 0\n' >"$WORK/rails/hwmon3/power1_oem_info"
run_exporter --hwmon-root "$WORK/rails" --powercap-root "$WORK/empty"
[ "$RC" = 1 ] || fail "rails without a total: exit $RC"
grep -qF "no ACPI socket-total power_meter channels under $WORK/rails (found: CPU Power Socket 0, SysIO Power Socket 0)" "$WORK/run.err" ||
  fail "rails-only message: $(cat "$WORK/run.err")"
ok "rails without a socket total: exit 1"

# The total reads zero until the exporter logs its retry, then positive: the order is set by
# the log line, not by how fast a busy machine starts the exporter.
mkdir -p "$WORK/boot/hwmon1"
printf 'power_meter\n' >"$WORK/boot/hwmon1/name"; printf '0\n' >"$WORK/boot/hwmon1/power1_average"
printf 'Grace Power Socket 0\n' >"$WORK/boot/hwmon1/power1_oem_info"
spawn exp_boot "$BIN/cpu-power-exporter" --bind 127.0.0.1 --port 0 --hwmon-root "$WORK/boot" --source acpi --log-level debug
wait_for_line "$WORK/exp_boot.log" 'retrying probe' 15
printf '90000000\n' >"$WORK/boot/hwmon1/power1_average"
wait_for_line "$WORK/exp_boot.log" 'listening addr=' 15
stop "$LAST_PID"
ok "a total reading zero at boot passes on the 1 s retry"

# --- usage -------------------------------------------------------------------------------
run_exporter --source bogus; [ "$RC" = 2 ] || fail "--source bogus: exit $RC"
run_exporter --bind localhost; [ "$RC" = 2 ] || fail "--bind hostname: exit $RC"
run_exporter --port 70000; [ "$RC" = 2 ] || fail "--port 70000: exit $RC"
run_exporter --no-such-flag; [ "$RC" = 2 ] || fail "unknown flag: exit $RC"
[ "$("$BIN/cpu-power-exporter" --version)" = "cpu-power-exporter 0.1.0" ] || fail "--version"
"$BIN/cpu-power-exporter" --help | grep -q -- '--hwmon-root' || fail "--help"
start_sim busy "$WORK/busy" --profile gh200 --model constant
start_exporter exp_busy --hwmon-root "$WORK/busy"
set +e
"$BIN/cpu-power-exporter" --bind 127.0.0.1 --port "$PORT" --hwmon-root "$WORK/busy" >"$WORK/run.out" 2>"$WORK/run.err"
RC=$?
set -e
[ "$RC" = 1 ] && grep -qF "Error: bind 127.0.0.1:$PORT: Address already in use" "$WORK/run.err" || fail "bind failure: rc=$RC $(cat "$WORK/run.err")"
ok "usage errors exit 2; --version; --help; bind failure exits 1"

# IPv6 bind where the machine has ::1.
if ip -6 addr show lo 2>/dev/null | grep -q '::1'; then
  spawn exp6 "$BIN/cpu-power-exporter" --bind ::1 --port 0 --hwmon-root "$WORK/busy"
  wait_for_line "$WORK/exp6.log" 'listening addr=\[::1\]:[0-9]+' 10
  p6=$(grep -oE 'listening addr=\[::1\]:[0-9]+' "$WORK/exp6.log" | sed 's/.*://')
  [ "$(curl -sf "http://[::1]:$p6/health")" = ok ] || fail "IPv6 /health"
  ok "IPv6 bind serves on [::1]"
fi

finish
