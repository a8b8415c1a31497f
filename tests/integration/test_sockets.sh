#!/usr/bin/env bash
# A socket without its primary reading, end to end over real processes: a simulated node
# whose socket 0 total reads the firmware's invalid value from the start, and one whose
# socket 1 total goes invalid mid-run. The exporter names the socket (WARN, socket_up 0), the
# collector calls the node degraded, writes the socket left without total_power_w and counts
# the rows in cpu_manifest.json; a value over the physical bound is a read error.
source "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3

# check.py OUT_DIR HOST EXPECTED MISSING: samples.csv and cpu_manifest.json of a degraded node.
cat >"$WORK/check.py" <<'EOF'
import csv, json, sys

out, host, expected, missing = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
def fail(msg):
    print("FAIL:", msg, file=sys.stderr)
    sys.exit(1)

rows = [r for r in csv.DictReader(open(out + "/samples.csv", newline="")) if r["hostname"] == host]
node = json.load(open(out + "/cpu_manifest.json"))["nodes"][host]
keys = list(node.keys())
if keys[8:] != ["sockets_expected", "sockets_missing", "status", "duplicate_series",
                "average_interval_s"]:
    fail("node keys %r" % keys)
# The simulated node's meters average 50 ms (sim-node's default).
if node["average_interval_s"] != {"min": 0.05, "max": 0.05}:
    fail("average_interval_s %r" % node["average_interval_s"])
if keys[:8] != ["resolved_mode", "scrape_count", "error_count", "endpoint_url", "last_error",
                "missed_slots", "first_sample_unix", "last_sample_unix"]:
    fail("existing node keys moved: %r" % keys)
if node["sockets_expected"] != [int(s) for s in expected.split(",")]:
    fail("sockets_expected %r" % node["sockets_expected"])
if node["status"] != "degraded":
    fail("status %r" % node["status"])
gap = node["sockets_missing"].get(missing)
if not gap or list(node["sockets_missing"].keys()) != [missing]:
    fail("sockets_missing %r" % node["sockets_missing"])
# Every row of an instant without the missing socket has an empty total; the count is exact.
by_time = {}
for r in rows:
    by_time.setdefault(r["timestamp_unix"], []).append(r)
without = [rs for rs in by_time.values() if all(r["socket_id"] != missing for r in rs)]
n_without = sum(len(rs) for rs in without)
if n_without == 0 or gap["rows"] != n_without:
    fail("rows without socket %s: csv %d, manifest %r" % (missing, n_without, gap))
for rs in without:
    for r in rs:
        if r["total_power_w"] != "":
            fail("total_power_w %r on a row set without socket %s" % (r["total_power_w"], missing))
        if float(r["power_w"]) <= 0:
            fail("power_w %r" % r["power_w"])
times = sorted(float(t) for t, rs in by_time.items() if rs in without)
if abs(gap["first_unix"] - times[0]) > 1e-6 or abs(gap["last_unix"] - times[-1]) > 1e-6:
    fail("first/last_unix %r vs rows %r..%r" % (gap, times[0], times[-1]))
# Whole row sets keep their total: the sum of the sockets' power_w.
for rs in by_time.values():
    if rs in without:
        continue
    total = sum(float(r["power_w"]) for r in rs)
    for r in rs:
        if abs(float(r["total_power_w"]) - total) > 1e-6:
            fail("total_power_w %r, sum %r" % (r["total_power_w"], total))
print(len(rows), "rows,", n_without, "without socket", missing)
EOF

# --- socket 0 gives the firmware's invalid value from the start ---------------------------
start_sim dead "$WORK/dead" --profile gb200 --update-ms 10 --seed 7 --fault 'total:0=invalid'
start_exporter exp_dead --hwmon-root "$WORK/dead" --read-interval-ms 20
grep -qE 'WARN cpu_power_exporter: ACPI socket totals report non-zero power on some sockets only.* live=1 total=2 sockets_without_power=0$' "$WORK/exp_dead.log" ||
  fail "no WARN for live=1 total=2: $(cat "$WORK/exp_dead.log")"
grep -q 'INFO .*live=1 total=2' "$WORK/exp_dead.log" && fail "live<total logged at INFO"
wait_for_line "$WORK/exp_dead.log" "WARN cpu_power_exporter: socket's primary power reading is withheld.* socket=0 sensors=hwmon2/power1 live=1 total=2" 10
body=$(curl -sf "http://127.0.0.1:$PORT/metrics")
grep -qxF 'cpu_power_exporter_socket_up{socket="0"} 0' <<<"$body" || fail "socket_up 0 missing: $body"
grep -qxF 'cpu_power_exporter_socket_up{socket="1"} 1' <<<"$body" || fail "socket_up 1 missing: $body"
grep -q '^cpu_power_acpi_watts{.*socket="0",oem_info="Grace Power Socket 0"' <<<"$body" && fail "dead total served"
if command -v promtool >/dev/null; then
  promtool check metrics <<<"$body" >"$WORK/promtool.out" 2>&1 || { cat "$WORK/promtool.out"; fail "promtool check metrics failed"; }
fi
ok "socket 0 invalid from the start: WARN live=1 total=2, socket_up 0/1, total withheld"

"$BIN/cpu-power" scrape --endpoint "node-a=127.0.0.1:$PORT" --out "$WORK/dead_out" --interval-ms 100 \
  --duration-s "$(scaled 2)" >"$WORK/scrape_dead.log" 2>&1 || fail "scrape exited $?: $(cat "$WORK/scrape_dead.log")"
grep -qE 'WARN .*node degraded.* host="?node-a"? .*sockets_missing=0$' "$WORK/scrape_dead.log" ||
  fail "no degraded WARN: $(cat "$WORK/scrape_dead.log")"
grep -qE 'finished rows written [0-9]+, nodes ok 0 / degraded 1 / failing 0' "$WORK/scrape_dead.log" ||
  fail "final status line: $(grep finished "$WORK/scrape_dead.log")"
$PY "$WORK/check.py" "$WORK/dead_out" node-a 0,1 0 || fail "dead socket 0: samples/manifest"
ok "collector: node degraded in log and status, socket 1 rows with no total_power_w, manifest counts them"
stop "$EXPORTER_PID"
stop "$SIM_PID"

# --- socket 1 goes invalid mid-run --------------------------------------------------------
# The fault starts 3 s after the node; the collector runs until the exporter has said so and
# a few more rows are in, so the run holds whole row sets before and degraded ones after.
start_sim late "$WORK/late" --profile gb200 --update-ms 10 --seed 9 --fault "total:1=invalid@$(scaled 3000)"
start_exporter exp_late --hwmon-root "$WORK/late" --read-interval-ms 20 --max-age-s 0.5
spawn scrape_late "$BIN/cpu-power" scrape --endpoint "node-b=127.0.0.1:$PORT" --out "$WORK/late_out" --interval-ms 100
SCRAPE_PID=$LAST_PID
wait_for_line "$WORK/exp_late.log" "WARN cpu_power_exporter: socket's primary power reading is withheld.* socket=1 " 20
wait_for_line "$WORK/scrape_late.log" 'WARN .*node degraded.* host="?node-b"? .*sockets_missing=1$' 10
before=$(grep -c ',node-b,' "$WORK/late_out/samples.csv" || true)
more_rows() { [ "$(grep -c ',node-b,' "$WORK/late_out/samples.csv")" -ge $((before + 5)) ]; }
wait_until 10 "five more rows" more_rows
stop "$SCRAPE_PID"
grep -q "socket's primary power reading is served again" "$WORK/exp_late.log" && fail "socket came back?"
$PY "$WORK/check.py" "$WORK/late_out" node-b 0,1 1 || fail "late socket 1: samples/manifest"
ok "socket 1 lost mid-run: exporter WARN, collector degraded, whole sets keep their total"
stop "$EXPORTER_PID"
stop "$SIM_PID"

# --- overflowing values are read errors ----------------------------------------------------
mk_meter() { # mk_meter DIR NODE LABEL VALUE
  mkdir -p "$1/$2"
  printf 'power_meter\n' >"$1/$2/name"
  printf '%s\n' "$4" >"$1/$2/power1_average"
  printf '%s\n' "$3" >"$1/$2/power1_oem_info"
}
mk_meter "$WORK/big" hwmon2 'Grace Power Socket 0' 18446744073709551615
mk_meter "$WORK/big" hwmon3 'Grace Power Socket 1' 95000000
mk_meter "$WORK/big" hwmon4 'Grace Power Socket 2' 10000000001
mk_meter "$WORK/big" hwmon5 'Grace Power Socket 3' "$(head -c 4096 /dev/zero | tr '\0' 9)"
start_exporter exp_big --hwmon-root "$WORK/big" --read-interval-ms 20 --max-age-s 0.5
errors_grow() {
  local b
  b=$(curl -sf "http://127.0.0.1:$PORT/metrics")
  for n in 2 4 5; do
    grep -qxF "cpu_power_exporter_stale{sensor=\"hwmon$n/power1\"} 1" <<<"$b" || return 1
    grep -qE "^cpu_power_exporter_read_errors_total\{sensor=\"hwmon$n/power1\"\} ([3-9]|[1-9][0-9]+)$" <<<"$b" || return 1
  done
}
wait_until 10 "stale and counted read errors on the overflowing channels" errors_grow
body=$(curl -sf "http://127.0.0.1:$PORT/metrics")
n=$(grep -c '^cpu_power_acpi_watts{' <<<"$body")
[ "$n" = 1 ] || fail "expected only socket 1 served, got $n: $body"
grep -qF 'socket="1",oem_info="Grace Power Socket 1",source="acpi"} 95.000000' <<<"$body" || fail "good socket"
grep -qxF 'cpu_power_exporter_read_errors_total{sensor="hwmon3/power1"} 0' <<<"$body" || fail "good socket errors"
for s in 0 2 3; do
  grep -qxF "cpu_power_exporter_socket_up{socket=\"$s\"} 0" <<<"$body" || fail "socket_up $s"
done
ok "2^64-1, 10 kW + 1 uW and 4,096 digits: not served, read errors counted, stale, socket_up 0"
stop "$EXPORTER_PID"

# --- the same through DCGM (stand-in library) ---------------------------------------------
if [ -n "${STANDINS:-}" ] && [ -f "$STANDINS/libdcgm.so.4" ]; then
  export FAKE_DCGM_CONTROL="$WORK/dcgm.ctl"
  printf 'entities=0,1\nvalue.0.1130=50.149\nvalue.0.1132=6.125\nvalue.1.1130=1000000\nvalue.1.1132=6.5\n' >"$FAKE_DCGM_CONTROL"
  start_exporter exp_dcgm --source dcgm --dcgm-lib "$STANDINS/libdcgm.so.4" --no-nvml --max-age-s 0.5
  wait_for_line "$WORK/exp_dcgm.log" "WARN cpu_power_exporter: socket's primary power reading is withheld.* socket=1 sensors=dcgm/cpu1/1130 " 10
  dcgm_errors() {
    curl -sf "http://127.0.0.1:$PORT/metrics" |
      grep -qE '^cpu_power_exporter_read_errors_total\{sensor="dcgm/cpu1/1130",socket="1",field_id="1130",source="dcgm"\} [1-9]'
  }
  wait_until 10 "read errors on DCGM socket 1's 1,000,000 W" dcgm_errors
  body=$(curl -sf "http://127.0.0.1:$PORT/metrics")
  grep -q '^cpu_power_dcgm_watts{socket="1",field_id="1130"' <<<"$body" && fail "1 MW served: $body"
  grep -qxF 'cpu_power_exporter_socket_up{socket="0"} 1' <<<"$body" || fail "DCGM socket_up 0: $body"
  grep -qxF 'cpu_power_exporter_socket_up{socket="1"} 0' <<<"$body" || fail "DCGM socket_up 1: $body"
  grep -q "withheld.* socket=0 " "$WORK/exp_dcgm.log" && fail "socket 0 said withheld: $(cat "$WORK/exp_dcgm.log")"
  ok "DCGM: a 1 MW field 1130 is a read error, socket_up 0 and a WARN for its socket"
  stop "$EXPORTER_PID"
fi
if [ -n "${STANDINS:-}" ] && [ -f "$STANDINS/libnvidia-ml.so.1" ]; then
  # NVML module power: socket 1's GPU reports 20,000 W (20,000,000 mW), over the bound.
  export FAKE_NVML_CONTROL="$WORK/nvml.ctl"
  for b in 0008:01:00.0:0 0018:01:00.0:1; do
    mkdir -p "$WORK/pci/${b%:*}"; echo "${b##*:}" >"$WORK/pci/${b%:*}/numa_node"
  done
  printf 'gpus=2\ngpu.0.bus=0008:01:00.0\ngpu.1.bus=0018:01:00.0\ngpu.0.mw=498720\ngpu.1.mw=20000000\n' >"$FAKE_NVML_CONTROL"
  start_sim nv "$WORK/nv" --profile gb200 --model constant --no-noise
  start_exporter exp_nv --hwmon-root "$WORK/nv" --pci-root "$WORK/pci" --nvml-lib "$STANDINS/libnvidia-ml.so.1"
  module0() { curl -sf "http://127.0.0.1:$PORT/metrics" | grep -q '^cpu_power_nvml_watts{type="module",socket="0"'; }
  wait_until 10 "NVML module power of socket 0" module0
  sleep 1  # a few more NVML cycles (500 ms each): socket 1 must still have no sample
  body=$(curl -sf "http://127.0.0.1:$PORT/metrics")
  [ "$(grep -c '^cpu_power_nvml_watts{' <<<"$body")" = 1 ] || fail "NVML over the bound served: $(grep nvml <<<"$body")"
  ok "NVML: module power over the bound is not served"
  stop "$EXPORTER_PID"
  stop "$SIM_PID"
fi

# --- thousands of power meters ------------------------------------------------------------
# 1,500 channels (500 sockets x total, CPU and SysIO rails; each channel's watts, energy
# counters and self metrics count against the body's budget at their widest): a bounded pool
# of reader threads, and a body the collector accepts: the channels beyond the budget are
# left out with a WARN, socket totals first.
cat >"$WORK/tree.py" <<'EOF'
import os, sys
root = sys.argv[1]
for i in range(500):
    for k, (label, uw) in enumerate((("Grace Power Socket", 95000000), ("CPU Power Socket", 50000000),
                                     ("SysIO Power Socket", 6000000))):
        d = os.path.join(root, "hwmon%d" % (2 + 3 * i + k))
        os.makedirs(d)
        for name, text in (("name", "power_meter"), ("power1_oem_info", "%s %d" % (label, i)),
                           ("power1_average", str(uw)), ("power1_average_interval", "50")):
            with open(os.path.join(d, name), "w") as f:
                f.write(text + "\n")
EOF
$PY "$WORK/tree.py" "$WORK/many"
start_exporter exp_many --hwmon-root "$WORK/many" --no-nvml
grep -qE 'WARN cpu_power_exporter: too many ACPI power_meter channels for one exposition body; reading and serving the first [0-9]+ \(socket totals first\) discovered=1500 left_out=[0-9]+ ' "$WORK/exp_many.log" ||
  fail "no WARN for the channel budget: $(head -c 2000 "$WORK/exp_many.log")"
threads=$(awk '/^Threads/ {print $2}' "/proc/$EXPORTER_PID/status")
[ "$threads" -le 40 ] || fail "$threads threads for 1,500 channels"
curl -sf "http://127.0.0.1:$PORT/metrics" >"$WORK/many.body" || fail "no body"
bytes=$(wc -c <"$WORK/many.body")
[ "$bytes" -lt 1048576 ] || fail "body of $bytes bytes is over the collector's cap"
[ "$(grep -c '^cpu_power_acpi_watts{.*type="total"' "$WORK/many.body")" = 500 ] || fail "not every socket total served"
[ "$(grep -c '^cpu_power_exporter_socket_up{socket="[0-9]*"} 1$' "$WORK/many.body")" = 500 ] || fail "socket_up of 500 sockets"
"$BIN/cpu-power" scrape --endpoint "node-m=127.0.0.1:$PORT" --out "$WORK/many_out" --interval-ms 500 \
  --duration-s "$(scaled 2)" >"$WORK/scrape_many.log" 2>&1 || fail "scrape exited $?"
grep -q 'body_too_large' "$WORK/scrape_many.log" && fail "collector refused the body: $(cat "$WORK/scrape_many.log")"
rows=$(grep -c ',node-m,' "$WORK/many_out/samples.csv" || true)
[ "$rows" -ge 500 ] || fail "only $rows rows of node-m: $(cat "$WORK/scrape_many.log")"
ok "1,500 channels: $threads threads, a $bytes-byte body with every socket total, the collector takes it"

finish
