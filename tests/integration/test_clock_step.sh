#!/usr/bin/env bash
# Wall-clock steps under the collector: `cpu-power scrape` runs with libfaketime preloaded,
# its wall clock (CLOCK_REALTIME) stepped forward and then back while it scrapes, its monotonic
# clock left alone, as NTP or an operator stepping a node's clock would. The schedule runs on
# the monotonic clock, so a step must neither burst nor stall scraping: every slot is scraped
# or counted missed, exactly once. Row times are wall-clock times, so the steps show in them,
# the collector records each step in its manifest, and the energy report fails a window a
# recorded step falls in.
source "$(dirname "$0")/lib.sh"

FAKETIME_LIB=""
for d in /usr/lib/"$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)"/faketime /usr/lib/faketime; do
  [ -f "$d/libfaketimeMT.so.1" ] && FAKETIME_LIB="$d/libfaketimeMT.so.1" && break
done
[ -n "$FAKETIME_LIB" ] || fail "libfaketime not found (Debian package faketime; scripts/install-deps.sh)"

start_sim sim "$WORK/node" --profile gb200 --model constant --no-noise
start_exporter exp --hwmon-root "$WORK/node"

INTERVAL_MS=200
# Not scaled: 40 slots of 200 ms leave a sanitized collector plenty of room, and the waits
# below are scaled.
DURATION_S=8
echo "+0" >"$WORK/faketime.rc"
# A sanitized build's runtime must come first among the loaded libraries; the preload puts
# libfaketime there, which the runtime accepts when told.
spawn scrape env LD_PRELOAD="$FAKETIME_LIB" FAKETIME_TIMESTAMP_FILE="$WORK/faketime.rc" \
  FAKETIME_NO_CACHE=1 FAKETIME_DONT_FAKE_MONOTONIC=1 FAKETIME_DONT_RESET=1 \
  ASAN_OPTIONS="${ASAN_OPTIONS:-}${ASAN_OPTIONS:+:}verify_asan_link_order=0" \
  "$BIN/cpu-power" scrape --endpoint "n1=127.0.0.1:$PORT" --out "$WORK/run/cpu" \
  --interval-ms "$INTERVAL_MS" --duration-s "$DURATION_S"
SCRAPE_PID=$LAST_PID

# data_rows: rows written so far (2 sockets a scrape on this node).
data_rows() { local n; n=$(wc -l 2>/dev/null <"$WORK/run/cpu/samples.csv" || echo 1); echo $((n - 1)); }
wait_rows() {
  local want=$1 end=$((SECONDS + $(scaled 10)))
  while (($(data_rows) < want)); do
    ((SECONDS < end)) || fail "only $(data_rows) rows, waiting for $want"
    sleep 0.05
  done
}
wait_rows 12
echo "+3600s" >"$WORK/faketime.rc"  # an hour forward
wait_rows 24
echo "+1800s" >"$WORK/faketime.rc"  # half an hour back
wait "$SCRAPE_PID" || { cat "$WORK/scrape.log"; fail "scrape exited with $?"; }
echo "# $(grep 'finished rows written' "$WORK/scrape.log" | sed 's/.*scrape: //')"

# Accounting: every slot of the run scraped or missed, none twice. The run lasts DURATION_S
# on the monotonic clock; a burst after the forward step or a stall after the backward one
# would move the count far from DURATION_S / interval.
stats=$(grep -oE 'scrapes=[0-9]+ .*missed_slots=[0-9]+' "$WORK/scrape.log") || fail "no collector summary"
scrapes=$(sed -E 's/scrapes=([0-9]+).*/\1/' <<<"$stats")
missed=$(sed -E 's/.*missed_slots=([0-9]+)/\1/' <<<"$stats")
# The count also holds the final scrape at stop, and the slot at the very end of the run may
# fall on either side of the stop: slots - 1 to slots + 2.
slots=$((DURATION_S * 1000 / INTERVAL_MS))
((scrapes + missed >= slots - 1 && scrapes + missed <= slots + 2)) ||
  fail "scrapes $scrapes + missed $missed slots, expected $slots (-1 to +2) in ${DURATION_S} s at ${INTERVAL_MS} ms"
ok "wall-clock steps neither burst nor stall the schedule: $scrapes scrapes + $missed missed of $slots slots"

# The steps in the row times, in file order: one jump forward of about an hour, one back of
# about half an hour, every other step one interval (a scrape's row time follows the clock).
/usr/bin/python3 - "$WORK/run/cpu/samples.csv" "$INTERVAL_MS" <<'EOF' || fail "row times do not show the two steps"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
times = []
for r in rows:
    t = float(r["timestamp_unix"])
    if not times or times[-1] != t:
        times.append(t)
steps = [b - a for a, b in zip(times, times[1:])]
fwd = [s for s in steps if s > 600]
back = [s for s in steps if s < -600]
small = [s for s in steps if -600 <= s <= 600]
print(f"# row-time steps: {len(steps)}, forward {[round(s) for s in fwd]}, back {[round(s) for s in back]}")
assert len(fwd) == 1 and 3000 < fwd[0] < 4200, fwd
assert len(back) == 1 and -2400 < back[0] < -1200, back
assert all(0 < s < 60 for s in small), [s for s in small if not 0 < s < 60]
EOF
ok "row times follow the wall clock: one step forward, one back"

# The report over the whole run: the forward step is a gap inside the window, said once.
read -r first last < <(/usr/bin/python3 -c '
import csv, sys
t = [float(r["timestamp_unix"]) for r in csv.DictReader(open(sys.argv[1]))]
print(min(t), max(t))' "$WORK/run/cpu/samples.csv")
printf '{"schema_version": 1, "command": ["bench"], "start_unix": %s, "end_unix": %s, "exit_code": 0}\n' \
  "$first" "$last" >"$WORK/run/session.json"
# The collector saw both steps between its cycles: WARN lines, and cpu_manifest.json records
# them in its last key.
/usr/bin/python3 - "$WORK/run/cpu/cpu_manifest.json" <<'EOF' || fail "the manifest does not record the two steps"
import json, sys
m = json.load(open(sys.argv[1]))
assert list(m)[-1] == "clock_steps", list(m)
steps = [s["step_s"] for s in m["clock_steps"]]
assert len(steps) == 2 and 3000 < steps[0] < 4200 and -2400 < steps[1] < -1200, steps
print(f"# manifest clock_steps: {[round(s) for s in steps]}")
EOF
(($(grep -c 'WARN cpu_power::collector: the wall clock stepped by' "$WORK/scrape.log") == 2)) ||
  fail "the collector did not warn once per step"
ok "the collector warns about each step and records both in cpu_manifest.json (last key)"
# With the steps recorded, the report never integrates across them: the window fails and says
# which step (before, it only warned about the forward step as a gap between samples).
rc=0
"$BIN/cpu-power" report "$WORK/run" >"$WORK/report.txt" 2>&1 || rc=$?
[ "$rc" = 1 ] || { cat "$WORK/report.txt"; fail "report over a stepped window exited $rc, want 1 (a failed window)"; }
grep -qE '\[session\] error: the wall clock stepped by \+3[0-9]{3}\.[0-9]+ s at [0-9.]+ \(recorded in .*cpu_manifest.json\)' \
  "$WORK/report.txt" || { cat "$WORK/report.txt"; fail "the report does not fail the window on the recorded step"; }
ok "the report fails the window a recorded step falls in: $(grep -oE 'the wall clock stepped by [-+0-9.]+ s' "$WORK/report.txt" | head -1)"

# --- wall-clock steps during `cpu-power run`: recorded, said, and no energy across them -----
# The command steps the session's wall clock itself (the timestamp file is read again on every
# call), 3 s back or 20 s forward, halfway through its 8 s on the monotonic clock. session.json
# keeps the right duration and records the step; the run warns; the report fails the session
# window instead of integrating a 5 s or 28 s span as the command's energy.
cat >"$WORK/fast.yaml" <<'EOF'
telemetry:
  enabled: true
  collect_interval_ms: 200
  request_timeout_seconds: 0.5
  cpu_power_exporter: {}
EOF
for step in -3 +20; do
  echo "+0" >"$WORK/run_faketime.rc"
  rc=0
  env LD_PRELOAD="$FAKETIME_LIB" FAKETIME_TIMESTAMP_FILE="$WORK/run_faketime.rc" \
    FAKETIME_NO_CACHE=1 FAKETIME_DONT_FAKE_MONOTONIC=1 FAKETIME_DONT_RESET=1 \
    ASAN_OPTIONS="${ASAN_OPTIONS:-}${ASAN_OPTIONS:+:}verify_asan_link_order=0" \
    "$BIN/cpu-power" run --simulate gb200 --config "$WORK/fast.yaml" --log-dir "$WORK/run$step" \
    -- sh -c "sleep 4; echo '${step}s' >'$WORK/run_faketime.rc'; sleep 4" >"$WORK/run$step.log" 2>&1 || rc=$?
  [ "$rc" = 0 ] || { cat "$WORK/run$step.log"; fail "run with a ${step} s clock step exited $rc"; }
  grep -q 'WARN cpu_power::run: the wall clock stepped by' "$WORK/run$step.log" ||
    fail "no warning about the ${step} s step: $(grep -c . "$WORK/run$step.log") log lines"
  /usr/bin/python3 - "$WORK/run$step" "$step" <<'EOF' || fail "session.json or the report after a ${step} s step"
import json, sys
d, step = sys.argv[1], float(sys.argv[2])
s = json.load(open(d + "/session.json"))
assert 7.5 < s["duration"] < 8 + 10, s  # the monotonic clock is untouched
assert abs(s["end_monotonic"] - s["start_monotonic"] - s["duration"]) < 0.05, s
assert abs((s["end_unix"] - s["start_unix"]) - (s["duration"] + step)) < 1.0, s
steps = s["clock_steps"]
assert len(steps) == 1 and abs(steps[0]["step_s"] - step) < 0.5, steps
assert s["start_unix"] - 1 <= steps[0]["at_unix"] <= s["end_unix"] + 1, (steps, s)
report = json.load(open(d + "/power_energy_report.json"))
session = [w for w in report if w["benchmark_type"] == "session"]
assert len(session) == 1 and "wall clock stepped" in session[0].get("error", ""), session
print(f"# {step:+.0f} s step: wall span {s['end_unix'] - s['start_unix']:.2f} s, duration {s['duration']:.2f} s, "
      f"recorded step {steps[0]['step_s']:+.3f} s; session window failed")
EOF
done
ok "clock steps during run (-3 s, +20 s): session.json keeps the duration and records the step, WARN, the report fails the window"

finish
