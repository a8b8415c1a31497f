#!/usr/bin/env bash
# Node names and a log directory full of spaces and shell metacharacters, on a real local
# Slurm cluster: every srun is an argv, never a shell line, so nothing is expanded or
# executed, each node writes its own exporter log (%N is the node's name on these fake nodes,
# as on a cluster), and the rows carry the names exactly.
source "$(dirname "$0")/slurm_lib.sh"

# Slurm itself refuses whitespace, ',', '#' and brackets in node names, and its slurmd cannot
# signal a step on a node whose name is not a valid regular expression ("sockname regex
# compilation failed": '(', '{', ...), so these stick to shell metacharacters Slurm handles.
# The first name creates a file named PWNED if any shell ever evaluates it.
NODES=('n;touch>PWNED;1' "n'2\"!" 'n&3<x%~')
start_cluster "${NODES[@]}"
ok "cluster up with nodes ${NODES[*]}"

LOGDIR="$WORK/log dir \$(touch PWNED) ; 'q' & \"x\" 50%"
printf 'telemetry:\n  enabled: true\n  collect_interval_ms: 250\n  request_timeout_seconds: 0.5\n  cpu_power_exporter: {}\n' >"$WORK/r.yaml"
rc=0
salloc -N3 "$BIN/cpu-power" run --config "$WORK/r.yaml" --log-dir "$LOGDIR" \
  --nodes "${NODES[0]},${NODES[1]},${NODES[2]}" -- sh -c 'sleep 1.5; exit 6' >"$WORK/run.log" 2>&1 || rc=$?
[ "$rc" = 6 ] || { cat "$WORK/run.log"; fail "run exited $rc, want 6"; }
for n in "${NODES[@]}"; do
  f="$LOGDIR/telemetry_cpu_power_exporter.$n.out"
  grep -q 'listening addr=0.0.0.0:9405' "$f" 2>/dev/null || { ls -la "$LOGDIR" >&2; fail "no exporter log $f"; }
done
$PY - "$LOGDIR" "${NODES[@]}" <<'PYEOF' || fail "rows do not carry the node names"
import csv, json, sys
d, nodes = sys.argv[1], sys.argv[2:]
hosts = {r["hostname"] for r in csv.DictReader(open(d + "/power/cpu/samples.csv"))}
assert hosts == set(nodes), hosts
m = json.load(open(d + "/power/cpu/cpu_manifest.json"))
assert set(m["nodes"]) == set(nodes) and all(v["error_count"] == 0 for v in m["nodes"].values()), m
assert json.load(open(d + "/session.json"))["exit_code"] == 6
PYEOF
if find "$WORK" "$LOGDIR" "$ROOT" / -maxdepth 1 -name PWNED 2>/dev/null | grep -q .; then
  fail "a shell evaluated a name"
fi
ok "metacharacters in node names and the log dir: per-node logs, exact names in rows and manifest, nothing executed"

bash "$ROOT/scripts/slurm-down.sh" "$CLUSTER" || fail "slurm-down reported a survivor"
ok "cluster down"
finish
