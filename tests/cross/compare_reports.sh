#!/usr/bin/env bash
# `cpu-power report` gives byte-identical output on the cross-built arm64 binaries and the
# native x86 build, on every run the oracle generator makes (tests/oracle/generate_runs.py,
# the runs tests/integration/test_report_oracle.sh checks against the Python oracle), in both
# edge modes: standard output, standard error, exit status, --json-out, --plot and --html; and
# the HTML report of two runs together.
# Needs BIN (the arm64 bin directory, runnable through binfmt or wrappers) and HOST_BUILD.
source "$(dirname "$0")/../integration/lib.sh"
: "${HOST_BUILD:?HOST_BUILD must point at the native x86 build directory}"
HOST_BIN="$HOST_BUILD/bin"
[ -x "$HOST_BIN/cpu-power" ] ||
  fail "no native build at $HOST_BUILD (bin/cpu-power missing): build it first with 'make build'"
ORACLE=$(cd "$(dirname "$0")/../oracle" && pwd)

compared=0
for seed in 7 3; do
  /usr/bin/python3 "$ORACLE/generate_runs.py" "$WORK/runs$seed" --seed "$seed" >"$WORK/runs$seed.txt"
  while read -r run; do
    name=$(basename "$run")
    for edges in snap interpolate; do
      for arch in host arm64; do
        bin=$BIN
        [ "$arch" = host ] && bin=$HOST_BIN
        rm -f "$WORK/$arch".*
        rc=0
        "$bin/cpu-power" report "$run" --edges "$edges" --json-out "$WORK/$arch.json" \
          --plot "$WORK/$arch.svg" --html "$WORK/$arch.html" >"$WORK/$arch.out" 2>"$WORK/$arch.err" ||
          rc=$?
        echo "$rc" >"$WORK/$arch.rc"
      done
      for part in rc out err json svg html; do
        [ -e "$WORK/host.$part" ] || [ -e "$WORK/arm64.$part" ] || continue
        cmp -s "$WORK/host.$part" "$WORK/arm64.$part" || {
          diff "$WORK/host.$part" "$WORK/arm64.$part" | head -20 >&2 || true
          fail "seed $seed $name --edges $edges: the $part differs between x86 and arm64"
        }
      done
      [ -s "$WORK/arm64.out" ] || fail "seed $seed $name --edges $edges: no report text"
      compared=$((compared + 1))
    done
  done <"$WORK/runs$seed.txt"
done
[ "$compared" -ge 16 ] || fail "only $compared reports compared"
ok "$compared reports (text, stderr, exit status, JSON, SVG, HTML) byte-identical on x86 and arm64"

# One HTML report of two runs (the page's run picker), as test_report_html.sh opens it natively.
mapfile -t two < <(head -2 "$WORK/runs7.txt")
for arch in host arm64; do
  bin=$BIN
  [ "$arch" = host ] && bin=$HOST_BIN
  "$bin/cpu-power" report "${two[@]}" --html "$WORK/$arch.two.html" >/dev/null ||
    fail "the HTML report of two runs failed on $arch"
done
cmp -s "$WORK/host.two.html" "$WORK/arm64.two.html" ||
  fail "the HTML report of ${two[*]##*/} differs between x86 and arm64"
ok "the HTML report of two runs byte-identical on x86 and arm64"
finish
