#!/usr/bin/env bash
# `cpu-power merge DIR`: two node files become one sorted v5 samples.csv and a manifest; exit
# 0 when publishable, 1 when --required and a node is missing, 2 for a missing directory;
# a re-merge takes its settings from the manifest; bad input never crashes it.
source "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3
HEADER='schema_version,timestamp_unix,timestamp_local,hostname,source,sensor,socket_id,power_w,cpu_rail_w,soc_w,dram_w,module_w,total_power_w,cpu_util_total,cpu_util_user,cpu_util_nice,cpu_util_sys,cpu_util_irq'

# node_file DIR HOST T...: a v5 node file with one socket row per time, CRLF line ends.
node_file() {
  local dir=$1 host=$2
  shift 2
  mkdir -p "$dir/nodes"
  {
    printf '%s\r\n' "$HEADER"
    for t in "$@"; do
      printf '5,%s,2026-01-01T00:00:00Z,%s,acpi,CPU0:cpuSidePowerUsageW,0,90.5,40,10,5,,90.5,0.5,0.4,0,0.1,0\r\n' "$t" "$host"
    done
  } >"$dir/nodes/$host.csv"
  printf '{"hostname": "%s", "source": "acpi"}\n' "$host" >"$dir/nodes/$host.metadata.json"
}

# json_get FILE EXPR: a Python expression over the parsed file `m`.
json_get() { "$PY" -c "import json,sys; m=json.load(open(sys.argv[1])); print($2)" "$1"; }

D="$WORK/cpu"
node_file "$D" node-a 2.0 3.0
node_file "$D" node-b 1.0 2.5

"$BIN/cpu-power" merge "$D" >"$WORK/merge1.out" 2>&1 || fail "merge exited $? ($(cat "$WORK/merge1.out"))"
grep -q '^CPU power telemetry: status=complete publication_valid=true reasons=none$' "$WORK/merge1.out" \
  || fail "no summary line: $(cat "$WORK/merge1.out")"
ok "two nodes merge, exit 0"
[[ -f "$D/samples.csv" && -f "$D/manifest.json" ]] || fail "samples.csv or manifest.json missing"
[[ $(head -1 "$D/samples.csv") == "$HEADER"$'\r' ]] || fail "samples.csv header: $(head -1 "$D/samples.csv")"
order=$(tail -n +2 "$D/samples.csv" | cut -d, -f2,4 | tr -d '\r' | paste -sd' ')
[[ $order == "1,node-b 2,node-a 2.5,node-b 3,node-a" ]] || fail "row order: $order"
ok "samples.csv is v5, CRLF, sorted by time then host"
[[ $(json_get "$D/manifest.json" 'm["status"], m["sample_row_count"], m["expected_nodes"]') == "complete 4 ['node-a', 'node-b']" ]] \
  || fail "manifest: $(cat "$D/manifest.json")"
[[ $(json_get "$D/manifest.json" 'm["node_metadata"]["node-b"]["hostname"]') == node-b ]] || fail "node_metadata"
ok "manifest.json: complete, every host with files expected, metadata embedded"

set +e
"$BIN/cpu-power" merge "$D" --required --expected-nodes node-a,node-b,node-c >"$WORK/merge2.out" 2>&1
rc=$?
set -e
[[ $rc == 1 ]] || fail "missing node with --required exited $rc"
grep -q 'status=incomplete publication_valid=false reasons=cpu_node_samples_missing$' "$WORK/merge2.out" \
  || fail "summary: $(cat "$WORK/merge2.out")"
[[ $(json_get "$D/manifest.json" 'm["missing_nodes"], m["required"]') == "['node-c'] True" ]] || fail "manifest after missing node"
ok "a missing node with --required exits 1"

# A re-merge with DIR alone keeps the recorded expected nodes and `required`.
set +e
"$BIN/cpu-power" merge "$D" >"$WORK/merge3.out" 2>&1
rc=$?
set -e
[[ $rc == 1 ]] || fail "re-merge from the manifest exited $rc ($(cat "$WORK/merge3.out"))"
ok "a re-merge takes expected nodes and required from manifest.json"

"$BIN/cpu-power" merge "$D" --expected-nodes node-a,node-b >"$WORK/merge4.out" 2>&1 \
  || fail "complete run with required exited $? ($(cat "$WORK/merge4.out"))"
[[ $(json_get "$D/manifest.json" 'm["status"], m["required"], m["expected_nodes"]') == "complete True ['node-a', 'node-b']" ]] \
  || fail "manifest after override: $(cat "$D/manifest.json")"
ok "--expected-nodes overrides the manifest; a publishable required run exits 0"

set +e
"$BIN/cpu-power" merge "$WORK/no-such-dir" >"$WORK/merge5.out" 2>&1
rc=$?
set -e
[[ $rc == 2 ]] || fail "missing dir exited $rc"
grep -qF "Error: $WORK/no-such-dir: not a directory" "$WORK/merge5.out" || fail "message: $(cat "$WORK/merge5.out")"
set +e
"$BIN/cpu-power" merge >/dev/null 2>&1
rc=$?
set -e
[[ $rc == 2 ]] || fail "no DIR exited $rc"
ok "usage errors exit 2"

# Garbage of every kind: best-effort merges still exit 0.
B="$WORK/bad"
node_file "$B" n1 1.0
printf '%s\r\n5,abc,x,n1,acpi,CPU0:cpuSidePowerUsageW,0,90,,,,,90,,,,,\r\n5,2.0,x,n1,acp' "$HEADER" >"$B/nodes/n2.csv"
printf '\x00\x01garbage\n"unterminated\n' >"$B/nodes/n3.csv"
printf '{oops' >"$B/nodes/n1.metadata.json"
: >"$B/nodes/n4.csv"
"$BIN/cpu-power" merge "$B" >"$WORK/merge6.out" 2>&1 || fail "garbage merge exited $? ($(cat "$WORK/merge6.out"))"
grep -q 'reasons=cpu_samples_malformed,cpu_node_samples_missing$' "$WORK/merge6.out" || fail "summary: $(cat "$WORK/merge6.out")"
[[ $(json_get "$B/manifest.json" 'm["malformed_rows"], m["torn_rows"], m["malformed_files"]') == "1 1 ['nodes/n3.csv']" ]] \
  || fail "manifest: $(cat "$B/manifest.json")"
ok "malformed rows, a torn line, a bad header, bad metadata and an empty file: exit 0"

finish
