#!/usr/bin/env bash
# Runs every benchmark and prints the results as Markdown (recorded in docs/performance.md).
# Usage: bench/run.sh BIN_DIR
set -euo pipefail
BIN=${1:-build/bin}
here=$(dirname "$0")
echo "## Exporter: /metrics under load"
bash "$here/exporter_load.sh" "$BIN" 5
echo
echo "## Exporter: /metrics while every DCGM and NVML call takes 2 s (stand-in libraries)"
MODE=hang STANDINS="$(dirname "$BIN")/standins" bash "$here/exporter_load.sh" "$BIN" 5
echo
echo "## Exporter: sampling fidelity"
/usr/bin/python3 "$here/sampling_fidelity.py" "$BIN" 150 10
bash "$here/report_bench.sh" "$BIN"
echo
echo
echo "## Collector: 1,000 endpoints at 1 Hz (60 s) and 10 Hz (20 s), then one stalled; CPU and GPU legs"
# The GPU leg's endpoints serve 4 GPUs each. A run whose samples.csv fails the strict check
# exits 1: say so and go on with the other benchmarks.
for leg in cpu gpu; do
  for run in "1000 60" "100 20"; do
    read -r interval_ms duration_s <<<"$run"
    echo
    echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
    "$BIN/collector_scale_bench" --leg "$leg" --endpoints 1000 --interval-ms "$interval_ms" \
      --duration-s "$duration_s" || echo "**collector_scale_bench --leg $leg at $interval_ms ms FAILED**"
  done
done
echo
echo "## Collector: sample gaps against the collect interval (docs/reliability.md)"
bash "$here/sample_gaps.sh" "$BIN" 60 1000 2000 2500 3000
bash "$here/launch_bench.sh" "$BIN"
echo
echo "## Host collector: cost per node and refresh per rail (150 ms reads)"
bash "$here/host_collect_bench.sh" "$BIN" 60 150
echo
echo "## RAPL (x86): cost per read beside ACPI, and power from counter differences against the trace"
bash "$here/rapl_bench.sh" "$BIN" 20 1
echo
echo "## Telemetry overhead: a CPU-bound stand-in on every core, ours and the Python fallback"
bash "$here/overhead.sh" "$BIN" 8 10 60 "$(mktemp -d /tmp/cpu-power-overhead-out.XXXXXX)"
echo
echo "## Store: one Prometheus scraping 200 targets at 15 s, remote write to VictoriaMetrics, report --prometheus over 60 s (1 h: WINDOW_S=3600)"
bash "$here/store_scale.sh" "$BIN" 60
echo
echo "## Store: window energy from the counters at 15 s and 60 s scrapes against the exact integral, beside the gauges and the 10 Hz CSV"
/usr/bin/python3 "$here/store_fidelity.py" "$BIN"
