#!/usr/bin/env bash
# `cpu-power report` against an independent Python oracle (tests/oracle/): generated runs with
# every CPU layout, GPU legs, gaps, blank totals, an uncovered window and a session; every
# number must agree to 1e-14 relative in both edge modes (compare_reports.py says why not bit
# for bit). Also the command's exit statuses.
source "$(dirname "$0")/lib.sh"
ORACLE=$(cd "$(dirname "$0")/../oracle" && pwd)
PY=/usr/bin/python3

"$PY" "$ORACLE/generate_runs.py" "$WORK/runs" --seed 7 >"$WORK/runs.txt"
[ "$(wc -l <"$WORK/runs.txt")" -ge 8 ] || fail "generator made too few runs"
while read -r run; do
  name=$(basename "$run")
  for edges in snap interpolate; do
    rc=0
    "$BIN/cpu-power" report "$run" --edges "$edges" --json-out "$WORK/ours.json" >"$WORK/ours.txt" 2>"$WORK/ours.err" || rc=$?
    case "$name" in
      *uncovered*) [ "$rc" = 1 ] || fail "$name/$edges: exit $rc, want 1 (one window has no coverage)" ;;
      *) [ "$rc" = 0 ] || { cat "$WORK/ours.err"; fail "$name/$edges: exit $rc"; } ;;
    esac
    "$PY" "$ORACLE/power_energy_oracle.py" "$run" --edges "$edges" --json-out "$WORK/oracle.json" ||
      fail "$name/$edges: oracle failed"
    "$PY" "$ORACLE/compare_reports.py" "$WORK/ours.json" "$WORK/oracle.json" >"$WORK/compare.txt" || {
      cat "$WORK/compare.txt"
      fail "$name/$edges: report and oracle disagree"
    }
    numbers=$(grep -oE '^[0-9]+ numbers' "$WORK/compare.txt" | cut -d' ' -f1)
    [ "$numbers" -gt 100 ] || fail "$name/$edges: only $numbers numbers compared"
    exact=$(grep -oE '\([0-9]+ bit for bit\)' "$WORK/compare.txt" | tr -dc '0-9')
    ok "$name --edges $edges: $numbers numbers agree with the oracle, $exact bit for bit"
  done
done <"$WORK/runs.txt"

# The comparison itself must be able to fail: one joule off by 1e-12 relative.
"$PY" - "$WORK/ours.json" "$WORK/bent.json" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1]))
d[0]["cpu_per_node"][0]["joules"] *= 1 + 1e-12
json.dump(d, open(sys.argv[2], "w"))
PYEOF
if "$PY" "$ORACLE/compare_reports.py" "$WORK/bent.json" "$WORK/oracle.json" >/dev/null; then
  fail "compare_reports.py accepted a joule 1e-12 off"
fi
ok "a 1e-12 relative difference is caught"

# A damaged result file fails its own window only: a number beyond a double's range
# (nlohmann refuses it) names the file, line and column; the command exits 1 as for any failed
# window, and the other windows' numbers are those of the intact run.
damaged="$WORK/damaged"
cp -r "$WORK/runs/sabench_exporter_v3_gpu" "$damaged"
bad="$damaged/sa-bench_isl_128_osl_128/results_concurrency_4_gpus_8.json"
sed -i -E 's/"total_input_tokens": [0-9]+/"total_input_tokens": 1e400/' "$bad"
col=$(awk '{ print index($0, "1e400") }' "$bad")
rc=0
"$BIN/cpu-power" report "$damaged" --json-out "$WORK/damaged.json" >"$WORK/damaged.txt" 2>&1 || rc=$?
[ "$rc" = 1 ] || fail "damaged window: exit $rc, want 1"
grep -qF "[sa-bench concurrency=4] error: $bad:1:$col: number out of a double's range: 1e400" \
  "$WORK/damaged.txt" || { cat "$WORK/damaged.txt"; fail "damaged window: no file:line:column error"; }
"$BIN/cpu-power" report "$WORK/runs/sabench_exporter_v3_gpu" --json-out "$WORK/intact.json" >/dev/null
"$PY" - "$WORK/damaged.json" "$WORK/intact.json" <<'PYEOF' || fail "damaged run: the other windows changed"
import json, sys
damaged, intact = (json.load(open(p)) for p in sys.argv[1:])
assert len(damaged) == len(intact) == 3, len(damaged)
for d, i in zip(damaged, intact):
    if d["concurrency"] == 4:
        assert "error" in d and "cpu_total_joules" not in d, d
    else:  # the same but for the run directory in paths
        for w in (d, i):
            w.pop("source"), w.pop("warnings")
        assert d == i, d["concurrency"]
PYEOF
ok "a number beyond a double fails its window at file:line:column, exit 1, other windows intact"

# Exit statuses and messages.
run="$WORK/runs/sabench_exporter_v3_gpu"
rc=0
"$BIN/cpu-power" report "$WORK/nowhere" >"$WORK/out.txt" 2>"$WORK/err.txt" || rc=$?
[ "$rc" = 1 ] || fail "missing log dir: exit $rc"
[ "$(cat "$WORK/err.txt")" = "error: $WORK/nowhere/benchmark.out: not found" ] || fail "stderr: $(cat "$WORK/err.txt")"
[ ! -s "$WORK/out.txt" ] || fail "stdout not empty on error"
ok "discovery error: exit 1, 'error: <message>' on stderr, nothing on stdout"
rc=0
"$BIN/cpu-power" report "$run" --edges nearest >/dev/null 2>&1 || rc=$?
[ "$rc" = 2 ] || fail "bad --edges: exit $rc, want 2"
ok "usage error exits 2"
mkdir -p "$run/cpu_power" && cp "$run/power/cpu/samples.csv" "$run/cpu_power/samples.csv"
rc=0
"$BIN/cpu-power" report "$run" >/dev/null 2>"$WORK/err.txt" || rc=$?
[ "$rc" = 1 ] && grep -q 'pick one with --cpu-samples' "$WORK/err.txt" || fail "two CPU legs not refused"
"$BIN/cpu-power" report "$run" --cpu-samples "$run/cpu_power/samples.csv" --plot "$WORK/p.svg" >"$WORK/out.txt" ||
  fail "--cpu-samples did not resolve the choice"
grep -q '^total energy across all concurrency points: ' "$WORK/out.txt" || fail "no grand total line"
grep -q '</svg>' "$WORK/p.svg" || fail "--plot wrote no SVG"
ok "--cpu-samples picks a leg when both exist; --plot writes the SVG"
finish
