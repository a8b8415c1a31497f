#!/usr/bin/env bash
# make test-arm64: cross-compiles the whole project for aarch64 (cmake/aarch64-linux-gnu.cmake)
# into its own build directory and runs its tests under qemu-user on this x86-64 machine:
# every unit test, the integration tests that need no Slurm, and the comparisons with the
# native x86 build (the parsed doubles of a fixed list of cells, and the report's text, JSON
# and SVG on every oracle run, byte for byte). The native build is brought up to date first,
# since the comparisons need it.
#
# Environment: BUILD_ARM64 (default build-arm64), HOST_BUILD (default build), JOBS (the
# build's parallelism), TEST_JOBS (ctest's, default JOBS).
# Emulated timing is no performance figure; see docs/performance.md.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD_ARM64:-build-arm64}
HOST_BUILD=${HOST_BUILD:-build}
JOBS=${JOBS:-$(nproc)}
TEST_JOBS=${TEST_JOBS:-$JOBS}
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"

bash scripts/install-deps.sh --arm64

echo "test-arm64: bringing the native build in $HOST_BUILD up to date (the x86 side of the comparisons)"
make --no-print-directory build BUILD="$HOST_BUILD" JOBS="$JOBS"

# --- the cross build ---------------------------------------------------------------------
# The release build's code (-O2 -DNDEBUG, as RelWithDebInfo) without its debug information:
# nothing here reads it, and it doubled the cross compiler's time (docs/reliability.md, CI
# time). The benchmarks are left out: no test runs them, and the native build keeps them
# compiling.
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=None -DCPUPOWER_BENCHMARKS=OFF \
  -DCMAKE_C_FLAGS="-O2 -DNDEBUG" -DCMAKE_CXX_FLAGS="-O2 -DNDEBUG" \
  -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake \
  -DCPUPOWER_HOST_BUILD="$(realpath "$HOST_BUILD")" -DCPUPOWER_TEST_BIN="$(realpath -m "$BUILD/bin")"
ninja -C "$BUILD" -j "$JOBS"

# --- running arm64 binaries ----------------------------------------------------------------
# With binfmt_misc, the kernel hands every aarch64 ELF to qemu-user, so the binaries run as
# they are (also the exporter `cpu-power run` starts, and stand-in libraries it loads). The
# handler is the one qemu-user-static installs (/usr/lib/binfmt.d/qemu-aarch64.conf); on a
# machine without systemd-binfmt or binfmt-support nobody registers it, so it is registered
# here when this runs as root.
binfmt=/proc/sys/fs/binfmt_misc
register_binfmt() {
  if [ -e "$binfmt/qemu-aarch64" ]; then
    grep -qx enabled "$binfmt/qemu-aarch64" || echo 1 | $SUDO tee "$binfmt/qemu-aarch64" >/dev/null
    return 0
  fi
  [ -e "$binfmt/register" ] || $SUDO mount -t binfmt_misc binfmt_misc "$binfmt" 2>/dev/null || return 1
  grep -v '^#' /usr/lib/binfmt.d/qemu-aarch64.conf | head -1 | $SUDO tee "$binfmt/register" >/dev/null 2>&1
}
register_binfmt || true
if "$BUILD/bin/cpu-power" --version >/dev/null 2>&1; then
  echo "test-arm64: arm64 binaries run through binfmt_misc and qemu-user"
else
  # No binfmt_misc (a container without it): every binary gets a wrapper that runs it under
  # qemu-user, and `cpu-power run` is pointed at the exporter's wrapper, since the arm64
  # binary it would start beside itself cannot be executed directly.
  wrappers="$(realpath -m "$BUILD/bin-qemu")"
  qemu=$(command -v qemu-aarch64-static || command -v qemu-aarch64)
  echo "test-arm64: binfmt_misc is not usable here; running the arm64 binaries through wrappers in $wrappers"
  rm -rf "$wrappers"
  mkdir -p "$wrappers"
  for f in "$BUILD"/bin/*; do
    real=$(realpath "$f")
    name=$(basename "$f")
    if head -c 4 "$f" | grep -q 'ELF'; then
      printf '#!/bin/sh\n: "${CPU_POWER_EXPORTER_BIN:=%s/cpu-power-exporter}"\nexport CPU_POWER_EXPORTER_BIN\nexec %s %s "$@"\n' \
        "$wrappers" "$qemu" "$real" >"$wrappers/$name"
      chmod +x "$wrappers/$name"
    else
      ln -s "$real" "$wrappers/$name"
    fi
  done
  cmake "$BUILD" -DCPUPOWER_TEST_BIN="$wrappers" >/dev/null
  "$wrappers/cpu-power" --version >/dev/null || { echo "test-arm64: cannot run arm64 binaries under $qemu" >&2; exit 1; }
fi

# --- the tests -------------------------------------------------------------------------------
echo "test-arm64: the arm64 release binaries need at most $(aarch64-linux-gnu-objdump -T "$BUILD"/bin/cpu-power "$BUILD"/bin/cpu-power-exporter | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -1)"
ctest --test-dir "$BUILD" --output-on-failure -j "$TEST_JOBS"
