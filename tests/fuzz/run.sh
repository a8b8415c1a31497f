#!/usr/bin/env bash
# make fuzz: builds the libFuzzer targets (tests/fuzz) with clang in their own build directory
# and runs each for FUZZ_SECONDS, up to FUZZ_JOBS at a time. Fails when any target crashes;
# each crash input is copied to tests/fuzz/regressions/<target>/, to be fixed and committed
# (the normal build's unit.fuzz_replay.<target> test replays it from then on).
#
#   FUZZ_SECONDS  seconds per target (default 30)
#   FUZZ_JOBS     targets run at once (default 1); the build uses JOBS (default nproc)
#   FUZZ_TARGETS  a space-separated subset (default: every target)
#   BUILD_FUZZ    the build directory (default build-fuzz)
#
# The corpus each target grows is kept in $BUILD_FUZZ/fuzz-corpus/<target>/ and reused by the
# next run; the committed seeds are tests/fuzz/corpus/<target>/.
set -euo pipefail

cd "$(dirname "$0")/../.."
src=$PWD
build=${BUILD_FUZZ:-build-fuzz}
seconds=${FUZZ_SECONDS:-30}
jobs=${FUZZ_JOBS:-1}
build_jobs=${JOBS:-$(nproc)}

command -v clang++ >/dev/null || { echo "fuzz: clang++ not found (scripts/install-deps.sh)" >&2; exit 1; }

started=$(date +%s)
if [ ! -f "$build/build.ninja" ]; then
  # -O1 with line tables: what libFuzzer's documentation builds with, and quicker to build
  # than -O2 -g (the build type None adds no flags of its own).
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=None -DCMAKE_C_FLAGS="-O1 -g1" \
    -DCMAKE_CXX_FLAGS="-O1 -g1" -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DFUZZ=ON \
    -DBUILD_TESTING=OFF
fi
[ -f "$build/fuzz_targets.txt" ] || {
  echo "fuzz: $build is not a FUZZ=ON build (a clang make test-asan build or this script's own)" >&2
  exit 1
}
ninja -C "$build" -j "$build_jobs" fuzz
built=$(date +%s)
echo "fuzz: built in $((built - started)) s"

targets=${FUZZ_TARGETS:-$(cat "$build/fuzz_targets.txt")}
mkdir -p "$build/fuzz-logs"

# One target: its corpus first (the committed regressions among it), then new inputs until
# the time is up. Status 0 when nothing crashed.
run_one() {
  local t=$1
  local corpus=$build/fuzz-corpus/$t crashes=$build/fuzz-crashes/$t/
  mkdir -p "$corpus" "$crashes"
  local seeds=()
  for d in "$src/tests/fuzz/corpus/$t" "$src/tests/fuzz/regressions/$t"; do
    [ -d "$d" ] && seeds+=("$d")
  done
  # -timeout: one input running longer is a finding (a hang); -rss_limit_mb: so is memory.
  "$build/bin/fuzz_$t" -max_total_time="$seconds" -timeout=25 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$crashes" "$corpus" "${seeds[@]}" \
    >"$build/fuzz-logs/$t.log" 2>&1
}

failed=()
pids=()
names=()
finish() {  # waits for the oldest running target
  local pid=${pids[0]} t=${names[0]}
  pids=("${pids[@]:1}")
  names=("${names[@]:1}")
  if wait "$pid"; then
    echo "fuzz: $t ok ($(grep -o 'stat::number_of_executed_units: *[0-9]*' "$build/fuzz-logs/$t.log" | grep -o '[0-9]*$' || echo '?') runs)"
  else
    failed+=("$t")
    echo "fuzz: $t FAILED; the end of $build/fuzz-logs/$t.log:" >&2
    tail -n 40 "$build/fuzz-logs/$t.log" >&2
    mkdir -p "tests/fuzz/regressions/$t"
    for f in "$build/fuzz-crashes/$t"/*; do
      [ -f "$f" ] || continue
      cp "$f" "tests/fuzz/regressions/$t/"
      echo "fuzz: crash input copied to tests/fuzz/regressions/$t/$(basename "$f")" >&2
    done
  fi
}
for t in $targets; do
  [ -x "$build/bin/fuzz_$t" ] || { echo "fuzz: no target $t" >&2; exit 1; }
  rm -rf "$build/fuzz-crashes/$t"
  run_one "$t" &
  pids+=("$!")
  names+=("$t")
  if [ "${#pids[@]}" -ge "$jobs" ]; then finish; fi
done
while [ "${#pids[@]}" -gt 0 ]; do finish; done

echo "fuzz: ran for $(($(date +%s) - built)) s after the build, $(($(date +%s) - started)) s in all"
if [ "${#failed[@]}" -gt 0 ]; then
  echo "fuzz: crashed: ${failed[*]}" >&2
  exit 1
fi
