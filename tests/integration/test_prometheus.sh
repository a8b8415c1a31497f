#!/usr/bin/env bash
# A real Prometheus server scrapes the exporter every 100 ms and its HTTP API returns the
# value the simulated node wrote.
source "$(dirname "$0")/lib.sh"
command -v prometheus >/dev/null || fail "prometheus is not installed (scripts/install-deps.sh)"

start_sim sim "$WORK/hwmon" --profile gb200 --model constant --load 0.25 --no-noise
start_exporter exp --hwmon-root "$WORK/hwmon"
want=$(awk '{printf "%.6f", $1 / 1e6}' "$WORK/hwmon/hwmon2/power1_average")

PROM_PORT=$(free_port)
cat >"$WORK/prometheus.yml" <<YML
global: {scrape_interval: 1s}
scrape_configs:
  - job_name: cpu_power
    scrape_interval: 100ms
    scrape_timeout: 90ms
    static_configs: [{targets: ['127.0.0.1:$PORT']}]
YML
promtool check config "$WORK/prometheus.yml" >/dev/null || fail "promtool check config"
spawn prom prometheus --config.file="$WORK/prometheus.yml" --storage.tsdb.path="$WORK/tsdb" \
  --web.listen-address="127.0.0.1:$PROM_PORT"
API="http://127.0.0.1:$PROM_PORT/api/v1"

# The first scrape comes about 5 s after start (service discovery is throttled).
value=""
for _ in $(seq 200); do
  value=$(curl -s -G "$API/query" --data-urlencode 'query=cpu_power_acpi_watts{type="total",socket="0"}' |
    /usr/bin/python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else "")' 2>/dev/null || true)
  [ -n "$value" ] && break
  sleep 0.1
done
[ -n "$value" ] || { cat "$WORK/prom.log" | tail -20; fail "Prometheus never returned the series"; }
/usr/bin/python3 -c "import sys; sys.exit(0 if abs(float('$value') - float('$want')) < 1e-9 else 1)" ||
  fail "Prometheus has $value, the node wrote $want"
ok "Prometheus ingested cpu_power_acpi_watts{socket=0,type=total} = $value W (the node wrote $want W)"

labels=$(curl -s -G "$API/query" --data-urlencode 'query=cpu_power_acpi_watts{type="total",socket="0"}' |
  /usr/bin/python3 -c 'import json,sys; m=json.load(sys.stdin)["data"]["result"][0]["metric"]; print(m["sensor"], m["oem_info"], m["source"])')
[ "$labels" = "hwmon2/power1 Grace Power Socket 0 acpi" ] || fail "labels: $labels"
ok "labels intact through Prometheus: $labels"

# At a 100 ms interval, 2 s hold 20 scrapes: wait until Prometheus has 15 of them in its
# last 2 s (a busy machine may run a few late), then every one of them must be up.
n=0
scrapes_2s() {
  n=$(curl -s -G "$API/query" --data-urlencode 'query=count_over_time(up{job="cpu_power"}[2s])' |
    /usr/bin/python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else 0)')
  [ "$n" -ge 15 ]
}
wait_until 10 "15 scrapes within 2 s at a 100 ms interval" scrapes_2s
up=$(curl -s -G "$API/query" --data-urlencode 'query=min_over_time(up{job="cpu_power"}[2s])' |
  /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["data"]["result"][0]["value"][1])')
[ "$up" = 1 ] || fail "a scrape failed (up=$up)"
ok "$n scrapes in 2 s at a 100 ms interval, all up"
finish
