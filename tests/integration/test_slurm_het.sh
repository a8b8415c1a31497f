#!/usr/bin/env bash
# A heterogeneous job on a real local Slurm cluster: one exporter srun per het component,
# each with its own --het-group and its own .g<G> logs, and every node of every component
# collected.
source "$(dirname "$0")/slurm_lib.sh"

start_cluster 3
ok "cluster up"

# The plan first: two groups, each with its --het-group.
salloc -N1 : -N2 "$BIN/cpu-power" run --dry-run --log-dir "$WORK/dry" -- true >"$WORK/dry.log" 2>&1 ||
  { cat "$WORK/dry.log"; fail "dry run"; }
grep -qE '^  exporter: srun --jobid [0-9]+ --overlap --nodes 1 --ntasks 1 --nodelist n1 --het-group=0 --output '"$WORK"'/dry/telemetry_cpu_power_exporter.g0.%N.out ' \
  "$WORK/dry.log" || fail "group 0 plan: $(cat "$WORK/dry.log")"
grep -qE '^  exporter: srun --jobid [0-9]+ --overlap --nodes 2 --ntasks 2 --nodelist n2,n3 --het-group=1 --output '"$WORK"'/dry/telemetry_cpu_power_exporter.g1.%N.out ' \
  "$WORK/dry.log" || fail "group 1 plan"
ok "dry run: one srun per het group with --het-group"

# The run: while the command runs, Slurm lists one exporter step in each component's job.
printf 'telemetry:\n  enabled: true\n  collect_interval_ms: 250\n  request_timeout_seconds: 0.5\n  cpu_power_exporter: {}\n' >"$WORK/r.yaml"
rc=0
salloc -N1 : -N2 "$BIN/cpu-power" run --config "$WORK/r.yaml" --log-dir "$WORK/het" -- sh -c '
  squeue -h -s -o "%i|%N|%j" >"$0/steps.txt"
  echo "$SLURM_JOB_ID_HET_GROUP_0 $SLURM_JOB_ID_HET_GROUP_1" >"$0/jobs.txt"
  sleep 1; exit 2' "$WORK" >"$WORK/het.log" 2>&1 || rc=$?
[ "$rc" = 2 ] || { cat "$WORK/het.log"; fail "het run exited $rc, want 2"; }
read -r job0 job1 <"$WORK/jobs.txt"
grep -qx "$job0\.[0-9]*|n1|cpu-power-exporter" "$WORK/steps.txt" ||
  fail "no exporter step in component 0: $(cat "$WORK/steps.txt")"
grep -qx "$job1\.[0-9]*|n\[2-3\]|cpu-power-exporter" "$WORK/steps.txt" ||
  fail "no exporter step in component 1: $(cat "$WORK/steps.txt")"
[ "$(grep -c '|cpu-power-exporter$' "$WORK/steps.txt")" = 2 ] || fail "not exactly two exporter steps"
grep -q 'name=telemetry_cpu_power_exporter_g0 nodes=1 argv=.*--het-group=0 ' "$WORK/het.log" || fail "g0 launch log"
grep -q 'name=telemetry_cpu_power_exporter_g1 nodes=2 argv=.*--het-group=1 ' "$WORK/het.log" || fail "g1 launch log"
for f in g0.n1 g1.n2 g1.n3; do
  grep -q 'listening addr=0.0.0.0:9405' "$WORK/het/telemetry_cpu_power_exporter.$f.out" || fail "log $f"
done
$PY - "$WORK/het" <<'PYEOF' || fail "rows or manifest incomplete"
import csv, json, sys
d = sys.argv[1]
hosts = {r["hostname"] for r in csv.DictReader(open(d + "/power/cpu/samples.csv"))}
assert hosts == {"n1", "n2", "n3"}, hosts
m = json.load(open(d + "/power/cpu/cpu_manifest.json"))
assert all(m["nodes"][n]["error_count"] == 0 for n in ("n1", "n2", "n3")), m
PYEOF
ok "het job: one exporter step per component, .g0/.g1 logs, every node collected, exit 2 kept"

bash "$ROOT/scripts/slurm-down.sh" "$CLUSTER" || fail "slurm-down reported a survivor"
ok "cluster down"
finish
