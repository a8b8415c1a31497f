#!/usr/bin/env bash
# `cpu-power validate` gives byte-identical verdicts on the cross-built arm64 binaries and the
# native x86 build: a real simulated run made by the native build (every leg, default
# schemas), its copy with the consumer profile, and one copy per rule broken by
# tests/integration/validate_damage.py, each checked by both binaries: standard output,
# standard error and exit status. This stands in for running
# integration.test_validate under emulation (the same rules, one native run instead of
# several emulated ones).
# Needs BIN (the arm64 bin directory, runnable through binfmt or wrappers) and HOST_BUILD.
source "$(dirname "$0")/../integration/lib.sh"
: "${HOST_BUILD:?HOST_BUILD must point at the native x86 build directory}"
HOST_BIN="$HOST_BUILD/bin"
[ -x "$HOST_BIN/cpu-power" ] ||
  fail "no native build at $HOST_BUILD (bin/cpu-power missing): build it first with 'make build'"
PY=/usr/bin/python3
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
DAMAGE="$ROOT/tests/integration/validate_damage.py"

# run DIR [ARGS...]: a native simulated run of the demo's session into DIR.
run() {
  demo_session "$HOST_BIN/cpu-power" "$1" 2 1 "${@:2}"
  rm -rf "$1/sim"
}
run "$WORK/default"
run "$WORK/compat" --consumer-profile compat --job-id cross-job
$PY "$DAMAGE" clock-synced "$WORK/compat"
mkdir -p "$WORK/cases"
$PY "$DAMAGE" all "$WORK/compat" "$WORK/cases"

compared=0
# The two runs in text and --json; the broken copies in --json, which carries every finding's
# code, file, detail and fix that the text prints.
for dir in "$WORK/default" "$WORK/compat" "$WORK"/cases/case_*; do
  modes=(json)
  case "$dir" in "$WORK/default" | "$WORK/compat") modes=(text json) ;; esac
  for mode in "${modes[@]}"; do
    extra=()
    [ "$mode" = json ] && extra=(--json)
    for arch in host arm64; do
      bin=$BIN
      [ "$arch" = host ] && bin=$HOST_BIN
      rc=0
      "$bin/cpu-power" validate "${extra[@]}" "$dir" >"$WORK/$arch.out" 2>"$WORK/$arch.err" || rc=$?
      echo "$rc" >"$WORK/$arch.rc"
    done
    for part in rc out err; do
      cmp -s "$WORK/host.$part" "$WORK/arm64.$part" || {
        diff "$WORK/host.$part" "$WORK/arm64.$part" | head -20 >&2 || true
        fail "$(basename "$dir") ($mode): the $part differs between x86 and arm64"
      }
    done
    compared=$((compared + 1))
  done
done
[ "$compared" -ge 60 ] || fail "only $compared verdicts compared"
ok "$compared verdicts of cpu-power validate (stdout, stderr, exit status) byte-identical on x86 and arm64"
finish
