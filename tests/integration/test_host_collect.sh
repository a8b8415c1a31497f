#!/usr/bin/env bash
# `cpu-power host-collect`, the host leg's per-node collector, as a real process on simulated
# nodes (both kernel layouts) and on the stand-in DCGM and NVML libraries: the v5 rows, the
# order of metadata, header and ready marker, utilization, module power, the exit statuses,
# timestamp_local, a SIGKILL mid-run, and the report over what it wrote.
source "$(dirname "$0")/lib.sh"
: "${STANDINS:?STANDINS must point at the stand-in libraries}"
PY=/usr/bin/python3
DCGM="$STANDINS/libdcgm.so.4"
NVML="$STANDINS/libnvidia-ml.so.1"
export FAKE_DCGM_CONTROL="$WORK/dcgm.ctl" FAKE_NVML_CONTROL="$WORK/nvml.ctl"
HEADER='schema_version,timestamp_unix,timestamp_local,hostname,source,sensor,socket_id,power_w,cpu_rail_w,soc_w,dram_w,module_w,total_power_w,cpu_util_total,cpu_util_user,cpu_util_nice,cpu_util_sys,cpu_util_irq'

# collect NAME HOST ARGS...: a collector in the background; ready once its marker is there.
collect() {
  local name=$1 host=$2
  shift 2
  spawn "$name" "$BIN/cpu-power" host-collect --output-dir "$WORK/$name/nodes" \
    --ready-dir "$WORK/$name/ready" --hostname "$host" "$@"
  COLLECTOR_PID=$LAST_PID
}
wait_ready() {  # wait_ready DIR HOST
  local end=$((SECONDS + 15 * ${CPUPOWER_TEST_TIME_SCALE:-1}))
  while [ ! -e "$1/ready/$2.ready.json" ]; do
    ((SECONDS < end)) || fail "no ready marker in $1/ready"
    sleep 0.05
  done
}
# rows_at_least FILE N: waits until FILE has N data lines.
rows_at_least() {
  local end=$((SECONDS + 15 * ${CPUPOWER_TEST_TIME_SCALE:-1}))
  while [ "$(($(wc -l <"$1") - 1))" -lt "$2" ]; do
    ((SECONDS < end)) || fail "$1: fewer than $2 rows"
    sleep 0.05
  done
}
exit_of() {  # exit_of PID: waits for it (a child of this shell) and sets RC to its status
  RC=0
  wait "$1" || RC=$?
}

# --- ACPI on a GB200 node, both kernel layouts -------------------------------------------
for layout in legacy modern; do
  start_sim "sim_$layout" "$WORK/tree_$layout" --profile gb200 --layout "$layout" --update-ms 50
  collect "acpi_$layout" node-a --hwmon-root "$WORK/tree_$layout" --interval-seconds 0.1 --no-nvml
  wait_ready "$WORK/acpi_$layout" node-a
  csv="$WORK/acpi_$layout/nodes/node-a.csv"
  # The marker comes only once the header and rows are on disk, and the metadata before all.
  [ "$(head -1 "$csv" | tr -d '\r')" = "$HEADER" ] || fail "$layout: header $(head -1 "$csv")"
  [ "$(wc -l <"$csv")" -ge 3 ] || fail "$layout: ready before the first sample's rows"
  [ -s "$WORK/acpi_$layout/nodes/node-a.metadata.json" ] || fail "$layout: no metadata before ready"
  # The host leg writes group-writable files (umask 0002, whatever the caller's), as
  # docs/formats.md states: 0664 rows, 0644 JSON written through a temporary file, 0775 dirs.
  [ "$(stat -c %a "$csv")" = 664 ] || fail "$layout: $csv has mode $(stat -c %a "$csv")"
  [ "$(stat -c %a "$WORK/acpi_$layout/ready/node-a.ready.json")" = 644 ] || fail "$layout: ready marker mode"
  [ "$(stat -c %a "$WORK/acpi_$layout/nodes")" = 775 ] || fail "$layout: nodes/ mode $(stat -c %a "$WORK/acpi_$layout/nodes")"
  rows_at_least "$csv" 20
  # The sample is taken on the ACPI readers' own cycle and the rows are written once a
  # second, so the main thread wakes about once a second, not at every 100 ms sample: its
  # voluntary context switches over 3 s (a slower machine only makes fewer).
  woke() { awk '/^voluntary_ctxt_switches/ {print $2}' "/proc/$COLLECTOR_PID/task/$COLLECTOR_PID/status"; }
  w0=$(woke)
  sleep 3
  w1=$(woke)
  [ $((w1 - w0)) -le 9 ] || fail "$layout: the main thread woke $((w1 - w0)) times in 3 s (a wake-up a sample?)"
  kill -TERM "$COLLECTOR_PID"
  exit_of "$COLLECTOR_PID"
  [ "$RC" = 0 ] || fail "$layout: exit status after SIGTERM"
  stop "$SIM_PID"
  $PY - "$WORK/acpi_$layout" <<'PYEOF' || fail "$layout: rows or metadata wrong"
import csv, json, sys, collections
d = sys.argv[1]
rows = list(csv.DictReader(open(d + "/nodes/node-a.csv", newline="")))
meta = json.load(open(d + "/nodes/node-a.metadata.json"))
ready = json.load(open(d + "/ready/node-a.ready.json"))
assert ready["hostname"] == "node-a" and ready["source"] == "acpi", ready
assert meta["status"] == "complete" and meta["sample_row_count"] == len(rows), (meta, len(rows))
assert meta["ended_at_unix"] > meta["started_at_unix"], meta
assert meta["source"] == "acpi" and meta["aggregate_scope"] == "cpu_side_socket_total"
assert all(s["average_interval_ms"] is not None for s in meta["sensors"]), meta["sensors"]
by_time = collections.defaultdict(list)
for r in rows:
    assert r["schema_version"] == "5" and r["source"] == "acpi" and r["hostname"] == "node-a", r
    assert r["sensor"] == "CPU%s:cpuSidePowerUsageW" % r["socket_id"], r
    assert r["module_w"] == "" and r["cpu_util_total"] == "", r
    # A component rail is read on its own thread: the first sample may come before its first
    # read (blank, never a guess); after that it sits inside the envelope.
    if r["cpu_rail_w"]:
        assert float(r["cpu_rail_w"]) < float(r["power_w"]), r
    by_time[r["timestamp_unix"]].append(r)
times = sorted(by_time, key=float)
late_blank = [r for t in times[2:] for r in by_time[t] if r["cpu_rail_w"] == ""]
assert not late_blank, late_blank[:2]
for t in times:
    group = by_time[t]
    assert sorted(r["socket_id"] for r in group) == ["0", "1"], group
    total = sum(float(r["power_w"]) for r in group)
    assert all(abs(float(r["total_power_w"]) - total) < 1e-9 for r in group), group
    assert len({r["timestamp_local"] for r in group}) == 1
# Strictly increasing sample times at about the interval: no sample twice, none stretched
# by a read (the readers are on their own threads).
gaps = [float(b) - float(a) for a, b in zip(times, times[1:])]
assert min(gaps) > 0, gaps
assert len(times) >= 10, len(times)
PYEOF
  ok "ACPI ($layout layout): metadata, header, then ready; v5 rows per socket with the node total; main thread woke $((w1 - w0)) times in 3 s; SIGTERM exit 0 with final metadata"
done

# --- timestamp_local: the node's zone, as Python's isoformat ------------------------------
start_sim sim_tz "$WORK/tree_tz" --profile gh200 --update-ms 50
TZ=Asia/Kolkata collect tz node-tz --hwmon-root "$WORK/tree_tz" --no-nvml
wait_ready "$WORK/tz" node-tz
rows_at_least "$WORK/tz/nodes/node-tz.csv" 3
kill -TERM "$COLLECTOR_PID"
exit_of "$COLLECTOR_PID"
  [ "$RC" = 0 ] || fail "tz collector exit status"
TZ=Asia/Kolkata $PY - "$WORK/tz/nodes/node-tz.csv" <<'PYEOF' || fail "timestamp_local differs from Python's"
import csv, datetime, sys
for r in csv.DictReader(open(sys.argv[1], newline="")):
    want = datetime.datetime.fromtimestamp(float(r["timestamp_unix"])).astimezone().isoformat()
    assert r["timestamp_local"] == want, (r["timestamp_local"], want)
    assert want.endswith("+05:30")
PYEOF
ok "timestamp_local equals Python's fromtimestamp().astimezone().isoformat() (Asia/Kolkata)"

# --- DCGM with utilization, and NVML module power ------------------------------------------
mkdir -p "$WORK/empty"
PCI="$WORK/pci"
for b in 0008:01:00.0:0 0009:01:00.0:0 0018:01:00.0:1 0019:01:00.0:1; do
  mkdir -p "$PCI/${b%:*}"; echo "${b##*:}" >"$PCI/${b%:*}/numa_node"
done
cat >"$FAKE_NVML_CONTROL" <<CTL
gpus=4
gpu.0.bus=0008:01:00.0
gpu.1.bus=0009:01:00.0
gpu.2.bus=0018:01:00.0
gpu.3.bus=0019:01:00.0
gpu.0.mw=900000
gpu.1.mw=910000
gpu.2.mw=800000
gpu.3.mw=820000
CTL
cat >"$FAKE_DCGM_CONTROL" <<CTL
entities=0,1
value.0.1130=50.5
value.0.1132=6.25
value.1.1130=46.0
value.1.1132=6.0
value.0.1100=0.25
value.0.1101=0.2
value.0.1102=0
value.0.1103=0.04
value.0.1104=0.01
value.1.1100=0.5
value.1.1101=nan
CTL
collect dcgm node-d --hwmon-root "$WORK/empty" --powercap-root "$WORK/empty" --dcgm-lib "$DCGM" --nvml-lib "$NVML" \
  --pci-root "$PCI" --interval-seconds 0.05
wait_ready "$WORK/dcgm" node-d
rows_at_least "$WORK/dcgm/nodes/node-d.csv" 40  # 20 samples: the report window below spans most
# NVML answers on its own thread: wait for a row that has module power.
end=$((SECONDS + 10 * ${CPUPOWER_TEST_TIME_SCALE:-1}))
until grep -q ',905,' "$WORK/dcgm/nodes/node-d.csv"; do ((SECONDS < end)) || fail "no module_w"; sleep 0.05; done
kill -TERM "$COLLECTOR_PID"
exit_of "$COLLECTOR_PID"
  [ "$RC" = 0 ] || fail "dcgm collector exit status"
grep -qF 'WARN cpu_power_exporter: ACPI unusable; falling back to RAPL' "$WORK/dcgm.log" || fail "no step-down WARN"
grep -qF 'WARN cpu_power_exporter: RAPL unusable; falling back to DCGM' "$WORK/dcgm.log" || fail "no RAPL step-down WARN"
$PY - "$WORK/dcgm" <<'PYEOF' || fail "DCGM rows or metadata wrong"
import csv, json, sys
d = sys.argv[1]
rows = [r for r in csv.DictReader(open(d + "/nodes/node-d.csv", newline="")) if r["module_w"]]
meta = json.load(open(d + "/nodes/node-d.metadata.json"))
assert rows, "no row with module_w"
s0 = [r for r in rows if r["socket_id"] == "0"][-1]
s1 = [r for r in rows if r["socket_id"] == "1"][-1]
assert s0["source"] == "dcgm" and s0["sensor"] == "CPU0:cpuPowerUsageW", s0
assert (s0["power_w"], s0["cpu_rail_w"], s0["soc_w"], s0["dram_w"]) == ("50.5", "50.5", "6.25", ""), s0
assert s0["total_power_w"] == "96.5" and s1["total_power_w"] == "96.5"
assert s0["module_w"] == "905" and s1["module_w"] == "810", (s0["module_w"], s1["module_w"])
util = [s0["cpu_util_" + k] for k in ("total", "user", "nice", "sys", "irq")]
assert util == ["0.25", "0.2", "0", "0.04", "0.01"], util  # an idle 0 stays 0
assert (s1["cpu_util_total"], s1["cpu_util_user"], s1["cpu_util_sys"]) == ("0.5", "", ""), s1
watched = {f["field_id"]: f["watched"] for f in meta["power_fields"]}
assert watched == {1130: True, 1132: True}, watched
assert [f["field_id"] for f in meta["utilization_fields"]] == [1100, 1101, 1102, 1103, 1104]
assert meta["aggregate_scope"] == "cpu_rail_only" and meta["field_name"] == "DCGM_FI_DEV_CPU_POWER_WATTS"
assert meta["module_power"]["enabled"] is True
PYEOF
ok "DCGM: 1130 as power_w and cpu_rail_w, 1132 as soc_w, utilization 1100-1104 (0 kept, NaN blank), NVML module_w per socket, metadata"

# The library refuses the utilization fields: power without them, with a WARN.
echo 'refuse=1100' >>"$FAKE_DCGM_CONTROL"
collect dcgm_nu node-d --hwmon-root "$WORK/empty" --powercap-root "$WORK/empty" --dcgm-lib "$DCGM" --no-nvml --interval-seconds 0.05
wait_ready "$WORK/dcgm_nu" node-d
rows_at_least "$WORK/dcgm_nu/nodes/node-d.csv" 4
kill -TERM "$COLLECTOR_PID"
exit_of "$COLLECTOR_PID"
  [ "$RC" = 0 ] || fail "exit status without utilization"
grep -qF 'WARN cpu_power_exporter::dcgm: DCGM refused the CPU utilization fields; collecting power without utilization fields=[1130, 1132]' "$WORK/dcgm_nu.log" ||
  fail "no utilization refusal WARN: $(grep WARN "$WORK/dcgm_nu.log")"
sed -n 2p "$WORK/dcgm_nu/nodes/node-d.csv" | tr -d '\r' | grep -qE ',96\.5,,,,,$' || fail "utilization not blank: $(sed -n 2p "$WORK/dcgm_nu/nodes/node-d.csv")"
ok "utilization refused: WARN, power still collected, utilization cells blank"

# Socket 1's GPUs 12 % apart: NVML withholds its module power, and the final metadata counts
# the rows that lack module_w for that reason.
sed -i 's/^gpu.3.mw=.*/gpu.3.mw=900000/' "$FAKE_NVML_CONTROL"
collect nvml_dis node-d --hwmon-root "$WORK/empty" --powercap-root "$WORK/empty" --dcgm-lib "$DCGM" --nvml-lib "$NVML" \
  --pci-root "$PCI" --interval-seconds 0.05
wait_ready "$WORK/nvml_dis" node-d
end=$((SECONDS + 10 * ${CPUPOWER_TEST_TIME_SCALE:-1}))
until [ "$(grep -c ',905,' "$WORK/nvml_dis/nodes/node-d.csv")" -ge 3 ]; do
  ((SECONDS < end)) || fail "no module_w on socket 0"
  sleep 0.05
done
kill -TERM "$COLLECTOR_PID"
exit_of "$COLLECTOR_PID"
  [ "$RC" = 0 ] || fail "exit status with disagreeing GPUs"
$PY - "$WORK/nvml_dis" <<'PYEOF2' || fail "withheld module rows"
import csv, json, sys
d = sys.argv[1]
rows = list(csv.DictReader(open(d + "/nodes/node-d.csv", newline="")))
meta = json.load(open(d + "/nodes/node-d.metadata.json"))
withheld = meta["module_power"]["withheld_rows"]
s1 = [r for r in rows if r["socket_id"] == "1"]
assert s1 and not any(r["module_w"] for r in s1), "socket 1 has module_w"
assert withheld["disagree"] >= 3, withheld
assert withheld["disagree"] + withheld["stale"] <= len(s1), (withheld, len(s1))
PYEOF2
grep -qF 'GPU module power readings of a socket disagree by more than 5% of their mean; withholding the socket socket=1' "$WORK/nvml_dis.log" ||
  fail "no disagreement WARN"
ok "GPUs of socket 1 disagreeing: no module_w there, counted in the metadata (module_power.withheld_rows)"

# --- no source: error marker, exit 2, no ready marker -------------------------------------
rc=0
"$BIN/cpu-power" host-collect --output-dir "$WORK/none/nodes" --ready-dir "$WORK/none/ready" \
  --hostname node-x --hwmon-root "$WORK/empty" --source acpi >"$WORK/none.log" 2>&1 || rc=$?
[ "$rc" = 2 ] || fail "no source: exit $rc, want 2"
[ ! -e "$WORK/none/ready/node-x.ready.json" ] || fail "ready marker without a source"
$PY - "$WORK/none/ready/node-x.error.json" "$WORK/empty" <<'PYEOF' || fail "error marker"
import json, sys
m = json.load(open(sys.argv[1]))
assert m == {"error": "no ACPI power_meter hwmon sensors found under " + sys.argv[2], "hostname": "node-x"}, m
PYEOF
rc=0
"$BIN/cpu-power" host-collect --output-dir "$WORK/none/nodes" --ready-dir "$WORK/none/ready" \
  --interval-seconds 0 >/dev/null 2>&1 || rc=$?
[ "$rc" = 2 ] || fail "--interval-seconds 0: exit $rc"
ok "no source: error marker naming the reason, exit 2; a bad interval is a usage error (2)"

# --- a host name that is no file name: nothing written outside the directories -----------
# (on a node with a source, where the collector would otherwise write its rows)
for bad in ../escaped . ..; do
  rc=0
  timeout -s TERM $((10 * ${CPUPOWER_TEST_TIME_SCALE:-1})) "$BIN/cpu-power" host-collect \
    --output-dir "$WORK/esc/out/nodes" --ready-dir "$WORK/esc/out/ready" --hostname "$bad" \
    --hwmon-root "$WORK/tree_legacy" --no-nvml >"$WORK/esc.log" 2>&1 || rc=$?
  [ "$rc" = 2 ] || fail "--hostname $bad: exit $rc, want 2"
  grep -qF "invalid host name host=$bad: it names" "$WORK/esc.log" || fail "--hostname $bad: $(cat "$WORK/esc.log")"
done
written=$(find "$WORK" \( -path "$WORK/esc/*" -type f \) -o -name 'escaped*')
[ -z "$written" ] || fail "files written for an invalid host name: $written"
ok "a host name with '/' (or '.', '..') is refused with exit 2 before any file is written"

# --- SIGKILL mid-run: rows up to the kill are kept, the merge reads them -------------------
start_sim sim_kill "$WORK/tree_kill" --profile gb200 --update-ms 50
collect kill node-k --hwmon-root "$WORK/tree_kill" --no-nvml --interval-seconds 0.02
wait_ready "$WORK/kill" node-k
rows_at_least "$WORK/kill/nodes/node-k.csv" 20
kill -KILL "$COLLECTOR_PID"
exit_of "$COLLECTOR_PID"
kept=$(($(wc -l <"$WORK/kill/nodes/node-k.csv") - 1))
grep -q '"status"' "$WORK/kill/nodes/node-k.metadata.json" && fail "a killed collector wrote final metadata"
rc=0
"$BIN/cpu-power" merge "$WORK/kill" --expected-nodes node-k >"$WORK/merge.log" 2>&1 || rc=$?
[ "$rc" = 0 ] || { cat "$WORK/merge.log"; fail "merge exit $rc"; }
$PY - "$WORK/kill" "$kept" <<'PYEOF' || fail "rows lost"
import csv, json, sys
d, kept = sys.argv[1], int(sys.argv[2])
merged = list(csv.DictReader(open(d + "/samples.csv", newline="")))
m = json.load(open(d + "/manifest.json"))
# Every complete line survives; only a torn last line may be dropped.
assert kept - 1 <= len(merged) <= kept, (len(merged), kept)
assert m["malformed_rows"] == 0 and "cpu_samples_malformed" not in m["reason_codes"], m
PYEOF
stop "$SIM_PID"
ok "SIGKILL mid-run: $kept rows on disk, all complete ones merged, no final metadata"

# --- writes failing mid-run (a file size limit, as a full disk would): no partial row ------
# The collector's file may grow to 8 KiB; writes past it fail (EFBIG, SIGXFSZ ignored) until
# the limit is lifted. Every line on disk must stay a whole row. The failing state is logged
# when it starts and the recovery when it ends, never a line per failed write (rows are
# written once a second, each write all of the rows taken since the last, or none). Rows differ in
# length, so a shorter row may still fit under the limit after a longer one failed: that is a
# real recovery, logged, and failing again is logged again. So the log must alternate, start
# with a failure, end (once the limit is lifted) with a recovery, and hold fewer state lines
# than failed writes.
start_sim sim_full "$WORK/tree_full" --profile gb200 --update-ms 50
spawn full bash -c 'trap "" XFSZ; ulimit -S -f 8; exec "$@"' _ "$BIN/cpu-power" host-collect \
  --output-dir "$WORK/full/nodes" --ready-dir "$WORK/full/ready" --hostname node-f \
  --hwmon-root "$WORK/tree_full" --no-nvml --interval-seconds 0.02
COLLECTOR_PID=$LAST_PID
wait_for_line "$WORK/full.log" 'cannot append rows' 15
sleep 2.5  # (more failing writes, one a second, which must not be logged again)
prlimit --pid "$COLLECTOR_PID" --fsize=unlimited
recovered_last() {
  [ "$(grep -oE 'cannot append rows|writes recovered' "$WORK/full.log" | tail -n 1)" = "writes recovered" ]
}
wait_until 15 "a recovery logged after the limit was lifted" recovered_last
rows_at_least "$WORK/full/nodes/node-f.csv" 120
kill -TERM "$COLLECTOR_PID"
exit_of "$COLLECTOR_PID"
stop "$SIM_PID"
[ "$RC" = 0 ] || fail "full disk: exit $RC"
$PY - "$WORK/full.log" <<'PYEOF' || fail "failing and recovering states not logged once per change"
import re, sys
text = open(sys.argv[1]).read()
marks = re.findall(r"cannot append rows|writes recovered", text)
failed = [int(n) for n in re.findall(r"writes recovered path=\S+ failed_writes=(\d+)", text)]
assert marks and marks[0] == "cannot append rows" and marks[-1] == "writes recovered", marks
assert all(a != b for a, b in zip(marks, marks[1:])), marks  # alternating
assert sum(failed) > len(failed), (failed, "a line per failed write")
PYEOF
grep -qE 'writes recovered .*failed_writes=[1-9][0-9]* rows_lost=[1-9]' "$WORK/full.log" || fail "recovery line: $(grep recovered "$WORK/full.log")"
grep -qE 'stopped rows=[0-9]+ read_failures=[0-9]+ write_errors=[1-9][0-9]* rows_lost=[1-9]' "$WORK/full.log" || fail "final line: $(grep stopped "$WORK/full.log")"
$PY - "$WORK/full/nodes/node-f.csv" <<'PYEOF' || fail "a partial row stayed in the file"
import sys
data = open(sys.argv[1], "rb").read()
assert len(data) > 8192, len(data)
lines = data.split(b"\r\n")
assert lines[-1] == b"", "last line not ended"
for i, line in enumerate(lines[:-1]):
    assert line.count(b",") == 17 and b"\n" not in line and b"\r" not in line, (i + 1, line)
    if i:
        float(line.split(b",")[7])  # power_w, whole
PYEOF
ok "writes failing mid-run: every line a whole row, failing and recovery logged once per change"

# --- the report over host-leg rows ----------------------------------------------------------
# A session window inside the DCGM run above; the report finds cpu_power/samples.csv.
"$BIN/cpu-power" merge "$WORK/dcgm" --expected-nodes node-d >/dev/null
mkdir -p "$WORK/logdir"
mv "$WORK/dcgm" "$WORK/logdir/cpu_power"
$PY - "$WORK/logdir" <<'PYEOF'
import csv, json, sys
d = sys.argv[1]
t = sorted({float(r["timestamp_unix"]) for r in csv.DictReader(open(d + "/cpu_power/samples.csv", newline=""))})
json.dump({"schema_version": 1, "command": ["bench"], "start_unix": t[2], "end_unix": t[-3], "exit_code": 0},
          open(d + "/session.json", "w"))
PYEOF
"$BIN/cpu-power" report "$WORK/logdir" --json-out "$WORK/report.json" >"$WORK/report.txt" 2>"$WORK/report.err" ||
  { cat "$WORK/report.err"; fail "report failed"; }
$PY - "$WORK/report.json" "$WORK/logdir/session.json" <<'PYEOF' || { cat "$WORK/report.txt"; fail "report numbers"; }
import json, sys
rep = json.load(open(sys.argv[1]))
s = json.load(open(sys.argv[2]))
w = rep[0]
node = w["cpu_per_node"][0]
dur = s["end_unix"] - s["start_unix"]
assert node["label"] == "cpu/node-d", node
assert abs(node["joules"] - 96.5 * dur) < 1e-6 * 96.5 * dur, (node["joules"], 96.5 * dur)
means = {round(u["mean"], 12) for u in w["cpu_utilization"] if u["column"] == "cpu_util_total"}
assert {0.25, 0.5} <= means, w["cpu_utilization"]  # per socket, as the stand-in reports
PYEOF
grep -qi 'util' "$WORK/report.txt" || fail "no utilization in the report text"
ok "report over the host leg's merged samples: node joules = 96.5 W x window, utilization reported"

finish
