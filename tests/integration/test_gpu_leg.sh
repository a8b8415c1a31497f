#!/usr/bin/env bash
# The GPU leg of `cpu-power run` without Slurm: one `cpu-power sim-gpu` per simulated node,
# scraped into power/samples.csv beside the CPU leg's power/cpu/; windows/ for the session and
# the benchmark's sa-bench result; manifest.json with status and publication_valid by the
# contract's rules; a consumer-style check of the whole package; the combined CPU + GPU
# report against the Python oracle; a kind: custom exporter (another exporter's names) and
# visible_devices_env from a cluster configuration; faults (a GPU vanishing, a UUID change,
# an exporter killed mid-run) and `telemetry.required`.
source "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
ORACLE="$ROOT/tests/oracle"
cd "$WORK"

recipe() {  # recipe FILE REQUIRED
  cat >"$1" <<EOF
benchmark: {type: sa-bench}
telemetry:
  enabled: true
  required: $2
  collect_interval_ms: 200
  request_timeout_seconds: 0.5
  startup_timeout_seconds: $(scaled 20)
  dcgm_exporter: {container_image: dcgm-exporter-stand-in, port: 9400}
  cpu_power_exporter: {}
EOF
}
recipe "$WORK/best.yaml" false
recipe "$WORK/required.yaml" true

json_get() { $PY -c 'import json, sys; d = json.load(open(sys.argv[1])); print(eval("d" + sys.argv[2]))' "$1" "$2"; }

# The benchmark stand-in: 1 s idle, 2 s busy, 1 s idle; its sa-bench result below the log
# dir and its summary lines in benchmark.out, as a serving benchmark leaves them.
bench() {  # bench LOG_DIR
  echo "$PY $ROOT/scripts/demo-bench.py $1 --seconds 2 --idle 1 --concurrency 4 | tee $1/benchmark.out"
}

# --- a clean run: both legs, publishable ---------------------------------------------------
rc=0
"$BIN/cpu-power" run --simulate gb200 --nodes a,b --sim-gpus 4 --config "$WORK/best.yaml" \
  --cpu-samples-schema 2 --log-dir "$WORK/ok" -- sh -c "mkdir -p $WORK/ok && $(bench "$WORK/ok")" >"$WORK/ok.log" 2>&1 || rc=$?
[ "$rc" = 0 ] || { cat "$WORK/ok.log"; fail "clean run exited $rc"; }
M="$WORK/ok/power/manifest.json"
[ "$(json_get "$M" '["status"]')" = complete ] || { cat "$M"; fail "clean run: status not complete"; }
[ "$(json_get "$M" '["publication_valid"]')" = True ] || { cat "$M"; fail "clean run: not publishable"; }
[ "$(json_get "$M" '["reason_codes"]')" = "[]" ] || fail "clean run: reasons $(json_get "$M" '["reason_codes"]')"
[ "$(json_get "$M" '["producer"]')" = srt-slurm.dcgm-power ] || fail "producer"
[ "$(json_get "$M" '["samples_schema_version"]')" = 3 ] || fail "samples_schema_version"
[ "$(json_get "$M" '["sample_row_count"]')" = "$(($(wc -l <"$WORK/ok/power/samples.csv") - 1))" ] ||
  fail "sample_row_count does not count the file's rows"
[ "$(json_get "$M" '["samples_sha256"]')" = "$(sha256sum "$WORK/ok/power/samples.csv" | cut -d' ' -f1)" ] ||
  fail "samples_sha256 is not the file's"
[ "$(json_get "$M" '["expected_windows"]')" = "[{'benchmark_type': 'session', 'concurrency': 1}, {'benchmark_type': 'sa-bench', 'concurrency': 4}]" ] ||
  fail "expected windows: $(json_get "$M" '["expected_windows"]')"
head -1 "$WORK/ok/power/samples.csv" | grep -qx $'schema_version,timestamp_unix,scrape_seq,hostname,gpu_index,gpu_uuid,power_w,gpu_util_pct,sm_active,temperature_c\r' ||
  fail "GPU samples header: $(head -1 "$WORK/ok/power/samples.csv")"
$PY - "$WORK/ok/power/samples.csv" <<'EOF' || fail "GPU rows of one host and scrape do not share a time, or a scrape lacks a GPU"
import collections, csv, sys
by_scrape = collections.defaultdict(list)
for r in csv.DictReader(open(sys.argv[1], newline="")):
    by_scrape[(r["hostname"], r["scrape_seq"])].append(r)
assert {h for h, _ in by_scrape} == {"a", "b"}, by_scrape.keys()
for key, rows in by_scrape.items():
    assert len({r["timestamp_unix"] for r in rows}) == 1, key
    assert sorted(int(r["gpu_index"]) for r in rows) == [0, 1, 2, 3], key
EOF
for w in session results_concurrency_4_demo; do
  [ "$(json_get "$WORK/ok/power/windows/$w.json" '["status"]')" = completed ] || fail "window $w not completed"
done
ok "clean run: 2 nodes x 4 GPUs, a row per GPU per scrape sharing time and scrape_seq, 2 windows, complete and publishable"

# The job id outside Slurm: generated, saying it is local, the same in the manifest and
# session.json. The clock check: every node's output file, the summary, and the manifest's
# copy of it; a node that is not synchronised (this machine's kernel may say so) is listed.
$PY - "$WORK/ok" <<'EOF' || fail "job id or clock check files of the clean run"
import json, os, re, sys
run = sys.argv[1]
m = json.load(open(run + "/power/manifest.json"))
s = json.load(open(run + "/session.json"))
assert re.fullmatch(r"local-[0-9]{8}T[0-9]{6}Z-[0-9]+", m["job_id"]), m["job_id"]
assert s["job_id"] == m["job_id"], (s["job_id"], m["job_id"])
c = json.load(open(run + "/clock_sync.json"))
assert c["schema_version"] == 1 and c["max_offset_seconds"] == 0.05, c
assert [n["hostname"] for n in c["nodes"]] == ["a", "b"], c
for n in c["nodes"]:
    assert n["synchronized"] in ("yes", "no"), n  # the kernel always answers locally
    assert n["output_file"] == "clock_sync_%s.out" % n["hostname"], n
    out = open(os.path.join(run, n["output_file"])).read()
    assert "== ntp_adjtime(2): " in out and out.splitlines()[-1].startswith("clock_sync "), out
assert m["clock_sync_check"] == c, (m["clock_sync_check"], c)
bad = [n["hostname"] for n in c["nodes"]
       if n["synchronized"] != "yes" or abs(n["offset_seconds"] or 0) > c["max_offset_seconds"]]
assert m["clock_sync_failures"] == bad, (m["clock_sync_failures"], bad)
EOF
ok "job id $(json_get "$WORK/ok/power/manifest.json" '["job_id"]') in the manifest and session.json; clock check of a and b in clock_sync.json, the manifest and clock_sync_<node>.out"

"$PY" "$ROOT/tests/tools/consumer_check.py" "$WORK/ok" >"$WORK/consumer.txt" 2>&1 ||
  { cat "$WORK/consumer.txt"; fail "the consumer-style validator refused the run"; }
ok "consumer-style validator accepts the run (CPU samples v2, --cpu-samples-schema 2): $(grep -c . "$WORK/consumer.txt") lines"

"$BIN/cpu-power" report "$WORK/ok" --json-out "$WORK/ours.json" >"$WORK/ours.txt" 2>&1 ||
  { cat "$WORK/ours.txt"; fail "report on the clean run failed"; }
grep -q '^  gpu total:' "$WORK/ours.txt" || fail "report has no GPU total"
$PY "$ORACLE/power_energy_oracle.py" "$WORK/ok" --json-out "$WORK/oracle.json" >/dev/null ||
  fail "oracle failed on the clean run"
$PY "$ORACLE/compare_reports.py" "$WORK/ours.json" "$WORK/oracle.json" >"$WORK/compare.txt" ||
  { cat "$WORK/compare.txt"; fail "report and oracle disagree on the clean run"; }
$PY - "$WORK/ours.json" <<'EOF' || fail "combined figures missing from the report"
import json, sys
windows = json.load(open(sys.argv[1]))
assert windows, "no windows"
for w in windows:
    gpu, cpu, both = w["gpu_total_joules"], w["cpu_total_joules"], w["combined_total_joules"]
    assert gpu > 0 and cpu > 0, w
    assert abs(both - gpu - cpu) <= 1e-12 * both, (both, gpu, cpu)
    assert len(w["gpu_per_device"]) == 8 and len(w["gpu_per_node"]) == 2, w["gpu_per_device"]
EOF
ok "report: CPU, GPU and combined joules agree with the Python oracle ($(grep -oE '^[0-9]+ numbers' "$WORK/compare.txt"))"

# --- aiperf: a window per concurrency point, pointing at a result derived from aiperf's files -
sed 's/type: sa-bench/type: agentic/' "$WORK/best.yaml" >"$WORK/agentic.yaml"
rc=0
"$BIN/cpu-power" run --simulate gb200 --nodes a --sim-gpus 2 --config "$WORK/agentic.yaml" \
  --cpu-samples-schema 2 --log-dir "$WORK/aiperf" -- sh -c "mkdir -p $WORK/aiperf && $PY $ROOT/scripts/demo-bench.py $WORK/aiperf --seconds 2 --idle 1 --concurrency 3 --format aiperf | tee $WORK/aiperf/benchmark.out" >"$WORK/aiperf.log" 2>&1 || rc=$?
[ "$rc" = 0 ] || { cat "$WORK/aiperf.log"; fail "aiperf run exited $rc"; }
M="$WORK/aiperf/power/manifest.json"
[ "$(json_get "$M" '["publication_valid"]')" = True ] || { cat "$M"; fail "aiperf run: not publishable"; }
[ "$(json_get "$M" '["expected_windows"]')" = "[{'benchmark_type': 'session', 'concurrency': 1}, {'benchmark_type': 'aiperf', 'concurrency': 3}]" ] ||
  fail "aiperf run: expected windows $(json_get "$M" '["expected_windows"]')"
"$BIN/cpu-power" report "$WORK/aiperf" --json-out "$WORK/aiperf-report.json" >/dev/null 2>&1 ||
  fail "report on the aiperf run failed"
$PY - "$WORK/aiperf" "$WORK/aiperf-report.json" <<'EOF2' || fail "aiperf window and its derived result disagree with the report or with aiperf's files"
import json, sys
run, report = sys.argv[1], json.load(open(sys.argv[2]))
w = json.load(open(run + "/power/windows/aiperf_conc_3.json"))
assert w["status"] == "completed" and w["result_path"] == "power/aiperf/aiperf_conc_3.json", w
r = json.load(open(run + "/" + w["result_path"]))
assert r["derived_from"] == "conc_3/aiperf_artifacts/profile_export.jsonl", r
for k in ("benchmark_start_time_unix", "benchmark_end_time_unix", "duration"):
    assert r[k] == w[k], (k, r[k], w[k])
# The derivation, redone here from aiperf's own files.
recs = [json.loads(l) for l in open(run + "/" + r["derived_from"]) if l.strip()]
starts = [x["metadata"]["request_start_ns"] for x in recs if x["metadata"]["benchmark_phase"] == "profiling"]
agg = json.load(open(run + "/conc_3/aiperf_artifacts/profile_export_aiperf.json"))
assert w["benchmark_start_time_unix"] == min(starts) / 1e9, (w, min(starts))
assert w["duration"] == agg["benchmark_duration"]["avg"], (w, agg)
(win,) = [x for x in report if x["benchmark_type"] == "aiperf"]
assert win["start_unix"] == w["benchmark_start_time_unix"] and win["end_unix"] == w["benchmark_end_time_unix"], (win, w)
EOF2
"$PY" "$ROOT/tests/tools/consumer_check.py" "$WORK/aiperf" >"$WORK/consumer-aiperf.txt" 2>&1 ||
  { cat "$WORK/consumer-aiperf.txt"; fail "the consumer-style validator refused the aiperf run"; }
ok "aiperf run: windows/aiperf_conc_3.json completed and covered, its derived result matching aiperf's files and the report's window; consumer-style validator accepts it"

# --- --gpu-roles: devices mapped to worker roles fill the report's per-role rows -----------
cat >"$WORK/roles.json" <<'EOF'
[{"hostname": "a", "gpu_index": 0, "assignments": [{"worker_role": "prefill", "worker_index": 0, "worker_process": 0, "het_group": null}]},
 {"hostname": "a", "gpu_index": 1, "assignments": [{"worker_role": "decode", "worker_index": 0, "worker_process": 0, "het_group": null}]}]
EOF
rc=0
"$BIN/cpu-power" run --simulate gb200 --nodes a --sim-gpus 2 --gpu-roles "$WORK/roles.json" \
  --config "$WORK/best.yaml" --log-dir "$WORK/roles" -- sleep 2 >"$WORK/roles.log" 2>&1 || rc=$?
[ "$rc" = 0 ] || { cat "$WORK/roles.log"; fail "roles run: exit $rc"; }
M="$WORK/roles/power/manifest.json"
[ "$(json_get "$M" '["publication_valid"]')" = True ] || { cat "$M"; fail "roles run: not publishable"; }
[ "$(json_get "$M" '["expected_devices"][1]["assignments"][0]["worker_role"]')" = decode ] ||
  fail "roles run: expected devices $(json_get "$M" '["expected_devices"]')"
"$BIN/cpu-power" report "$WORK/roles" --json-out "$WORK/roles-report.json" >/dev/null 2>&1 ||
  fail "report on the roles run failed"
[ "$(json_get "$WORK/roles-report.json" '[0]["gpu_per_role"].__len__()')" = 2 ] ||
  fail "report per-role rows: $(json_get "$WORK/roles-report.json" '[0]["gpu_per_role"]')"
ok "--gpu-roles: prefill and decode GPUs in the manifest's expected devices and the report's per-role rows"

# --- a kind: custom exporter (the reference's AMD example) and visible_devices_env ----------
# A recipe that enables telemetry with a benchmark and nothing else inherits the cluster
# configuration's default_gpu_exporter (rocm/device-metrics-exporter's names); under
# --simulate sim-gpu serves those names.
for f in gpu_dcgm_kind gpu_amd_custom; do
  "$BIN/cpu-power" check-config "$FIXTURES/recipes/$f.yaml" >/dev/null 2>"$WORK/cc.err" ||
    fail "check-config refused the reference's example $f.yaml: $(cat "$WORK/cc.err")"
done
cat >"$WORK/inherit.yaml" <<EOF
benchmark: {type: sa-bench}
telemetry:
  enabled: true
  collect_interval_ms: 200
  request_timeout_seconds: 0.5
  startup_timeout_seconds: $(scaled 20)
EOF
CLUSTER="$FIXTURES/recipes/srtslurm_amd.yaml"
"$BIN/cpu-power" check-config --cluster-config "$CLUSTER" "$WORK/inherit.yaml" >"$WORK/cc.out" 2>&1 ||
  { cat "$WORK/cc.out"; fail "check-config with the cluster configuration"; }
grep -qx 'legs: GPU custom exporter scrape -> <log_dir>/power/' "$WORK/cc.out" || fail "check-config legs: $(cat "$WORK/cc.out")"
printf 'visible_devices_env: ROCR-VISIBLE\n' >"$WORK/bad-cluster.yaml"
rc=0
"$BIN/cpu-power" check-config --cluster-config "$WORK/bad-cluster.yaml" "$WORK/inherit.yaml" >/dev/null 2>"$WORK/cc.err" || rc=$?
[ "$rc" = 1 ] && grep -qx "$WORK/bad-cluster.yaml:1:22: visible_devices_env must be an environment variable name (\[A-Za-z_\]\[A-Za-z0-9_\]\*), got \"ROCR-VISIBLE\"" "$WORK/cc.err" ||
  fail "a bad cluster configuration: exit $rc, $(cat "$WORK/cc.err")"
rc=0
"$BIN/cpu-power" run --simulate gb200 --nodes a --config "$WORK/inherit.yaml" --cluster-config "$WORK/bad-cluster.yaml" \
  --dry-run -- true >/dev/null 2>&1 || rc=$?
[ "$rc" = 2 ] || fail "run with a bad cluster configuration: exit $rc, want 2"
"$BIN/cpu-power" run --simulate gb200 --nodes a --config "$WORK/inherit.yaml" --cluster-config "$CLUSTER" \
  --dry-run -- true >"$WORK/dry.out" 2>&1 || { cat "$WORK/dry.out"; fail "dry run with the cluster configuration"; }
grep -q -- '--power-metric gpu_power_usage .*--index-label gpu_id --identity-label serial_number' "$WORK/dry.out" ||
  fail "sim-gpu is not started with the custom names: $(grep dcgm "$WORK/dry.out")"
# With the CPU exporter leg beside it (the consumer-style check reads both packages), the
# recipe names the custom exporter itself: a CPU leg keeps the cluster's default out.
cat >"$WORK/amd.yaml" <<EOF
benchmark: {type: sa-bench}
telemetry:
  enabled: true
  collect_interval_ms: 200
  request_timeout_seconds: 0.5
  startup_timeout_seconds: $(scaled 20)
  cpu_power_exporter: {}
  dcgm_exporter:
    container_image: docker://rocm/device-metrics-exporter:v1.5.2
    command: /home/amd/tools/entrypoint.sh
    port: 5000
    kind: custom
    gpu_labels: {index: gpu_id, identity: serial_number}
    gpu_metrics:
      power: {metric: gpu_power_usage, scope: amd_device_metrics_exporter_gpu_power_usage}
      gpu_util: {metric: gpu_gfx_activity}
      temperature: {metric: gpu_junction_temperature}
EOF
rc=0
env -u ROCR_VISIBLE_DEVICES "$BIN/cpu-power" run --simulate gb200 --nodes a,b --sim-gpus 4 \
  --config "$WORK/amd.yaml" --cluster-config "$CLUSTER" --cpu-samples-schema 2 \
  --log-dir "$WORK/amd" -- sh -c "mkdir -p $WORK/amd && $(bench "$WORK/amd")" >"$WORK/amd.log" 2>&1 || rc=$?
[ "$rc" = 0 ] || { cat "$WORK/amd.log"; fail "custom exporter run exited $rc"; }
M="$WORK/amd/power/manifest.json"
[ "$(json_get "$M" '["publication_valid"]')" = True ] || { cat "$M"; fail "custom exporter run: not publishable"; }
[ "$(json_get "$M" '["reason_codes"]')" = "[]" ] || fail "custom exporter run: reasons $(json_get "$M" '["reason_codes"]')"
[ "$(json_get "$M" '["source_metric"]')" = gpu_power_usage ] || fail "source_metric $(json_get "$M" '["source_metric"]')"
[ "$(json_get "$M" '["power_scope"]')" = amd_device_metrics_exporter_gpu_power_usage ] || fail "power_scope"
[ "$(json_get "$M" '["utilization_metrics"]')" = "[{'column': 'gpu_util_pct', 'source_metric': 'gpu_gfx_activity', 'unit': 'percent'}]" ] ||
  fail "utilization_metrics $(json_get "$M" '["utilization_metrics"]')"
$PY - "$WORK/amd/power/samples.csv" <<'PYEOF' || fail "custom exporter rows: 8 GPUs, power, utilization and temperature read, no SM activity"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1], newline="")))
assert {(r["hostname"], r["gpu_index"]) for r in rows} == {(h, str(g)) for h in "ab" for g in range(4)}
assert all(float(r["power_w"]) > 0 and r["temperature_c"] != "" and r["gpu_util_pct"] != "" for r in rows)
assert all(r["sm_active"] == "" for r in rows), "sm_active is not in the AMD names"
PYEOF
"$PY" "$ROOT/tests/tools/consumer_check.py" "$WORK/amd" >"$WORK/consumer-amd.txt" 2>&1 ||
  { cat "$WORK/consumer-amd.txt"; fail "the consumer-style validator refused the custom exporter run"; }
ok "kind: custom (AMD names served by sim-gpu; inherited from the cluster's default_gpu_exporter without a CPU leg): 2 nodes x 4 GPUs, publishable, the manifest names the exporter's metric and scope; consumer-style validator accepts it"

rc=0
ROCR_VISIBLE_DEVICES=1,3 "$BIN/cpu-power" run --simulate gb200 --nodes a,b --sim-gpus 4 \
  --config "$WORK/inherit.yaml" --cluster-config "$CLUSTER" \
  --log-dir "$WORK/visible" -- sleep 2 >"$WORK/visible.log" 2>&1 || rc=$?
[ "$rc" = 0 ] || { cat "$WORK/visible.log"; fail "visible devices run exited $rc"; }
M="$WORK/visible/power/manifest.json"
[ "$(json_get "$M" '["publication_valid"]')" = True ] || { cat "$M"; fail "visible devices run: not publishable"; }
[ "$(json_get "$M" '["expected_devices"].__class__([(x["hostname"], x["gpu_index"]) for x in d["expected_devices"]])')" = "[('a', 1), ('a', 3), ('b', 1), ('b', 3)]" ] ||
  fail "visible devices: expected $(json_get "$M" '["expected_devices"]')"
[ "$(tail -n +2 "$WORK/visible/power/samples.csv" | cut -d, -f5 | sort -u | tr '\n' ' ')" = "1 3 " ] ||
  fail "visible devices: rows for GPUs $(tail -n +2 "$WORK/visible/power/samples.csv" | cut -d, -f5 | sort -u)"
rc=0
ROCR_VISIBLE_DEVICES=0,5 "$BIN/cpu-power" run --simulate gb200 --nodes a --sim-gpus 4 \
  --config "$WORK/inherit.yaml" --cluster-config "$CLUSTER" \
  --log-dir "$WORK/absent" -- sleep 1.5 >"$WORK/absent.log" 2>&1 || rc=$?
[ "$rc" = 0 ] || { cat "$WORK/absent.log"; fail "absent visible device run exited $rc"; }
M="$WORK/absent/power/manifest.json"
json_get "$M" '["reason_codes"]' | grep -q expected_device_missing || fail "absent GPU 5: reasons $(json_get "$M" '["reason_codes"]')"
[ "$(json_get "$M" '["publication_valid"]')" = False ] || fail "absent GPU 5: publishable"
ok "visible_devices_env (ROCR_VISIBLE_DEVICES=1,3): only GPUs 1 and 3 read and expected on every node; a GPU it names that no node shows is expected_device_missing"
# --- the consumer profile and the GPU samples schemas ---------------------------------------
# compat: CPU v2 and GPU v2, with an explicit --job-id; compat with --gpu-samples-schema 1: the
# explicit schema wins. Each is checked strictly, accepted by the consumer-style validator and
# read by the report.
for spec in "compat:0:2" "compat:1:1"; do
  IFS=: read -r profile gpu want <<<"$spec"
  extra=()
  [ "$gpu" != 0 ] && extra=(--gpu-samples-schema "$gpu")
  d="$WORK/profile-$want"
  rc=0
  "$BIN/cpu-power" run --simulate gb200 --nodes a --sim-gpus 2 --config "$WORK/best.yaml" \
    --consumer-profile "$profile" "${extra[@]}" --job-id "bench-$want" --log-dir "$d" \
    -- sh -c "mkdir -p $d && $(bench "$d")" >"$d.log" 2>&1 || rc=$?
  [ "$rc" = 0 ] || { cat "$d.log"; fail "profile $spec: exit $rc"; }
  M="$d/power/manifest.json"
  [ "$(json_get "$M" '["samples_schema_version"]')" = "$want" ] || fail "profile $spec: samples_schema_version"
  [ "$(json_get "$M" '["publication_valid"]')" = True ] || { cat "$M"; fail "profile $spec: not publishable"; }
  [ "$(json_get "$M" '["job_id"]')" = "bench-$want" ] || fail "profile $spec: job_id $(json_get "$M" '["job_id"]')"
  [ "$(json_get "$d/session.json" '["job_id"]')" = "bench-$want" ] || fail "profile $spec: session job_id"
  $PY - "$d" "$want" <<'EOF' || fail "profile $spec: headers, rows or utilization_metrics"
import csv, json, sys
run, want = sys.argv[1], int(sys.argv[2])
headers = {1: "schema_version,timestamp_unix,scrape_seq,hostname,gpu_index,gpu_uuid,power_w",
           2: "schema_version,timestamp_unix,scrape_seq,hostname,gpu_index,gpu_uuid,power_w,gpu_util_pct,sm_active"}
rows = list(csv.reader(open(run + "/power/samples.csv", newline="")))
assert ",".join(rows[0]) == headers[want], rows[0]
assert len(rows) > 3 and all(len(r) == len(rows[0]) and r[0] == str(want) for r in rows[1:]), rows[1]
m = json.load(open(run + "/power/manifest.json"))
assert [u["column"] for u in m["utilization_metrics"]] == ([] if want == 1 else ["gpu_util_pct", "sm_active"]), m["utilization_metrics"]
cpu = open(run + "/power/cpu/samples.csv").readline()
assert cpu.startswith("schema_version,") and "module_w" not in cpu, cpu  # CPU v2
EOF
  "$PY" "$ROOT/tests/tools/consumer_check.py" "$d" >"$d.consumer" 2>&1 ||
    { cat "$d.consumer"; fail "profile $spec: the consumer-style validator refused the run"; }
  "$BIN/cpu-power" report "$d" >"$d.report" 2>&1 || { cat "$d.report"; fail "profile $spec: report failed"; }
  grep -q '^  gpu total:' "$d.report" || fail "profile $spec: report has no GPU total"
done
ok "--consumer-profile compat: GPU v2 and CPU v2; with --gpu-samples-schema 1 GPU v1; strict check, manifest, consumer-style validator and report agree; --job-id recorded"

# --- telemetry.clock_sync_check: false ------------------------------------------------------
sed 's/^  required: false$/  required: false\n  clock_sync_check: false/' "$WORK/best.yaml" >"$WORK/noclock.yaml"
rc=0
"$BIN/cpu-power" run --simulate gb200 --nodes a --sim-gpus 1 --config "$WORK/noclock.yaml" \
  --log-dir "$WORK/noclock" -- sleep 1.5 >"$WORK/noclock.log" 2>&1 || rc=$?
[ "$rc" = 0 ] || { cat "$WORK/noclock.log"; fail "clock check off: exit $rc"; }
[ ! -e "$WORK/noclock/clock_sync_a.out" ] || fail "clock check off: a probe ran"
[ "$(json_get "$WORK/noclock/clock_sync.json" '["nodes"]')" = "[{'hostname': 'a', 'synchronized': 'unknown', 'offset_seconds': None, 'tool': None, 'output_file': None}]" ] ||
  fail "clock check off: $(cat "$WORK/noclock/clock_sync.json")"
[ "$(json_get "$WORK/noclock/power/manifest.json" '["clock_sync_failures"]')" = "['a']" ] ||
  fail "clock check off: clock_sync_failures"
ok "telemetry.clock_sync_check: false: nothing probed; clock_sync.json and the manifest say node a was not checked"

# --- a GPU vanishing mid-run: best-effort keeps exit 0, required turns it into 1 -----------
for mode in best required; do
  rc=0
  "$BIN/cpu-power" run --simulate gb200 --nodes a --sim-gpus 2 --sim-gpu-fault vanish:1@1500 \
    --config "$WORK/$mode.yaml" \
    --log-dir "$WORK/vanish-$mode" -- sleep 3 >"$WORK/vanish-$mode.log" 2>&1 || rc=$?
  want=0
  [ "$mode" = required ] && want=1
  [ "$rc" = "$want" ] || { cat "$WORK/vanish-$mode.log"; fail "vanish ($mode): exit $rc, want $want"; }
  M="$WORK/vanish-$mode/power/manifest.json"
  [ "$(json_get "$M" '["publication_valid"]')" = False ] || fail "vanish ($mode): publishable"
  json_get "$M" '["window_validations"][0]["reason_codes"]' | grep -qE 'measurement_window_not_bracketed|sample_gap_exceeded' ||
    fail "vanish ($mode): window reasons $(json_get "$M" '["window_validations"][0]["reason_codes"]')"
  # The CPU leg is untouched.
  [ "$(json_get "$WORK/vanish-$mode/power/cpu/cpu_manifest.json" '["nodes"]["a"]["error_count"]')" = 0 ] ||
    fail "vanish ($mode): CPU leg has errors"
done
ok "a GPU vanishing mid-run: window coverage fails, not publishable; exit 0 best-effort, 1 with required; CPU leg untouched"

# --- a UUID change -------------------------------------------------------------------------
rc=0
"$BIN/cpu-power" run --simulate gb200 --nodes a --sim-gpus 2 --sim-gpu-fault uuid-change:0@1000 \
  --config "$WORK/best.yaml" \
  --log-dir "$WORK/uuid" -- sleep 2.5 >"$WORK/uuid.log" 2>&1 || rc=$?
[ "$rc" = 0 ] || { cat "$WORK/uuid.log"; fail "uuid change: exit $rc"; }
M="$WORK/uuid/power/manifest.json"
json_get "$M" '["reason_codes"]' | grep -q gpu_uuid_changed || fail "uuid change: reasons $(json_get "$M" '["reason_codes"]')"
[ "$(json_get "$M" '["publication_valid"]')" = False ] || fail "uuid change: publishable"
[ "$(json_get "$M" '["observed_devices"][0]["gpu_uuids"].__len__()')" = 2 ] ||
  fail "uuid change: observed UUIDs $(json_get "$M" '["observed_devices"][0]["gpu_uuids"]')"
ok "a UUID change: gpu_uuid_changed, both UUIDs observed, not publishable"

# --- required and a dcgm-exporter that never comes up: the command does not run ------------
rc=0
sed 's/startup_timeout_seconds: .*/startup_timeout_seconds: 2/' "$WORK/required.yaml" >"$WORK/short.yaml"
"$BIN/cpu-power" run --simulate gb200 --nodes a --sim-gpus 1 --sim-gpu-fault hang@0 \
  --config "$WORK/short.yaml" \
  --log-dir "$WORK/blocked" -- touch "$WORK/ran" >"$WORK/blocked.log" 2>&1 || rc=$?
[ "$rc" = 1 ] || { cat "$WORK/blocked.log"; fail "required, exporter hung: exit $rc, want 1"; }
[ ! -e "$WORK/ran" ] || fail "required, exporter hung: the command ran"
grep -q 'exporter_startup_timeout' "$WORK/blocked.log" || fail "required, exporter hung: no reason in the log"
[ "$(json_get "$WORK/blocked/power/manifest.json" '["status"]')" = failed ] || fail "required, exporter hung: status not failed"
ok "required with a dcgm-exporter that never answers: the command is not run, exit 1, status failed"

# --- a command failure is never masked -------------------------------------------------------
rc=0
"$BIN/cpu-power" run --simulate gb200 --nodes a --sim-gpus 1 --config "$WORK/required.yaml" \
  --log-dir "$WORK/cmdfail" -- sh -c 'sleep 1.5; exit 7' >"$WORK/cmdfail.log" 2>&1 || rc=$?
[ "$rc" = 7 ] || { cat "$WORK/cmdfail.log"; fail "failing command under required: exit $rc, want 7"; }
[ "$(json_get "$WORK/cmdfail/power/windows/session.json" '["status"]')" = failed ] || fail "failed command: window not failed"
ok "a failing command keeps its own exit code (7) under required; its window is failed"

echo "$CHECKS checks passed"
