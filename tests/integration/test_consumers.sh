#!/usr/bin/env bash
# The two downstream validators of a run's power packages, written as tests from the contract
# (tests/consumers/): the reference's offline GPU package validator and a benchmark pipeline's
# multinode validator that reads the GPU and CPU packages together. A run shaped like
# `make demo` (two simulated GB200 nodes, four GPUs each, a sa-bench stand-in):
#   1. by default (v3 samples) both refuse it, with the header codes, and `cpu-power validate`
#      exits 1 naming each refusal and its fix;
#   2. with `--consumer-profile compat` both accept both packages and `cpu-power validate`
#      exits 0;
#   3. damaged copies of the accepted run are refused for each validator's main rules, so the
#      validators are tested too (tests/integration/validate_damage.py makes them).
source "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3
HERE=$(cd "$(dirname "$0")/.." && pwd)
GPU_CHECK="$HERE/consumers/gpu_package_validator.py"
MULTI_CHECK="$HERE/consumers/multinode_power_validator.py"
DAMAGE="$HERE/integration/validate_damage.py"

# demo_run DIR [ARGS...]: scripts/demo.sh's session, shorter (2 s idle, 3 s load, 2 s idle).
demo_run() {
  local dir=$1
  shift
  demo_session "$BIN/cpu-power" "$dir" 4 "$(scaled 2)" "$@"
}

# check VALIDATOR WANT_RC OUT RUN_DIR [ARGS...]: runs a validator, output in OUT.
check() {
  local validator=$1 want=$2 out=$3
  shift 3
  local rc=0
  $PY "$validator" "$@" >"$out" 2>&1 || rc=$?
  [ "$rc" = "$want" ] || fail "$(basename "$validator") $* exited $rc, want $want: $(cat "$out")"
}

# refuses OUT CODE FILE: OUT has a refusal line with CODE on FILE (a path suffix).
refuses() {
  grep -qE "^REFUSED $2 [^ ]*$3:" "$1" || fail "no '$2' refusal on $3 in: $(cat "$1")"
}

# --- 1. the default run: v3 samples, refused by both -----------------------------------------
demo_run "$WORK/default"
# The run's own energy report: every row with its coverage and uncertainty; the CPU legs
# record what their readings average (coverage stated), the GPU leg does not (null, warned).
$PY - "$WORK/default" <<'PYEOF' || fail "the run's report lacks error bars"
import json, re, sys
d = sys.argv[1]
windows = [w for w in json.load(open(d + "/power_energy_report.json")) if "error" not in w]
assert windows, "no window reported"
for w in windows:
    rows = {k: w[k] for k in ("cpu_per_socket", "cpu_per_node", "gpu_per_device", "gpu_per_role",
                              "gpu_per_node", "module_per_socket", "module_per_node")}
    assert rows["cpu_per_node"] and rows["gpu_per_node"], {k: len(v) for k, v in rows.items()}
    for key, rs in rows.items():
        for r in rs:
            assert r["uncertainty_j"] >= 0 and r["uncertainty_pct"] is not None, (key, r)
            if key.startswith("gpu_"):
                assert r["coverage"] is None, (key, r)
            else:
                assert 0 < r["coverage"] <= 1, (key, r)
    u = w["uncertainty"]
    assert u["cpu_total"]["coverage"] is not None and u["combined_total"]["coverage"] is None, u
    assert u["joules_per_output_token"]["uncertainty"] >= 0, u
    assert any(x.startswith("GPU power: the run's files do not record the averaging interval")
               for x in w["warnings"]), w["warnings"]
    assert not any(x.startswith("CPU power: the run's files do not record") for x in w["warnings"]), w["warnings"]
text = open(d + "/power_energy_report.txt", encoding="utf-8").read()
assert re.search(r"cpu total: +[0-9,.]+ J \u00b1 [<0-9.]+ % \(coverage [0-9.]+ %\)", text), text
PYEOF
ok "default run: every report row carries coverage and uncertainty (CPU and module stated, GPU unknown and warned)"
check "$GPU_CHECK" 1 "$WORK/default.gpu" "$WORK/default"
refuses "$WORK/default.gpu" samples_csv_header_mismatch power/samples.csv
# The cascade from an unread samples.csv: no device observed, no window bracketed.
refuses "$WORK/default.gpu" expected_device_missing power/manifest.json
refuses "$WORK/default.gpu" measurement_window_not_bracketed power/windows/session.json
# Outside Slurm the manifest still names a job.
! grep -q '^REFUSED job_id_invalid' "$WORK/default.gpu" || fail "job_id refused: $(grep job_id "$WORK/default.gpu")"
ok "default run: the GPU validator refuses samples.csv v3 (samples_csv_header_mismatch and its cascade), not job_id"

check "$MULTI_CHECK" 1 "$WORK/default.multi" "$WORK/default"
refuses "$WORK/default.multi" samples_csv_header_mismatch power/samples.csv
refuses "$WORK/default.multi" cpu_samples_header_mismatch power/cpu/samples.csv
grep -q 'gpu_power_valid=0 cpu_power_valid=0$' "$WORK/default.multi" || fail "verdict: $(tail -1 "$WORK/default.multi")"
ok "default run: the multinode validator refuses both packages (the GPU and the CPU v3 headers)"

rc=0
"$BIN/cpu-power" validate "$WORK/default" >"$WORK/default.validate" 2>&1 || rc=$?
[ "$rc" = 1 ] || fail "cpu-power validate on the default run exited $rc, want 1: $(cat "$WORK/default.validate")"
# Each refusal the consumers make, with the file it is about and the option that fixes it.
for pair in samples_csv_header_mismatch:power/samples.csv cpu_samples_header_mismatch:power/cpu/samples.csv; do
  code=${pair%%:*} file=${pair#*:}
  grep -E "$code" "$WORK/default.validate" | grep -qF "$file" ||
    fail "cpu-power validate does not name $code on $file: $(cat "$WORK/default.validate")"
done
grep -qF -- '--consumer-profile compat' "$WORK/default.validate" ||
  fail "cpu-power validate names no fix: $(cat "$WORK/default.validate")"
ok "cpu-power validate exits 1 on the default run, naming both header refusals, their files and --consumer-profile compat"

# --- 2. the same run for these consumers: accepted by both -----------------------------------
demo_run "$WORK/compat" --consumer-profile compat
check "$GPU_CHECK" 0 "$WORK/compat.gpu" "$WORK/compat"
grep -q '^ACCEPTED ' "$WORK/compat.gpu" || fail "no verdict: $(cat "$WORK/compat.gpu")"
check "$MULTI_CHECK" 0 "$WORK/compat.multi" "$WORK/compat"
grep -q '^ACCEPTED gpu_power_valid=1 cpu_power_valid=1$' "$WORK/compat.multi" || fail "verdict: $(cat "$WORK/compat.multi")"
grep -q '^info gpu window sa-bench/4 total_gpu_energy_j=' "$WORK/compat.multi" || fail "no GPU energy: $(cat "$WORK/compat.multi")"
grep -q '^info cpu window sa-bench/4 sensor_kind=grace_socket source=acpi total_cpu_energy_j=' "$WORK/compat.multi" ||
  fail "no CPU energy: $(cat "$WORK/compat.multi")"
ok "--consumer-profile compat: both validators accept both packages (GPU and CPU energy over the sa-bench window)"

# The canary's shape assertions: the GPUs are 8 agg ones, in no het group.
check "$GPU_CHECK" 0 "$WORK/roles.ok" "$WORK/compat" --expect-role agg=8
check "$GPU_CHECK" 1 "$WORK/roles.bad" "$WORK/compat" --expect-role decode=8
refuses "$WORK/roles.bad" expected_role_mismatch power/manifest.json
check "$GPU_CHECK" 1 "$WORK/het.bad" "$WORK/compat" --require-distinct-het-groups
refuses "$WORK/het.bad" het_groups_not_distinct power/manifest.json
check "$MULTI_CHECK" 1 "$WORK/topo.bad" "$WORK/compat" --decode-gpus 8
refuses "$WORK/topo.bad" topology_env_mismatch power/manifest.json
check "$MULTI_CHECK" 1 "$WORK/pin.bad" "$WORK/compat" --producer-pin 0123456789abcdef0123456789abcdef01234567
refuses "$WORK/pin.bad" producer_commit_mismatch power/manifest.json
ok "role counts, distinct het groups and the producer pin are refused when the run does not match them"

# cpu-power validate also wants every node's clock vouched for, which the consumers do not
# check. Where this machine has no synchronised clock (no time daemon: the probe says so), the
# run's clock check is rewritten as if it were (tests/integration/validate_damage.py), after
# validate has been seen to refuse it for that alone; every copy below starts from that.
if $PY -c 'import json, sys; sys.exit(all(n["synchronized"] == "yes" for n in json.load(open(sys.argv[1]))["nodes"]))' \
  "$WORK/compat/clock_sync.json"; then
  rc=0
  "$BIN/cpu-power" validate "$WORK/compat" >"$WORK/compat.unsynced" 2>&1 || rc=$?
  [ "$rc" = 1 ] || fail "cpu-power validate on an unsynchronised run exited $rc, want 1: $(cat "$WORK/compat.unsynced")"
  others=$(grep -v -E '^clock_sync_unverified |^package |^verdict: |^$' "$WORK/compat.unsynced" || true)
  [ -z "$others" ] || fail "unsynchronised compat run: findings other than the clock's: $others"
  $PY "$DAMAGE" clock-synced "$WORK/compat"
  check "$GPU_CHECK" 0 "$WORK/compat.gpu" "$WORK/compat"
  check "$MULTI_CHECK" 0 "$WORK/compat.multi" "$WORK/compat"
fi
rc=0
"$BIN/cpu-power" validate "$WORK/compat" >"$WORK/compat.validate" 2>&1 || rc=$?
[ "$rc" = 0 ] || fail "cpu-power validate on the compat run exited $rc, want 0: $(cat "$WORK/compat.validate")"
ok "cpu-power validate exits 0 on the compat run (its clock check vouched for)"

# --- 3. damaged copies: each validator refuses them for its main rules -----------------------
# damaged CASE: a fresh copy of the accepted run with one damage; its path on stdout.
damaged() {
  local dir="$WORK/damaged-$1"
  rm -rf "$dir"
  cp -a "$WORK/compat" "$dir"
  $PY "$DAMAGE" damage "$1" "$dir" || fail "validate_damage.py damage $1 failed"
  echo "$dir"
}

d=$(damaged gpu-digest)
check "$GPU_CHECK" 1 "$d.out" "$d"
refuses "$d.out" samples_sha256_mismatch power/samples.csv
d=$(damaged gpu-job-id)
check "$GPU_CHECK" 1 "$d.out" "$d"
refuses "$d.out" job_id_invalid power/manifest.json
grep -q "job_id is not a non-empty string" "$d.out" || fail "job_id detail: $(cat "$d.out")"
d=$(damaged gpu-header-v3)
check "$GPU_CHECK" 1 "$d.out" "$d"
refuses "$d.out" samples_csv_header_mismatch power/samples.csv
d=$(damaged gpu-duplicate-row)
check "$GPU_CHECK" 1 "$d.out" "$d"
refuses "$d.out" duplicate_sample_row power/samples.csv
d=$(damaged gpu-loss)
check "$GPU_CHECK" 1 "$d.out" "$d"
refuses "$d.out" sample_loss_exceeded power/windows/results_concurrency_4_demo.json
! grep -q '^REFUSED sample_gap_exceeded' "$d.out" || fail "a loss under 3.0 s read as a gap: $(cat "$d.out")"
d=$(damaged gpu-result)
check "$GPU_CHECK" 1 "$d.out" "$d"
refuses "$d.out" measurement_window_result_mismatch power/windows/results_concurrency_4_demo.json
ok "GPU validator: digest, job_id, v3 header, duplicate row, sample loss and result mismatch each refused"

# Equal times: the contract lets them pass (only a decrease is non-monotonic); the pipeline
# wants them strictly increasing. Whether the GPU validator refuses the copy at all depends on
# where the run's timing put the moved sample: inside a window it lengthens a stored sample gap
# (stored_evidence_mismatch), before every window it changes nothing. Either way it is never
# timestamp_non_monotonic, and nothing else.
d=$(damaged gpu-equal-times)
rc=0
$PY "$GPU_CHECK" "$d" >"$d.out" 2>&1 || rc=$?
case $rc in
  0) grep -q '^ACCEPTED ' "$d.out" || fail "no verdict: $(cat "$d.out")" ;;
  1) others=$(grep '^REFUSED [a-z_][a-z_]* ' "$d.out" | grep -v '^REFUSED stored_evidence_mismatch ' || true)
     [ -z "$others" ] || fail "equal times refused for more than the moved gap: $others" ;;
  *) fail "gpu_package_validator.py $d exited $rc: $(cat "$d.out")" ;;
esac
! grep -q '^REFUSED timestamp_non_monotonic' "$d.out" || fail "equal times read as non-monotonic: $(cat "$d.out")"
check "$MULTI_CHECK" 1 "$d.multi" "$d"
refuses "$d.multi" timestamp_non_monotonic power/samples.csv
ok "equal GPU sample times: non-monotonic to the pipeline only"

d=$(damaged cpu-header-v3)
check "$MULTI_CHECK" 1 "$d.out" "$d"
refuses "$d.out" cpu_samples_header_mismatch power/cpu/samples.csv
grep -q 'gpu_power_valid=1 cpu_power_valid=0$' "$d.out" || fail "verdict: $(tail -1 "$d.out")"
# As the pipeline publishes: the CPU leg is best-effort and leaves the GPU figures alone.
check "$MULTI_CHECK" 0 "$d.best" "$d" --cpu-best-effort
grep -q '^CPU_INVALID cpu_samples_header_mismatch ' "$d.best" || fail "best effort: $(cat "$d.best")"
grep -q '^ACCEPTED gpu_power_valid=1 cpu_power_valid=0$' "$d.best" || fail "best effort: $(cat "$d.best")"
d=$(damaged cpu-socket-missing)
check "$MULTI_CHECK" 1 "$d.out" "$d"
refuses "$d.out" cpu_socket_count_mismatch power/cpu/samples.csv
d=$(damaged cpu-source-mixed)
check "$MULTI_CHECK" 1 "$d.out" "$d"
refuses "$d.out" cpu_sensor_kind_mixed power/cpu/samples.csv
d=$(damaged cpu-duplicate-time)
check "$MULTI_CHECK" 1 "$d.out" "$d"
refuses "$d.out" cpu_samples_malformed power/cpu/samples.csv
d=$(damaged cpu-gap)
check "$MULTI_CHECK" 1 "$d.out" "$d"
refuses "$d.out" cpu_sample_gap_exceeded power/cpu/samples.csv
ok "multinode validator: CPU v3 header (best-effort: GPU kept), a missing socket, mixed sources, a repeated time and a gap each refused"

# The GPU damage reaches the multinode validator too (it recomputes the GPU package).
d="$WORK/damaged-gpu-digest"
check "$MULTI_CHECK" 1 "$d.multi" "$d"
refuses "$d.multi" samples_sha256_mismatch power/samples.csv
ok "multinode validator: the GPU recompute refuses a changed samples.csv"

# What a consumer refuses, `cpu-power validate` does not call publishable (the pipeline's own
# options, equal times and the producer pin, aside).
for c in gpu-digest gpu-job-id gpu-header-v3 gpu-duplicate-row gpu-loss gpu-result \
  cpu-header-v3 cpu-socket-missing cpu-source-mixed cpu-duplicate-time cpu-gap; do
  rc=0
  "$BIN/cpu-power" validate "$WORK/damaged-$c" >"$WORK/damaged-$c.validate" 2>&1 || rc=$?
  [ "$rc" = 1 ] || fail "cpu-power validate on the $c copy exited $rc, want 1: $(cat "$WORK/damaged-$c.validate")"
done
ok "cpu-power validate exits 1 on every damaged copy a consumer refuses"

echo "$CHECKS checks passed"
