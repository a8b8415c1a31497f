#!/usr/bin/env bash
# `cpu-power validate RUN_DIR`: a real simulated run (two GB200 nodes, every leg: the GPU
# package in power/, the CPU exporter leg's in power/cpu/, the host leg's in cpu_power/)
# checked offline. The default run is refused for the consumers' schema pins with the options
# that fix them, and `cpu-power run` logs the same verdict without changing its exit status. A
# copy rewritten to the layouts the consumers accept passes; copies of it, each broken by
# tests/integration/validate_damage.py in one way, fail with the reason code of that rule.
source "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3
HERE=$(cd "$(dirname "$0")" && pwd)
DAMAGE="$HERE/validate_damage.py"
cd "$WORK"

# 1 s idle, 3 s of load at concurrency 4, 1 s idle: the session window is over 5 s, so a
# hole of more than 3 s fits inside it.
RUN="$WORK/run"
demo_session "$BIN/cpu-power" "$RUN" 2 1
for d in power power/cpu cpu_power power/windows; do
  [ -d "$RUN/$d" ] || fail "the run wrote no $d/ (log: $(tail -20 "$RUN.log"))"
done
grep -q 'INFO cpu_power::validate: validation (gpu=not publishable, cpu=not publishable, host=' "$RUN.log" ||
  fail "cpu-power run logged no validation verdict: $(grep -i valid "$RUN.log" | head -5)"
grep -q 'WARN cpu_power::validate: samples_csv_header_mismatch power/samples.csv: GPU samples schema v3' "$RUN.log" ||
  fail "cpu-power run did not log the GPU v3 finding"
ok "cpu-power run logs the validation verdict and its findings, and still exits 0"

# validate DIR [ARGS...]: its stdout in $WORK/v.out, its exit status in $vrc.
validate() {
  vrc=0
  "$BIN/cpu-power" validate "$@" >"$WORK/v.out" 2>"$WORK/v.err" || vrc=$?
}

# --- the default run: every refusal explained, with its fix --------------------------------
validate "$RUN"
[ "$vrc" = 1 ] || fail "validate on the default run exited $vrc, want 1: $(cat "$WORK/v.out" "$WORK/v.err")"
grep -q '^samples_csv_header_mismatch power/samples.csv: .*v3.* (fix: `cpu-power run --consumer-profile compat` or `--gpu-samples-schema 2`)$' "$WORK/v.out" ||
  fail "no GPU v3 finding with its fix: $(cat "$WORK/v.out")"
grep -q '^cpu_samples_header_mismatch power/cpu/samples.csv: .*v3.* (fix: `cpu-power run --consumer-profile compat` or `--cpu-samples-schema 2`)$' "$WORK/v.out" ||
  fail "no CPU v3 finding with its fix: $(cat "$WORK/v.out")"
grep -q '^package gpu power: not publishable' "$WORK/v.out" || fail "gpu verdict: $(cat "$WORK/v.out")"
grep -q '^package cpu power/cpu: not publishable' "$WORK/v.out" || fail "cpu verdict: $(cat "$WORK/v.out")"
grep -q '^verdict: not publishable$' "$WORK/v.out" || fail "overall verdict: $(cat "$WORK/v.out")"
# Only the v3 pins (and the clock finding where this machine's clock is not synchronised): the
# files themselves hold nothing else a consumer refuses; the job id is always written.
others=$(grep -v -E '^(samples_csv_header_mismatch|cpu_samples_header_mismatch|clock_sync_unverified) |^package |^verdict: ' "$WORK/v.out" || true)
[ -z "$others" ] || fail "unexpected findings on the default run: $others"
ok "the default run: exit 1, the GPU and CPU v3 headers refused, each with the options that fix it"

validate "$RUN" --json
[ "$vrc" = 1 ] || fail "validate --json exited $vrc"
$PY - "$WORK/v.out" <<'EOF' || fail "validate --json: $(head -c 2000 "$WORK/v.out")"
import json, sys
doc = json.load(open(sys.argv[1]))
assert list(doc) == ["schema_version", "run_dir", "publishable", "packages", "findings"], list(doc)
assert doc["schema_version"] == 1 and doc["publishable"] is False
assert [p["package"] for p in doc["packages"]] == ["gpu", "cpu", "host"], doc["packages"]
assert all(p["present"] for p in doc["packages"])
for f in doc["findings"]:
    assert list(f) == ["package", "code", "file", "detail", "fix"], f
    assert f["code"] and f["file"] and f["detail"] and f["fix"], f
codes = {(f["package"], f["code"]) for f in doc["findings"]}
assert ("gpu", "samples_csv_header_mismatch") in codes and ("cpu", "cpu_samples_header_mismatch") in codes, codes
EOF
ok "validate --json: the documented shape, the same findings"

# --- a run the consumers accept ------------------------------------------------------------
# The same run with the consumer profile and a job id of its own. Where this machine's clock
# is not synchronised (no time daemon: the probe says so, and validate refuses it), the
# clock check is rewritten as if it were, so that the other rules are what the copy tests.
PASS="$WORK/pass"
demo_session "$BIN/cpu-power" "$PASS" 2 1 --consumer-profile compat --job-id test-job
[ "$($PY -c 'import json, sys; print(json.load(open(sys.argv[1]))["job_id"])' "$PASS/power/manifest.json")" = test-job ] ||
  fail "compat run: job_id"
if $PY -c 'import json, sys; sys.exit(all(n["synchronized"] == "yes" for n in json.load(open(sys.argv[1]))["nodes"]))' "$PASS/clock_sync.json"; then
  $PY "$DAMAGE" clock-synced "$PASS"
fi
rm -rf "$PASS/sim"  # the simulated nodes' trees: no package reads them, and every copy carried them
validate "$PASS"
[ "$vrc" = 0 ] || fail "validate on the compat copy exited $vrc: $(cat "$WORK/v.out" "$WORK/v.err")"
grep -q '^verdict: publishable$' "$WORK/v.out" || fail "compat verdict: $(cat "$WORK/v.out")"
[ "$(grep -c ' publishable (0 findings)$' "$WORK/v.out")" = 3 ] || fail "compat packages: $(cat "$WORK/v.out")"
validate "$PASS" --expect-role agg=4
[ "$vrc" = 0 ] || fail "--expect-role agg=4 on the compat copy exited $vrc: $(cat "$WORK/v.out")"
validate --expect-role agg "$PASS"  # before RUN_DIR: one value per --expect-role
[ "$vrc" = 0 ] || fail "--expect-role agg on the compat copy exited $vrc: $(cat "$WORK/v.out" "$WORK/v.err")"
ok "the run with --consumer-profile compat, a job id and a clock check: exit 0, all three packages publishable"

# --- one broken rule at a time ---------------------------------------------------------------
# CASE EXPECTED_EXIT CODE FILE [ARGS...]: CODE must be reported for FILE (or exit 0 and no
# finding when EXPECTED_EXIT is 0).
cases=(
  "gpu_samples_missing 1 samples_csv_missing power/samples.csv"
  "gpu_header_v3 1 samples_csv_header_mismatch power/samples.csv"
  "gpu_header_unknown 1 samples_csv_header_mismatch power/samples.csv"
  "gpu_malformed 1 samples_csv_malformed power/samples.csv"
  "gpu_duplicate 1 duplicate_sample_row power/samples.csv"
  "gpu_non_monotonic 1 timestamp_non_monotonic power/samples.csv"
  "digest_null 1 samples_digest_unavailable power/manifest.json"
  "digest_wrong 1 samples_sha256_mismatch power/samples.csv"
  "schema_version_wrong 1 samples_schema_version_mismatch power/manifest.json"
  "gpu_manifest_missing 1 manifest_missing power/manifest.json"
  "gpu_manifest_malformed 1 manifest_malformed power/manifest.json"
  "producer 1 manifest_contract_mismatch power/manifest.json"
  "gpu_evidence 1 manifest_evidence_mismatch power/manifest.json"
  "gpu_job_id 1 job_id_missing power/manifest.json"
  "gpu_status 1 status_not_complete power/manifest.json"
  "verdict 1 publication_verdict_mismatch power/manifest.json"
  "device_missing 1 expected_device_missing power/samples.csv"
  "device_unexpected 1 unexpected_device power/samples.csv"
  "uuid_changed 1 gpu_uuid_changed power/samples.csv"
  "roles_conflict 1 conflicting_worker_roles power/manifest.json"
  "het_conflict 1 conflicting_het_groups power/manifest.json"
  "window_missing 1 measurement_window_missing power/windows"
  "no_expected_window 1 measurement_window_missing power/manifest.json"
  "window_unexpected 1 measurement_window_unexpected power/windows/"
  "window_duplicate 1 measurement_window_duplicate power/windows"
  "window_malformed 1 measurement_window_malformed power/windows/"
  "window_path_invalid 1 measurement_window_artifact_path_invalid power/windows/notes.txt"
  "window_incomplete 1 measurement_window_incomplete power/windows/"
  "result_missing 1 measurement_window_result_missing power/windows/"
  "result_mismatch 1 measurement_window_result_mismatch power/windows/"
  "result_path_invalid 1 measurement_window_result_path_invalid power/windows/"
  "window_clock 1 measurement_window_clock_mismatch power/windows/"
  "not_bracketed 1 measurement_window_not_bracketed power/windows/"
  "gap 1 sample_gap_exceeded power/windows/session.json"
  "loss 1 sample_loss_exceeded power/windows/session.json"
  "clock_missing 1 clock_sync_unverified clock_sync.json"
  "clock_malformed 1 clock_sync_unverified clock_sync.json"
  "clock_unknown 1 clock_sync_unverified clock_sync.json"
  "clock_unsynced 1 clock_sync_unverified clock_sync.json"
  "clock_offset 1 clock_sync_unverified clock_sync.json"
  "clock_failures 1 clock_sync_unverified power/manifest.json"
  "clock_in_manifest 0 - -"
  "cpu_missing 1 cpu_samples_missing power/cpu/samples.csv"
  "cpu_header_v3 1 cpu_samples_header_mismatch power/cpu/samples.csv"
  "cpu_malformed 1 cpu_samples_malformed power/cpu/samples.csv"
  "cpu_version 1 cpu_schema_version_mismatch power/cpu/samples.csv"
  "cpu_power 1 cpu_invalid_power_value power/cpu/samples.csv"
  "cpu_duplicate 1 cpu_duplicate_timestamp power/cpu/samples.csv"
  "cpu_source 1 cpu_source_conflict power/cpu/samples.csv"
  "cpu_host_missing 1 cpu_host_missing power/cpu/samples.csv"
  "cpu_sockets 1 cpu_sockets_incomplete power/cpu/samples.csv"
  "cpu_not_bracketed 1 measurement_window_not_bracketed power/cpu/samples.csv"
  "cpu_gap 1 sample_gap_exceeded power/cpu/samples.csv"
  "cpu_manifest_missing 1 cpu_manifest_missing power/cpu/cpu_manifest.json"
  "cpu_manifest_malformed 1 cpu_manifest_malformed power/cpu/cpu_manifest.json"
  "cpu_manifest_version 1 samples_schema_version_mismatch power/cpu/cpu_manifest.json"
  "host_missing 1 cpu_samples_missing cpu_power/samples.csv"
  "host_header 1 cpu_samples_header_mismatch cpu_power/samples.csv"
  "host_manifest_missing 1 manifest_missing cpu_power/manifest.json"
  "host_manifest_malformed 1 manifest_malformed cpu_power/manifest.json"
  "host_job_id 1 job_id_missing cpu_power/manifest.json"
  "host_status 1 status_not_complete cpu_power/manifest.json"
  "host_node_missing 1 cpu_node_samples_missing cpu_power/samples.csv"
  "host_empty 1 cpu_samples_empty cpu_power/samples.csv"
  "host_evidence 1 manifest_evidence_mismatch cpu_power/manifest.json"
)
declare -A covered
$PY "$DAMAGE" all "$PASS" "$WORK" || fail "validate_damage.py all failed"
for line in "${cases[@]}"; do
  read -r name want code file <<<"$line"
  dir="$WORK/case_$name"
  [ -d "$dir" ] || fail "validate_damage.py has no case $name"
  validate "$dir"
  [ "$vrc" = "$want" ] || fail "case $name: exit $vrc, want $want: $(cat "$WORK/v.out" "$WORK/v.err")"
  if [ "$want" = 0 ]; then
    grep -q '^verdict: publishable$' "$WORK/v.out" || fail "case $name: $(cat "$WORK/v.out")"
    continue
  fi
  grep -q "^$code $file[^ ]*: " "$WORK/v.out" || fail "case $name: no '$code $file...' finding: $(cat "$WORK/v.out")"
  grep -q '^verdict: not publishable$' "$WORK/v.out" || fail "case $name: verdict $(tail -1 "$WORK/v.out")"
  covered[$code]=1
  rm -rf "$dir"
done
# Every case of the damage script is run above, so a case added there is added here too.
[ "$($PY "$DAMAGE" cases | wc -l)" = "${#cases[@]}" ] || fail "validate_damage.py has cases this test does not run"
ok "${#cases[@]} damaged copies: each refused with its rule's reason code (${#covered[@]} codes)"

# --- the topology options ------------------------------------------------------------------
validate "$PASS" --expect-role prefill=2 --expect-role decode=2
[ "$vrc" = 1 ] && grep -q '^expected_role_mismatch power/manifest.json: expected roles decode,prefill, the manifest has agg' "$WORK/v.out" ||
  fail "--expect-role prefill=2 --expect-role decode=2: exit $vrc $(cat "$WORK/v.out")"
validate "$PASS" --expect-role agg=3
[ "$vrc" = 1 ] && grep -q '^expected_role_mismatch power/manifest.json: expected 3 agg GPUs, found 4' "$WORK/v.out" ||
  fail "--expect-role agg=3: exit $vrc $(cat "$WORK/v.out")"
validate "$PASS" --require-distinct-het-groups
[ "$vrc" = 1 ] && grep -q '^het_groups_not_distinct power/manifest.json: role agg has no het group' "$WORK/v.out" ||
  fail "--require-distinct-het-groups: exit $vrc $(cat "$WORK/v.out")"
ok "--expect-role and --require-distinct-het-groups refuse a shape the manifest does not have"

# --- usage errors and directories that are no run: exit 2 ----------------------------------
validate "$WORK/nowhere"
[ "$vrc" = 2 ] && grep -q 'not a directory' "$WORK/v.err" || fail "missing dir: exit $vrc $(cat "$WORK/v.err")"
mkdir -p "$WORK/empty"
validate "$WORK/empty"
[ "$vrc" = 2 ] && grep -q 'no power package' "$WORK/v.err" || fail "empty dir: exit $vrc $(cat "$WORK/v.err")"
validate "$PASS" --expect-role chef=1
[ "$vrc" = 2 ] && grep -q "the role must be prefill, decode or agg" "$WORK/v.err" ||
  fail "--expect-role chef=1: exit $vrc $(cat "$WORK/v.err")"
validate "$PASS" --expect-role agg=x
[ "$vrc" = 2 ] || fail "--expect-role agg=x: exit $vrc"
validate "$PASS" --expect-role agg=4 --expect-role agg=4
[ "$vrc" = 2 ] || fail "--expect-role given twice: exit $vrc"
validate
[ "$vrc" = 2 ] || fail "validate without RUN_DIR: exit $vrc"
ok "usage errors and a directory without a power package exit 2"

finish
