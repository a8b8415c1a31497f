#!/usr/bin/env bash
# Every power leg on any machine: `cpu-power run --simulate gb200` starts two simulated
# GB200 nodes (their Grace sockets and GPUs follow this machine's real CPU load); on each, an
# exporter scraped by the head-node collector (the CPU exporter leg), a host collector writing
# its own CSV (the CPU host leg) and a simulated dcgm-exporter scraped by a second collector
# (the GPU leg). The "benchmark" is a stand-in (scripts/demo-bench.py) that loads the CPUs and
# writes a sa-bench result, so the report can divide by tokens. At the end: the GPU package's
# verdict and the combined CPU + GPU energy report. The same command without --simulate,
# inside a Slurm allocation, starts everything on the worker nodes with srun.
#
# The run directory is kept in the checkout, in demo-run/ (ignored by git, replaced by the
# next demo), so that the reports it prints the paths of are there to open afterwards; the
# last line is the HTML report's path.
set -euo pipefail
BIN=${1:-build/bin}
BIN=$(cd "$BIN" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
WORK=$(cd "$HERE/.." && pwd)/demo-run
rm -rf "$WORK"
mkdir -p "$WORK"

cat >"$WORK/recipe.yaml" <<'EOF'
benchmark: {type: sa-bench}
telemetry:
  enabled: true
  collect_interval_ms: 250
  dcgm_exporter: {container_image: dcgm-exporter, port: 9400}
  cpu_power_exporter: {port: 9405, source: auto}
  cpu_power:
    enabled: true
    sample_interval_seconds: 0.1
EOF
# The benchmark: 2 s idle, then 4 s with every CPU busy "serving" at concurrency 4, then 2 s
# idle; its summary lines go to benchmark.out, as a serving benchmark's log does.
mkdir -p "$WORK/run"
BENCH="/usr/bin/python3 $HERE/demo-bench.py $WORK/run --seconds 4 --idle 2 --concurrency 4 | tee $WORK/run/benchmark.out"

echo "== cpu-power run --simulate gb200 --nodes node1,node2 --sim-gpus 4 --config recipe.yaml -- sh -c '<demo-bench.py: 2 s idle, 4 s load, 2 s idle>'"
rc=0
"$BIN/cpu-power" run --simulate gb200 --nodes node1,node2 --sim-gpus 4 --config "$WORK/recipe.yaml" \
  --log-dir "$WORK/run" -- sh -c "$BENCH" || rc=$?
echo
echo "== the command's exit status is the session's: $rc"
echo
echo "== $WORK/run/session.json"
cat "$WORK/run/session.json"
echo
echo "== node power (sum of both Grace sockets, W) per second of the run, each leg side by side"
/usr/bin/python3 - "$WORK/run" <<'EOF'
import collections, csv, json, sys
d = sys.argv[1]
session = json.load(open(d + "/session.json"))
t0 = session["start_unix"]
power = collections.defaultdict(dict)  # second -> node/leg -> {time: W}
rows = [(r, "exporter") for r in csv.DictReader(open(d + "/power/cpu/samples.csv"))]
rows += [(r, "host") for r in csv.DictReader(open(d + "/cpu_power/samples.csv"))]
for row, leg in rows:
    if not row["total_power_w"]:
        continue
    row = dict(row, hostname=row["hostname"] + "/" + leg)
    second = int(float(row["timestamp_unix"]) - t0) if float(row["timestamp_unix"]) >= t0 else -1
    power[second].setdefault(row["hostname"], {})[row["timestamp_unix"]] = float(row["total_power_w"])
nodes = sorted({n for by_node in power.values() for n in by_node})
print("%8s  " % "second" + "  ".join("%14s" % n for n in nodes))
for second in sorted(power):
    cells = []
    for n in nodes:
        values = list(power[second].get(n, {}).values())
        cells.append("%14.1f" % (sum(values) / len(values)) if values else "%14s" % "-")
    print("%8s  " % ("before" if second < 0 else second) + "  ".join(cells))
EOF
echo
echo "== host leg: $WORK/run/cpu_power/manifest.json"
/usr/bin/python3 -c 'import json, sys; m = json.load(open(sys.argv[1])); print({k: m[k] for k in ("status", "expected_nodes", "sample_row_count", "reason_codes")})' "$WORK/run/cpu_power/manifest.json"
echo
echo "== GPU leg: $WORK/run/power/manifest.json"
/usr/bin/python3 -c 'import json, sys; m = json.load(open(sys.argv[1])); print({k: m[k] for k in ("status", "publication_valid", "sample_row_count", "reason_codes")}); print("windows:", [(v["benchmark_type"], v["concurrency"], v["power_coverage_valid"]) for v in m["window_validations"]])' "$WORK/run/power/manifest.json"
echo
echo "== energy report over the host leg (cpu-power report --cpu-samples cpu_power/samples.csv)"
"$BIN/cpu-power" report "$WORK/run" --cpu-samples "$WORK/run/cpu_power/samples.csv" | head -12 || true
echo
echo "== the combined report: CPU (exporter leg) + GPU joules, J/token, tokens per joule"
"$BIN/cpu-power" report "$WORK/run" --cpu-samples "$WORK/run/power/cpu/samples.csv" || true
echo
echo "== the reports of this run, kept in $WORK/run until the next demo"
ls -1 "$WORK/run"/power_energy_report.* "$WORK/run"/power_report.html 2>/dev/null || true
echo
echo "== the HTML report (Pareto view, power over time, table): open it in a browser"
echo "$WORK/run/power_report.html"
echo
echo "== will the downstream consumers take this run? cpu-power validate (exit 1: the default"
echo "== v3 files are newer than the validators pinned to v1/v2; each finding names its fix)"
"$BIN/cpu-power" validate "$WORK/run" || true
