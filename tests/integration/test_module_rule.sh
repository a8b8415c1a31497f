#!/usr/bin/env bash
# The module rule on both legs: NVML is the only source of module_w, and a firmware `Module
# Power Socket N` ACPI meter stays unclassified. A four-socket GH200 node (sim-node profile
# gh200-quad: Module, Grace, CPU and SysIO Power Socket 0-3) is read by the exporter leg
# (cpu-power-exporter + cpu-power scrape) and the host leg (cpu-power host-collect), once
# without NVML and once with the stand-in libnvidia-ml (one GPU per socket): both legs give the
# same sockets and the same module_w, which never comes from the ACPI meter. The exporter and
# the Python fallback serve the module meter as an unclassified channel.
source "$(dirname "$0")/lib.sh"
: "${STANDINS:?STANDINS must point at the stand-in libraries}"
PY=/usr/bin/python3
NVML="$STANDINS/libnvidia-ml.so.1"
FALLBACK="$(dirname "$0")/../../tools/cpu_power_exporter_fallback.py"
export FAKE_NVML_CONTROL="$WORK/nvml.ctl"

start_sim quad "$WORK/tree" --profile gh200-quad --update-ms 50
grep -q 'profile=gh200-quad .*channels=16' "$WORK/quad.log" || fail "sim-node ready line: $(cat "$WORK/quad.log")"

# One GH200 GPU per socket: NUMA nodes 0-3, module power 610..640 W (the ACPI module meters
# read about 216 W and more: the two can never be mistaken for each other).
PCI="$WORK/pci"
for b in 0009:01:00.0:0 0019:01:00.0:1 0029:01:00.0:2 0039:01:00.0:3; do
  mkdir -p "$PCI/${b%:*}"; echo "${b##*:}" >"$PCI/${b%:*}/numa_node"
done
cat >"$FAKE_NVML_CONTROL" <<CTL
gpus=4
gpu.0.bus=0009:01:00.0
gpu.1.bus=0019:01:00.0
gpu.2.bus=0029:01:00.0
gpu.3.bus=0039:01:00.0
gpu.0.mw=610000
gpu.1.mw=620000
gpu.2.mw=630000
gpu.3.mw=640000
CTL

# --- the exporter serves the module meters unclassified -----------------------------------
start_exporter exp_plain --hwmon-root "$WORK/tree" --read-interval-ms 20 --no-nvml
acpi16() { [ "$(curl -sf "http://127.0.0.1:$PORT/metrics" | grep -c '^cpu_power_acpi_watts{')" = 16 ]; }
wait_until 10 "all 16 ACPI channels served" acpi16
body=$(curl -sf "http://127.0.0.1:$PORT/metrics")
for s in 0 1 2 3; do
  grep -qE "^cpu_power_acpi_watts\{sensor=\"hwmon[0-9]+/power1\",type=\"other\",socket=\"\",oem_info=\"Module Power Socket $s\",source=\"acpi\"\} [0-9.]+$" <<<"$body" ||
    fail "module meter of socket $s not served as unclassified: $(grep 'Module' <<<"$body")"
done
grep -q 'type="module"' <<<"$body" && fail "an ACPI meter served as type=module"
grep -q '^cpu_power_nvml_watts{' <<<"$body" && fail "NVML samples with --no-nvml"
[ "$(grep -c '^cpu_power_exporter_socket_up{socket="[0-3]"} 1$' <<<"$body")" = 4 ] || fail "socket_up: $(grep socket_up <<<"$body")"
ok "exporter: Module Power Socket 0-3 served as type=\"other\", socket=\"\"; four sockets up"

# scrape_leg NAME PORT: cpu-power scrape of one endpoint for a short while into $WORK/NAME.
scrape_leg() {
  "$BIN/cpu-power" scrape --endpoint "node-q=127.0.0.1:$2" --out "$WORK/$1" --interval-ms 100 \
    --duration-s "$(scaled 2)" >"$WORK/$1.log" 2>&1 || fail "scrape $1 exited $? ($(cat "$WORK/$1.log"))"
}
scrape_leg scrape_plain "$PORT"
stop "$EXPORTER_PID"

# --- the host leg, same tree, no NVML -----------------------------------------------------
host_leg() {  # host_leg NAME ARGS...: host-collect until it has written rows WANT_MODULE asks for
  local name=$1
  shift
  spawn "$name" "$BIN/cpu-power" host-collect --output-dir "$WORK/$name/nodes" \
    --ready-dir "$WORK/$name/ready" --hostname node-q --hwmon-root "$WORK/tree" \
    --interval-seconds 0.1 "$@"
  local pid=$LAST_PID csv="$WORK/$name/nodes/node-q.csv"
  enough() {
    [ -e "$csv" ] || return 1
    if [ -n "${WANT_MODULE:-}" ]; then
      # NVML answers on its own thread: wait for a sample with module power on every socket.
      [ "$(grep -cE ',node-q,acpi,CPU[0-3]:cpuSidePowerUsageW,[0-3],[^,]+,[^,]*,[^,]*,,6[1-4]0,' "$csv")" -ge 8 ]
    else
      [ "$(($(wc -l <"$csv") - 1))" -ge 12 ]
    fi
  }
  wait_until 15 "host-collect $name rows" enough
  kill -TERM "$pid"
  wait "$pid" || fail "host-collect $name exit status $?"
}
WANT_MODULE='' host_leg host_plain --no-nvml

# --- both legs again with NVML --------------------------------------------------------------
start_exporter exp_nvml --hwmon-root "$WORK/tree" --read-interval-ms 20 --pci-root "$PCI" --nvml-lib "$NVML"
nvml4() { [ "$(curl -sf "http://127.0.0.1:$PORT/metrics" | grep -c '^cpu_power_nvml_watts{type="module"')" = 4 ]; }
wait_until 10 "NVML module power of all four sockets" nvml4
scrape_leg scrape_nvml "$PORT"
stop "$EXPORTER_PID"
WANT_MODULE=1 host_leg host_nvml --pci-root "$PCI" --nvml-lib "$NVML"

# compare.py LEG_DIR...: per leg, the sockets and module_w; both legs of a pair must agree.
$PY - "$WORK" <<'PYEOF' || fail "the two legs disagree on the module rule"
import csv, sys
work = sys.argv[1]

def rows(path):
    return list(csv.DictReader(open(path, newline="")))

def summary(path):
    rs = rows(path)
    assert rs, path + ": no rows"
    sockets = sorted({int(r["socket_id"]) for r in rs})
    module = {}
    for r in rs:
        assert r["source"] == "acpi" and r["sensor"] == f"CPU{r['socket_id']}:cpuSidePowerUsageW", r
        assert r["dram_w"] == "", r
        if r["module_w"]:
            module.setdefault(int(r["socket_id"]), set()).add(r["module_w"])
    # Module power never enters the node total: it is the sum of the sample's power_w.
    by_time = {}
    for r in rs:
        by_time.setdefault(r["timestamp_unix"], []).append(r)
    for same in by_time.values():
        if len(same) == 4 and same[0]["total_power_w"]:
            want = sum(float(r["power_w"]) for r in same)
            assert abs(float(same[0]["total_power_w"]) - want) < 1e-6, same
    return sockets, module, rs

for nvml, want in (("plain", {}), ("nvml", {s: {str(610 + 10 * s)} for s in range(4)})):
    legs = {}
    for leg, path in (("scrape", f"{work}/scrape_{nvml}/samples.csv"),
                      ("host", f"{work}/host_{nvml}/nodes/node-q.csv")):
        sockets, module, rs = summary(path)
        assert sockets == [0, 1, 2, 3], (leg, nvml, sockets)
        assert module == want, (leg, nvml, module)
        legs[leg] = (sockets, module)
    assert legs["scrape"] == legs["host"], (nvml, legs)
    print(f"{nvml}: both legs sockets 0-3, module_w {legs['scrape'][1] or 'blank'}")
PYEOF
ok "no NVML: both legs write sockets 0-3 with module_w blank (the ACPI module meter is not used)"
ok "NVML stand-in: both legs write module_w 610/620/630/640 W from NVML alone, never the ACPI meter"

# --- the Python fallback classifies the module meter the same way --------------------------
spawn fallback python3 "$FALLBACK" --bind 127.0.0.1 --port 0 --hwmon-root "$WORK/tree" --read-interval-ms 20
wait_for_line "$WORK/fallback.log" 'listening addr=' 15
FPORT=$(grep -oE 'listening addr=[0-9.]+:[0-9]+' "$WORK/fallback.log" | head -1 | sed 's/.*://')
fb16() { [ "$(curl -sf "http://127.0.0.1:$FPORT/metrics" | grep -c '^cpu_power_acpi_watts{')" = 16 ]; }
wait_until 10 "the fallback's 16 channels" fb16
body=$(curl -sf "http://127.0.0.1:$FPORT/metrics")
[ "$(grep -c 'type="other",socket="",oem_info="Module Power Socket [0-3]"' <<<"$body")" = 4 ] ||
  fail "fallback module meters: $(grep Module <<<"$body")"
grep -q 'type="module"' <<<"$body" && fail "fallback served type=module"
ok "Python fallback: the module meters are type=\"other\", socket=\"\" as in the binary"
stop "$LAST_PID"
finish
