#!/usr/bin/env bash
# Firmware averaging through the exporter, against simulated Grace nodes over real HTTP: each
# channel's averaging interval is published, sample ages count from the centre of the
# averaged interval, and a running exporter follows its meters when a new interval makes the
# kernel (>= 6.15) re-register them under new hwmonN numbers, keeping every series' labels.
source "$(dirname "$0")/lib.sh"

scrape() { curl -sf "http://127.0.0.1:$PORT/metrics"; }
# value BODY SERIES: the value of the sample whose name and labels are SERIES, exactly.
value() { grep -F "$2 " <<<"$1" | head -1 | awk '{print $NF}'; }
# at_least A B: A >= B as numbers.
at_least() { python3 -c "import sys; sys.exit(0 if float('$1') >= float('$2') else 1)"; }

TOTAL0='cpu_power_acpi_watts{sensor="hwmon2/power1",type="total",socket="0",oem_info="Grace Power Socket 0",source="acpi"}'

# --- the default 50 ms interval: published, and ages counted from its centre -----------------
start_sim sim "$WORK/node" --profile gb200 --layout modern --model constant --load 0.5 --no-noise \
  --update-ms 20
start_exporter exp --hwmon-root "$WORK/node" --read-interval-ms 100
body=$(scrape)
n=$(grep -c '^cpu_power_exporter_average_interval_seconds{sensor="hwmon[0-9]*/power1"} 0.050000$' <<<"$body")
[ "$n" = 6 ] || fail "expected 6 sensors at 0.050000 s, got $n: $body"
grep -qF '# TYPE cpu_power_exporter_average_interval_seconds gauge' <<<"$body" || fail "no TYPE line"
promtool check metrics <<<"$body" >"$WORK/promtool.out" 2>&1 || { cat "$WORK/promtool.out"; fail "promtool check metrics failed"; }
[ ! -s "$WORK/promtool.out" ] || { cat "$WORK/promtool.out"; fail "promtool reported problems"; }
# A value read just now describes the 50 ms before: its age is never below 25 ms.
for _ in $(seq 10); do
  age=$(value "$(scrape)" 'cpu_power_exporter_sample_age_seconds{sensor="hwmon2/power1"}')
  at_least "$age" 0.025 || fail "age $age below half the 50 ms interval"
  sleep 0.03
done
ok "50 ms interval published for 6 sensors (promtool-clean); ages count from its centre"

# --- a write to one meter's interval: it re-registers, the exporter follows it ----------------
echo 1000 >"$WORK/node/hwmon2/power1_average_interval"
wait_until 10 "the simulator to re-register hwmon2" test ! -e "$WORK/node/hwmon2"
wait_until 10 "the simulator to register hwmon14" test -e "$WORK/node/hwmon14/power1_oem_info"
[ "$(cat "$WORK/node/hwmon14/power1_oem_info")" = "Grace Power Socket 0" ] || fail "hwmon14 is not socket 0's total"
moved() {
  body=$(scrape)
  [ "$(value "$body" 'cpu_power_exporter_average_interval_seconds{sensor="hwmon2/power1"}')" = 1.000000 ] &&
    [ "$(value "$body" "$TOTAL0")" = 177.250000 ]
}
wait_until 10 "the exporter to publish hwmon2/power1 again with the 1 s interval" moved
wait_for_line "$WORK/exp.log" 're-registered; reading it at its new path.* sensor=hwmon2/power1 .*hwmon=hwmon14' 5
kill -0 "$EXPORTER_PID" || fail "exporter exited"
# The same series: same labels, value present, stale flag clear, the other meters untouched.
grep -qF 'cpu_power_exporter_stale{sensor="hwmon2/power1"} 0' <<<"$body" || fail "hwmon2/power1 stale"
[ "$(grep -c '^cpu_power_acpi_watts{' <<<"$body")" = 6 ] || fail "not 6 samples after the move: $body"
grep -q 'sensor="hwmon14' <<<"$body" && fail "a series under the new number: $body"
[ "$(value "$body" 'cpu_power_exporter_average_interval_seconds{sensor="hwmon3/power1"}')" = 0.050000 ] ||
  fail "hwmon3's interval changed"
# Ages now count from the centre of a 1 s average: at least half a second.
for _ in $(seq 5); do
  age=$(value "$(scrape)" 'cpu_power_exporter_sample_age_seconds{sensor="hwmon2/power1"}')
  at_least "$age" 0.5 || fail "age $age below half the 1000 ms interval"
  sleep 0.05
done
sleep 0.5
[ "$(grep -c 're-registered; reading it at its new path' "$WORK/exp.log")" = 1 ] ||
  fail "the move was not logged exactly once: $(grep re-registered "$WORK/exp.log")"
# The gap between the old node's removal and the new one's arrival is no reason for a WARN.
grep -q 'was not found again' "$WORK/exp.log" && fail "a WARN for a channel that came back at once"
ok "a renumbered meter: same series and labels, 1 s interval published, ages from its centre, logged once"

# And back: a second renumbering is followed the same way.
echo 50 >"$WORK/node/hwmon14/power1_average_interval"
back() { [ "$(value "$(scrape)" 'cpu_power_exporter_average_interval_seconds{sensor="hwmon2/power1"}')" = 0.050000 ]; }
wait_until 10 "the exporter to follow hwmon2/power1 to hwmon15" back
[ -e "$WORK/node/hwmon15" ] && [ ! -e "$WORK/node/hwmon14" ] || fail "no hwmon15: $(ls "$WORK/node")"
[ "$(value "$(scrape)" "$TOTAL0")" = 177.250000 ] || fail "value lost after the second move"
ok "a second renumbering is followed too"

# A value the firmware refuses changes nothing (the simulator puts the file back).
echo 70 >"$WORK/node/hwmon3/power1_average_interval"
wait_until 10 "the refused value to be put back" grep -qx 50 "$WORK/node/hwmon3/power1_average_interval"
[ -e "$WORK/node/hwmon3" ] || fail "a refused value re-registered hwmon3"
wait_for_line "$WORK/sim.log" 'EINVAL' 5
ok "a refused interval is put back and logged by the simulator"
stop "$EXPORTER_PID"

# --- --set-average-interval-ms 1000: written once at start, with a WARN, then rediscovered -----
start_sim sim2 "$WORK/node2" --profile gb200 --layout modern --model constant --load 0.5 --no-noise \
  --update-ms 20
start_exporter exp2 --hwmon-root "$WORK/node2" --set-average-interval-ms 1000
grep -q 'WARN cpu_power_exporter: setting the averaging interval of every ACPI power meter; this is system-wide: DCGM' "$WORK/exp2.log" ||
  fail "no system-wide WARN: $(cat "$WORK/exp2.log")"
grep -q 'averaging interval set interval_ms=1000 written=6 unchanged=0 failed=0' "$WORK/exp2.log" ||
  fail "no summary line: $(cat "$WORK/exp2.log")"
for h in 2 3 10 11 12 13; do [ ! -e "$WORK/node2/hwmon$h" ] || fail "hwmon$h not re-registered"; done
# Each re-registered meter is found again by the reader that lost it; a busy machine may
# scrape before the last one is.
six_at_1s() {
  body=$(scrape)
  [ "$(grep -c '^cpu_power_exporter_average_interval_seconds{sensor="hwmon[0-9]*/power1"} 1.000000$' <<<"$body")" = 6 ]
}
for _ in $(seq "$(scaled 200)"); do six_at_1s && break; sleep 0.05; done
six_at_1s || fail "expected 6 sensors at 1 s: $body
exporter log: $(cat "$WORK/exp2.log")"
[ "$(grep -c '^cpu_power_acpi_watts{' <<<"$body")" = 6 ] || fail "not 6 samples: $body"
grep -q 'sensor="hwmon2/' <<<"$body" && fail "a sensor under a number that is gone: $body"
[ "$(grep -c 're-registered; reading it at its new path' "$WORK/exp2.log")" = 0 ] ||
  fail "discovery after the write should have found the new numbers"
ok "--set-average-interval-ms 1000: WARN, 6 meters re-registered and discovered at their new numbers"
stop "$EXPORTER_PID"

# Legacy kernels change the interval in place: names stay.
start_sim sim3 "$WORK/node3" --profile gh200 --layout legacy --model constant --no-noise --update-ms 20
start_exporter exp3 --hwmon-root "$WORK/node3" --set-average-interval-ms 1000
body=$(scrape)
[ "$(value "$body" 'cpu_power_exporter_average_interval_seconds{sensor="hwmon2/power1"}')" = 1.000000 ] ||
  fail "legacy: hwmon2 not at 1 s: $body"
[ "$(cat "$WORK/node3/hwmon2/device/power1_average_interval")" = 1000 ] || fail "legacy file"
ok "legacy layout: the interval changes in place, sensor names stay"
stop "$EXPORTER_PID"

# A modern tree whose meters never re-register (nobody plays the kernel): after its 10 s wait
# the exporter names them, still on their nodes, and serves them there.
"$BIN/cpu-power" sim-node --root "$WORK/static" --profile gb200 --layout modern --once >/dev/null
start_exporter exp4 --hwmon-root "$WORK/static" --set-average-interval-ms 1000
grep -q 'WARN cpu_power_exporter: power meters still on their hwmon node 10 s after the write; read there, and followed if they re-register later sensors=hwmon2/power1,hwmon3/power1,hwmon10/power1,hwmon11/power1,hwmon12/power1,hwmon13/power1$' "$WORK/exp4.log" ||
  fail "no WARN naming the six meters: $(cat "$WORK/exp4.log")"
grep -q 'not found again' "$WORK/exp4.log" && fail "meters that never left called missing"
[ "$(scrape | grep -c '^cpu_power_acpi_watts{')" = 6 ] || fail "not 6 samples on the static tree"
ok "meters that stay on their nodes after the write: one WARN names them, all 6 served"
stop "$EXPORTER_PID"

# Only the firmware's two values are accepted: anything else is a usage error.
set +e
"$BIN/cpu-power-exporter" --bind 127.0.0.1 --port 0 --hwmon-root "$WORK/node3" \
  --set-average-interval-ms 70 >"$WORK/bad.out" 2>"$WORK/bad.err"
rc=$?
set -e
[ "$rc" = 2 ] || fail "--set-average-interval-ms 70: exit $rc"
[ "$(cat "$WORK/node3/hwmon2/device/power1_average_interval")" = 1000 ] || fail "usage error wrote"
ok "--set-average-interval-ms 70 is a usage error (exit 2) and writes nothing"

finish
