#!/usr/bin/env bash
# The report's number parsing gives the same doubles on the cross-built arm64 binaries as on
# the native x86 build: tests/tools/cell_bits prints the bit pattern of every parsed cell of a
# fixed list (tests/tools/number_cells.hpp), and the two outputs must match byte for byte.
# Needs TOOLS (this build's tools/ directory), HOST_BUILD (the native build directory) and
# EMULATOR (qemu-user, which runs the arm64 binary).
set -euo pipefail
: "${TOOLS:?TOOLS must point at the tools directory of the arm64 build}"
: "${HOST_BUILD:?HOST_BUILD must point at the native x86 build directory}"
fail() {
  echo "FAIL: $*" >&2
  exit 1
}
[ -x "$HOST_BUILD/tools/cell_bits" ] ||
  fail "no native build at $HOST_BUILD (tools/cell_bits missing): build it first with 'make build'"
WORK=$(mktemp -d /tmp/cpupower-cross.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
"$HOST_BUILD/tools/cell_bits" >"$WORK/host.txt" || fail "the native cell_bits found its own paths disagreeing"
${EMULATOR:-} "$TOOLS/cell_bits" >"$WORK/arm64.txt" || fail "the arm64 cell_bits found its own paths disagreeing"
readelf -h "$TOOLS/cell_bits" | grep -q 'Machine: *AArch64' || fail "$TOOLS/cell_bits is not an aarch64 binary"
n=$(wc -l <"$WORK/host.txt")
[ "$n" -gt 10000 ] || fail "only $n cells printed"
cmp "$WORK/host.txt" "$WORK/arm64.txt" || {
  diff "$WORK/host.txt" "$WORK/arm64.txt" | head -20
  fail "x86 and arm64 parse cells differently"
}
echo "ok - $n cells parse to the same bits on x86 and arm64"
