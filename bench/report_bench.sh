#!/usr/bin/env bash
# Energy report at scale: a ROWS-row exporter v3 samples.csv (10 million rows, about 1 GB, by
# default) with 100 sa-bench windows, generated under /tmp and deleted afterwards. Times
# `cpu-power report` (both edge modes) against the plain pandas method (bench/report_pandas.py)
# on the same file, records peak memory (max RSS from /usr/bin/time -v) and checks that every
# node's joules agree to 1e-9 relative (snap mode, the reference's edges). Prints Markdown.
# Usage: bench/report_bench.sh BIN_DIR [ROWS]  (KEEP=1 keeps the generated run; AVERAGE_S=1
# writes a cpu_manifest.json that records each node's averaging interval, so the report
# states the uncertainty terms that rest on it)
set -euo pipefail
BIN=${1:-build/bin}
ROWS=${2:-10000000}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d /tmp/cpupower-report-bench.XXXXXX)
trap '[ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT
[ -z "${KEEP:-}" ] || echo "KEEP: the run and its samples.csv stay in $work/run" >&2
run="$work/run"
mkdir -p "$run/power/cpu" "$run/sa-bench_isl_1024_osl_1024"

# 8 nodes x 2 sockets, a scrape every ~0.1 s per node with jitter, rails, module_w, and a
# blank node total in 1% of scrapes; windows cover the middle 80% of each hundredth of the run.
awk -v rows="$ROWS" -v run="$run" 'BEGIN {
  srand(42); t0 = 1788310000; nodes = 8; scrapes = int(rows / (2 * nodes));
  span = scrapes * 0.1; f = run "/power/cpu/samples.csv";
  printf "schema_version,timestamp_unix,hostname,source,sensor,socket_id,power_w,cpu_rail_w,soc_w,dram_w,module_w,total_power_w\r\n" > f;
  for (k = 0; k < scrapes; k++) {
    for (h = 0; h < nodes; h++) {
      t = t0 + k * 0.1 + h * 0.0113 + rand() * 0.004;
      p0 = 95 + 20 * sin(k / 500 + h) + rand() * 4; p1 = 105 + 20 * sin(k / 700 + h) + rand() * 4;
      total = (rand() < 0.01) ? "" : sprintf("%.3f", p0 + p1);
      printf "3,%.7f,node-%02d,acpi,CPU0:cpuSidePowerUsageW,0,%.3f,%.3f,%.3f,,%.2f,%s\r\n", t, h, p0, p0 * 0.45, p0 * 0.1, p0 + 700, total > f;
      printf "3,%.7f,node-%02d,acpi,CPU1:cpuSidePowerUsageW,1,%.3f,%.3f,%.3f,,%.2f,%s\r\n", t, h, p1, p1 * 0.45, p1 * 0.1, p1 + 700, total > f;
    }
  }
  for (c = 1; c <= 100; c++) {
    s = t0 + span * (c - 1 + 0.1) / 100; e = t0 + span * (c - 1 + 0.9) / 100;
    w = sprintf("%s/sa-bench_isl_1024_osl_1024/results_concurrency_%d_gpus_8.json", run, c);
    printf "{\"benchmark_start_time_unix\": %.4f, \"benchmark_end_time_unix\": %.4f, \"duration\": %.4f, \"total_input_tokens\": %d, \"total_output_tokens\": %d}\n", s, e, e - s, 1000 * c, 300 * c > w;
    close(w);
  }
}'
echo "Successful requests: 100" >"$run/benchmark.out"
if [ -n "${AVERAGE_S:-}" ]; then
  /usr/bin/python3 - "$run/power/cpu/cpu_manifest.json" "$AVERAGE_S" <<'PY'
import json, sys
interval = {"min": float(sys.argv[2]), "max": float(sys.argv[2])}
nodes = {f"node-{h:02d}": {"average_interval_s": interval, "sockets_expected": [0, 1]} for h in range(8)}
json.dump({"schema_version": 1, "nodes": nodes}, open(sys.argv[1], "w"))
PY
fi
csv="$run/power/cpu/samples.csv"
bytes=$(stat -c %s "$csv")

measure() {  # measure NAME CMD...: wall seconds and max RSS (KiB) into $WALL, $RSS
  local name=$1
  shift
  /usr/bin/time -v "$@" >"$work/$name.out" 2>"$work/$name.time" || { cat "$work/$name.time"; exit 1; }
  WALL=$(awk -F': ' '/Elapsed \(wall clock\)/ {n = split($2, p, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + p[i]; print s}' "$work/$name.time")
  RSS=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$work/$name.time")
}

measure_median() {  # the same over three runs: median wall into $WALL, all three into $RUNS
  local name=$1 walls=() rss=0
  shift
  for _ in 1 2 3; do
    measure "$name" "$@"
    walls+=("$WALL")
    rss=$((RSS > rss ? RSS : rss))
  done
  RUNS="${walls[*]}"
  WALL=$(printf '%s\n' "${walls[@]}" | sort -g | sed -n 2p)
  RSS=$rss
}

# Every program reads the file from the page cache: none pays for the disk or for the
# write-back of the generated file.
sync
cat "$csv" >/dev/null
# Ours take the median of three runs (timings on a shared VM vary from run to run);
# each pandas run takes half a minute and runs once.
measure_median ours_snap "$BIN/cpu-power" report "$run" --edges snap --json-out "$work/ours_snap.json"
ours_wall=$WALL ours_rss=$RSS ours_runs=$RUNS
measure_median ours_interp "$BIN/cpu-power" report "$run" --edges interpolate --json-out "$work/ours_interp.json"
interp_wall=$WALL interp_rss=$RSS interp_runs=$RUNS
measure pandas /usr/bin/python3 "$here/report_pandas.py" "$csv" "$run"
pandas_wall=$WALL pandas_rss=$RSS
measure pandas_exact /usr/bin/python3 "$here/report_pandas.py" "$csv" "$run" --exact
exact_wall=$WALL exact_rss=$RSS

compare() {  # compare PANDAS_JSON: "<figures compared> <worst relative difference>"
  /usr/bin/python3 - "$work/ours_snap.json" "$1" <<'PYEOF'
import json, sys
ours = json.load(open(sys.argv[1]))
theirs = json.load(open(sys.argv[2]))["hosts"]
worst, n = 0.0, 0
for i, w in enumerate(ours):
    for row in w["cpu_per_node"]:
        host = row["label"][4:]
        a, b = row["joules"], theirs[host][i]
        worst = max(worst, abs(a - b) / max(abs(a), abs(b)))
        n += 1
assert n == sum(len(v) for v in theirs.values()), "window/node count differs"
print(f"{n} {worst:.1e}")
PYEOF
}
read -r compared worst <<<"$(compare "$work/pandas_exact.out")"
read -r _ worst_default <<<"$(compare "$work/pandas.out")"
ok=$(/usr/bin/python3 -c "print('yes' if $worst <= 1e-9 else 'NO')")
speedup=$(/usr/bin/python3 -c "print(f'{$pandas_wall / $ours_wall:.1f}')")
speedup_exact=$(/usr/bin/python3 -c "print(f'{$exact_wall / $ours_wall:.1f}')")
load=$(cut -d' ' -f1-3 /proc/loadavg)

cat <<MD

## Energy report: 100 windows over a ${ROWS}-row samples.csv

| | wall (s) | max RSS (MiB) |
|---|---|---|
| \`cpu-power report --edges snap\` (median of $ours_runs) | $ours_wall | $((ours_rss / 1024)) |
| \`cpu-power report --edges interpolate\` (median of $interp_runs) | $interp_wall | $((interp_rss / 1024)) |
| pandas method, 100 windows (\`bench/report_pandas.py\`) | $pandas_wall | $((pandas_rss / 1024)) |
| same, correctly rounded parsing (\`report_pandas.py --exact\`) | $exact_wall | $((exact_rss / 1024)) |

- input: $ROWS rows, $((bytes / 1048576)) MiB exporter v3 samples.csv, 8 nodes x 2 sockets, 100 sa-bench windows; $(nproc) cores, load average $load at the end
- speedup of \`--edges snap\`: ${speedup}x against the pandas method, ${speedup_exact}x against its exact form
- peak memory of \`--edges snap\`: $((ours_rss * 1024 * 100 / bytes))% of the file size
- joules: $compared node-window figures; worst relative difference $worst against the exact pandas run (within 1e-9: $ok), $worst_default against the default parser
MD
