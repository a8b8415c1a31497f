#!/usr/bin/env bash
# The HTML report at the size goal of its issue: a 1-hour run of 8 GB200 nodes sampled at
# 10 Hz (2 Grace sockets with rails and module_w, 4 GPUs each: 576,000 CPU rows and 1,152,000
# GPU rows) with 6 sa-bench windows, generated under /tmp and deleted afterwards. Prints, as
# Markdown: the size of power_report.html, the time `cpu-power report --html` adds to the
# report (median of three of each), and how long headless Chromium takes to load and draw the
# page (navigation start to the end of the load event, median of three).
# Usage: bench/html_report_bench.sh BIN_DIR  (KEEP=1 keeps the run and the page)
set -euo pipefail
BIN=${1:-build/bin}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d /tmp/cpupower-html-bench.XXXXXX)
trap '[ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT
[ -z "${KEEP:-}" ] || echo "KEEP: the run and its report stay in $work" >&2
run="$work/run"
mkdir -p "$run/power/cpu" "$run/sa-bench_isl_1024_osl_1024"
awk -v run="$run" 'BEGIN {
  srand(7); t0 = 1788310000; nodes = 8; scrapes = 36000;
  c = run "/power/cpu/samples.csv"; g = run "/power/samples.csv";
  printf "schema_version,timestamp_unix,hostname,source,sensor,socket_id,power_w,cpu_rail_w,soc_w,dram_w,module_w,total_power_w\r\n" > c;
  printf "schema_version,timestamp_unix,scrape_seq,hostname,gpu_index,gpu_uuid,power_w\r\n" > g;
  for (k = 0; k < scrapes; k++) {
    for (h = 0; h < nodes; h++) {
      t = t0 + k * 0.1 + h * 0.0113 + rand() * 0.004;
      load = (k % 6000 >= 600) ? 1 : 0.2;  # 6 windows of 9 minutes, 1 minute idle before each
      p0 = 60 + 60 * load + 8 * sin(k / 300 + h) + rand() * 4; p1 = p0 + 5 + rand() * 4;
      if (rand() < 0.0005) p0 += 80;  # short spikes the min/max buckets must keep
      total = sprintf("%.3f", p0 + p1);
      printf "3,%.7f,node-%02d,acpi,CPU0:cpuSidePowerUsageW,0,%.3f,%.3f,%.3f,,%.2f,%s\r\n", t, h, p0, p0 * 0.45, p0 * 0.1, p0 + 2 * 700 * load + 200, total > c;
      printf "3,%.7f,node-%02d,acpi,CPU1:cpuSidePowerUsageW,1,%.3f,%.3f,%.3f,,%.2f,%s\r\n", t, h, p1, p1 * 0.45, p1 * 0.1, p1 + 2 * 700 * load + 200, total > c;
      for (i = 0; i < 4; i++)
        printf "1,%.7f,%d,node-%02d,%d,GPU-%02d-%d,%.2f\r\n", t, k, h, i, h, i, 150 + 800 * load + 30 * sin(k / 200 + i) + rand() * 20 > g;
    }
  }
  for (w = 0; w < 6; w++) {
    s = t0 + w * 600 + 60; e = s + 540; conc = 2 ^ (w + 1);
    f = sprintf("%s/sa-bench_isl_1024_osl_1024/results_concurrency_%d_gpus_32.json", run, conc);
    printf "{\"benchmark_start_time_unix\": %.3f, \"benchmark_end_time_unix\": %.3f, \"total_input_tokens\": %d, \"total_output_tokens\": %d}\n", s, e, 900000 * conc ^ 0.7, 300000 * conc ^ 0.7 > f;
  }
}'
printf 'Successful requests: 1\n' >"$run/benchmark.out"
median() { sort -n | sed -n 2p; }
time_of() { # seconds of one command, to the millisecond
  local s e
  s=$(date +%s.%N); "$@" >/dev/null; e=$(date +%s.%N)
  echo "$s $e" | awk '{ printf "%.3f\n", $2 - $1 }'
}
cat "$run/power/cpu/samples.csv" "$run/power/samples.csv" >/dev/null  # page cache
plain=$(for _ in 1 2 3; do time_of "$BIN/cpu-power" report "$run"; done | median)
html=$(for _ in 1 2 3; do time_of "$BIN/cpu-power" report "$run" --html "$work/power_report.html"; done | median)
bytes=$(stat -c %s "$work/power_report.html")
load_ms=$(/usr/bin/python3 - "$here/../tests/browser" "$work/power_report.html" <<'PYEOF'
import sys
sys.path.insert(0, sys.argv[1])
from cdp import Browser
times = []
with Browser() as b:
    for _ in range(3):
        page = b.new_page(1280, 900)
        page.navigate("file://" + sys.argv[2])
        times.append(page.evaluate("performance.getEntriesByType('navigation')[0].loadEventEnd"))
        errors = page.events("Runtime.exceptionThrown")
        assert not errors, errors
print("%.0f" % sorted(times)[1])
PYEOF
)
echo "### HTML report: 1 hour, 8 nodes at 10 Hz, 2 sockets and 4 GPUs each"
echo
echo "| | |"
echo "|---|---|"
echo "| input | $(wc -l <"$run/power/cpu/samples.csv") CPU rows, $(wc -l <"$run/power/samples.csv") GPU rows, 6 windows, 56 series |"
echo "| power_report.html | $bytes bytes ($(awk -v b="$bytes" 'BEGIN { printf "%.2f", b / 1048576 }') MiB; goal: under 3 MB) |"
echo "| cpu-power report, text only (median of 3) | ${plain} s |"
echo "| cpu-power report --html (median of 3) | ${html} s |"
echo "| Chromium: navigation start to end of load (median of 3) | ${load_ms} ms |"
echo
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores"
