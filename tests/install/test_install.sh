#!/usr/bin/env bash
# The product without its tests, and its installed layout, in well under a minute (ctest
# install.layout, tests/CMakeLists.txt), without a second build:
#
# 1. A fresh configure of the source tree with -DBUILD_TESTING=OFF and the test-only packages
#    disabled (CMAKE_DISABLE_FIND_PACKAGE_<name>: a REQUIRED lookup of one of them is then a
#    configure error) has no test-only target, no test, and no cache entry of a test tool.
# 2. Its build commands for cpu-power and cpu-power-exporter (compile and link, every object
#    and library they need) are exactly those of this build, which has built them: so the
#    BUILD_TESTING=OFF build compiles and links what this one did.
# 3. `cmake --install` of this build into a temporary prefix installs the binaries, the
#    python fallback exporter (executable) and the documentation, and the installed
#    cpu-power finds the installed exporter beside it and, without that one, the installed
#    fallback, which then serves a simulated run.
#
# Environment (set by ctest): BUILD_DIR (this build), SOURCE_DIR, CMAKE_COMMAND, CTEST_COMMAND,
# INSTALL_BINDIR, INSTALL_SHAREDIR, INSTALL_DOCDIR (relative to the prefix).
set -euo pipefail
: "${BUILD_DIR:?}" "${SOURCE_DIR:?}" "${CMAKE_COMMAND:?}" "${CTEST_COMMAND:?}"
: "${INSTALL_BINDIR:?}" "${INSTALL_SHAREDIR:?}" "${INSTALL_DOCDIR:?}"
BIN="$BUILD_DIR/bin"
source "$SOURCE_DIR/tests/integration/lib.sh"
CACHE="$BUILD_DIR/CMakeCache.txt"
# Packages and tools only the tests and benchmarks use (scripts/install-deps.sh).
TEST_ONLY='gtest|gmock|benchmark|promtool|prometheus|slurm|srun|munge|wrk|chromium|pandas|numpy'

cache_value() { sed -n "s/^$1:[A-Z]*=//p" "$CACHE" | head -1; }

# --- 1. configure with BUILD_TESTING=OFF ---------------------------------------------------
# The settings that shape the product's build commands come from this build's cache, so that
# the two builds can be compared command for command.
generator=$(cache_value CMAKE_GENERATOR)
args=(-G "$generator" -DBUILD_TESTING=OFF)
for name in GTest GMock benchmark; do args+=("-DCMAKE_DISABLE_FIND_PACKAGE_$name=ON"); done
build_type=$(cache_value CMAKE_BUILD_TYPE)
build_type_uc=$(tr '[:lower:]' '[:upper:]' <<<"$build_type")
for var in CMAKE_BUILD_TYPE CMAKE_MAKE_PROGRAM CMAKE_C_COMPILER CMAKE_CXX_COMPILER \
  CMAKE_C_COMPILER_LAUNCHER CMAKE_CXX_COMPILER_LAUNCHER \
  CMAKE_TOOLCHAIN_FILE CMAKE_PREFIX_PATH CMAKE_INSTALL_PREFIX \
  CMAKE_C_FLAGS CMAKE_CXX_FLAGS "CMAKE_C_FLAGS_$build_type_uc" "CMAKE_CXX_FLAGS_$build_type_uc" \
  CMAKE_EXE_LINKER_FLAGS "CMAKE_EXE_LINKER_FLAGS_$build_type_uc" CMAKE_STATIC_LINKER_FLAGS \
  CMAKE_INSTALL_BINDIR CMAKE_INSTALL_DATADIR CMAKE_INSTALL_DATAROOTDIR CMAKE_INSTALL_DOCDIR; do
  value=$(cache_value "$var")
  [ -z "$value" ] || args+=("-D$var=$value")
done
OFF_BUILD="$WORK/build-off"
"$CMAKE_COMMAND" -S "$SOURCE_DIR" -B "$OFF_BUILD" "${args[@]}" >"$WORK/configure.log" 2>&1 || {
  cat "$WORK/configure.log" >&2
  fail "configure with -DBUILD_TESTING=OFF and GTest, GMock and benchmark disabled"
}
ok "configures with -DBUILD_TESTING=OFF while GTest, GMock and benchmark cannot be found"

found=$(sed -n 's/^\([^:#/]*\):.*/\1/p' "$OFF_BUILD/CMakeCache.txt" |
  grep -v '^CMAKE_DISABLE_FIND_PACKAGE_' | grep -iE "$TEST_ONLY" || true)
[ -z "$found" ] || fail "the BUILD_TESTING=OFF configure looked up test-only packages or tools: $found"
ok "no cache entry of a test-only package or tool"

tests=$("$CTEST_COMMAND" --test-dir "$OFF_BUILD" -N | sed -n 's/^Total Tests: //p')
[ "$tests" = 0 ] || fail "the BUILD_TESTING=OFF build has $tests tests"
ok "no tests registered"

# --- 2. the product's build commands are this build's -----------------------------------
if [ "$generator" = Ninja ]; then
  ninja=$(cache_value CMAKE_MAKE_PROGRAM)
  targets=$("$ninja" -C "$OFF_BUILD" -t targets all | sed 's/:.*//')
  extra=$(grep -E '_test$|_bench$|standin|cell_bits|gtest|benchmark' <<<"$targets" || true)
  [ -z "$extra" ] || fail "test or benchmark targets in the BUILD_TESTING=OFF build: $extra"
  ok "no test or benchmark target"

  commands() { "$ninja" -C "$1" -t commands cpu-power cpu-power-exporter | sed "s|$1|<build>|g"; }
  commands "$BUILD_DIR" >"$WORK/commands.on"
  commands "$OFF_BUILD" >"$WORK/commands.off"
  diff -u "$WORK/commands.on" "$WORK/commands.off" >"$WORK/commands.diff" || {
    head -40 "$WORK/commands.diff" >&2
    fail "the BUILD_TESTING=OFF build commands of cpu-power and cpu-power-exporter differ from this build's"
  }
  cmp -s "$BUILD_DIR/generated/common/version.hpp" "$OFF_BUILD/generated/common/version.hpp" ||
    fail "generated/common/version.hpp differs between the two builds"
  ok "BUILD_TESTING=OFF builds cpu-power and cpu-power-exporter with this build's $(wc -l <"$WORK/commands.off") commands"
else
  echo "note: build commands not compared (generator $generator; the comparison reads Ninja's)"
fi

# --- 3. cmake --install ---------------------------------------------------------------------
for exe in cpu-power cpu-power-exporter; do
  [ -x "$BIN/$exe" ] || fail "$BIN/$exe is not built; build the product before this test"
done
PREFIX="$WORK/prefix"
"$CMAKE_COMMAND" --install "$BUILD_DIR" --prefix "$PREFIX" >"$WORK/install.log" 2>&1 || {
  cat "$WORK/install.log" >&2
  fail "cmake --install $BUILD_DIR --prefix $PREFIX"
}
for exe in cpu-power cpu-power-exporter; do
  [ -x "$PREFIX/$INSTALL_BINDIR/$exe" ] || fail "$INSTALL_BINDIR/$exe not installed"
done
FALLBACK="$PREFIX/$INSTALL_SHAREDIR/cpu_power_exporter_fallback.py"
[[ -f "$FALLBACK" && -x "$FALLBACK" ]] || fail "$INSTALL_SHAREDIR/cpu_power_exporter_fallback.py not installed executable"
cmp -s "$FALLBACK" "$SOURCE_DIR/tools/cpu_power_exporter_fallback.py" || fail "installed fallback differs from tools/"
cmp -s "$PREFIX/$INSTALL_DOCDIR/README.md" "$SOURCE_DIR/README.md" || fail "$INSTALL_DOCDIR/README.md not installed"
ndocs=0
for doc in "$SOURCE_DIR"/docs/*.md; do
  cmp -s "$PREFIX/$INSTALL_DOCDIR/docs/${doc##*/}" "$doc" || fail "$INSTALL_DOCDIR/docs/${doc##*/} not installed"
  ndocs=$((ndocs + 1))
done
examples=()
for f in "$SOURCE_DIR"/deploy/web-config/*.yml "$SOURCE_DIR"/deploy/prometheus/{alerts,recording,prometheus}.yml; do
  rel=examples/${f#"$SOURCE_DIR"/deploy/}
  cmp -s "$PREFIX/$INSTALL_DOCDIR/$rel" "$f" || fail "$INSTALL_DOCDIR/$rel not installed"
  examples+=(-e "$INSTALL_DOCDIR/$rel")
done
# Nothing else: no test binary, stand-in library, benchmark or rule test is installed.
unexpected=$(find "$PREFIX" -type f -printf '%P\n' | grep -vxF \
  -e "$INSTALL_BINDIR/cpu-power" -e "$INSTALL_BINDIR/cpu-power-exporter" \
  -e "$INSTALL_SHAREDIR/cpu_power_exporter_fallback.py" -e "$INSTALL_DOCDIR/README.md" \
  "${examples[@]}" | grep -v "^$INSTALL_DOCDIR/docs/[^/]*\.md$" || true)
[ -z "$unexpected" ] || fail "unexpected installed files: $unexpected"
ok "installs 2 binaries, the executable fallback exporter, README.md, $ndocs docs and $((${#examples[@]} / 2)) deploy examples, nothing else"

# Which exporter the installed cpu-power would start (`run --dry-run` prints it), outside any
# Slurm allocation, with nothing on PATH and no CPU_POWER_EXPORTER_BIN.
for var in $(compgen -e | grep '^SLURM_' || true); do unset "$var"; done
unset CPU_POWER_EXPORTER_BIN
mkdir -p "$WORK/empty"
exporter_line() {
  PATH="$WORK/empty" "$PREFIX/$INSTALL_BINDIR/cpu-power" run --dry-run --log-dir "$WORK/dry" -- true |
    grep -m1 '^exporter:' || true
}
"$PREFIX/$INSTALL_BINDIR/cpu-power" --version >/dev/null || fail "installed cpu-power --version"
line=$(exporter_line)
[ "$line" = "exporter:  binary $PREFIX/$INSTALL_BINDIR/cpu-power-exporter (beside cpu-power)" ] ||
  fail "installed cpu-power picks '$line', not the installed cpu-power-exporter"
ok "installed cpu-power starts the installed cpu-power-exporter"

rm "$PREFIX/$INSTALL_BINDIR/cpu-power-exporter"
line=$(exporter_line)
chosen=$(sed -n 's/^exporter: *python fallback \(.*\) (fallback)$/\1/p' <<<"$line")
[[ -n "$chosen" && "$(realpath "$chosen")" == "$(realpath "$FALLBACK")" ]] ||
  fail "without cpu-power-exporter the installed cpu-power picks '$line', not $FALLBACK"
ok "installed cpu-power without the binary exporter picks the installed fallback"

printf 'telemetry:\n  enabled: true\n  collect_interval_ms: 200\n  request_timeout_seconds: 0.5\n  cpu_power_exporter: {}\n' \
  >"$WORK/fast.yaml"
# PATH holds python3 alone (the interpreter itself, not a wrapper script that needs more of
# PATH), so that no cpu-power-exporter installed on this machine is found.
mkdir -p "$WORK/python"
ln -s "$(python3 -c 'import sys; print(sys.executable)')" "$WORK/python/python3"
rc=0
PATH="$WORK/python" "$PREFIX/$INSTALL_BINDIR/cpu-power" run \
  --simulate gb200 --config "$WORK/fast.yaml" --log-dir "$WORK/run" -- "$(command -v sleep)" 2 \
  >"$WORK/run.log" 2>&1 || rc=$?
[ "$rc" = 0 ] || { cat "$WORK/run.log" >&2; fail "simulated run with the installed fallback exited $rc"; }
grep -qF "falling back to Python exporter $PREFIX/" "$WORK/run.log" || {
  cat "$WORK/run.log" >&2
  fail "the simulated run did not use the installed fallback"
}
rows=$(grep -c ',sim1,' "$WORK/run/power/cpu/samples.csv" || true)
((rows >= 4)) || fail "the installed fallback gave $rows rows"
ok "the installed fallback serves a simulated run ($rows rows)"
finish
