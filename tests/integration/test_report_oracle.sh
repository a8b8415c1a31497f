#!/usr/bin/env bash
# `cpu-power report` against an independent Python oracle (tests/oracle/): generated runs with
# every CPU layout, GPU legs, gaps, blank totals, an uncovered window and a session; every
# number must agree to 1e-9 relative in both edge modes. Also the command's exit statuses.
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
    ok "$name --edges $edges: $numbers numbers agree with the oracle"
  done
done <"$WORK/runs.txt"

# The comparison itself must be able to fail: one joule off by 1e-6 relative.
"$PY" - "$WORK/ours.json" "$WORK/bent.json" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1]))
d[0]["cpu_per_node"][0]["joules"] *= 1 + 1e-6
json.dump(d, open(sys.argv[2], "w"))
PYEOF
if "$PY" "$ORACLE/compare_reports.py" "$WORK/bent.json" "$WORK/oracle.json" >/dev/null; then
  fail "compare_reports.py accepted a joule 1e-6 off"
fi
ok "a 1e-6 relative difference is caught"

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
