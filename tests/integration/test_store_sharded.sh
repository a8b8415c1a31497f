#!/usr/bin/env bash
# deploy/prometheus/sharded/ end to end: one VictoriaMetrics and two Prometheus shards, run
# with the shard files' own relabelling (hashmod of the address, keep this shard's index, drop
# job_id and run_name) and remote write, scrape four simulated GB200 nodes' exporters at 1 s.
# Every node is scraped by exactly one shard (the one the hash names), the store receives all
# four nodes without the per-job labels, and `cpu-power report --prometheus` on the store
# gives each node's CPU energy over a window as the simulated constant power times its length.
# About 50 s: a 30 s window, Prometheus' first scrape 5 s after its start, and the store's
# ingestion delay.
source "$(dirname "$0")/lib.sh"
for tool in prometheus promtool victoria-metrics curl; do
  command -v "$tool" >/dev/null || fail "$tool is not installed (scripts/install-deps.sh)"
done
SHARDED="$(cd "$(dirname "$0")/../../deploy/prometheus/sharded" && pwd)"
PY=/usr/bin/python3
NODES=(n1 n2 n3 n4)
# The window: the report interpolates each counter between its scrapes (1 s apart) around S
# and E, and the counter itself steps at the exporter's readings (100 ms apart), so an edge is
# off by a fraction of a second at worst; over 30 s that is well under the 1 % asserted (taking
# the last sample before each edge, no interpolation at all, was 0.23 % off at most here).
WINDOW_S=30

# --- the shard files: both valid, and alike but for the shard index -----------------------
for k in 0 1; do
  promtool check config "$SHARDED/shard-$k.yml" >"$WORK/check-$k.log" 2>&1 ||
    { cat "$WORK/check-$k.log"; fail "promtool check config deploy/prometheus/sharded/shard-$k.yml"; }
done
$PY - "$SHARDED/shard-0.yml" "$SHARDED/shard-1.yml" <<'PY' || fail "the shard files differ in more than the shard index"
import sys, yaml
shards = [yaml.safe_load(open(p)) for p in sys.argv[1:]]
for k, c in enumerate(shards):
    for job in c["scrape_configs"]:
        rules = job["relabel_configs"]
        hashmod = [r for r in rules if r.get("action") == "hashmod"]
        assert len(hashmod) == 1 and hashmod[0]["modulus"] == 2 and \
            hashmod[0]["source_labels"] == ["__address__"] and \
            hashmod[0]["target_label"] == "__tmp_hash", (k, job["job_name"], hashmod)
        keep = [r for r in rules if r.get("action") == "keep"]
        assert keep == [{"source_labels": ["__tmp_hash"], "regex": str(k), "action": "keep"}], \
            (k, job["job_name"], keep)
        keep[0]["regex"] = "K"
assert shards[0] == shards[1], "shard-0.yml and shard-1.yml differ beyond the keep index"
PY
ok "shard-0.yml and shard-1.yml pass promtool check config and differ only in the kept hash"

# --- four simulated nodes at constant power, one exporter each -----------------------------
PORTS=()
for n in "${NODES[@]}"; do
  start_sim "sim-$n" "$WORK/$n" --profile gb200 --model constant --load 0.5 --no-noise
  start_exporter "exp-$n" --hwmon-root "$WORK/$n"
  PORTS+=("$PORT")
done
curl -sf "http://127.0.0.1:${PORTS[0]}/metrics" >"$WORK/metrics" || fail "no /metrics from exp-n1"
grep -q '^cpu_power_acpi_joules_total{' "$WORK/metrics" ||
  fail "the exporter serves no cpu_power_acpi_joules_total (the energy counters: docs/formats.md)"
# What each node's sockets draw: the socket envelopes' power*_average (uW) in its hwmon tree.
$PY - "$WORK" "${NODES[@]}" >"$WORK/want.json" <<'PY' || fail "the simulated nodes' socket power"
import glob, json, os, sys
work, nodes = sys.argv[1], sys.argv[2:]
want = {}
for n in nodes:
    watts = []
    for info in glob.glob(f"{work}/{n}/hwmon*/power*_oem_info"):
        if open(info).read().startswith("Grace Power Socket"):
            watts.append(int(open(info[:-len("oem_info")] + "average").read()) / 1e6)
    assert len(watts) == 2 and all(w > 0 for w in watts), (n, watts)
    want[n] = sum(watts)
json.dump(want, sys.stdout)
PY
ok "four simulated GB200 nodes at constant power: $(cat "$WORK/want.json") W"

# --- the store and the two shards ----------------------------------------------------------
ports_taken=" ${PORTS[*]} "
pick_port() {
  local p
  for _ in $(seq 20); do
    p=$(free_port)
    case "$ports_taken" in *" $p "*) continue ;; esac
    ports_taken+="$p "
    echo "$p"
    return 0
  done
  fail "no free port"
}
VM_PORT=$(pick_port)
SHARD_PORTS=("$(pick_port)" "$(pick_port)")
PROM_PIDS=()
VM="http://127.0.0.1:$VM_PORT"
# -search.latencyOffset: VictoriaMetrics hides the last 30 s from queries by default (data
# still arriving); the test asks for data a few seconds old. -search.disableCache: no cached
# result of a query over data still arriving.
spawn vm victoria-metrics -storageDataPath="$WORK/vm" -httpListenAddr="127.0.0.1:$VM_PORT" \
  -retentionPeriod=1d -search.latencyOffset=1s -search.disableCache -loggerLevel=WARN
vm_ready() { curl -sf "$VM/health" >/dev/null; }
wait_until 15 "VictoriaMetrics answering /health" vm_ready

# Each shard's configuration: the shard file's `cpu-power-run` job (hashmod, keep, labeldrop)
# and remote write, with this test's targets (each with the labels a discovery file gives),
# a 1 s scrape, the store's address, and a 1 s remote-write batch deadline.
TARGETS=()
for i in "${!NODES[@]}"; do TARGETS+=("${NODES[$i]}=127.0.0.1:${PORTS[$i]}"); done
for k in 0 1; do
  $PY - "$SHARDED/shard-$k.yml" "$VM/api/v1/write" "${TARGETS[@]}" >"$WORK/shard-$k.yml" <<'PY' || fail "templating shard-$k.yml"
import sys, yaml
src, url, targets = sys.argv[1], sys.argv[2], [t.split("=", 1) for t in sys.argv[3:]]
c = yaml.safe_load(open(src))
run = next(j for j in c["scrape_configs"] if j["job_name"] == "cpu-power-run")
job = {"job_name": "cpu_power", "scrape_interval": "1s", "scrape_timeout": "800ms",
       "static_configs": [{"targets": [addr], "labels": {"node": node, "job_id": "4711",
                                                        "run_name": "store-sharded"}}
                          for node, addr in targets],
       "relabel_configs": run["relabel_configs"]}
rw = dict(c["remote_write"][0], url=url, queue_config={"batch_send_deadline": "1s"})
yaml.safe_dump({"global": {"scrape_interval": "1s"}, "scrape_configs": [job],
                "remote_write": [rw]}, sys.stdout, sort_keys=False)
PY
  promtool check config "$WORK/shard-$k.yml" >/dev/null || fail "promtool check config of the templated shard $k"
  spawn "prom$k" prometheus --config.file="$WORK/shard-$k.yml" --storage.tsdb.path="$WORK/tsdb$k" \
    --web.listen-address="127.0.0.1:${SHARD_PORTS[$k]}"
  PROM_PIDS+=("$LAST_PID")
done
SHARD=("http://127.0.0.1:${SHARD_PORTS[0]}" "http://127.0.0.1:${SHARD_PORTS[1]}")

# q MODE URL QUERY [TIME]: an instant query. MODE value: the first result's value (empty when
# none); nodes: the results' node labels, sorted, space-separated; labels: the label names of
# all results, sorted. Fails when the server does not answer.
cat >"$WORK/q.py" <<'PY'
import json, sys, urllib.parse, urllib.request
mode, url, query = sys.argv[1:4]
params = {"query": query}
if len(sys.argv) > 4:
    params["time"] = sys.argv[4]
with urllib.request.urlopen(url + "/api/v1/query?" + urllib.parse.urlencode(params), timeout=10) as r:
    res = json.load(r)["data"]["result"]
if mode == "value":
    print(res[0]["value"][1] if res else "")
elif mode == "nodes":
    print(" ".join(sorted(m["metric"].get("node", "-") for m in res)))
elif mode == "labels":
    print(" ".join(sorted({k for m in res for k in m["metric"]})))
PY
q() { $PY "$WORK/q.py" "$@" 2>/dev/null; }
# qq: q, failing the test (from the command substitution it runs in) when the server does
# not answer.
qq() { q "$@" || fail "no answer from $2 to $3"; }
# words [-u|-d] STR...: the words of STR..., sorted, each followed by a space; -u: each once;
# -d: only those that occur more than once, each once.
words() {
  local dup=cat
  case "$1" in
    -u) dup="uniq"; shift ;;
    -d) dup="uniq -d"; shift ;;
  esac
  tr ' ' '\n' <<<"$*" | sed '/^$/d' | sort | $dup | tr '\n' ' '
}

# --- each node on exactly one shard, the one its address hashes to --------------------------
all_up() {
  local up0 up1
  up0=$(q nodes "${SHARD[0]}" 'up{job="cpu_power"} == 1') || { sleep 0.5; return 1; }
  up1=$(q nodes "${SHARD[1]}" 'up{job="cpu_power"} == 1') || { sleep 0.5; return 1; }
  [ "$(words -u "$up0" "$up1")" = "${NODES[*]} " ] || { sleep 0.5; return 1; }
}
wait_until 30 "all four nodes up on one shard or the other" all_up
on0=$(qq nodes "${SHARD[0]}" 'count by (node) (up{job="cpu_power"})')
on1=$(qq nodes "${SHARD[1]}" 'count by (node) (up{job="cpu_power"})')
# Prometheus' hashmod: the MD5 of the source labels' values, its last 8 bytes as a big-endian
# integer, modulo the modulus.
want0=$($PY - "${TARGETS[@]}" <<'PY'
import hashlib, sys
print(" ".join(sorted(n for n, a in (t.split("=", 1) for t in sys.argv[1:])
                      if int.from_bytes(hashlib.md5(a.encode()).digest()[8:], "big") % 2 == 0)))
PY
)
both=$(words -d "$on0" "$on1")
[ -z "$both" ] || fail "nodes scraped by both shards: $both (shard 0: $on0; shard 1: $on1)"
[ "$(words "$on0" "$on1")" = "${NODES[*]} " ] ||
  fail "the shards scrape $on0 | $on1, not each of ${NODES[*]} once"
[ "$on0" = "$want0" ] || fail "shard 0 scrapes '$on0'; the hash of the addresses gives '$want0'"
ok "each node scraped by exactly one shard, as hashmod gives: shard 0 [$on0], shard 1 [$on1]"
names0=$(qq labels "${SHARD[0]}" 'up{job="cpu_power"}')
names1=$(qq labels "${SHARD[1]}" 'up{job="cpu_power"}')
names=$(words -u "$names0" "$names1")
case " $names" in *" job_id "* | *" run_name "* | *" __tmp_hash "*) fail "the shards keep labels: $names" ;; esac
ok "the shards drop job_id and run_name (labeldrop), the series' labels: $names"

# --- the store receives all four nodes by remote write --------------------------------------
nodes_in_store() {
  [ "$(q value "$VM" 'count(count by (node) (cpu_power_acpi_joules_total{job="cpu_power"}))')" = 4 ] ||
    { sleep 0.5; return 1; }
}
wait_until 30 "VictoriaMetrics to have cpu_power_acpi_joules_total of all four nodes" nodes_in_store
n_prefixed=$(qq value "$VM/prometheus" 'count(count by (node) (cpu_power_acpi_joules_total{job="cpu_power"}))')
[ "$n_prefixed" = 4 ] || fail "VictoriaMetrics' /prometheus/api/v1/query counts $n_prefixed nodes"
names=$(qq labels "$VM" 'cpu_power_acpi_joules_total{job="cpu_power"}')
case " $names " in *" job_id "* | *" run_name "*) fail "the store has per-job labels: $names" ;; esac
ok "VictoriaMetrics has the counters of all four nodes (/api/v1/query and /prometheus/api/v1/query), labels: $names"

# --- the report over a window, from the store -----------------------------------------------
S=$((EPOCHSECONDS + 2))
E=$((S + WINDOW_S))
sockets=$($PY -c 'import json,sys; print(2 * len(json.load(open(sys.argv[1]))))' "$WORK/want.json")
# Every socket's counter has a sample in the store past E: the edge is in.
past_end() {
  ((EPOCHSECONDS >= E + 3)) || { sleep 0.5; return 1; }
  [ "$(q value "$VM" 'count(count_over_time(cpu_power_acpi_joules_total{job="cpu_power",type="total"}[1500ms]))' $((E + 2)))" = "$sockets" ] ||
    { sleep 0.5; return 1; }
}
wait_until $((WINDOW_S + 30)) "samples past the window's end in VictoriaMetrics" past_end
rc=0
timeout "$(scaled 60)" "$BIN/cpu-power" report --prometheus "$VM" --window "$S" "$E" \
  --match '{job="cpu_power"}' --json-out "$WORK/vm.json" >"$WORK/report.txt" 2>&1 || rc=$?
[ "$rc" = 0 ] || { cat "$WORK/report.txt"; fail "cpu-power report --prometheus $VM --window $S $E exited $rc"; }
$PY - "$WORK/vm.json" "$WORK/want.json" "$S" "$E" <<'PY' || { cat "$WORK/report.txt"; fail "the report's energy per node"; }
import json, sys
d = json.load(open(sys.argv[1]))
want = json.load(open(sys.argv[2]))
seconds = float(sys.argv[4]) - float(sys.argv[3])
if isinstance(d, list):
    assert len(d) == 1, f"{len(d)} windows"
    d = d[0]
rows = {r["label"]: r["joules"] for r in d["cpu_per_node"]}
assert sorted(rows) == sorted("cpu/" + n for n in want), rows
for n, watts in sorted(want.items()):
    exp, got = watts * seconds, rows["cpu/" + n]
    assert abs(got - exp) <= 0.01 * exp, f"{n}: {got} J, the simulated {watts} W x {seconds} s is {exp} J"
    print(f"{n}: {got:.1f} J (simulated {exp:.1f} J, {100 * (got - exp) / exp:+.3f} %)")
PY
ok "cpu-power report --prometheus on the store: each node's CPU energy over $WINDOW_S s within 1 % of the simulated power x window"

# The shards first, while the store still takes their last remote-write batch: a Prometheus
# stopped after its remote-write endpoint retries until it is killed.
for pid in "${PROM_PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
for pid in "${PROM_PIDS[@]}"; do
  for _ in $(seq "$(scaled 100)"); do gone "$pid" && break; sleep 0.05; done
done
finish
