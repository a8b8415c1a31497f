#!/usr/bin/env bash
# `cpu-power report --prometheus`: window energy from the exporter's energy counters in a real
# Prometheus server that scraped a simulated GB200 node at constant power every second. The
# socket and node joules are the node's power times the window (within 0.5 %) with coverage
# stated, for a --window and for a run directory's own window (its nodes from its
# cpu_manifest.json); a window the store has no data for fails naming the query; an
# unreachable store and the store's options without --prometheus are refused. A stand-in
# store (a Python http.server stub: not our code) checks that a bearer token and Basic
# credentials from files are sent, and that refused credentials fail the report.
source "$(dirname "$0")/lib.sh"
command -v prometheus >/dev/null || fail "prometheus is not installed (scripts/install-deps.sh)"
PY=/usr/bin/python3

# --- the node, its exporter, a Prometheus scraping it every second ---------------------------
start_sim sim "$WORK/hwmon" --profile gb200 --model constant --load 0.25 --no-noise
# Reads every 50 ms, the meters' averaging interval: the counters' readings tile the time.
start_exporter exp --hwmon-root "$WORK/hwmon" --read-interval-ms 50

# Each socket's constant power (W), from the socket total the simulator writes.
socket_watts() {
  local f
  for f in "$WORK"/hwmon/hwmon*/power1_oem_info; do
    if [ "$(cat "$f")" = "Grace Power Socket $1" ]; then
      awk '{printf "%.6f", $1 / 1e6}' "$(dirname "$f")/power1_average"
      return 0
    fi
  done
  fail "no socket total for socket $1 under $WORK/hwmon"
}
W0=$(socket_watts 0)
W1=$(socket_watts 1)

PROM_PORT=$(free_port)
cat >"$WORK/prometheus.yml" <<YML
global: {scrape_interval: 1s}
scrape_configs:
  - job_name: cpu_power
    scrape_interval: 1s
    scrape_timeout: 900ms
    static_configs: [{targets: ['127.0.0.1:$PORT'], labels: {node: sim1}}]
YML
promtool check config "$WORK/prometheus.yml" >/dev/null || fail "promtool check config"
spawn prom prometheus --config.file="$WORK/prometheus.yml" --storage.tsdb.path="$WORK/tsdb" \
  --web.listen-address="127.0.0.1:$PROM_PORT"
URL="http://127.0.0.1:$PROM_PORT"

# Both sockets' energy counters in the store (the first scrape comes ~5 s after start).
counters_in() {
  local n
  n=$(curl -s -G "$URL/api/v1/query" --data-urlencode 'query=count(cpu_power_acpi_joules_total{type="total"})' |
    $PY -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else 0)' 2>/dev/null) || return 1
  [ "$n" = 2 ]
}
wait_until 30 "Prometheus to hold both sockets' cpu_power_acpi_joules_total" counters_in

# A 30 s window starting 2 s from now; the report runs once a scrape after its end is in.
S=$($PY -c 'import time; print("%.3f" % (time.time() + 2))')
E=$($PY -c "print('%.3f' % ($S + 30))")
$PY -c "import time; time.sleep(max(0, $E + 3 - time.time()))"

# --- a --window from the store ------------------------------------------------------------------
rc=0
"$BIN/cpu-power" report --prometheus "$URL" --window "$S" "$E" --match '{job="cpu_power"}' \
  --json-out "$WORK/window.json" --html "$WORK/window.html" >"$WORK/window.txt" 2>"$WORK/window.err" || rc=$?
[ "$rc" = 0 ] || fail "report --prometheus --window exited $rc: $(cat "$WORK/window.err") $(cat "$WORK/window.txt")"

# check_window JSON: one window, sockets and node at the constant power times the window.
check_window() {
  $PY - "$1" "$W0" "$W1" "$S" "$E" "$URL" <<'EOF'
import json, sys
path, w0, w1, s, e, url = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5]), sys.argv[6]
(win,) = json.load(open(path))
assert "error" not in win, win.get("error")
assert win["energy_source"] == "prometheus", win.get("energy_source")
assert win["store_url"] == url, win["store_url"]
d = e - s
rows = {r["label"]: r for r in win["cpu_per_socket"] + win["cpu_per_node"]}
want = {"cpu/sim1/socket0": w0 * d, "cpu/sim1/socket1": w1 * d, "cpu/sim1": (w0 + w1) * d}
assert sorted(rows) == sorted(want), sorted(rows)
for label, j in want.items():
    r = rows[label]
    assert abs(r["joules"] - j) <= 0.005 * j, (label, r["joules"], j)
    assert r["coverage"] is not None and 0 < r["coverage"] <= 1, (label, r["coverage"])
    assert r["uncertainty_j"] >= 0, (label, r["uncertainty_j"])
assert abs(win["cpu_total_joules"] - (w0 + w1) * d) <= 0.005 * (w0 + w1) * d
assert win["uncertainty"]["cpu_total"]["coverage"] is not None
for label in want:
    print(label, "%.2f J (want %.2f), coverage %.3f" % (rows[label]["joules"], want[label], rows[label]["coverage"]))
EOF
}
summary=$(check_window "$WORK/window.json") || fail "store window: $(cat "$WORK/window.json")"
grep -qF "energy: prometheus $URL" "$WORK/window.txt" || fail "text: no energy line: $(cat "$WORK/window.txt")"
grep -qF '"energy_source":"prometheus"' "$WORK/window.html" || fail "HTML report without the store's windows"
ok "--window from Prometheus: sockets and node within 0.5 % of the constant power x 30 s, coverage stated ($(echo "$summary" | tr '\n' ';'))"

# --- the run directory's own window, its nodes from its cpu_manifest.json ---------------------
RUN="$WORK/run"
mkdir -p "$RUN/cpu_power"
printf '{"schema_version": 1, "command": ["bench"], "start_unix": %s, "end_unix": %s, "exit_code": 0}\n' \
  "$S" "$E" >"$RUN/session.json"
printf '{"nodes": {"sim1": {"sockets_expected": [0, 1]}}}\n' >"$RUN/cpu_power/cpu_manifest.json"
rc=0
"$BIN/cpu-power" report "$RUN" --prometheus "$URL" --json-out "$WORK/run.json" \
  >"$WORK/run.txt" 2>"$WORK/run.err" || rc=$?
[ "$rc" = 0 ] || fail "report RUN --prometheus exited $rc: $(cat "$WORK/run.err") $(cat "$WORK/run.txt")"
check_window "$WORK/run.json" >/dev/null || fail "run window: $(cat "$WORK/run.json")"
$PY -c 'import json,sys; (w,) = json.load(open(sys.argv[1])); assert w["benchmark_type"] == "session", w' \
  "$WORK/run.json" || fail "run window type: $(cat "$WORK/run.json")"
ok "LOG_DIR with --prometheus: the session's window, the store queried for the manifest's node"

# --- a window the store has no data for fails, naming the query ---------------------------------
rc=0
"$BIN/cpu-power" report --prometheus "$URL" --window 1000000000 1000000060 --lookback 60 \
  --match '{job="cpu_power"}' --json-out "$WORK/empty.json" >"$WORK/empty.txt" 2>"$WORK/empty.err" || rc=$?
[ "$rc" = 1 ] || fail "a window without data exited $rc, want 1: $(cat "$WORK/empty.txt")"
grep -qF '[window] error: no energy counters in the store for this window: cpu_power_acpi_joules_total{type=~"total|cpu_rail|soc|dram", job="cpu_power"}[180000ms]' \
  "$WORK/empty.txt" || fail "no-data error: $(cat "$WORK/empty.txt")"
$PY -c 'import json,sys; (w,) = json.load(open(sys.argv[1])); assert "no energy counters" in w["error"] and w["energy_source"] == "prometheus", w' \
  "$WORK/empty.json" || fail "no-data JSON: $(cat "$WORK/empty.json")"
ok "a window without counter data fails (exit 1) naming its query, never 0 J"

# --- refusals: an unreachable store, the store's options without it, --window without nodes ----
rc=0
"$BIN/cpu-power" report --prometheus http://127.0.0.1:1 --window "$S" "$E" --match '{job="x"}' \
  --store-retries 0 >"$WORK/down.txt" 2>&1 || rc=$?
[ "$rc" = 1 ] || fail "an unreachable store exited $rc, want 1"
grep -qF 'error: http://127.0.0.1:1/api/v1/query: query cpu_power_acpi_joules_total{' "$WORK/down.txt" ||
  fail "unreachable store: $(cat "$WORK/down.txt")"
rc=0
"$BIN/cpu-power" report "$RUN" --match '{job="x"}' >"$WORK/usage.txt" 2>&1 || rc=$?
[ "$rc" = 2 ] || fail "--match without --prometheus exited $rc, want 2"
grep -qF 'needs --prometheus URL' "$WORK/usage.txt" || fail "usage: $(cat "$WORK/usage.txt")"
rc=0
"$BIN/cpu-power" report --prometheus "$URL" --window "$S" "$E" >"$WORK/usage.txt" 2>&1 || rc=$?
[ "$rc" = 2 ] || fail "--window without LOG_DIR or --match exited $rc, want 2"
rc=0
"$BIN/cpu-power" report --prometheus "$URL" --window "$E" "$S" --match '{}' >"$WORK/usage.txt" 2>&1 || rc=$?
[ "$rc" = 2 ] || fail "--window END before START exited $rc, want 2"
ok "refused: an unreachable store (exit 1, the query named), store options without --prometheus and bad windows (exit 2)"

# --- credentials: a stand-in store that requires them ------------------------------------------
cat >"$WORK/stub.py" <<'EOF'
# A stand-in Prometheus API: POST /api/v1/query answers a range selector with raw samples of
# two sockets' counters (100 W, 50 W, covered all along) once the request carries the bearer
# token or the Basic credentials given; 401 otherwise. Every Authorization header is logged.
import base64, http.server, json, re, sys, urllib.parse
token, basic, log = sys.argv[1], sys.argv[2], sys.argv[3]
GOOD = {"Bearer " + token, "Basic " + base64.b64encode(basic.encode()).decode()}
ORIGIN = 1.6e9

def series(name, socket, sensor, rate, t, range_s):
    labels = {"__name__": name, "type": "total", "socket": socket, "sensor": sensor,
              "source": "acpi", "oem_info": "Grace Power Socket " + socket, "node": "stub"}
    first = int(t - range_s) + 0.5
    values, ts = [], first
    while ts <= t:
        values.append([ts, repr(rate * (ts - ORIGIN))])
        ts += 1
    return {"metric": labels, "values": values}

class Handler(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        form = urllib.parse.parse_qs(self.rfile.read(int(self.headers.get("Content-Length", 0))).decode())
        auth = self.headers.get("Authorization", "")
        with open(log, "a") as f:
            f.write(auth + "\n")
        if auth not in GOOD:
            return self.reply(401, b"Unauthorized\n", "text/plain")
        query, t = form["query"][0], float(form["time"][0])
        range_s = int(re.search(r"\[(\d+)ms\]$", query).group(1)) / 1000
        result = []
        for name, rate0, rate1 in (("cpu_power_acpi_joules_total", 100, 50),
                                   ("cpu_power_acpi_covered_seconds_total", 1, 1)):
            if query.startswith(name + "{"):
                result = [series(name, "0", "hwmon2/power1", rate0, t, range_s),
                          series(name, "1", "hwmon10/power1", rate1, t, range_s)]
        if query.startswith("{__name__"):
            for sensor in ("hwmon2/power1", "hwmon10/power1"):
                s = series("cpu_power_exporter_average_interval_seconds", "0", sensor, 0, t, range_s)
                s["metric"] = {"__name__": s["metric"]["__name__"], "sensor": sensor, "node": "stub"}
                result.append(s)
        body = {"status": "success", "data": {"resultType": "matrix", "result": result}}
        self.reply(200, json.dumps(body).encode(), "application/json")

    def reply(self, code, body, kind):
        self.send_response(code)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass

server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
if len(sys.argv) > 5:  # CERT KEY: serve https
    import ssl
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(sys.argv[4], sys.argv[5])
    server.socket = ctx.wrap_socket(server.socket, server_side=True)
print("stub listening port=%d" % server.server_address[1], flush=True)
server.serve_forever()
EOF
spawn stub $PY "$WORK/stub.py" 's3cr3t-token' 'alice:pa:ss' "$WORK/auth.log"
wait_for_line "$WORK/stub.log" '^stub listening port=' 10
STUB="http://127.0.0.1:$(sed -n 's/^stub listening port=//p' "$WORK/stub.log")"
printf 's3cr3t-token\n' >"$WORK/token"
printf 'alice:pa:ss\n' >"$WORK/basic"
printf 'wrong\n' >"$WORK/wrong"

# check_stub JSON: 100 W and 50 W over the 30 s window, covered.
check_stub() {
  $PY - "$1" <<'EOF'
import json, sys
(w,) = json.load(open(sys.argv[1]))
rows = {r["label"]: r for r in w["cpu_per_socket"] + w["cpu_per_node"]}
for label, j in (("cpu/stub/socket0", 3000), ("cpu/stub/socket1", 1500), ("cpu/stub", 4500)):
    assert abs(rows[label]["joules"] - j) < 1e-6 * j, (label, rows[label]["joules"])
    assert abs(rows[label]["coverage"] - 1) < 1e-6, (label, rows[label]["coverage"])
EOF
}
for auth in "--store-bearer-token-file $WORK/token" "--store-basic-auth-file $WORK/basic"; do
  : >"$WORK/auth.log"
  rc=0
  # shellcheck disable=SC2086 # the option and its file, split on purpose
  "$BIN/cpu-power" report --prometheus "$STUB" --window 1700000000 1700000030 --match '{job="stub"}' \
    $auth --json-out "$WORK/stub.json" >"$WORK/stub.txt" 2>"$WORK/stub.err" || rc=$?
  [ "$rc" = 0 ] || fail "report against the stub with $auth exited $rc: $(cat "$WORK/stub.err")"
  check_stub "$WORK/stub.json" || fail "stub window with $auth: $(cat "$WORK/stub.json")"
  [ -s "$WORK/auth.log" ] || fail "the stub saw no request"
  want=$(case "$auth" in *token*) echo 'Bearer s3cr3t-token' ;; *) echo "Basic $(printf 'alice:pa:ss' | base64)" ;; esac)
  [ "$(sort -u "$WORK/auth.log")" = "$want" ] || fail "with $auth the stub saw: $(sort -u "$WORK/auth.log")"
done
ok "a bearer token and Basic credentials from files are sent with every query (4500 J from the stand-in store)"

rc=0
"$BIN/cpu-power" report --prometheus "$STUB" --window 1700000000 1700000030 --match '{job="stub"}' \
  --store-bearer-token-file "$WORK/wrong" >"$WORK/refused.txt" 2>"$WORK/refused.err" || rc=$?
[ "$rc" = 1 ] || fail "refused credentials exited $rc, want 1"
grep -qF 'the store refused the credentials (HTTP 401' "$WORK/refused.err" || fail "refused: $(cat "$WORK/refused.err")"
[ ! -s "$WORK/refused.txt" ] || fail "refused credentials still printed a report: $(cat "$WORK/refused.txt")"
grep -q 's3cr3t\|wrong' "$WORK/refused.err" && fail "an error message holds a credential: $(cat "$WORK/refused.err")"
ok "refused credentials: exit 1, nothing reported, the store's reason named, no secret printed"

# An https store: trusted through --store-ca-file, refused without it.
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj '/CN=stand-in CA' \
  -keyout "$WORK/ca.key" -out "$WORK/ca.pem" >/dev/null 2>&1
openssl req -newkey rsa:2048 -nodes -subj '/CN=127.0.0.1' -keyout "$WORK/tls.key" \
  -out "$WORK/tls.csr" >/dev/null 2>&1
printf 'subjectAltName=IP:127.0.0.1\n' >"$WORK/san.ext"
openssl x509 -req -in "$WORK/tls.csr" -CA "$WORK/ca.pem" -CAkey "$WORK/ca.key" -CAcreateserial \
  -days 2 -extfile "$WORK/san.ext" -out "$WORK/tls.pem" >/dev/null 2>&1
spawn stub_tls $PY "$WORK/stub.py" 's3cr3t-token' 'alice:pa:ss' "$WORK/auth.log" "$WORK/tls.pem" "$WORK/tls.key"
wait_for_line "$WORK/stub_tls.log" '^stub listening port=' 10
TLS_STUB="https://127.0.0.1:$(sed -n 's/^stub listening port=//p' "$WORK/stub_tls.log")"
rc=0
"$BIN/cpu-power" report --prometheus "$TLS_STUB" --window 1700000000 1700000030 --match '{job="stub"}' \
  --store-bearer-token-file "$WORK/token" --store-ca-file "$WORK/ca.pem" \
  --json-out "$WORK/tls.json" >"$WORK/tls.txt" 2>"$WORK/tls.err" || rc=$?
[ "$rc" = 0 ] || fail "https store with its CA exited $rc: $(cat "$WORK/tls.err")"
check_stub "$WORK/tls.json" || fail "https store window: $(cat "$WORK/tls.json")"
rc=0
"$BIN/cpu-power" report --prometheus "$TLS_STUB" --window 1700000000 1700000030 --match '{job="stub"}' \
  --store-bearer-token-file "$WORK/token" >"$WORK/untrusted.txt" 2>"$WORK/untrusted.err" || rc=$?
[ "$rc" = 1 ] || fail "an untrusted https store exited $rc, want 1"
grep -qi 'certificate' "$WORK/untrusted.err" || fail "untrusted store: $(cat "$WORK/untrusted.err")"
[ ! -s "$WORK/untrusted.txt" ] || fail "an untrusted store still gave a report"
ok "an https store: 4500 J through --store-ca-file; without it exit 1 naming the certificate"
finish
