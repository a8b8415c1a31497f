#!/usr/bin/env bash
# The GPU leg of `cpu-power run` (telemetry.dcgm_exporter) on a real local Slurm cluster
# (scripts/slurm-up.sh): three fake nodes, each in its own network, mount and UTS namespaces,
# so every node's dcgm-exporter stand-in (`cpu-power sim-gpu`) binds the recipe's port 9400
# on its own address and names its GPUs after its own hostname.
#  1. both legs in one run inside an allocation: one dcgm-exporter per node started by srun
#     from the recipe's command, the CPU exporter leg beside it, the sa-bench stand-in as the
#     command; GPU rows, manifest, windows, the consumer-style check and the report against
#     the oracle;
#  2. n2's dcgm-exporter SIGKILLed while the command runs: the endpoint error and n2's
#     unbracketed window in the manifest, not publishable, the CPU leg untouched; exit 0
#     best-effort, 1 with telemetry.required;
#  3. the GPU leg alone (no CPU exporter leg), dcgm-exporters already running on the nodes
#     (no command or binary in the recipe): node addresses from the leg's own resolver step,
#     scraped where they are, publishable, and left running.
source "$(dirname "$0")/slurm_lib.sh"
ORACLE="$ROOT/tests/oracle"

start_cluster 3
ok "cluster up: $(tail -2 "$WORK/up.log" | head -1)"

SIM_GPU="$BIN/cpu-power sim-gpu --listen 0.0.0.0:{port} --gpus 2 --collect-interval-ms 100"
recipe() {  # recipe FILE REQUIRED started|running [gpu-only]
  local dcgm="{container_image: x, port: 9400, command: \"$SIM_GPU\"}" cpu="cpu_power_exporter: {}"
  [ "$3" = running ] && dcgm="{container_image: x, port: 9400}"
  [ "${4:-}" = gpu-only ] && cpu=""
  cat >"$1" <<EOF
benchmark: {type: sa-bench}
telemetry:
  enabled: true
  required: $2
  collect_interval_ms: 200
  request_timeout_seconds: 0.5
  startup_timeout_seconds: $(scaled 30)
  dcgm_exporter: $dcgm
  $cpu
EOF
}
recipe "$WORK/best.yaml" false started
recipe "$WORK/required.yaml" true started
recipe "$WORK/running.yaml" false running gpu-only

json_get() { $PY -c 'import json, sys; d = json.load(open(sys.argv[1])); print(eval("d" + sys.argv[2]))' "$1" "$2"; }

# run_in NAME RECIPE COMMAND...: cpu-power run inside a 3-node allocation, CPU samples v2 (the
# layout the consumer-style check reads), with RUN_EXTRA's options; sets RC.
RUN_EXTRA=()
run_in() {
  local name=$1 recipe=$2
  shift 2
  RC=0
  salloc -N3 "$BIN/cpu-power" run --config "$recipe" --cpu-samples-schema 2 "${RUN_EXTRA[@]}" \
    --log-dir "$WORK/$name" -- "$@" >"$WORK/$name.log" 2>&1 || RC=$?
}

# This cluster's sim-gpu processes on the nodes: srun's tasks carry the node's name and this
# cluster's slurm.conf in their environment (another test's cluster may have an n2 of its
# own; srun itself, whose command line names sim-gpu too, has no node name).
cat >"$WORK/sim_gpu_pids.sh" <<'EOF'
# sim_gpu_pids.sh [NODE]: this cluster's `cpu-power sim-gpu` tasks (on NODE), one PID a line.
for pid in $(pgrep -f 'cpu-power sim-gpu'); do
  env=$(tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null) || continue
  grep -qxF "SLURM_CONF=$SLURM_CONF" <<<"$env" || continue
  grep -qx "SLURMD_NODENAME=${1:-.*}" <<<"$env" || continue
  echo "$pid"
done
EOF
sim_gpu_pids() { bash "$WORK/sim_gpu_pids.sh" "$@"; }

# --- 1. both legs in one run inside an allocation ------------------------------------------
D="$WORK/run1"
RUN_EXTRA=(--job-id not-slurms)
run_in run1 "$WORK/best.yaml" sh -c \
  "$PY $ROOT/scripts/demo-bench.py $D --seconds 2 --idle 1 --concurrency 4 | tee $D/benchmark.out"
[ "$RC" = 0 ] || { cat "$WORK/run1.log"; fail "both legs: exit $RC"; }
grep -qE 'dcgm-exporter starting name=telemetry_dcgm_exporter nodes=3 argv="srun --jobid [0-9]+ --overlap --nodes 3 --ntasks 3 --nodelist n1,n2,n3 --output '"$D"'/telemetry_dcgm_exporter.%N.out '"$BIN"'/cpu-power sim-gpu --listen 0.0.0.0:9400 --gpus 2 --collect-interval-ms 100"' \
  "$WORK/run1.log" || fail "dcgm-exporter srun argv: $(grep 'dcgm-exporter starting' "$WORK/run1.log")"
for n in n1 n2 n3; do
  # Bound to every address of the node, named after the node it runs on.
  grep -q '^sim-gpu: listening on http://0.0.0.0:9400' "$D/telemetry_dcgm_exporter.$n.out" ||
    fail "dcgm-exporter on $n: $(cat "$D/telemetry_dcgm_exporter.$n.out")"
done
# Requests refused while an exporter is still coming up are readiness, not the run's
# endpoint failures: the clean run's manifest has no reason codes (checked below).
grep -q 'GPU power first rows from every node count=3' "$WORK/run1.log" || fail "GPU leg not ready on every node"
$PY - "$D" <<'PYEOF' || fail "GPU package of the run"
import collections, csv, json, sys
d = sys.argv[1]
rows = list(csv.DictReader(open(d + "/power/samples.csv", newline="")))
by_scrape = collections.defaultdict(list)
for r in rows:
    by_scrape[(r["hostname"], int(r["scrape_seq"]))].append(r)
assert {h for h, _ in by_scrape} == {"n1", "n2", "n3"}, sorted(by_scrape)
for key, group in by_scrape.items():
    # One scrape of a host: one row per GPU, one timestamp and one scrape_seq.
    assert len({r["timestamp_unix"] for r in group}) == 1, key
    assert sorted(int(r["gpu_index"]) for r in group) == [0, 1], key
uuids = {(r["hostname"], r["gpu_index"]): r["gpu_uuid"] for r in rows}
assert len(uuids) == 6 and len(set(uuids.values())) == 6, uuids  # each node its own GPUs
# And no two scrapes of a host share a timestamp.
seqs = {h: {s for hh, s in by_scrape if hh == h} for h in ("n1", "n2", "n3")}
for h in seqs:
    times = {r["timestamp_unix"] for r in rows if r["hostname"] == h}
    assert len(times) == len(seqs[h]) >= 10, (h, len(times), len(seqs[h]))
m = json.load(open(d + "/power/manifest.json"))
assert m["status"] == "complete" and m["publication_valid"] is True, (m["status"], m["reason_codes"])
assert m["reason_codes"] == [], m["reason_codes"]
assert m["sample_row_count"] == len(rows), (m["sample_row_count"], len(rows))
assert sorted((e["hostname"], e["gpu_index"]) for e in m["expected_devices"]) == \
    [(n, i) for n in ("n1", "n2", "n3") for i in (0, 1)], m["expected_devices"]
assert m["dcgm_exporter"]["port"] == 9400, m["dcgm_exporter"]
assert [(w["benchmark_type"], w["concurrency"]) for w in m["expected_windows"]] == \
    [("session", 1), ("sa-bench", 4)], m["expected_windows"]
for v in m["window_validations"]:
    assert v["power_coverage_valid"] and v["reason_codes"] == [], v
    assert len(v["per_device_max_sample_gap_seconds"]) == 6, v
for name in ("session", "results_concurrency_4_demo"):
    w = json.load(open(d + "/power/windows/" + name + ".json"))
    assert w["status"] == "completed", (name, w)
cpu = json.load(open(d + "/power/cpu/cpu_manifest.json"))
assert sorted(cpu["nodes"]) == ["n1", "n2", "n3"], cpu["nodes"].keys()
for n, node in cpu["nodes"].items():
    assert node["error_count"] == 0, (n, node)
print("%d GPU rows, %d scrapes of n1" % (len(rows), len(seqs["n1"])))
PYEOF
ok "both legs: dcgm-exporter started by srun (argv logged) on 3 nodes and scraped once it answers, 3 x 2 GPUs, a row per GPU per scrape sharing time and scrape_seq, complete and publishable, session and sa-bench windows completed"

# The clock check: one srun step over every node before any server, each node's output in
# clock_sync_<node>.out, the summary and the manifest's copy; the artifacts' job id is the
# allocation's, not the --job-id given beside it (warned about), and srun got Slurm's.
JOB=$(grep -oE 'clock check starting name=clock_sync argv="srun --jobid [0-9]+' "$WORK/run1.log" | grep -oE '[0-9]+$') ||
  fail "no clock check step: $(grep -i clock "$WORK/run1.log")"
grep -qF "clock check starting name=clock_sync argv=\"srun --jobid $JOB --overlap --nodes 3 --ntasks 3 --nodelist n1,n2,n3 --output $D/clock_sync_%N.out $BIN/cpu-power clock-check\"" \
  "$WORK/run1.log" || fail "clock check srun argv: $(grep 'clock check starting' "$WORK/run1.log")"
[ "$(grep -n 'clock check: ' "$WORK/run1.log" | head -1 | cut -d: -f1)" -lt "$(grep -n 'dcgm-exporter starting' "$WORK/run1.log" | head -1 | cut -d: -f1)" ] ||
  fail "the clock check did not come before the servers"
grep -q -- "--job-id not-slurms differs from the Slurm job id $JOB" "$WORK/run1.log" || fail "no warning about --job-id"
$PY - "$D" "$JOB" <<'PYEOF' || fail "clock check files or job id of the Slurm run"
import json, os, sys
d, job = sys.argv[1], sys.argv[2]
m = json.load(open(d + "/power/manifest.json"))
assert m["job_id"] == job, (m["job_id"], job)
assert json.load(open(d + "/session.json"))["job_id"] == job
c = json.load(open(d + "/clock_sync.json"))
assert [n["hostname"] for n in c["nodes"]] == ["n1", "n2", "n3"], c
for n in c["nodes"]:
    out = open(os.path.join(d, n["output_file"])).read()
    assert n["output_file"] == "clock_sync_%s.out" % n["hostname"], n
    # Each node probed itself: its own name in the result line, the kernel's answer there.
    last = out.splitlines()[-1]
    assert last.startswith("clock_sync ") and last.endswith(" hostname=" + n["hostname"]), out
    assert "== ntp_adjtime(2): " in out and n["synchronized"] in ("yes", "no"), (n, out)
assert m["clock_sync_check"] == c, (m["clock_sync_check"], c)
bad = [n["hostname"] for n in c["nodes"]
       if n["synchronized"] != "yes" or abs(n["offset_seconds"] or 0) > c["max_offset_seconds"]]
assert m["clock_sync_failures"] == bad, (m["clock_sync_failures"], bad)
PYEOF
ok "clock check: one srun step (--jobid $JOB) over n1..n3 before the servers, clock_sync_<node>.out from each node, clock_sync.json and the manifest agree; job id $JOB everywhere, --job-id beside it warned about"

RUN_EXTRA=()
$PY "$ROOT/tests/tools/consumer_check.py" "$D" >"$WORK/consumer.txt" 2>&1 ||
  { cat "$WORK/consumer.txt"; fail "the consumer-style validator refused the run"; }
ok "consumer-style validator accepts the run: $(grep -c '^energy' "$WORK/consumer.txt") CPU energies"

"$BIN/cpu-power" report "$D" --json-out "$WORK/ours.json" >"$WORK/ours.txt" 2>&1 ||
  { cat "$WORK/ours.txt"; fail "report on the run failed"; }
$PY "$ORACLE/power_energy_oracle.py" "$D" --json-out "$WORK/oracle.json" >"$WORK/oracle.txt" 2>&1 ||
  { cat "$WORK/oracle.txt"; fail "oracle failed on the run"; }
$PY "$ORACLE/compare_reports.py" "$WORK/ours.json" "$WORK/oracle.json" >"$WORK/compare.txt" ||
  { cat "$WORK/compare.txt"; fail "report and oracle disagree"; }
$PY - "$WORK/ours.json" <<'PYEOF' || fail "combined figures missing from the report"
import json, sys
windows = json.load(open(sys.argv[1]))
assert windows, "no windows"
for w in windows:
    gpu = {n["label"]: n["joules"] for n in w["gpu_per_node"]}
    cpu = {n["label"]: n["joules"] for n in w["cpu_per_node"]}
    assert sorted(gpu) == ["gpu/n1", "gpu/n2", "gpu/n3"], gpu
    assert sorted(cpu) == ["cpu/n1", "cpu/n2", "cpu/n3"], cpu
    assert all(j > 0 for j in list(gpu.values()) + list(cpu.values())), (gpu, cpu)
    assert len(w["gpu_per_device"]) == 6, w["gpu_per_device"]
    both = w["combined_total_joules"]
    assert abs(both - w["gpu_total_joules"] - w["cpu_total_joules"]) <= 1e-12 * both, w
PYEOF
ok "report: GPU and CPU joules for n1, n2 and n3 agree with the Python oracle ($(grep -oE '^[0-9]+ numbers' "$WORK/compare.txt"))"

# The exporters the run started are gone once it is over.
[ -z "$(sim_gpu_pids)" ] || fail "dcgm-exporters left running after the run: $(sim_gpu_pids)"
ok "the dcgm-exporters the run started are stopped with it"

# --- 2. n2's dcgm-exporter SIGKILLed mid-run ------------------------------------------------
cat >"$WORK/kill_n2.sh" <<'EOF'
# kill_n2.sh LOG_DIR PIDS_SCRIPT TIMEOUT_S: the command of the fault. Waits until n2 has rows
# from two scrape slots past the last one on file when it started, SIGKILLs n2's sim-gpu and
# waits until it is gone, then waits until n1 and n3 have rows from four slots past the last
# one on file at that point, so that the collector meets n2's closed port while the command
# still runs. Notes both slots in LOG_DIR/slots ("STARTED KILLED").
samples=$1/power/samples.csv
end=$((SECONDS + $3))
last_slot() { awk -F, 'NR > 1 && $3 + 0 > m { m = $3 + 0 } END { print m + 0 }' "$samples"; }
# wait_rows SLOT HOST...: until every HOST has a row from SLOT or a later one.
wait_rows() {
  local slot=$1
  shift
  until awk -F, -v slot="$slot" -v hosts="$*" 'NR > 1 && $3 + 0 >= slot { seen[$4] = 1 }
      END { n = split(hosts, h, " "); for (i = 1; i <= n; i++) if (!(h[i] in seen)) exit 1 }' "$samples"; do
    ((SECONDS < end)) || { echo "no rows from slot $slot on from $*" >&2; exit 4; }
    sleep 0.05
  done
}
started=$(last_slot)
wait_rows $((started + 2)) n2
pids=$(bash "$2" n2)
[ -n "$pids" ] || { echo "no sim-gpu found on n2" >&2; exit 3; }
kill -KILL $pids
for pid in $pids; do
  while [ -e "/proc/$pid" ] && [ "$(sed 's/.*) //' "/proc/$pid/stat" | cut -d' ' -f1)" != Z ]; do
    ((SECONDS < end)) || { echo "n2's sim-gpu $pid outlived SIGKILL" >&2; exit 5; }
    sleep 0.05
  done
done
killed=$(last_slot)
echo "$started $killed" >"$1/slots"
wait_rows $((killed + 4)) n1 n3
EOF
for mode in best required; do
  name="kill_$mode"
  run_in "$name" "$WORK/$mode.yaml" bash "$WORK/kill_n2.sh" "$WORK/$name" "$WORK/sim_gpu_pids.sh" "$(scaled 20)"
  want=0
  [ "$mode" = required ] && want=1
  [ "$RC" = "$want" ] || { cat "$WORK/$name.log"; fail "n2 killed ($mode): exit $RC, want $want"; }
  [ -s "$WORK/$name/slots" ] || { cat "$WORK/$name.log"; fail "n2 killed ($mode): the command did not get to the kill"; }
  if [ "$mode" = required ]; then
    grep -qE 'GPU power artifacts are not publishable and telemetry.required is set .*reasons=.*endpoint_http_error' "$WORK/$name.log" ||
      fail "required: no unpublishable message: $(grep -i publishable "$WORK/$name.log")"
  fi
  $PY - "$WORK/$name" $(cat "$WORK/$name/slots") <<'PYEOF' || fail "n2 killed ($mode): artifacts"
import collections, csv, json, sys
d, started, killed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
m = json.load(open(d + "/power/manifest.json"))
s = json.load(open(d + "/session.json"))
assert s["exit_code"] == 0, s
assert "endpoint_http_error" in m["reason_codes"], m["reason_codes"]  # a refused connection
assert "exporter_exited" not in m["reason_codes"], m["reason_codes"]  # n1 and n3's go on
assert m["publication_valid"] is False, m
session = [v for v in m["window_validations"] if v["benchmark_type"] == "session"]
assert len(session) == 1, m["window_validations"]
v = session[0]
assert not v["power_coverage_valid"], v
assert v["reason_codes"] == ["measurement_window_not_bracketed"], v["reason_codes"]
# Coverage holds for n1's and n3's GPUs; n2's two are the ones without a sample after the end.
gaps = sorted(k.split("/")[0] for k in v["per_device_max_sample_gap_seconds"])
assert gaps == ["n1", "n1", "n3", "n3"], v["per_device_max_sample_gap_seconds"]
# n2 gave rows while the command ran, and they stop at the kill (a slot answered just before
# it may be on file a moment later); n1 and n3 have rows past it and past the command's end.
gpu = collections.defaultdict(list)
for r in csv.DictReader(open(d + "/power/samples.csv", newline="")):
    gpu[r["hostname"]].append((int(r["scrape_seq"]), float(r["timestamp_unix"])))
assert started + 2 <= max(q for q, _ in gpu["n2"]) <= killed + 2, (max(gpu["n2"]), started, killed)
assert max(t for _, t in gpu["n2"]) < s["end_unix"], "n2 has a row after the command's end"
for n in ("n1", "n3"):
    assert max(q for q, _ in gpu[n]) >= killed + 4, (n, max(gpu[n]))
    assert max(t for _, t in gpu[n]) >= s["end_unix"], n
# The CPU leg is untouched: no errors and rows through the command on every node.
cpu = json.load(open(d + "/power/cpu/cpu_manifest.json"))
rows = collections.defaultdict(list)
for r in csv.DictReader(open(d + "/power/cpu/samples.csv", newline="")):
    rows[r["hostname"]].append(float(r["timestamp_unix"]))
assert sorted(cpu["nodes"]) == ["n1", "n2", "n3"], cpu["nodes"].keys()
for n in ("n1", "n2", "n3"):
    assert cpu["nodes"][n]["error_count"] == 0, (n, cpu["nodes"][n])
    assert rows[n] and min(rows[n]) <= s["start_unix"] and max(rows[n]) >= s["end_unix"], n
print("slots: command from %d, n2 killed after %d, n2's last %d, n1's last %d" %
      (started, killed, max(q for q, _ in gpu["n2"]), max(q for q, _ in gpu["n1"])))
PYEOF
done
ok "n2's dcgm-exporter killed mid-run: endpoint_http_error, n2's GPUs leave the session window unbracketed, not publishable, CPU leg untouched; exit 0 best-effort, 1 with required"
[ -z "$(sim_gpu_pids)" ] || fail "dcgm-exporters left running after the kill runs: $(sim_gpu_pids)"

# --- 3. the GPU leg alone, dcgm-exporters already running on the nodes ----------------------
# Inside the allocation: a sim-gpu per node on 9400 as the site's service would be, then a
# run without the CPU exporter leg, which scrapes them and leaves them running; then they are
# stopped.
cat >"$WORK/running.sh" <<EOF
srun --overlap --nodes 3 --ntasks 3 --output "$WORK/site.%N.out" \\
  $BIN/cpu-power sim-gpu --listen 0.0.0.0:9400 --gpus 2 --collect-interval-ms 100 &
site=\$!
end=\$((SECONDS + $(scaled 30)))
for n in n1 n2 n3; do
  until grep -q '^sim-gpu: listening on' "$WORK/site.\$n.out" 2>/dev/null; do
    ((SECONDS < end)) || { echo "sim-gpu on \$n never listened" >&2; kill \$site; exit 3; }
    kill -0 \$site || { echo "the sim-gpu step ended" >&2; exit 3; }
    sleep 0.05
  done
done
rc=0
"$BIN/cpu-power" run --config "$WORK/running.yaml" --log-dir "$WORK/running" \\
  -- sh -c "$PY $ROOT/scripts/demo-bench.py $WORK/running --seconds 1 --idle 0.5 --concurrency 2 >$WORK/running/benchmark.out" || rc=\$?
bash "$WORK/sim_gpu_pids.sh" | wc -l >"$WORK/running_after"
kill -TERM \$site
wait \$site
exit \$rc
EOF
RC=0
salloc -N3 bash "$WORK/running.sh" >"$WORK/running.log" 2>&1 || RC=$?
[ "$RC" = 0 ] || { cat "$WORK/running.log"; fail "already running: exit $RC"; }
grep -q 'dcgm-exporter: scraping the one already running on each node, port 9400' "$WORK/running.log" ||
  fail "already running: not scraped where it runs"
# The GPU leg alone: no CPU exporter leg to find the nodes' addresses, so it runs the resolver
# step itself (this cluster's node names do not resolve on the head node).
grep -q 'dcgm-exporter endpoints resolved on_node=3 by_name=0 of=3' "$WORK/running.log" ||
  { grep -i resolv "$WORK/running.log"; fail "GPU leg alone: addresses not resolved on the nodes"; }
[ -e "$WORK/running/power/cpu" ] && fail "GPU leg alone: a CPU leg ran"
grep -q 'container_image is not launched' "$WORK/running.log" || fail "already running: no container_image warning"
grep -q 'dcgm-exporter starting' "$WORK/running.log" && fail "already running: the run started a dcgm-exporter"
[ "$(cat "$WORK/running_after")" = 3 ] || fail "already running: $(cat "$WORK/running_after") of 3 site exporters left after the run"
$PY - "$WORK/running" <<'PYEOF' || fail "already running: artifacts"
import csv, json, sys
d = sys.argv[1]
m = json.load(open(d + "/power/manifest.json"))
assert m["status"] == "complete" and m["publication_valid"] is True, (m["status"], m["reason_codes"])
assert m["reason_codes"] == [], m["reason_codes"]
assert {r["hostname"] for r in csv.DictReader(open(d + "/power/samples.csv", newline=""))} == {"n1", "n2", "n3"}
assert len(m["expected_devices"]) == 6, m["expected_devices"]
assert [(w["benchmark_type"], w["concurrency"]) for w in m["expected_windows"]] == \
    [("session", 1), ("sa-bench", 2)], m["expected_windows"]
PYEOF
[ -z "$(sim_gpu_pids)" ] || fail "site dcgm-exporters left running: $(sim_gpu_pids)"
ok "the GPU leg alone, dcgm-exporters already running: node addresses from its own resolver step, scraped on 9400, publishable, left running by the run"

finish
