#!/usr/bin/env bash
# The whole exporter leg on any machine: `cpu-power run --simulate gb200` starts two simulated
# GB200 nodes (their Grace sockets follow this machine's real CPU load), an exporter on each,
# and the collector, then runs a short CPU load as the "benchmark", finalizes the samples and
# the manifest, and reports. The same command without --simulate, inside a Slurm allocation,
# starts the exporters on the worker nodes with srun.
set -euo pipefail
BIN=${1:-build/bin}
WORK=$(mktemp -d /tmp/cpu-power-demo.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

cat >"$WORK/recipe.yaml" <<'EOF'
telemetry:
  enabled: true
  collect_interval_ms: 250
  cpu_power_exporter: {port: 9405, source: auto}
EOF
# The benchmark: 2 s idle, then 4 s with every CPU busy, then 1 s idle.
LOAD='sleep 2; for c in $(seq 0 $(($(nproc) - 1))); do timeout 4 taskset -c $c sh -c "while :; do :; done" & done; wait; sleep 1'

echo "== cpu-power run --simulate gb200 --nodes node1,node2 --config recipe.yaml -- sh -c '<2 s idle, 4 s load, 1 s idle>'"
rc=0
"$BIN/cpu-power" run --simulate gb200 --nodes node1,node2 --config "$WORK/recipe.yaml" \
  --log-dir "$WORK/run" -- sh -c "$LOAD" || rc=$?
echo
echo "== the command's exit status is the session's: $rc"
echo
echo "== $WORK/run/session.json"
cat "$WORK/run/session.json"
echo
echo "== node power (sum of both Grace sockets, W) from power/cpu/samples.csv, per second of the run"
/usr/bin/python3 - "$WORK/run" <<'EOF'
import collections, csv, json, sys
d = sys.argv[1]
session = json.load(open(d + "/session.json"))
t0 = session["start_unix"]
power = collections.defaultdict(dict)  # second -> node -> [W per scrape]
for row in csv.DictReader(open(d + "/power/cpu/samples.csv")):
    second = int(float(row["timestamp_unix"]) - t0) if float(row["timestamp_unix"]) >= t0 else -1
    power[second].setdefault(row["hostname"], {})[row["timestamp_unix"]] = float(row["total_power_w"])
nodes = sorted({n for by_node in power.values() for n in by_node})
print("%8s  " % "second" + "  ".join("%8s" % n for n in nodes))
for second in sorted(power):
    cells = []
    for n in nodes:
        values = list(power[second].get(n, {}).values())
        cells.append("%8.1f" % (sum(values) / len(values)) if values else "%8s" % "-")
    print("%8s  " % ("before" if second < 0 else second) + "  ".join(cells))
EOF
if [ -f "$WORK/run/power_energy_report.txt" ]; then
  echo
  echo "== energy report ($WORK/run/power_energy_report.txt)"
  head -20 "$WORK/run/power_energy_report.txt"
fi
