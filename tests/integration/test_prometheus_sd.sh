#!/usr/bin/env bash
# `cpu-power run` publishes its exporters for a cluster Prometheus: <log_dir>/prometheus_sd.json
# (file-based service discovery) appears while the command runs, one target group per node
# with its node and run_name labels; a real Prometheus server reading it with file_sd_configs
# discovers both simulated nodes' exporters and scrapes them up; at the end of the session
# the file is an empty list and Prometheus drops the targets.
source "$(dirname "$0")/lib.sh"
command -v prometheus >/dev/null || fail "prometheus is not installed (scripts/install-deps.sh)"
PY=/usr/bin/python3
RUN="$WORK/run"
SD="$RUN/prometheus_sd.json"

cat >"$WORK/recipe.yaml" <<'EOF'
name: "sd-test"
telemetry:
  enabled: true
  collect_interval_ms: 200
  request_timeout_seconds: 0.5
  cpu_power_exporter: {}
EOF
# The command holds the session open until the test releases it.
spawn run "$BIN/cpu-power" run --simulate gb200 --nodes a,b --config "$WORK/recipe.yaml" \
  --log-dir "$RUN" -- sh -c 'while [ ! -e "$1" ]; do sleep 0.05; done' sh "$WORK/release"
RUN_PID=$LAST_PID
wait_for_line "$WORK/run.log" 'Prometheus targets in .*/prometheus_sd.json count=2' 30

# The file as a Prometheus target list: one group per node, loopback targets of the
# simulated exporters, the recipe's name as run_name, no job_id outside Slurm.
$PY - "$SD" "$WORK/run.log" <<'EOF' || fail "prometheus_sd.json: $(cat "$SD")"
import json, re, sys
groups = json.load(open(sys.argv[1]))
log = open(sys.argv[2]).read()
assert [g["labels"] for g in groups] == [{"node": "a", "run_name": "sd-test"},
                                         {"node": "b", "run_name": "sd-test"}], groups
for g in groups:
    (target,) = g["targets"]
    assert re.fullmatch(r"127\.0\.0\.1:[1-9][0-9]*", target), target
EOF
ok "prometheus_sd.json written as soon as the exporters listen: nodes a and b, run_name from the recipe"

PROM_PORT=$(free_port)
cat >"$WORK/prometheus.yml" <<YML
global: {scrape_interval: 1s}
scrape_configs:
  - job_name: cpu-power-run
    scrape_interval: 200ms
    scrape_timeout: 150ms
    file_sd_configs:
      - files: ['$SD']
YML
promtool check config "$WORK/prometheus.yml" >/dev/null || fail "promtool check config"
spawn prom prometheus --config.file="$WORK/prometheus.yml" --storage.tsdb.path="$WORK/tsdb" \
  --web.listen-address="127.0.0.1:$PROM_PORT"
API="http://127.0.0.1:$PROM_PORT/api/v1"

# targets_state: "node=health,..." of the active targets, sorted; empty when none.
targets_state() {
  curl -sf "$API/targets?state=active" | $PY -c '
import json, sys
t = json.load(sys.stdin)["data"]["activeTargets"]
print(",".join(sorted("%s=%s/%s/%s" % (x["labels"].get("node"), x["health"], x["labels"].get("run_name"),
                                       x["labels"].get("job_id", "-")) for x in t)))'
}
both_up() { [ "$(targets_state 2>/dev/null)" = "a=up/sd-test/-,b=up/sd-test/-" ]; }
# Discovery is throttled to one update per 5 s after start.
wait_until 30 "Prometheus discovering both exporters from prometheus_sd.json and scraping them up" both_up
ok "Prometheus (file_sd_configs) discovered both exporters with their node and run_name labels, both up"

# The series carry the node label from the file.
value=$(curl -s -G "$API/query" --data-urlencode 'query=count by (node) (cpu_power_acpi_watts{type="total"})' |
  $PY -c 'import json,sys; print(sorted((r["metric"]["node"], r["value"][1]) for r in json.load(sys.stdin)["data"]["result"]))')
[ "$value" = "[('a', '2'), ('b', '2')]" ] || fail "socket totals by node: $value"
ok "each node's two socket totals are in Prometheus under its node label"

touch "$WORK/release"
wait_until 30 "cpu-power run to end" gone "$RUN_PID"
rc=0
wait "$RUN_PID" || rc=$?
[ "$rc" = 0 ] || { cat "$WORK/run.log"; fail "cpu-power run exited $rc"; }
[ "$(tr -d ' \n' <"$SD")" = "[]" ] || fail "prometheus_sd.json after the session: $(cat "$SD")"
grep -q 'Prometheus targets in .*/prometheus_sd.json count=0' "$WORK/run.log" || fail "no log line for the emptied file"
ok "after the session prometheus_sd.json is an empty list"
no_targets() { [ -z "$(targets_state 2>/dev/null || echo x)" ]; }
wait_until 30 "Prometheus dropping the targets" no_targets
ok "Prometheus dropped the targets"
finish
