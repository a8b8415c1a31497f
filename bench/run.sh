#!/usr/bin/env bash
# Runs every benchmark and prints the results as Markdown (recorded in docs/performance.md).
# Usage: bench/run.sh BIN_DIR
set -euo pipefail
BIN=${1:-build/bin}
here=$(dirname "$0")
echo "## Exporter: /metrics under load"
bash "$here/exporter_load.sh" "$BIN" 5
echo
echo "## Exporter: sampling fidelity"
/usr/bin/python3 "$here/sampling_fidelity.py" "$BIN" 150 10
