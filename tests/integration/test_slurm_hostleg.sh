#!/usr/bin/env bash
# The host-collector leg of `cpu-power run` (telemetry.cpu_power) on a real local Slurm
# cluster: `cpu-power host-collect` on every fake node through srun, ready markers, the
# SIGTERM that lets each collector write its final metadata, the merge, and `required`.
#  1. the host leg alone; 2. both legs together; 3. a node with no source (error marker),
#  required and not; 4. a collector SIGKILLed mid-run; 5. a node slow to become ready,
#  within and past the startup timeout.
source "$(dirname "$0")/slurm_lib.sh"

start_cluster 3
ok "cluster up: $(tail -2 "$WORK/up.log" | head -1)"

recipe() {  # recipe FILE REQUIRED TIMEOUT [EXPORTER]
  {
    echo "telemetry:"
    echo "  enabled: true"
    echo "  collect_interval_ms: 200"
    echo "  request_timeout_seconds: 0.5"
    [ -n "${4:-}" ] && echo "  cpu_power_exporter: {port: 9405, source: auto}"
    echo "  cpu_power:"
    echo "    enabled: true"
    echo "    sample_interval_seconds: 0.1"
    echo "    startup_timeout_seconds: $3"
    echo "    required: $2"
  } >"$1"
}
recipe "$WORK/host.yaml" false 30
recipe "$WORK/both.yaml" false 30 exporter
recipe "$WORK/required.yaml" true 30

# run_in NAME RECIPE COMMAND...: cpu-power run inside a 3-node allocation; sets RC.
run_in() {
  local name=$1 recipe=$2
  shift 2
  RC=0
  salloc -N3 "$BIN/cpu-power" run --config "$recipe" --log-dir "$WORK/$name" -- "$@" \
    >"$WORK/$name.log" 2>&1 || RC=$?
}
# replace_sim I ARGS...: node I's simulated hwmon tree from a new sim-node (faults, or none).
replace_sim() {
  local i=$1
  shift
  local old
  old=$(cat "$CLUSTER/run/sim.$i.pid")
  kill "$old" 2>/dev/null || true
  wait_until 5 "simulated node $i to exit" gone "$old"
  local name="sim$i.$RANDOM"
  spawn "$name" "$BIN/cpu-power" sim-node --root "$CLUSTER/nodes/$i/hwmon" \
    --profile gb200 --update-ms 100 --seed "$i" "$@"
  echo "$LAST_PID" >"$CLUSTER/run/sim.$i.pid"
  wait_for_line "$WORK/$name.log" '^sim-node ready' 10
}

# --- 1. the host leg alone ---------------------------------------------------------------
run_in host "$WORK/host.yaml" sh -c 'sleep 2; exit 6'
[ "$RC" = 6 ] || { cat "$WORK/host.log"; fail "host leg: exit $RC, want the command's 6"; }
grep -qE 'argv="srun --jobid [0-9]+ --overlap --nodes 3 --ntasks 3 --nodelist n1,n2,n3 --output '"$WORK"'/host/telemetry_cpu_power.%N.out '"$BIN"'/cpu-power host-collect --output-dir '"$WORK"'/host/cpu_power/nodes --ready-dir '"$WORK"'/host/cpu_power/ready --source auto --interval-seconds 0.1"' \
  "$WORK/host.log" || fail "collector srun argv: $(grep argv= "$WORK/host.log")"
for n in n1 n2 n3; do
  grep -q "collecting host=$n source=acpi" "$WORK/host/telemetry_cpu_power.$n.out" ||
    fail "collector log on $n: $(cat "$WORK/host/telemetry_cpu_power.$n.out")"
done
[ -s "$WORK/host/power_energy_report.txt" ] || fail "no report for the host leg"
$PY - "$WORK/host" <<'PYEOF' || fail "host leg artifacts"
import csv, json, sys, collections
d = sys.argv[1]
rows = list(csv.DictReader(open(d + "/cpu_power/samples.csv", newline="")))
m = json.load(open(d + "/cpu_power/manifest.json"))
s = json.load(open(d + "/session.json"))
assert m["status"] == "complete" and m["reason_codes"] == [], m
assert m["expected_nodes"] == ["n1", "n2", "n3"] and m["observed_nodes"] == ["n1", "n2", "n3"], m
# The allocation's job id, in the host leg's manifest and session.json alike.
assert m["job_id"].isdigit() and s["job_id"] == m["job_id"], (m["job_id"], s["job_id"])
assert m["sample_row_count"] == len(rows), (m["sample_row_count"], len(rows))
keys = [(float(r["timestamp_unix"]), r["hostname"], r["sensor"]) for r in rows]
assert keys == sorted(keys), "merged rows not in (time, host, sensor) order"
per = collections.Counter(r["hostname"] for r in rows)
for n in ("n1", "n2", "n3"):
    meta = m["node_metadata"][n]
    # SIGTERM reached the collector through srun: it wrote its final metadata.
    assert meta["status"] == "complete" and "ended_at_unix" in meta, (n, meta)
    assert per[n] >= 20, per
    ts = [float(r["timestamp_unix"]) for r in rows if r["hostname"] == n]
    assert min(ts) <= s["start_unix"] and max(ts) >= s["end_unix"] - 0.3, n
assert not __import__("os").path.exists(d + "/power")  # the exporter leg did not run
PYEOF
ok "host leg alone: one collector per node through srun, ready, SIGUSR1 relayed: final metadata, merged and ordered, exit 6 kept, report"

# --- 2. both legs together ----------------------------------------------------------------
run_in both "$WORK/both.yaml" sh -c 'sleep 2'
[ "$RC" = 0 ] || { cat "$WORK/both.log"; fail "both legs: exit $RC"; }
$PY - "$WORK/both" <<'PYEOF' || fail "both legs artifacts"
import csv, json, sys
d = sys.argv[1]
host = json.load(open(d + "/cpu_power/manifest.json"))
exp = json.load(open(d + "/power/cpu/cpu_manifest.json"))
assert host["status"] == "complete", host["reason_codes"]
assert sorted(exp["nodes"]) == ["n1", "n2", "n3"] and all(v["error_count"] == 0 for v in exp["nodes"].values()), exp
for path in ("/cpu_power/samples.csv", "/power/cpu/samples.csv"):
    hosts = {r["hostname"] for r in csv.DictReader(open(d + path, newline=""))}
    assert hosts == {"n1", "n2", "n3"}, (path, hosts)
PYEOF
rc=0
"$BIN/cpu-power" report "$WORK/both" >/dev/null 2>"$WORK/both.err" || rc=$?
[ "$rc" = 1 ] && grep -q 'pick one with --cpu-samples' "$WORK/both.err" || fail "two legs without --cpu-samples: exit $rc"
for leg in cpu_power/samples.csv power/cpu/samples.csv; do
  "$BIN/cpu-power" report "$WORK/both" --cpu-samples "$WORK/both/$leg" --json-out "$WORK/both.json" \
    >"$WORK/both.txt" 2>&1 || { cat "$WORK/both.txt"; fail "report --cpu-samples $leg"; }
  $PY - "$WORK/both.json" <<'PYEOF' || fail "report over $leg"
import json, sys
w = json.load(open(sys.argv[1]))[0]
assert sorted(n["label"] for n in w["cpu_per_node"]) == ["cpu/n1", "cpu/n2", "cpu/n3"], w["cpu_per_node"]
assert all(n["joules"] > 0 for n in w["cpu_per_node"])
PYEOF
done
ok "both legs: power/cpu/ and cpu_power/ complete side by side, the report needs --cpu-samples and reports each"

# --- 3. a node with no source ---------------------------------------------------------------
sim2=$(cat "$CLUSTER/run/sim.2.pid")
kill "$sim2"
wait_until 5 "simulated node 2 to exit" gone "$sim2"
rm -rf "${CLUSTER:?}/nodes/2/hwmon/"*
run_in nosrc_req "$WORK/required.yaml" sh -c "touch $WORK/ran_req; exit 0"
[ "$RC" = 1 ] || { cat "$WORK/nosrc_req.log"; fail "required, no source: exit $RC, want 1"; }
[ ! -e "$WORK/ran_req" ] || fail "required and not ready, yet the command ran"
grep -qF 'telemetry.cpu_power.required is set and the CPU power collectors are not ready (reason=cpu_power_source_unavailable); the command is not run' "$WORK/nosrc_req.log" ||
  fail "no blocking message: $(grep -i required "$WORK/nosrc_req.log")"
[ -s "$WORK/nosrc_req/cpu_power/ready/n2.error.json" ] || fail "no error marker for n2"
run_in nosrc "$WORK/host.yaml" sh -c "touch $WORK/ran; exit 4"
[ "$RC" = 4 ] || { cat "$WORK/nosrc.log"; fail "best-effort, no source: exit $RC, want the command's 4"; }
[ -e "$WORK/ran" ] || fail "best-effort: the command did not run"
$PY - "$WORK/nosrc_req" "$WORK/nosrc" <<'PYEOF' || fail "no-source manifests"
import json, sys
req = json.load(open(sys.argv[1] + "/cpu_power/manifest.json"))
best = json.load(open(sys.argv[2] + "/cpu_power/manifest.json"))
for m in (req, best):
    assert m["status"] == "incomplete", m["status"]
    assert m["reason_codes"][0] == "cpu_power_source_unavailable", m["reason_codes"]  # carried
    assert "cpu_node_samples_missing" in m["reason_codes"] and "n2" in m["missing_nodes"], m
    assert "no ACPI power_meter hwmon sensors" in m["ready_errors"]["n2"], m["ready_errors"]
# When required blocks the command, the collectors are stopped at once: whether the ready
# nodes wrote a row by then depends on how fast this machine runs them. Best-effort, the
# session waits for every node without an error marker to be ready (rows on disk) before it
# runs the command, so they did.
assert best["missing_nodes"] == ["n2"] and best["observed_nodes"] == ["n1", "n3"], best
PYEOF
replace_sim 2
ok "no source on n2: error marker; required blocks the command and exits 1; best-effort runs it and keeps exit 4; reasons carried"

# --- 4. a collector SIGKILLed mid-run -------------------------------------------------------
# n2's collector, picked out by the node name srun gave it.
cat >"$WORK/kill_n2.sh" <<'EOF2'
sleep 1.5
for pid in $(pgrep -f 'cpu-power host-collect'); do
  tr '\0' '\n' </proc/$pid/environ 2>/dev/null | grep -qx SLURMD_NODENAME=n2 && kill -KILL "$pid" && wc -l <"$1" >"$2"
done
sleep 1.5
EOF2
run_in killed "$WORK/host.yaml" bash "$WORK/kill_n2.sh" "$WORK/killed/cpu_power/nodes/n2.csv" "$WORK/n2_lines"
[ "$RC" = 0 ] || { cat "$WORK/killed.log"; fail "collector killed: exit $RC, want the command's 0"; }
[ -s "$WORK/n2_lines" ] || fail "n2's collector was not found to kill"
$PY - "$WORK/killed" "$(cat "$WORK/n2_lines")" <<'PYEOF' || fail "after a SIGKILL"
import csv, json, sys, collections
d, lines_at_kill = sys.argv[1], int(sys.argv[2])
m = json.load(open(d + "/cpu_power/manifest.json"))
rows = collections.Counter(r["hostname"] for r in csv.DictReader(open(d + "/cpu_power/samples.csv", newline="")))
assert m["status"] == "incomplete" and "cpu_collector_failed" in m["reason_codes"], m["reason_codes"]
assert "telemetry_cpu_power.n2" in m["failed_processes"], m["failed_processes"]
assert "status" not in m["node_metadata"]["n2"], m["node_metadata"]["n2"]
for n in ("n1", "n3"):
    assert m["node_metadata"][n]["status"] == "complete", n
    assert rows[n] >= 40, rows
# n2's rows up to the kill are kept (a torn last line at most is dropped).
assert lines_at_kill - 2 <= rows["n2"] <= lines_at_kill, (rows["n2"], lines_at_kill)
PYEOF
ok "collector SIGKILLed on n2: cpu_collector_failed, n1 and n3 intact, n2's rows up to the kill kept, exit 0 kept"

# The same with required: the unpublishable result turns the command's 0 into 1, and a
# command's own failure is kept as it is.
rm -f "$WORK/n2_lines"
run_in killed_req "$WORK/required.yaml" bash "$WORK/kill_n2.sh" "$WORK/killed_req/cpu_power/nodes/n2.csv" "$WORK/n2_lines"
[ "$RC" = 1 ] || { cat "$WORK/killed_req.log"; fail "required, collector killed: exit $RC, want 1"; }
grep -qF 'telemetry.cpu_power.required is set and CPU power artifacts are not publishable reasons=cpu_collector_failed' "$WORK/killed_req.log" ||
  fail "no unpublishable message: $(grep -i publishable "$WORK/killed_req.log")"
printf 'bash %s "$@"; exit 5\n' "$WORK/kill_n2.sh" >"$WORK/kill_n2_fail.sh"
run_in killed_req5 "$WORK/required.yaml" bash "$WORK/kill_n2_fail.sh" "$WORK/killed_req5/cpu_power/nodes/n2.csv" "$WORK/n2_lines"
[ "$RC" = 5 ] || { cat "$WORK/killed_req5.log"; fail "required, collector killed, command failed: exit $RC, want the command's 5"; }
ok "required and unpublishable: exit 0 becomes 1 with the reason; a command's own exit 5 is never masked"

# --- 5. a node slow to become ready --------------------------------------------------------
# n3's socket totals hang for a while after its simulator starts: the collector's liveness
# probe waits for them.
replace_sim 3 --fault 'total:0=hang@0-1500' --fault 'total:1=hang@0-1500'
run_in slow "$WORK/host.yaml" true
[ "$RC" = 0 ] || { cat "$WORK/slow.log"; fail "slow within the timeout: exit $RC"; }
grep -qF 'CPU power telemetry ready' "$WORK/slow.log" || fail "not ready within 30 s"
$PY - "$WORK/slow/cpu_power/manifest.json" <<'PYEOF' || fail "slow but in time"
import json, sys
m = json.load(open(sys.argv[1]))
assert m["status"] == "complete", m["reason_codes"]
PYEOF
recipe "$WORK/short.yaml" true 1.5
replace_sim 3 --fault 'total:0=hang@0-5000' --fault 'total:1=hang@0-5000'
run_in late "$WORK/short.yaml" sh -c "touch $WORK/ran_late"
[ "$RC" = 1 ] || { cat "$WORK/late.log"; fail "past the timeout, required: exit $RC, want 1"; }
[ ! -e "$WORK/ran_late" ] || fail "past the timeout, yet the command ran"
# n3 is always among the nodes waited for; n1 and n2 may be too on a slow machine.
grep -qE 'CPU power collectors did not become ready on every worker node reason=cpu_power_startup_timeout waiting=(n[12],)*n3$' "$WORK/late.log" ||
  fail "timeout message: $(grep -i ready "$WORK/late.log")"
$PY - "$WORK/late/cpu_power/manifest.json" <<'PYEOF' || fail "past the timeout"
import json, sys
m = json.load(open(sys.argv[1]))
assert m["reason_codes"][0] == "cpu_power_startup_timeout" and m["status"] == "incomplete", m["reason_codes"]
PYEOF
replace_sim 3
ok "n3 slow to be ready: within the timeout the run completes; past it, required exits 1 without running the command"

finish
