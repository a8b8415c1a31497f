#!/usr/bin/env bash
# `cpu-power run` on a real local Slurm cluster (scripts/slurm-up.sh): three fake nodes, each
# in its own network and mount namespaces with its own address and simulated
# /sys/class/hwmon, so that the exporters run with their default arguments as on a cluster.
#  1. inside an allocation: one exporter per node, rows from all, manifest entries, finalize;
#  2. one node's link cut mid-run: its gap shows in its rows and counts, the other nodes keep
#     every slot, and the benchmark's exit status is unchanged.
source "$(dirname "$0")/slurm_lib.sh"

start_cluster 3
BRIDGE=$(cat "$CLUSTER/run/bridge")
ok "cluster up: $(tail -2 "$WORK/up.log" | head -1)"

cat >"$WORK/fast.yaml" <<'EOF'
telemetry:
  enabled: true
  collect_interval_ms: 200
  request_timeout_seconds: 0.5
  cpu_power_exporter:
    port: 9405
    source: auto
EOF

# --- 1. a run inside an allocation -------------------------------------------------------
rc=0
# The command keeps a copy of prometheus_sd.json as it is while the command runs.
salloc -N3 "$BIN/cpu-power" run --config "$WORK/fast.yaml" --log-dir "$WORK/run1" \
  -- sh -c 'cp "$1" "$2"; sleep 2; exit 7' sh "$WORK/run1/prometheus_sd.json" "$WORK/sd_during.json" \
  >"$WORK/run1.log" 2>&1 || rc=$?
[ "$rc" = 7 ] || { cat "$WORK/run1.log"; fail "run exited $rc, want the command's 7"; }
grep -qF "argv=\"srun --jobid " "$WORK/run1.log" || fail "no srun argv logged"
grep -qE 'argv="srun --jobid [0-9]+ --overlap --nodes 3 --ntasks 3 --nodelist n1,n2,n3 --output '"$WORK"'/run1/telemetry_cpu_power_exporter.%N.out '"$BIN"'/cpu-power-exporter --port 9405 --source auto"' \
  "$WORK/run1.log" || fail "srun argv: $(grep argv= "$WORK/run1.log")"
for n in n1 n2 n3; do
  # Default arguments: bound to every address, reading /sys/class/hwmon inside the node.
  grep -q 'listening addr=0.0.0.0:9405' "$WORK/run1/telemetry_cpu_power_exporter.$n.out" ||
    fail "exporter on $n: $(cat "$WORK/run1/telemetry_cpu_power_exporter.$n.out")"
done
$PY - "$WORK/run1" "$CLUSTER" <<'PYEOF' || fail "rows or manifest incomplete"
import csv, json, sys, collections
d, cluster = sys.argv[1], sys.argv[2]
rows = collections.defaultdict(list)
for r in csv.DictReader(open(d + "/power/cpu/samples.csv")):
    rows[r["hostname"]].append(float(r["timestamp_unix"]))
m = json.load(open(d + "/power/cpu/cpu_manifest.json"))
s = json.load(open(d + "/session.json"))
assert s["exit_code"] == 7, s
assert sorted(m["nodes"]) == ["n1", "n2", "n3"], m["nodes"].keys()
for n in ("n1", "n2", "n3"):
    node = m["nodes"][n]
    assert node["error_count"] == 0 and node["scrape_count"] >= 8, (n, node)
    assert node["endpoint_url"].startswith("http://10.213."), node  # the node's own address
    assert len(rows[n]) >= 16, (n, len(rows[n]))  # 2 sockets per scrape
    assert min(rows[n]) <= s["start_unix"] and max(rows[n]) >= s["end_unix"], n
assert m["stopped_at_unix"] is not None
PYEOF
ok "inside an allocation: one exporter per node with default args, rows and manifest for every node, exit 7 kept"

# The exporters are gone once the run is over: nothing listens on any node any more.
for i in 2 3 4; do
  addr=$(grep -o 'http://[0-9.]*' "$WORK/run1/power/cpu/cpu_manifest.json" | sed -n "$((i - 1))p")
  if curl -s -m 1 "$addr:9405/health" >/dev/null 2>&1; then fail "exporter still answers at $addr"; fi
done
ok "exporters stopped after the run"

# Prometheus service discovery: while the command ran, one target group per node at the
# address the collector scraped, with the job's id and the log directory's name; emptied
# at the end.
job=$(grep -oE 'argv="srun --jobid [0-9]+' "$WORK/run1.log" | head -1 | grep -oE '[0-9]+$')
$PY - "$WORK/sd_during.json" "$WORK/run1/power/cpu/cpu_manifest.json" "$job" <<'PYEOF' ||
import json, sys
groups = json.load(open(sys.argv[1]))
m = json.load(open(sys.argv[2]))
want = [{"targets": [m["nodes"][n]["endpoint_url"][len("http://"):-len("/metrics")]],
         "labels": {"node": n, "job_id": sys.argv[3], "run_name": "run1"}} for n in ("n1", "n2", "n3")]
assert groups == want, (groups, want)
PYEOF
  fail "prometheus_sd.json during the run: $(cat "$WORK/sd_during.json")"
[ "$(tr -d ' \n' <"$WORK/run1/prometheus_sd.json")" = "[]" ] || fail "prometheus_sd.json after the run: $(cat "$WORK/run1/prometheus_sd.json")"
ok "prometheus_sd.json during the run: n1..n3 at their scraped addresses, job_id $job, run_name run1; [] after"

# --- 2. one node's link cut mid-run ------------------------------------------------------
rc=0
salloc -N3 "$BIN/cpu-power" run --config "$WORK/fast.yaml" --log-dir "$WORK/cut" -- \
  sh -c "sleep 2; ip link set ${BRIDGE}v2 down; sleep 2.5; ip link set ${BRIDGE}v2 up; sleep 2; exit 5" \
  >"$WORK/cut.log" 2>&1 || rc=$?
ip link set "${BRIDGE}v2" up 2>/dev/null || true
[ "$rc" = 5 ] || { cat "$WORK/cut.log"; fail "cut run exited $rc, want the command's 5"; }
$PY - "$WORK/cut" <<'PYEOF' || fail "gap not where it belongs"
import csv, json, sys, collections
d = sys.argv[1]
rows = collections.defaultdict(set)
for r in csv.DictReader(open(d + "/power/cpu/samples.csv")):
    rows[r["hostname"]].add(float(r["timestamp_unix"]))
m = json.load(open(d + "/power/cpu/cpu_manifest.json"))
s = json.load(open(d + "/session.json"))
def max_gap(ts):
    ts = sorted(ts)
    return max(b - a for a, b in zip(ts, ts[1:]))
expected_slots = (s["end_unix"] - s["start_unix"]) / 0.2
for n in ("n1", "n3"):
    node = m["nodes"][n]
    assert node["error_count"] == 0 and node["missed_slots"] == 0, (n, node)
    assert len(rows[n]) >= expected_slots - 1, (n, len(rows[n]), expected_slots)
    assert max_gap(rows[n]) < 0.5, (n, max_gap(rows[n]))
cut = m["nodes"]["n2"]
assert cut["error_count"] >= 1, cut
assert cut["last_error"] is None or cut["last_error"].startswith(("timeout", "connect")), cut
assert 2.0 <= max_gap(rows["n2"]) <= 4.5, max_gap(rows["n2"])
assert max(rows["n2"]) >= s["end_unix"], "n2 came back after the link did"
print("n2 gap %.2f s, errors %d, missed slots %d" % (max_gap(rows["n2"]), cut["error_count"], cut["missed_slots"]))
PYEOF
ok "link cut on n2: its gap and error count show, n1 and n3 kept every slot, exit 5 kept"

# --- the cluster leaves nothing behind ---------------------------------------------------
pids=$(cat "$CLUSTER"/run/*.pid 2>/dev/null || true)
bash "$ROOT/scripts/slurm-down.sh" "$CLUSTER" || fail "slurm-down reported a survivor"
for p in $pids; do
  [ "$(cut -d' ' -f3 "/proc/$p/stat" 2>/dev/null || echo gone)" = Z ] && continue
  kill -0 "$p" 2>/dev/null && fail "pid $p survived slurm-down"
done
ip link show "$BRIDGE" >/dev/null 2>&1 && fail "bridge $BRIDGE left behind"
ip -o link | grep -q "$BRIDGE" && fail "veths of $BRIDGE left behind"
grep -q "$CLUSTER" /proc/mounts && fail "mounts left behind"
ok "slurm-down: no daemon, namespace, veth, bridge or mount left"
finish
