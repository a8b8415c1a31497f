#!/usr/bin/env bash
# `cpu-power run` on a local Slurm cluster (scripts/slurm-up.sh: fake nodes in their own
# network and mount namespaces, simulated hwmon, exporters with default arguments), for 3
# and for 32 nodes: the time from the start of `cpu-power run` to the first row of every
# node, and the finalize time (the command's end to `cpu-power run` exiting). Prints
# Markdown. Needs root.
# Usage: bench/launch_bench.sh BIN_DIR [RUNS] [NODE COUNTS...]
set -euo pipefail
BIN=$(realpath "${1:-build/bin}")
RUNS=${2:-3}
shift $(($# > 2 ? 2 : $#))
COUNTS=("$@")
((${#COUNTS[@]})) || COUNTS=(3 32)
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PY=/usr/bin/python3
WORK=$(mktemp -d /tmp/cpu-power-launch-bench.XXXXXX)
CLUSTER=""
cleanup() {
  if [ -n "$CLUSTER" ]; then bash "$ROOT/scripts/slurm-down.sh" "$CLUSTER" >&2 || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT
cd "$WORK"

cat >"$WORK/recipe.yaml" <<'EOF'
telemetry:
  enabled: true
  collect_interval_ms: 1000
  request_timeout_seconds: 2.0
  cpu_power_exporter: {port: 9405, source: auto}
EOF

echo
echo "## Launch: \`cpu-power run\` on a local Slurm cluster"
echo
echo "Per run: \`salloc -N<n> sh -c 'date +%s.%N >t0; exec cpu-power run --config recipe.yaml -- sleep 5'\`"
echo "(recipe: \`collect_interval_ms: 1000\`, \`request_timeout_seconds: 2.0\`, \`cpu_power_exporter: {port: 9405}\`)."
echo "First row: the last node's first row, as seen by \`cpu-power run\` (its log line) and by"
echo "row time (\`first_sample_unix\` in the manifest, minus t0). Finalize: the command's end"
echo "(\`session.json\` \`end_unix\`) to \`cpu-power run\` exiting, which includes waiting for a row"
echo "from after the end on every node, the collector's last scrape and manifest, stopping the"
echo "exporters (srun step teardown) and the energy report; \`manifest\` is the part up to"
echo "\`stopped_at_unix\`. Median of $RUNS runs, min..max in brackets. Machine: $(nproc) cores, shared."
echo
echo "| nodes | cluster up (s) | first row, log (s) | first row, row time (s) | finalize (s) | of which to manifest (s) | rows per node |"
echo "|---|---|---|---|---|---|---|"
for n in "${COUNTS[@]}"; do
  CLUSTER="$WORK/cluster-$n"
  t_up0=$(date +%s.%N)
  bash "$ROOT/scripts/slurm-up.sh" --sim "$BIN" "$CLUSTER" "$n" >"$WORK/up-$n.log" 2>&1 ||
    { cat "$WORK/up-$n.log" >&2; exit 1; }
  t_up1=$(date +%s.%N)
  export SLURM_CONF="$CLUSTER/slurm.conf"
  for r in $(seq 1 "$RUNS"); do
    d="$WORK/run-$n-$r"
    mkdir -p "$d"
    salloc -N"$n" sh -c 'date +%s.%N >"$0/t0"; exec "$1/cpu-power" run --config "$2" --log-dir "$0" -- sleep 5' \
      "$d" "$BIN" "$WORK/recipe.yaml" >"$d/run.log" 2>&1 || { cat "$d/run.log" >&2; exit 1; }
    date +%s.%N >"$d/t1"
  done
  $PY - "$WORK" "$n" "$RUNS" "$t_up0" "$t_up1" <<'PYEOF'
import json, re, statistics, sys
work, n, runs, up0, up1 = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5])
cols = {"log": [], "row": [], "fin": [], "man": [], "rows": []}
for r in range(1, runs + 1):
    d = f"{work}/run-{n}-{r}"
    t0 = float(open(d + "/t0").read())
    t1 = float(open(d + "/t1").read())
    m = json.load(open(d + "/power/cpu/cpu_manifest.json"))
    s = json.load(open(d + "/session.json"))
    nodes = m["nodes"].values()
    assert len(m["nodes"]) == n and all(v["first_sample_unix"] for v in nodes), "a node has no rows"
    cols["log"].append(float(re.search(r"first rows from every ready node after ([0-9.]+) s", open(d + "/run.log").read()).group(1)))
    cols["row"].append(max(v["first_sample_unix"] for v in nodes) - t0)
    cols["fin"].append(t1 - s["end_unix"])
    cols["man"].append(m["stopped_at_unix"] - s["end_unix"])
    cols["rows"].append(sum(1 for line in open(d + "/power/cpu/samples.csv")) - 1)
cell = lambda v: f"{statistics.median(v):.2f} [{min(v):.2f}..{max(v):.2f}]"
print(f"| {n} | {up1 - up0:.1f} | {cell(cols['log'])} | {cell(cols['row'])} | {cell(cols['fin'])} | {cell(cols['man'])} | {statistics.median(cols['rows']) / n:.0f} |")
PYEOF
  bash "$ROOT/scripts/slurm-down.sh" "$CLUSTER" >&2
  CLUSTER=""
done
