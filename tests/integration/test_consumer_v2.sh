#!/usr/bin/env bash
# `cpu-power scrape --cpu-samples-schema 2` for a reader pinned to the v1/v2 CPU headers: two
# simulated GB200 nodes behind real exporters, scraped into <log>/power/cpu/ in v2; a
# hand-made GPU package (one GPU a host, the same hosts, a window inside the scrape span)
# beside it. tests/tools/consumer_check.py, written from the downstream contract, accepts the
# whole package and integrates every socket's energy over the window; `cpu-power report` must
# agree to 1e-9. The same package in the default v3 is refused whole
# (cpu_samples_header_mismatch), a restarted v2 collector continues the v2 file, a v3 one
# refuses it, and values other than 2 or 3 are usage errors. Such consumers also reject gaps
# over 3.0 s: the collect intervals that risk them are refused or warned about.
source "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3
CHECK="$(cd "$(dirname "$0")/.." && pwd)/tools/consumer_check.py"
V2_HEADER='schema_version,timestamp_unix,hostname,source,sensor,socket_id,power_w,cpu_rail_w,soc_w,dram_w,total_power_w'

for n in a b; do
  start_sim "sim_$n" "$WORK/$n" --profile gb200 --update-ms 10 --seed "$RANDOM"
  start_exporter "exp_$n" --hwmon-root "$WORK/$n" --read-interval-ms 20
  eval "PORT_$n=$PORT"
done
ENDPOINTS=(--endpoint "node-a=127.0.0.1:$PORT_a" --endpoint "node-b=127.0.0.1:$PORT_b")
IV_MS=$(scaled 200)

# scrape LOG_DIR SECONDS [ARGS...]: the collector into LOG_DIR/power/cpu.
scrape() {
  local log=$1 secs=$2
  shift 2
  "$BIN/cpu-power" scrape "${ENDPOINTS[@]}" --out "$log/power/cpu" --interval-ms "$IV_MS" \
    --duration-s "$(scaled "$secs")" "$@" >"$log.scrape.log" 2>&1 ||
    fail "scrape into $log exited $? (log: $(cat "$log.scrape.log"))"
}

# gpu_package LOG_DIR: a GPU package and session windows covering what the CPU rows cover:
# the window starts after every (host, socket) series' first row and ends before its last,
# off the sample times; the GPU rows run from a second before it to a second after.
gpu_package() {
  $PY - "$1" <<'EOF'
import csv, json, os, sys

log = sys.argv[1]
power = os.path.join(log, "power")
first, last = {}, {}
with open(os.path.join(power, "cpu", "samples.csv"), newline="") as f:
    for row in csv.DictReader(f):
        key, t = (row["hostname"], row["socket_id"]), float(row["timestamp_unix"])
        first[key] = min(first.get(key, t), t)
        last[key] = max(last.get(key, t), t)
hosts = sorted({h for h, _ in first})
assert hosts == ["node-a", "node-b"], hosts
start = max(first.values()) + 0.0123
end = min(last.values()) - 0.0123
assert end - start > 1.0, (start, end)
with open(os.path.join(power, "samples.csv"), "w", newline="") as f:
    f.write("schema_version,timestamp_unix,scrape_seq,hostname,gpu_index,gpu_uuid,power_w,"
            "gpu_util_pct,sm_active\r\n")
    seq, t = 0, start - 1.0
    while t <= end + 1.0:
        for i, host in enumerate(hosts):
            f.write("2,%r,%d,%s,0,GPU-%s-0,%r,80.0,0.5\r\n" % (t, seq, host, host, 400.0 + i + seq % 7))
        seq, t = seq + 1, t + 0.5
with open(os.path.join(power, "manifest.json"), "w") as f:
    json.dump({"expected_devices": [
        {"hostname": h, "gpu_index": 0,
         "assignments": [{"worker_role": "decode", "worker_index": 0, "worker_process": 0,
                          "het_group": None}]} for h in hosts]}, f)
os.makedirs(os.path.join(power, "windows"), exist_ok=True)
with open(os.path.join(power, "windows", "session.json"), "w") as f:
    json.dump({"schema_version": 1, "benchmark_type": "session", "result_path": "session.json",
               "concurrency": None, "benchmark_start_time_unix": start,
               "benchmark_end_time_unix": end, "duration": end - start,
               "clock_source": "head_node_wall_clock", "status": "completed", "reason": None}, f)
# The report's window of a run without benchmark artifacts.
with open(os.path.join(log, "session.json"), "w") as f:
    json.dump({"schema_version": 1, "command": ["bench"], "start_unix": start, "end_unix": end,
               "exit_code": 0}, f)
print("window %.3f s" % (end - start))
EOF
}

# --- v2: the consumer accepts the package, and the report agrees on every socket's joules ---
LOG=$WORK/v2
scrape "$LOG" 4 --cpu-samples-schema 2
$PY - "$LOG/power/cpu/samples.csv" "$V2_HEADER" <<'EOF' || fail "v2 samples.csv"
import csv, io, sys
raw = open(sys.argv[1], "rb").read()
assert raw.startswith(sys.argv[2].encode() + b"\r\n"), raw[:120]
rows = list(csv.reader(io.StringIO(raw.decode(), newline="")))[1:]
assert len(rows) >= 20, len(rows)
bad = [r for r in rows if len(r) != 11 or r[0] != "2"]
assert not bad, bad[:3]
EOF
grep -q '^  "samples_schema_version": 2$' "$LOG/power/cpu/cpu_manifest.json" ||
  fail "the manifest does not say v2: $(cat "$LOG/power/cpu/cpu_manifest.json")"
ok "--cpu-samples-schema 2: the exact v2 header, 11 cells and schema_version 2 on every row; the manifest says 2"

gpu_package "$LOG" >/dev/null || fail "building the GPU package"
rc=0
$PY "$CHECK" "$LOG" >"$WORK/check_v2.out" 2>&1 || rc=$?
[ "$rc" = 0 ] || fail "consumer refused the v2 package (exit $rc): $(cat "$WORK/check_v2.out")"
grep -q '^ok CPU samples.csv v2: ' "$WORK/check_v2.out" || fail "no v2 line: $(cat "$WORK/check_v2.out")"
[ "$(grep -c '^energy session.json cpu/node-[ab]/socket[01] ' "$WORK/check_v2.out")" = 4 ] ||
  fail "want 4 socket energies: $(cat "$WORK/check_v2.out")"
ok "the consumer accepts the v2 package: header, sources, sockets of every GPU host, bracketed window, no gap over 3.0 s"

rc=0
"$BIN/cpu-power" report "$LOG" --json-out "$WORK/report.json" >"$WORK/report.out" 2>&1 || rc=$?
[ "$rc" = 0 ] || fail "report exited $rc: $(cat "$WORK/report.out")"
$PY - "$WORK/check_v2.out" "$WORK/report.json" <<'EOF' || fail "report and consumer disagree"
import json, sys
consumer = {}
for line in open(sys.argv[1]):
    if line.startswith("energy "):
        _, window, label, joules = line.split()
        consumer[label] = float(joules)
(window,) = json.load(open(sys.argv[2]))
assert "error" not in window, window
report = {row["label"]: row["joules"] for row in window["cpu_per_socket"]}
assert sorted(report) == sorted(consumer), (sorted(report), sorted(consumer))
for label, joules in sorted(consumer.items()):
    rel = abs(report[label] - joules) / abs(joules)
    assert rel <= 1e-9, (label, report[label], joules, rel)
    print("%s consumer %.6f J report %.6f J rel %.1e" % (label, joules, report[label], rel))
EOF
ok "cpu-power report's per-socket joules equal the consumer's trapezoid to 1e-9"

# --- the default, v3: the same consumer refuses the CPU package whole ----------------------
LOG3=$WORK/v3
scrape "$LOG3" 2
head -1 "$LOG3/power/cpu/samples.csv" | grep -q ',module_w,' || fail "default is not v3"
gpu_package "$LOG3" >/dev/null || fail "building the GPU package (v3)"
rc=0
$PY "$CHECK" "$LOG3" >"$WORK/check_v3.out" 2>&1 || rc=$?
[ "$rc" = 1 ] || fail "consumer exit $rc on v3, want 1: $(cat "$WORK/check_v3.out")"
grep -q '^FAIL cpu_samples_header_mismatch: ' "$WORK/check_v3.out" || fail "$(cat "$WORK/check_v3.out")"
ok "the default v3 package is refused whole by the same consumer (cpu_samples_header_mismatch)"

# --- a restarted collector: v2 continues the v2 file, v3 refuses it ------------------------
before=$(wc -l <"$LOG/power/cpu/samples.csv")
scrape "$LOG" 1 --cpu-samples-schema 2
after=$(wc -l <"$LOG/power/cpu/samples.csv")
((after > before)) || fail "a second v2 scrape added no rows ($before -> $after)"
[ "$(grep -c '^schema_version,' "$LOG/power/cpu/samples.csv")" = 1 ] || fail "a second header"
scrape "$LOG" 1
grep -q 'samples.csv open failed.*does not start with the expected header (schema_version,timestamp_unix,hostname,source,sensor,socket_id,power_w,cpu_rail_w,soc_w,dram_w,module_w,total_power_w)' "$LOG.scrape.log" ||
  fail "v3 into a v2 file: $(cat "$LOG.scrape.log")"
[ "$(wc -l <"$LOG/power/cpu/samples.csv")" = "$after" ] || fail "v3 rows landed in the v2 file"
ok "a restarted v2 collector continues the v2 file; a v3 one refuses it and writes nothing"

# --- usage errors: exit 2 naming the value ---------------------------------------------------
for bad in 1 4 v2 ''; do
  rc=0
  "$BIN/cpu-power" scrape "${ENDPOINTS[@]}" --out "$WORK/u" --cpu-samples-schema "$bad" \
    >"$WORK/usage.out" 2>&1 || rc=$?
  [ "$rc" = 2 ] || fail "--cpu-samples-schema '$bad': exit $rc, want 2: $(cat "$WORK/usage.out")"
  grep -qF -- "--cpu-samples-schema" "$WORK/usage.out" || fail "option not named: $(cat "$WORK/usage.out")"
  [ -z "$bad" ] || grep -qF -- "got '$bad'" "$WORK/usage.out" || fail "value not named: $(cat "$WORK/usage.out")"
  rc=0
  "$BIN/cpu-power" run --dry-run --cpu-samples-schema "$bad" -- true >"$WORK/usage.out" 2>&1 || rc=$?
  [ "$rc" = 2 ] || fail "run --cpu-samples-schema '$bad': exit $rc, want 2: $(cat "$WORK/usage.out")"
done
"$BIN/cpu-power" run --dry-run --nodes x1 --cpu-samples-schema 2 --log-dir "$WORK/dry" -- true >"$WORK/dry.out" ||
  fail "run --dry-run --cpu-samples-schema 2"
grep -q 'samples.csv (schema v2) every' "$WORK/dry.out" || fail "dry run: $(cat "$WORK/dry.out")"
ok "--cpu-samples-schema other than 2 or 3: exit 2 naming it (scrape and run); run's plan says v2"

for bad in 0 4 v1 ''; do
  rc=0
  "$BIN/cpu-power" run --dry-run --gpu-samples-schema "$bad" -- true >"$WORK/usage.out" 2>&1 || rc=$?
  [ "$rc" = 2 ] || fail "run --gpu-samples-schema '$bad': exit $rc, want 2: $(cat "$WORK/usage.out")"
  grep -qF -- "--gpu-samples-schema" "$WORK/usage.out" || fail "option not named: $(cat "$WORK/usage.out")"
done
for cmd in run scrape; do
  rc=0
  if [ "$cmd" = run ]; then
    "$BIN/cpu-power" run --dry-run --consumer-profile strict -- true >"$WORK/usage.out" 2>&1 || rc=$?
  else
    "$BIN/cpu-power" scrape "${ENDPOINTS[@]}" --out "$WORK/u" --consumer-profile strict >"$WORK/usage.out" 2>&1 || rc=$?
  fi
  [ "$rc" = 2 ] || fail "$cmd --consumer-profile strict: exit $rc, want 2: $(cat "$WORK/usage.out")"
  grep -qF -- "--consumer-profile" "$WORK/usage.out" || fail "option not named: $(cat "$WORK/usage.out")"
done
# The profile's schemas in the plan, and an explicit schema over it.
printf 'telemetry:\n  enabled: true\n  cpu_power_exporter: {}\n  dcgm_exporter: {container_image: x, port: 9400}\n' >"$WORK/gpu.yaml"
plan() { "$BIN/cpu-power" run --dry-run --nodes x1 --config "$WORK/gpu.yaml" --log-dir "$WORK/dry" "$@" -- true; }
plan --consumer-profile compat >"$WORK/dry.out" || fail "run --dry-run --consumer-profile compat"
grep -q 'cpu/samples.csv (schema v2) every' "$WORK/dry.out" && grep -q 'power/samples.csv (schema v2) every' "$WORK/dry.out" ||
  fail "compat plan: $(cat "$WORK/dry.out")"
plan --consumer-profile compat --cpu-samples-schema 3 --gpu-samples-schema 1 >"$WORK/dry.out" || fail "run --dry-run compat + schemas"
grep -q 'cpu/samples.csv (schema v3) every' "$WORK/dry.out" && grep -q 'power/samples.csv (schema v1) every' "$WORK/dry.out" ||
  fail "compat plan with explicit schemas: $(cat "$WORK/dry.out")"
plan >"$WORK/dry.out" || fail "run --dry-run, default profile"
grep -q 'cpu/samples.csv (schema v3) every' "$WORK/dry.out" && grep -q 'power/samples.csv (schema v3) every' "$WORK/dry.out" ||
  fail "default plan: $(cat "$WORK/dry.out")"
ok "--gpu-samples-schema other than 1..3 and an unknown --consumer-profile: exit 2 naming them; the plan shows compat's v2/v2, an explicit schema over it, and v3/v3 by default"

# --- intervals at which gaps can pass 3.0 s: refused in a recipe at 3000, warned below it ----
printf 'telemetry:\n  enabled: true\n  cpu_power_exporter: {}\n  collect_interval_ms: %s\n' 2000 >"$WORK/r2000.yaml"
printf 'telemetry:\n  enabled: true\n  cpu_power_exporter: {}\n  collect_interval_ms: %s\n' 3000 >"$WORK/r3000.yaml"
"$BIN/cpu-power" check-config "$WORK/r2000.yaml" >"$WORK/cc.out" 2>"$WORK/cc.err" ||
  fail "check-config refused 2000 ms: $(cat "$WORK/cc.err")"
grep -qF "r2000.yaml:4:24: warning: telemetry.collect_interval_ms=2000 can put sample gaps over the 3.0s max sample gap" \
  "$WORK/cc.err" || fail "no warning at 2000 ms: $(cat "$WORK/cc.err")"
rc=0
"$BIN/cpu-power" check-config "$WORK/r3000.yaml" >"$WORK/cc.out" 2>"$WORK/cc.err" || rc=$?
[ "$rc" = 1 ] || fail "check-config exit $rc at 3000 ms, want 1"
grep -qF "r3000.yaml:4:24: telemetry.collect_interval_ms=3000 must be > 0 and < 3000" "$WORK/cc.err" ||
  fail "no error at 3000 ms: $(cat "$WORK/cc.err")"
for iv in 1000 2600 3000; do
  "$BIN/cpu-power" scrape "${ENDPOINTS[@]}" --out "$WORK/iv$iv" --interval-ms "$iv" --duration-s 0.2 \
    >"$WORK/iv$iv.log" 2>&1 || fail "scrape at $iv ms exited $?"
done
! grep -q 'sample gap' "$WORK/iv1000.log" || fail "a warning at 1000 ms: $(cat "$WORK/iv1000.log")"
grep -qF -- "--interval-ms 2600 can put sample gaps over the 3.0s max sample gap: scheduling jitter" \
  "$WORK/iv2600.log" || fail "no warning at 2600 ms: $(cat "$WORK/iv2600.log")"
grep -qF -- "--interval-ms 3000 puts sample gaps over the 3.0s max sample gap" "$WORK/iv3000.log" ||
  fail "no warning at 3000 ms: $(cat "$WORK/iv3000.log")"
ok "collect interval: check-config warns at 2000 ms and refuses 3000; scrape warns at 2600 and 3000, not at 1000"

finish
