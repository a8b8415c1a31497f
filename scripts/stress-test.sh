#!/usr/bin/env bash
# The whole test suite, RUNS times in a row, beside BUSY processes that each spin a core: the
# tests must hold on a machine busy with other work, so they assert order and accounting, not
# how late the machine runs them. Stops at the first failing run.
#
#   scripts/stress-test.sh [RUNS] [BUSY]     defaults: 5 runs, one busy loop per core
#
# Builds nothing: run `make test` (or `make build`) first. Environment: BUILD (default build),
# JOBS (ctest's parallelism, default nproc).
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-5}
busy=${2:-$(nproc)}
BUILD=${BUILD:-build}
JOBS=${JOBS:-$(nproc)}
[ -f "$BUILD/CTestTestfile.cmake" ] || { echo "stress-test: no build in $BUILD (make build)" >&2; exit 2; }

loops=()
stop_loops() { [ ${#loops[@]} -eq 0 ] || kill "${loops[@]}" 2>/dev/null || true; }
trap stop_loops EXIT
for _ in $(seq "$busy"); do
  (while :; do :; done) &
  loops+=($!)
done
echo "stress-test: $busy busy loops (pids ${loops[*]}), $runs runs of ctest -j $JOBS in $BUILD"

for r in $(seq "$runs"); do
  start=$(date +%s)
  if ctest --test-dir "$BUILD" --output-on-failure -j "$JOBS" >"$BUILD/stress-run-$r.log" 2>&1; then
    echo "stress-test: run $r of $runs passed in $(($(date +%s) - start)) s," \
      "$(grep -oE '[0-9]+ tests failed out of [0-9]+' "$BUILD/stress-run-$r.log")," \
      "load average $(cut -d' ' -f1 /proc/loadavg)"
  else
    echo "stress-test: run $r of $runs FAILED after $(($(date +%s) - start)) s:" >&2
    grep -E 'Failed|\*\*\*|FAIL' "$BUILD/stress-run-$r.log" | head -20 >&2
    echo "stress-test: the whole log is $BUILD/stress-run-$r.log" >&2
    exit 1
  fi
done
echo "stress-test: $runs of $runs runs passed beside $busy busy loops"
