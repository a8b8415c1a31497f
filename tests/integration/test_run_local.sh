#!/usr/bin/env bash
# `cpu-power run` and `cpu-power check-config` without Slurm: simulated nodes, the local
# exporter, signal forwarding, the python fallback exporter, and the exit status rules
# (the command's status is the session's; a bad recipe runs nothing).
source "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3
RECIPES="$FIXTURES/recipes"
cd "$WORK"

# A recipe that samples fast, so that a few seconds give many rows.
cat >"$WORK/fast.yaml" <<'EOF'
telemetry:
  enabled: true
  collect_interval_ms: 200
  request_timeout_seconds: 0.5
  cpu_power_exporter: {}
EOF

# rows_per_node SAMPLES: "host rows" lines.
rows_per_node() {
  $PY - "$1" <<'EOF'
import csv, sys, collections
rows = collections.Counter(r["hostname"] for r in csv.DictReader(open(sys.argv[1])))
for host in sorted(rows):
    print(host, rows[host])
EOF
}

json_get() { $PY -c 'import json, sys; d = json.load(open(sys.argv[1])); print(eval("d" + sys.argv[2]))' "$1" "$2"; }

# --- check-config ------------------------------------------------------------------------
"$BIN/cpu-power" check-config "$RECIPES/srtctl_full.yaml" >"$WORK/cc.out"
grep -q '^telemetry.collect_interval_ms: 500$' "$WORK/cc.out" || fail "check-config did not resolve the recipe"
grep -q '^legs: GPU DCGM scrape -> <log_dir>/power/, CPU exporter scrape -> <log_dir>/power/cpu/' "$WORK/cc.out" ||
  fail "check-config legs: $(grep legs "$WORK/cc.out")"
ok "check-config prints the resolved settings of a full srtctl recipe"

rc=0
"$BIN/cpu-power" check-config "$RECIPES/typo.yaml" >"$WORK/cc.out" 2>"$WORK/cc.err" || rc=$?
[ "$rc" = 1 ] || fail "check-config on a typo exited $rc, want 1"
grep -qF "typo.yaml:3:3: unknown key \"colect_interval_ms\" in telemetry (did you mean \"collect_interval_ms\"?)" "$WORK/cc.err" ||
  fail "check-config error: $(cat "$WORK/cc.err")"
ok "check-config names the unknown key with file:line:column and exits 1"

# A storage_subdir part longer than NAME_MAX: refused with the field named, and run runs
# nothing (it used to drop every row and exit 0 without a report).
printf 'telemetry:\n  enabled: true\n  storage_subdir: power/%s\n  cpu_power_exporter: {}\n' \
  "$(printf 'p%.0s' $(seq 256))" >"$WORK/longpart.yaml"
rc=0
"$BIN/cpu-power" check-config "$WORK/longpart.yaml" >"$WORK/cc.out" 2>"$WORK/cc.err" || rc=$?
[ "$rc" = 1 ] || fail "check-config on a 256-byte part exited $rc, want 1"
grep -qF "longpart.yaml:3:19: telemetry.storage_subdir: part 2 (\"pppppppppppppppp...\") is 256 bytes, longer than the 255-byte limit on a file name (NAME_MAX)" \
  "$WORK/cc.err" || fail "check-config error: $(cat "$WORK/cc.err")"
rc=0
"$BIN/cpu-power" run --simulate gb200 --config "$WORK/longpart.yaml" --log-dir "$WORK/longpart" \
  -- touch "$WORK/longpart.ran" >"$WORK/longpart.log" 2>&1 || rc=$?
[ "$rc" = 2 ] || fail "run with a 256-byte part exited $rc, want 2"
[ ! -e "$WORK/longpart.ran" ] || fail "the command ran despite a storage_subdir no file can be opened below"
ok "a storage_subdir part over NAME_MAX: check-config names the field, run runs nothing (exit 2)"

# --- YAML 1.1 as PyYAML reads it: the same values from check-config as from safe_load ------
# Merge keys, tags, underscores, prefixes and base 60: each recipe loaded by both, every value
# the recipe gives compared (the printed value with PyYAML's: numbers as numbers).
mkdir -p "$WORK/pyyaml"
cat >"$WORK/pyyaml/merge.yaml" <<'EOF'
defaults: &defaults
  enabled: yes
  collect_interval_ms: 1_000
  request_timeout_seconds: !!float 1
  startup_timeout_seconds: 1:30.0
telemetry:
  <<: *defaults
  collect_interval_ms: 500
  cpu_power_exporter:
    port: !!int "0x1F4"
    source: acpi
EOF
cat >"$WORK/pyyaml/merge_list.yaml" <<'EOF'
a: &a {collect_interval_ms: 0x1F4, storage_subdir: from_a, required: On}
b: &b {collect_interval_ms: 999, storage_subdir: from_b, request_timeout_seconds: 1.5e+0}
host: &host {enabled: TRUE, sample_interval_seconds: !!float "0.25", storage_subdir: !!str 123}
telemetry:
  <<: [*a, *b]
  enabled: !!bool "true"
  cpu_power_exporter: {port: 9_405}
  cpu_power:
    <<: *host
    startup_timeout_seconds: !!int "0b1111"
runtime:
  srun_options:
    <<: {time: 1_000, exclusive: true}
    mem: 16:40
EOF
cat >"$WORK/pyyaml/numbers.yaml" <<'EOF'
telemetry:
  enabled: true
  collect_interval_ms: 0o1 # a string in YAML 1.1: refused below, not here
EOF
cat >"$WORK/pyyaml/ints.yaml" <<'EOF'
telemetry:
  enabled: true
  collect_interval_ms: 01750
  request_timeout_seconds: +1_0.0_0
  collector_join_timeout_seconds: 1_000
  cpu_power_exporter: {port: !!int 9_406}
EOF
$PY - "$BIN/cpu-power" "$WORK/pyyaml" <<'EOF' || fail "check-config and PyYAML disagree"
import math, subprocess, sys, yaml
exe, d = sys.argv[1], sys.argv[2]

def get(data, dotted):
    for part in dotted.split("."):
        if not isinstance(data, dict) or part not in data:
            return KeyError
        data = data[part]
    return data

def same(printed, want):
    if isinstance(want, bool):
        return printed == ("true" if want else "false")
    if isinstance(want, (int, float)):
        got = float(printed)
        return got == want or (math.isnan(got) and math.isnan(want))
    return printed == str(want)

for name in ("merge.yaml", "merge_list.yaml", "ints.yaml"):
    path = f"{d}/{name}"
    data = yaml.safe_load(open(path))
    out = subprocess.run([exe, "check-config", path], capture_output=True, text=True)
    assert out.returncode == 0, (name, out.stderr)
    compared = 0
    for line in out.stdout.splitlines():
        key, sep, value = line.partition(": ")
        if not sep or not key.startswith(("telemetry.", "runtime.")):
            continue
        value = value.split("  (")[0]
        if key == "runtime.srun_options":
            opts = get(data, key)
            if opts is KeyError:
                continue
            want = " ".join(f"--{k}" if v is True or v is None else f"--{k}={v}"
                            for k, v in opts.items() if v is not False)
            assert value == want, (name, key, value, want)
            compared += 1
            continue
        want = get(data, key)
        if want is KeyError:
            continue
        assert same(value, want), (name, key, value, want)
        compared += 1
    assert compared >= 5, (name, compared, out.stdout)
    print(f"# {name}: {compared} values as PyYAML reads them")
EOF
rc=0
"$BIN/cpu-power" check-config "$WORK/pyyaml/numbers.yaml" >/dev/null 2>"$WORK/cc.err" || rc=$?
[ "$rc" = 1 ] && grep -qF 'telemetry.collect_interval_ms: expected an integer, got "0o1"' "$WORK/cc.err" ||
  fail "0o1 (a string to PyYAML) taken as a number: $(cat "$WORK/cc.err")"
ok "recipes with merge keys, !!float/!!int tags, 1_000, 0x/0b/0 prefixes and base 60 load with PyYAML's values"

# --- a simulated run ---------------------------------------------------------------------
rc=0
(umask 022 && exec "$BIN/cpu-power" run --simulate gb200 --nodes a,b --config "$WORK/fast.yaml" \
  --log-dir "$WORK/sim" -- sh -c 'sleep 2; exit 3') >"$WORK/sim.log" 2>&1 || rc=$?
[ "$rc" = 3 ] || { cat "$WORK/sim.log"; fail "simulated run exited $rc, want the command's 3"; }
rows=$(rows_per_node "$WORK/sim/power/cpu/samples.csv")
for host in a b; do
  n=$(awk -v h=$host '$1 == h {print $2}' <<<"$rows")
  ((${n:-0} >= 10)) || fail "simulated node $host has ${n:-0} rows, want >= 10 (2 s at 200 ms, 2 sockets)"
done
[ "$(json_get "$WORK/sim/power/cpu/cpu_manifest.json" '["nodes"]["a"]["error_count"]')" = 0 ] ||
  fail "simulated node a has scrape errors"
[ "$(json_get "$WORK/sim/session.json" '["exit_code"]')" = 3 ] || fail "session.json exit_code"
[ "$(json_get "$WORK/sim/session.json" '["command"]')" = "['sh', '-c', 'sleep 2; exit 3']" ] ||
  fail "session.json command: $(cat "$WORK/sim/session.json")"
[ "$(json_get "$WORK/sim/session.json" '["schema_version"]')" = 1 ] || fail "session.json schema_version"
$PY - "$WORK/sim" <<'EOF' || fail "session window not covered by every node's rows"
import csv, json, sys
d = sys.argv[1]
s = json.load(open(d + "/session.json"))
assert 1.9 < s["end_unix"] - s["start_unix"] < 10, s
for host in ("a", "b"):
    t = [float(r["timestamp_unix"]) for r in csv.DictReader(open(d + "/power/cpu/samples.csv")) if r["hostname"] == host]
    assert min(t) <= s["start_unix"] and max(t) >= s["end_unix"], (host, min(t), max(t), s)
EOF
grep -q 'listening addr=127.0.0.1:' "$WORK/sim/telemetry_cpu_power_exporter.a.out" || fail "exporter log for node a"
ok "simulated run: rows for both nodes cover the command's window, session.json, exit status kept"
# The modes docs/formats.md states: files 0644 and directories 0755 under umask 022.
for f in power/cpu/samples.csv power/cpu/cpu_manifest.json session.json telemetry_cpu_power_exporter.a.out; do
  [ "$(stat -c %a "$WORK/sim/$f")" = 644 ] || fail "$f has mode $(stat -c %a "$WORK/sim/$f"), want 644"
done
for d in . power power/cpu; do
  [ "$(stat -c %a "$WORK/sim/$d")" = 755 ] || fail "$d has mode $(stat -c %a "$WORK/sim/$d"), want 755"
done
ok "artifacts are created 0644, directories 0755 (umask 022)"

# --- stdout read by a reader that goes away: the log is lost, nothing else -----------------
# `head -c 100` leaves before the command starts, `grep -m1` once the command runs: either way
# cpu-power must not die of SIGPIPE, and the run ends as if stdout were fine: the command's
# exit status, session.json, the manifest and the energy report.
for reader in early mid; do
  rc_file="$WORK/pipe-$reader.rc"
  echo 0 >"$rc_file"
  if [ "$reader" = early ]; then
    { "$BIN/cpu-power" run --simulate gb200 --config "$WORK/fast.yaml" --log-dir "$WORK/pipe-$reader" \
      -- sh -c 'sleep 2; exit 3' 2>"$WORK/pipe-$reader.err" || echo $? >"$rc_file"; } | head -c 100 >/dev/null
  else
    { "$BIN/cpu-power" run --simulate gb200 --config "$WORK/fast.yaml" --log-dir "$WORK/pipe-$reader" \
      -- sh -c 'sleep 2; exit 3' 2>"$WORK/pipe-$reader.err" || echo $? >"$rc_file"; } | grep -m1 -q 'first rows'
  fi
  rc=$(cat "$rc_file")
  [ "$rc" = 3 ] || { cat "$WORK/pipe-$reader.err"; fail "run with its stdout reader gone ($reader) exited $rc, want the command's 3"; }
  [ "$(json_get "$WORK/pipe-$reader/session.json" '["exit_code"]')" = 3 ] || fail "session.json ($reader reader)"
  [ "$(json_get "$WORK/pipe-$reader/power/cpu/cpu_manifest.json" '["stopped_at_unix"] is not None')" = True ] ||
    fail "manifest not finalized ($reader reader)"
  [ -s "$WORK/pipe-$reader/power_energy_report.json" ] || fail "no energy report ($reader reader)"
  grep -q 'stdout was closed by its reader' "$WORK/pipe-$reader.err" || fail "the lost log is not said ($reader reader)"
done
ok "a stdout reader that leaves (before or during the command): exit status, session.json, manifest and report kept"

# --- SIGTERM to the session reaches the command; artifacts are still finalized -------------
"$BIN/cpu-power" run --simulate gh200 --config "$WORK/fast.yaml" --log-dir "$WORK/term" \
  -- sh -c "trap 'echo got-term >$WORK/term.mark; exit 9' TERM; sleep 30 & wait" >"$WORK/term.log" 2>&1 &
RUN_PID=$!
PIDS+=("$RUN_PID")
wait_for_line "$WORK/term.log" 'first rows' 20
sleep 0.5
kill -TERM "$RUN_PID"
rc=0
wait "$RUN_PID" || rc=$?
[ "$rc" = 9 ] || { cat "$WORK/term.log"; fail "SIGTERM run exited $rc, want the command's 9"; }
grep -q got-term "$WORK/term.mark" || fail "the command never saw SIGTERM"
grep -q 'forwarding SIGTERM to the command' "$WORK/term.log" || fail "no forwarding log line"
[ "$(json_get "$WORK/term/power/cpu/cpu_manifest.json" '["stopped_at_unix"] is not None')" = True ] ||
  fail "manifest not finalized after SIGTERM"
[ "$(json_get "$WORK/term/session.json" '["exit_code"]')" = 9 ] || fail "session.json after SIGTERM"
ok "SIGTERM is forwarded to the command and the artifacts are finalized"

# --- SIGKILL to the session: its helpers stop with it, the command is left alone ----------
# The exporters and the simulated dcgm-exporters it started get SIGTERM from the kernel
# (parent-death signal); nothing of the session may poll on after it.
{ cat "$WORK/fast.yaml"; echo '  dcgm_exporter: {container_image: dcgm-exporter-stand-in, port: 9400}'; } >"$WORK/gpu.yaml"
"$BIN/cpu-power" run --simulate gb200 --nodes k1,k2 --sim-gpus 2 --config "$WORK/gpu.yaml" \
  --log-dir "$WORK/kill" -- sh -c "echo \$\$ >$WORK/kill.cmd; exec sleep 60" >"$WORK/kill.log" 2>&1 &
RUN_PID=$!
PIDS+=("$RUN_PID")
wait_until 30 "the command of the session to be SIGKILLed" test -s "$WORK/kill.cmd"
CMD_PID=$(cat "$WORK/kill.cmd")
PIDS+=("$CMD_PID")
helpers=()
for pid in $(pgrep -P "$RUN_PID"); do [ "$pid" = "$CMD_PID" ] || helpers+=("$pid"); done
# Two exporters and two simulated dcgm-exporters.
((${#helpers[@]} == 4)) || fail "session helpers: $(for p in "${helpers[@]}"; do tr '\0' ' ' </proc/$p/cmdline; echo; done)"
grep -c 'sim-gpu' <(for p in "${helpers[@]}"; do tr '\0' ' ' </proc/$p/cmdline; echo; done) | grep -qx 2 ||
  fail "no simulated dcgm-exporters among the helpers"
kill -KILL "$RUN_PID"
all_gone() { for pid in "${helpers[@]}"; do gone "$pid" || return 1; done; }
wait_until 10 "every helper of the SIGKILLed session to exit" all_gone
! gone "$CMD_PID" || fail "the command died with the session"
ok "SIGKILL to the session: its exporters and simulated dcgm-exporters stop with it, the command runs on"

# --- exporter resolution: CPU_POWER_EXPORTER_BIN first, then the python fallback -----------
cat >"$WORK/exporter-wrapper" <<EOF
#!/bin/sh
echo "wrapper used" >&2
exec "$BIN/cpu-power-exporter" "\$@"
EOF
chmod +x "$WORK/exporter-wrapper"
CPU_POWER_EXPORTER_BIN="$WORK/exporter-wrapper" "$BIN/cpu-power" run --simulate gb200 \
  --log-dir "$WORK/env" -- true >"$WORK/env.log" 2>&1 || fail "run with CPU_POWER_EXPORTER_BIN"
grep -q "using binary $WORK/exporter-wrapper (CPU_POWER_EXPORTER_BIN)" "$WORK/env.log" || fail "env binary not chosen"
grep -q 'wrapper used' "$WORK/env/telemetry_cpu_power_exporter.sim1.out" || fail "wrapper not run"
ok "CPU_POWER_EXPORTER_BIN wins"

# A cpu-power with no exporter beside it and none on PATH: the source tree's python fallback.
mkdir -p "$WORK/lonely"
cp "$BIN/cpu-power" "$WORK/lonely/cpu-power"
printf 'telemetry:\n  enabled: true\n  collect_interval_ms: 200\n  request_timeout_seconds: 0.5\n  cpu_power_exporter: {source: acpi}\n' >"$WORK/acpi.yaml"
rc=0
PATH=/usr/bin:/bin "$WORK/lonely/cpu-power" run --simulate gb200 --config "$WORK/acpi.yaml" \
  --log-dir "$WORK/py" -- sleep 2 >"$WORK/py.log" 2>&1 || rc=$?
[ "$rc" = 0 ] || { cat "$WORK/py.log"; fail "fallback run exited $rc"; }
grep -q 'falling back to Python exporter .*cpu_power_exporter_fallback.py' "$WORK/py.log" || fail "fallback not chosen"
grep -q 'source=acpi requested, but the Python fallback exporter is ACPI-only and has no --source flag; this request cannot be honored' \
  "$WORK/py.log" || fail "no cannot-be-honored warning"
grep -q 'listening addr=127.0.0.1:' "$WORK/py/telemetry_cpu_power_exporter.sim1.out" || fail "fallback exporter log"
n=$(rows_per_node "$WORK/py/power/cpu/samples.csv" | awk '$1 == "sim1" {print $2}')
((${n:-0} >= 8)) || fail "python fallback gave ${n:-0} rows"
ok "python fallback exporter serves the same family and the collector reads it"

# --- best effort: no power source at all changes nothing for the command -----------------
# This machine has no /sys/class/hwmon: the local exporter exits at once, and the session
# must notice that instead of polling /health until the 30 s startup deadline.
printf 'telemetry:\n  enabled: true\n  cpu_power_exporter: {port: %d}\n' \
  $((20000 + RANDOM % 20000)) >"$WORK/local.yaml"
rc=0
started=$SECONDS
"$BIN/cpu-power" run --config "$WORK/local.yaml" --log-dir "$WORK/local" --\
  sh -c 'exit 4' >"$WORK/local.log" 2>&1 || rc=$?
[ "$rc" = 4 ] || { cat "$WORK/local.log"; fail "local run exited $rc, want 4"; }
((SECONDS - started < $(scaled 15))) || fail "waited $((SECONDS - started)) s for an exporter that had exited$(scale_note)"
grep -q 'CPU power exporter exited early' "$WORK/local.log" || fail "early exit not logged"
[ -f "$WORK/local/power/cpu/cpu_manifest.json" ] || fail "no manifest without a power source"
[ "$(json_get "$WORK/local/session.json" '["exit_code"]')" = 4 ] || fail "session.json (local)"
ok "a node without any power source: exit status unchanged, manifest and session.json written"

# --- no libcurl: the command runs as if telemetry were off, and says why ------------------
rc=0
CPU_POWER_LIBCURL=/nonexistent/libcurl.so.4 "$BIN/cpu-power" run --simulate gb200 \
  --config "$WORK/fast.yaml" --log-dir "$WORK/nocurl" -- sh -c 'exit 5' >"$WORK/nocurl.log" 2>&1 || rc=$?
[ "$rc" = 5 ] || { cat "$WORK/nocurl.log"; fail "run without libcurl exited $rc, want 5"; }
grep -q 'CPU power telemetry skipped: cannot load libcurl (/nonexistent/libcurl.so.4' "$WORK/nocurl.log" ||
  fail "no skip warning: $(cat "$WORK/nocurl.log")"
[ "$(json_get "$WORK/nocurl/session.json" '["exit_code"]')" = 5 ] || fail "session.json (no libcurl)"
ok "without libcurl the command still runs, exit status kept, the reason logged"

# --- nothing runs on a bad recipe, on --dry-run; a missing command is 127 ------------------
rc=0
"$BIN/cpu-power" run --config "$RECIPES/typo.yaml" --log-dir "$WORK/bad" -- touch "$WORK/ran" \
  >"$WORK/bad.log" 2>&1 || rc=$?
[ "$rc" = 2 ] || fail "bad recipe exited $rc, want 2"
[ ! -e "$WORK/ran" ] || fail "the command ran despite a bad recipe"
grep -q 'typo.yaml:3:3: unknown key' "$WORK/bad.log" || fail "bad recipe error not shown"
"$BIN/cpu-power" run --dry-run --nodes x1,x2 --log-dir "$WORK/dry" -- touch "$WORK/ran" >"$WORK/dry.log"
if [ -e "$WORK/ran" ] || [ -e "$WORK/dry" ]; then fail "--dry-run ran something"; fi
grep -qF "exporter: srun --overlap --nodes 2 --ntasks 2 --nodelist x1,x2 --output $WORK/dry/telemetry_cpu_power_exporter.%N.out" \
  "$WORK/dry.log" || fail "dry-run plan: $(cat "$WORK/dry.log")"
rc=0
"$BIN/cpu-power" run --simulate gb200 --log-dir "$WORK/nf" -- /no/such/benchmark >"$WORK/nf.log" 2>&1 || rc=$?
[ "$rc" = 127 ] || fail "missing command exited $rc, want 127"
ok "bad recipe and --dry-run run nothing; a missing command exits 127"

# --- a log directory that cannot be written: the command still runs, its status kept -----
rc=0
"$BIN/cpu-power" run --simulate gb200 --config "$WORK/fast.yaml" --log-dir /dev/null/run \
  -- sh -c 'echo benchmark ran; exit 5' >"$WORK/ro.log" 2>&1 || rc=$?
[ "$rc" = 5 ] || { cat "$WORK/ro.log"; fail "unwritable log dir: exit $rc, want the command's 5"; }
grep -q '^benchmark ran$' "$WORK/ro.log" || fail "the command did not run"
grep -qF 'cannot create log dir /dev/null/run' "$WORK/ro.log" || fail "no warning: $(cat "$WORK/ro.log")"
ok "an unwritable log directory: warned, the command runs and its exit status is kept"
finish
