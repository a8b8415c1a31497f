#!/usr/bin/env bash
# make test-asan / make test-tsan: the whole project built with a sanitizer into its own
# build directory, then every unit and integration test run against those binaries, the
# exporters and collectors that the integration tests start included.
#
#   scripts/test-sanitizer.sh asan [BUILD_DIR]   AddressSanitizer with LeakSanitizer and
#                                                UndefinedBehaviorSanitizer (build-asan)
#   scripts/test-sanitizer.sh tsan [BUILD_DIR]   ThreadSanitizer (build-tsan)
#
# Every sanitized process writes its reports under BUILD_DIR/sanitizer-logs (a process that a
# test stops with a signal, or whose exit status a test does not look at, cannot hide one),
# and the run fails when any report was written, whatever the tests said. Sanitized binaries
# are slower, so the integration tests stretch their time bounds (CPUPOWER_TEST_TIME_SCALE).
# The benchmarks and the install-layout test (a fresh unsanitized configure) are left out, and
# the TSan run takes only the tests of threaded code (below).
# Environment: JOBS (the build's parallelism), TEST_JOBS (ctest's, default JOBS).
set -euo pipefail
cd "$(dirname "$0")/.."
kind=${1:?usage: scripts/test-sanitizer.sh asan|tsan [BUILD_DIR]}
BUILD=${2:-build-$kind}
JOBS=${JOBS:-$(nproc)}
TEST_JOBS=${TEST_JOBS:-$JOBS}

case "$kind" in
  asan)
    flags="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
    scale=3
    compiler=clang++  # below
    targets=()  # everything
    tests='.'
    # Left out: the install tests; accuracy against the clock and the overhead's timing
    # (test_fidelity, test_overhead), which a 2-3x slower build blurs and whose processes
    # run here in test_exporter, test_scrape and test_host_collect; and the sharded stores'
    # configuration (test_store_sharded: Prometheus and VictoriaMetrics, with the report's
    # store path, which runs here in test_report_store).
    skip='^(install\.|integration\.test_fidelity|integration\.test_overhead|integration\.test_store_sharded)'
    ;;
  tsan)
    flags="-fsanitize=thread"
    scale=6
    compiler=clang++
    # The tests of code that runs threads (the exporter's HTTP and reader threads, the
    # collector, the launcher's relays and waits, the simulated node and dcgm-exporter, the
    # report's parallel load) and every integration test; the single-threaded parsers and
    # writers are left to the ASan run, which keeps this one within CI's time.
    threaded=(acpi_test collector_test exporter_test hostleg_test launch_test nvidia_test
              report_loaders_test report_run_test sim_test sim_gpu_test)
    targets=(cpu-power cpu-power-exporter standin_dcgm standin_nvml "${threaded[@]}")
    tests="^(unit\.($(IFS='|'; echo "${threaded[*]}"))|integration\.)"
    # The report's own integration tests (oracle, damage, plot), the merge CLI, `cpu-power
    # validate` on its damaged copies and the consumers' Python validators run
    # single-threaded code over many inputs; the report's threads run under this sanitizer
    # in its unit tests and at the end of every `cpu-power run` test, and the runs those
    # tests make take the paths test_run_local takes here. Leaving them to the ASan run
    # saves the slowest minutes of this one.
    # test_fidelity replays traces through the exporter, the collector and the host leg,
    # whose threads test_exporter, test_scrape and test_host_collect run here; what it adds
    # is accuracy against the clock, which a 6x slower build only blurs.
    # test_fallback_liveness runs the Python fallback exporter (no thread of ours) and
    # test_prometheus_rules checks deploy/'s rule files against a real Prometheus, and
    # test_store_sharded the sharded stores' configuration; the report's store path
    # (test_report_store, one of test_report_*) runs under ASan.
    # To keep CI within its time (docs/reliability.md, CI time), also left out: tests that
    # run the same threads of ours as others here in another arrangement: the v2 header
    # (test_consumer_v2: test_scrape's collector and exporter), the module rule
    # (test_module_rule: test_exporter's and test_host_collect's readers on another tree),
    # Prometheus scraping or discovering our exporters (test_prometheus, test_prometheus_sd:
    # the exporter's HTTP threads in test_exporter and test_slow_clients, the session in
    # test_run_local), the simulated dcgm-exporter as a process (test_sim_gpu: its threads in
    # sim_gpu_test, and it serves test_gpu_leg) and the overhead's timing (test_overhead).
    skip='^(install\.|integration\.test_report_|integration\.test_merge_cli|integration\.test_validate|integration\.test_consumers|integration\.test_fidelity|integration\.test_fallback_liveness|integration\.test_prometheus_rules|integration\.test_store_|integration\.test_consumer_v2|integration\.test_module_rule|integration\.test_prometheus$|integration\.test_prometheus_sd|integration\.test_sim_gpu|integration\.test_overhead)'

    ;;
  *)
    echo "usage: scripts/test-sanitizer.sh asan|tsan [BUILD_DIR]" >&2
    exit 2
    ;;
esac

bash scripts/install-deps.sh
# -O1 -g1 and nothing else: what the sanitizers' documentation advises (line tables for the
# reports), and a build much quicker than the release one's -O2 -g. The build type None adds
# no flags of its own (an empty one would get the project's default, RelWithDebInfo).
# Both are built with clang (SANITIZER_CXX=g++ for GCC): it compiled the instrumented code in
# half to three quarters of GCC's CPU time (docs/performance.md, Build time), and the product
# gets a second compiler's warnings and use-after-scope checks. GCC's maybe-uninitialized
# warning misfires on std::optional in instrumented -O1 code; the normal build keeps it as an
# error.
# A clang ASan build is also configured with FUZZ=ON: the same instrumented libraries, with
# coverage for libFuzzer, give the fuzz targets too, so `make fuzz BUILD_FUZZ=build-asan`
# (what CI runs) fuzzes without a build of its own.
cxx=${SANITIZER_CXX:-$compiler}
fuzz=OFF
case "$cxx" in
  *clang*)
    cc=${cxx/clang++/clang} extra=""
    if [ "$kind" = asan ]; then fuzz=ON; fi
    ;;
  *) cc=${cxx/g++/gcc} extra="-Wno-maybe-uninitialized" ;;
esac
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=None \
  -DCMAKE_C_COMPILER="$cc" -DCMAKE_CXX_COMPILER="$cxx" \
  -DCMAKE_C_FLAGS="-O1 -g1 $flags" -DCMAKE_CXX_FLAGS="-O1 -g1 $flags $extra" \
  -DCMAKE_EXE_LINKER_FLAGS="$flags" -DCMAKE_SHARED_LINKER_FLAGS="$flags" \
  -DCPUPOWER_BENCHMARKS=OFF -DCPUPOWER_TEST_TIME_SCALE="$scale" -DFUZZ="$fuzz"
ninja -C "$BUILD" -j "$JOBS" "${targets[@]}"

logs="$(realpath -m "$BUILD/sanitizer-logs")"
rm -rf "$logs"
mkdir -p "$logs"
# Reports go to files named by sanitizer and process id; exit code 66 marks a process that
# had one, so a test that checks the status fails on the spot too.
export ASAN_OPTIONS="log_path=$logs/asan:detect_leaks=1:abort_on_error=0:exitcode=66:strict_string_checks=1:detect_stack_use_after_return=1"
export UBSAN_OPTIONS="log_path=$logs/ubsan:print_stacktrace=1:halt_on_error=1:exitcode=66"
export LSAN_OPTIONS="log_path=$logs/lsan:exitcode=66"
# tests/tsan.supp: races ThreadSanitizer reports through libraries it cannot see into.
export TSAN_OPTIONS="log_path=$logs/tsan:halt_on_error=1:exitcode=66:second_deadlock_stack=1:suppressions=$PWD/tests/tsan.supp"

status=0
ctest --test-dir "$BUILD" --output-on-failure -j "$TEST_JOBS" -R "$tests" -E "$skip" || status=$?

reports=$(find "$logs" -type f | sort)
if [ -n "$reports" ]; then
  echo "test-$kind: sanitizer reports:" >&2
  for f in $reports; do
    echo "==== $f" >&2
    cat "$f" >&2
  done
  status=1
fi
[ "$status" -eq 0 ] && echo "test-$kind: every test passed, no sanitizer report"
exit "$status"
