#!/usr/bin/env bash
# deploy/prometheus: the recording rules (recording.yml, energy.yml) and alerts pass
# `promtool check rules` and their unit tests (`promtool test rules`, deploy/prometheus/tests/),
# the example configuration passes `promtool check config`, and every metric family the rules
# name is one a real exporter serves: an exporter reading a simulated GB200 node, with module
# power from the stand-in NVML library, so that the rules cannot drift from the exporter's
# exposition (energy.yml's counters included: cpu_power_acpi_joules_total and its covered and
# bridged seconds).
source "$(dirname "$0")/lib.sh"
: "${STANDINS:?STANDINS must point at the stand-in libraries}"
command -v promtool >/dev/null || fail "promtool is not installed (scripts/install-deps.sh)"
DEPLOY="$(cd "$(dirname "$0")/../../deploy/prometheus" && pwd)"

promtool check rules "$DEPLOY/recording.yml" "$DEPLOY/alerts.yml" "$DEPLOY/energy.yml" >"$WORK/check.log" 2>&1 ||
  { cat "$WORK/check.log"; fail "promtool check rules"; }
ok "promtool check rules: $(grep -o 'SUCCESS: [0-9]* rules found' "$WORK/check.log" | tr '\n' ' ')"
promtool check config "$DEPLOY/prometheus.yml" >"$WORK/config.log" 2>&1 ||
  { cat "$WORK/config.log"; fail "promtool check config deploy/prometheus/prometheus.yml"; }
ok "promtool check config deploy/prometheus/prometheus.yml"
for t in "$DEPLOY"/tests/*.yml; do
  (cd "$DEPLOY/tests" && promtool test rules "${t##*/}") >"$WORK/test.log" 2>&1 ||
    { cat "$WORK/test.log"; fail "promtool test rules ${t##*/}"; }
  ok "promtool test rules ${t##*/}"
done

# A real exposition with every family the exporter has on ACPI: a simulated GB200 node and
# NVML module power from the stand-in library (GPUs 0,1 on socket 0, 2,3 on socket 1).
start_sim sim "$WORK/hwmon" --profile gb200 --model constant --load 0.25 --no-noise
PCI="$WORK/pci"
for b in 0008:01:00.0:0 0009:01:00.0:0 0018:01:00.0:1 0019:01:00.0:1; do
  mkdir -p "$PCI/${b%:*}"
  echo "${b##*:}" >"$PCI/${b%:*}/numa_node"
done
export FAKE_NVML_CONTROL="$WORK/nvml.ctl"
printf '%s\n' gpus=4 gpu.0.bus=0008:01:00.0 gpu.1.bus=0009:01:00.0 gpu.2.bus=0018:01:00.0 \
  gpu.3.bus=0019:01:00.0 gpu.0.mw=500000 gpu.1.mw=500000 gpu.2.mw=600000 gpu.3.mw=600000 \
  >"$FAKE_NVML_CONTROL"
start_exporter exp --hwmon-root "$WORK/hwmon" --pci-root "$PCI" --nvml-lib "$STANDINS/libnvidia-ml.so.1"
module_served() { curl -sf "http://127.0.0.1:$PORT/metrics" | grep -q '^cpu_power_nvml_watts{'; }
wait_until 10 "module power in the exposition" module_served
curl -sf "http://127.0.0.1:$PORT/metrics" >"$WORK/metrics"
# Families with a sample in the body.
grep -v '^#' "$WORK/metrics" | sed 's/[{ ].*//' | sort -u >"$WORK/served"

# Every metric name in a rule expression: identifiers before a '{', '[' or ')' and bare ones,
# minus PromQL's functions, keywords and the rules' own recorded names (with ':').
python3 - "$DEPLOY/recording.yml" "$DEPLOY/alerts.yml" "$DEPLOY/energy.yml" >"$WORK/used" <<'PY'
import re, sys, yaml
words = set()
for path in sys.argv[1:]:
    for group in yaml.safe_load(open(path))["groups"]:
        for rule in group["rules"]:
            expr = re.sub(r'\{[^}]*\}', ' ', rule["expr"])   # label matchers
            expr = re.sub(r'\[[^]]*\]', ' ', expr)            # ranges
            expr = re.sub(r'\b(by|without|on|ignoring)\s*\([^)]*\)', ' ', expr)
            for w in re.findall(r'[a-zA-Z_:][a-zA-Z0-9_:]*', expr):
                if ':' in w:
                    continue
                words.add(w)
functions = {"sum", "max", "min", "avg", "count", "avg_over_time", "max_over_time",
             "count_over_time", "increase", "rate", "and", "or", "unless", "up"}
for w in sorted(words - functions):
    print(w)
PY
[ -s "$WORK/used" ] || fail "no metric names found in the rules"
missing=$(grep -vxFf "$WORK/served" "$WORK/used" || true)
[ -z "$missing" ] || { cat "$WORK/metrics"; fail "rules use families the exporter does not serve: $missing"; }
ok "every family the rules use is served by the exporter: $(tr '\n' ' ' <"$WORK/used")"

# The rules' label names too: each one a rule selects or groups by is a label of the served
# families (or a target label Prometheus adds).
python3 - "$WORK/metrics" "$DEPLOY/recording.yml" "$DEPLOY/alerts.yml" "$DEPLOY/energy.yml" <<'PY' || fail "label names"
import re, sys, yaml
served = set(re.findall(r'[{,]([a-z_]+)="', open(sys.argv[1]).read()))
target = {"instance", "job", "node", "job_id", "run_name"}
for path in sys.argv[2:]:
    for group in yaml.safe_load(open(path))["groups"]:
        for rule in group["rules"]:
            e = rule["expr"]
            names = set(re.findall(r'([a-z_]+)\s*=~?', " ".join(re.findall(r'\{([^}]*)\}', e))))
            for grouping in re.findall(r'\b(?:by|without|on|ignoring)\s*\(([^)]*)\)', e):
                names |= {n.strip() for n in grouping.split(",") if n.strip()}
            unknown = names - served - target
            assert not unknown, (rule.get("record") or rule.get("alert"), unknown)
PY
ok "every label the rules select or group by is one the exporter or the scrape sets"
finish
