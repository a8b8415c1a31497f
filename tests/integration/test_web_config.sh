#!/usr/bin/env bash
# The exporter's --web.config.file (TLS, client certificates, Basic authentication; the
# exporter-toolkit format) over real TLS on loopback: certificates made here with openssl,
# curl with right, wrong and no credentials, plain HTTP to the TLS port, client certificates
# missing, from another CA or expired, each refusal logged once per peer address however
# often it comes; a flood of wrong passwords told to retry (429) while a remembered password is
# served; promtool accepts the example files we ship; a real Prometheus scrapes the
# exporter over TLS with a client certificate and a password file; `cpu-power scrape` and
# `cpu-power run` collect from it with the password read from a file, never shown.
source "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3
SRC=$(cd "$(dirname "$0")/../.." && pwd)
command -v openssl >/dev/null || fail "openssl is not installed"
command -v prometheus >/dev/null || fail "prometheus is not installed (scripts/install-deps.sh)"

# --- certificates: a CA, the server (127.0.0.1), a client, a client of another CA, an
# expired client ---------------------------------------------------------------------------
T="$WORK/tls"
mkdir -p "$T/cadb"
quiet() { "$@" >/dev/null 2>&1 || fail "failed: $*"; }
newkey() { quiet openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$T/$1.key" -out "$T/$1.csr" -subj "/CN=$2"; }
for ca in ca other-ca; do
  quiet openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
    -keyout "$T/$ca.key" -out "$T/$ca.crt" -subj "/CN=$ca"
done
sign() { # NAME CA EXTENSIONS
  printf '%s\n' "$3" >"$T/$1.ext"
  quiet openssl x509 -req -in "$T/$1.csr" -CA "$T/$2.crt" -CAkey "$T/$2.key" -CAcreateserial \
    -days 2 -extfile "$T/$1.ext" -out "$T/$1.crt"
}
newkey server localhost
sign server ca "subjectAltName=IP:127.0.0.1,DNS:localhost
extendedKeyUsage=serverAuth"
newkey client scraper
sign client ca "extendedKeyUsage=clientAuth"
newkey wrong scraper
sign wrong other-ca "extendedKeyUsage=clientAuth"
# Expired a long time ago: openssl ca takes explicit dates.
: >"$T/cadb/index.txt"
echo 01 >"$T/cadb/serial"
cat >"$T/ca.cnf" <<EOF
[ca]
default_ca = c
[c]
database = $T/cadb/index.txt
serial = $T/cadb/serial
new_certs_dir = $T/cadb
default_md = sha256
policy = p
x509_extensions = e
[p]
commonName = supplied
[e]
extendedKeyUsage = clientAuth
EOF
newkey expired scraper
quiet openssl ca -batch -config "$T/ca.cnf" -cert "$T/ca.crt" -keyfile "$T/ca.key" \
  -in "$T/expired.csr" -out "$T/expired.crt" -startdate 20200101000000Z -enddate 20200102000000Z -notext
ok "certificates made: CA, server, client, another CA's client, an expired client"

# The password and its bcrypt hash (libxcrypt's crypt through ctypes: no htpasswd needed).
PASSWORD="pw-$RANDOM-$RANDOM-secret"
printf '%s\n' "$PASSWORD" >"$T/password"
chmod 600 "$T/password"
HASH=$($PY - "$PASSWORD" <<'EOF'
import ctypes, sys
lib = ctypes.CDLL("libcrypt.so.1")
lib.crypt_gensalt.restype = ctypes.c_char_p
lib.crypt.restype = ctypes.c_char_p
salt = lib.crypt_gensalt(b"$2y$", 10, None, 0)
print(lib.crypt(sys.argv[1].encode(), salt).decode())
EOF
)
[[ "$HASH" == '$2y$10$'* ]] || fail "no bcrypt hash from libcrypt: $HASH"

cat >"$T/web.yml" <<EOF
tls_server_config:
  cert_file: server.crt
  key_file: server.key
  client_auth_type: RequireAndVerifyClientCert
  client_ca_file: ca.crt
basic_auth_users:
  prometheus: '$HASH'
EOF

# --- promtool accepts the example files we ship (beside the certificates they name) -------
for example in "$SRC"/deploy/web-config/*.yml; do
  cp "$example" "$T/$(basename "$example")"
  cp "$T/ca.crt" "$T/client-ca.crt"
  promtool check web-config "$T/$(basename "$example")" >"$WORK/promtool.out" 2>&1 ||
    { cat "$WORK/promtool.out"; fail "promtool check web-config $(basename "$example")"; }
done
promtool check web-config "$T/web.yml" >/dev/null 2>&1 || fail "promtool check web-config web.yml"
ok "promtool check web-config accepts deploy/web-config/*.yml and the test's file"

# --- a bad web config is a usage error (2) naming the file and the field ------------------
bad_config() { # TEXT EXPECTED-SUBSTRING
  printf '%s\n' "$1" >"$T/bad.yml"
  local rc=0
  "$BIN/cpu-power-exporter" --bind 127.0.0.1 --port 0 --hwmon-root "$WORK/none" \
    --web.config.file "$T/bad.yml" >"$WORK/bad.out" 2>&1 || rc=$?
  [ "$rc" = 2 ] || { cat "$WORK/bad.out"; fail "bad web config exited $rc, want 2"; }
  grep -qF -- "$T/bad.yml: $2" "$WORK/bad.out" || { cat "$WORK/bad.out"; fail "error does not say: $2"; }
}
bad_config 'tls_server_config: {cert_file: server.crt, key_file: server.key}
http_config: {}' "http_config: unknown key"
bad_config 'tls_server_config: {cert_file: nope.crt, key_file: server.key}' \
  "tls_server_config.cert_file: cannot read $T/nope.crt"
bad_config 'tls_server_config: {cert_file: server.crt, key_file: server.key, client_auth_type: Yes}' \
  "tls_server_config.client_auth_type: unknown client auth type"
bad_config 'basic_auth_users: {prometheus: plain-text}' "basic_auth_users.prometheus: not a bcrypt hash"
bad_config 'tls_server_config: [' "invalid YAML"
rc=0
"$BIN/cpu-power-exporter" --web.config.file "$T/missing.yml" >"$WORK/bad.out" 2>&1 || rc=$?
[ "$rc" = 2 ] && grep -qF "$T/missing.yml: cannot read the web config file" "$WORK/bad.out" ||
  fail "missing web config: exit $rc, $(cat "$WORK/bad.out")"
ok "a bad web config (unknown key, missing cert, bad client_auth_type, bad hash, bad YAML, missing file) exits 2 naming file and field"

# --- the exporter over TLS with client certificates and Basic authentication -------------
start_sim sim "$WORK/hwmon" --profile gb200 --model constant --load 0.25 --no-noise
start_exporter exp --hwmon-root "$WORK/hwmon" --web.config.file "$T/web.yml"
LOG="$WORK/exp.log"
grep -q 'web config .*tls=on client_auth=RequireAndVerifyClientCert min_version=TLS12 max_version=TLS13 basic_auth_users=1' "$LOG" ||
  { cat "$LOG"; fail "no web config line in the exporter log"; }
URL="https://127.0.0.1:$PORT/metrics"
CLIENT=(--cacert "$T/ca.crt" --cert "$T/client.crt" --key "$T/client.key")
code() { curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$@" || true; }

[ "$(code "${CLIENT[@]}" -u "prometheus:$PASSWORD" "$URL")" = 200 ] || fail "right password: not 200"
body=$(curl -s "${CLIENT[@]}" -u "prometheus:$PASSWORD" "$URL")
grep -q '^cpu_power_acpi_watts{' <<<"$body" || fail "no cpu_power_acpi_watts over TLS"
[ "$(code "${CLIENT[@]}" -u "prometheus:$PASSWORD" "https://127.0.0.1:$PORT/health")" = 200 ] ||
  fail "/health with the password: not 200"
ok "client certificate + right password: 200 with the metric families, /health too"

for _ in 1 2 3 4 5; do
  [ "$(code "${CLIENT[@]}" -u "prometheus:wrong" "$URL")" = 401 ] || fail "wrong password: not 401"
  [ "$(code "${CLIENT[@]}" "$URL")" = 401 ] || fail "no password: not 401"
  [ "$(code "${CLIENT[@]}" "https://127.0.0.1:$PORT/health")" = 401 ] || fail "/health without password: not 401"
done
headers=$(curl -s -D - -o /dev/null "${CLIENT[@]}" "$URL" | tr -d '\r')
grep -qx 'WWW-Authenticate: Basic realm="cpu-power-exporter"' <<<"$headers" ||
  fail "no WWW-Authenticate: Basic on 401: $headers"
ok "wrong password, no password (any path, /health included): 401 with WWW-Authenticate: Basic"

# Handshakes closed without a request: openssl s_client on no input (it sends close_notify)
# and a client that closes its socket right after the handshake (no close_notify), TLS 1.2
# and 1.3. Each is a good handshake: the exporter lives, serves, and logs no refusal.
refusals_before=$(grep -c 'refused peer=' "$LOG" || true)
for v in 1_2 1_3; do
  for _ in 1 2 3 4 5; do
    openssl s_client -connect "127.0.0.1:$PORT" -tls$v -CAfile "$T/ca.crt" -cert "$T/client.crt" \
      -key "$T/client.key" </dev/null >"$WORK/s_client.out" 2>&1 ||
      { cat "$WORK/s_client.out"; fail "openssl s_client -tls$v: no handshake"; }
    grep -qE "(Protocol *: *|New, )TLSv${v/_/.}" "$WORK/s_client.out" || { cat "$WORK/s_client.out"; fail "s_client: not TLS ${v/_/.}"; }
    "$PY" - "$PORT" "$T" "$v" <<'PYEOF' || fail "a TLS ${v/_/.} handshake without close_notify failed"
import socket, ssl, sys
port, t, v = int(sys.argv[1]), sys.argv[2], sys.argv[3]
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
ctx.load_verify_locations(t + "/ca.crt")
ctx.load_cert_chain(t + "/client.crt", t + "/client.key")
version = ssl.TLSVersion.TLSv1_2 if v == "1_2" else ssl.TLSVersion.TLSv1_3
ctx.minimum_version = ctx.maximum_version = version
s = ctx.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=10), server_hostname="127.0.0.1")
if v == "1_3":
    s.setblocking(False)  # the server's session tickets may follow; they are not waited for
s.close()  # no unwrap(): the socket closes without a close_notify
PYEOF
  done
done
kill -0 "$EXPORTER_PID" 2>/dev/null || fail "the exporter died after handshakes without a request: $(tail -3 "$LOG")"
[ "$(code "${CLIENT[@]}" -u "prometheus:$PASSWORD" "$URL")" = 200 ] || fail "after handshakes without a request: not 200"
refusals_after=$(grep -c 'refused peer=' "$LOG" || true)
[ "$refusals_after" = "$refusals_before" ] ||
  fail "good handshakes without a request were logged as refusals: $(grep 'refused peer=' "$LOG" | tail -2)"
ok "20 TLS 1.2/1.3 handshakes closed without a request, with and without close_notify: the exporter serves on, no refusal logged"

# Refusals at the TLS layer: curl gets no HTTP status at all.
refused() { # WHAT CURL-ARGS...
  local what=$1 rc=0
  shift
  curl -s -o /dev/null --max-time 5 "$@" || rc=$?
  [ "$rc" != 0 ] || fail "$what: the request succeeded"
}
for _ in 1 2 3 4 5; do
  refused "plain HTTP" "http://127.0.0.1:$PORT/metrics"
  refused "no client certificate" --cacert "$T/ca.crt" -u "prometheus:$PASSWORD" "$URL"
  refused "another CA's client certificate" --cacert "$T/ca.crt" --cert "$T/wrong.crt" --key "$T/wrong.key" "$URL"
  refused "the client does not trust the server" --cacert "$T/other-ca.crt" "${CLIENT[@]:2}" "$URL"
done
# A second peer address (127.0.0.2 is loopback too): its refusals are logged again, once.
for _ in 1 2 3; do
  refused "expired client certificate" --interface 127.0.0.2 --cacert "$T/ca.crt" --cert "$T/expired.crt" --key "$T/expired.key" "$URL"
  [ "$(code --interface 127.0.0.2 "${CLIENT[@]}" -u "prometheus:wrong" "$URL")" = 401 ] || fail "wrong password from 127.0.0.2"
done
[ "$(code "${CLIENT[@]}" -u "prometheus:$PASSWORD" "$URL")" = 200 ] || fail "the good client after the refusals: not 200"
ok "plain HTTP, no client certificate, another CA's, an expired one, an untrusted server: no TLS session"

# Each kind once per peer in the log, however many attempts.
count() { grep -c "refused peer=$1 reason=$2 " "$LOG" || true; }
wait_for_line "$LOG" "refused peer=127.0.0.2 reason=wrong_credentials" 5
for kind in wrong_credentials no_credentials plain_http_on_tls_port client_certificate_missing \
  client_certificate_unverified tls_handshake_failed; do
  n=$(count 127.0.0.1 "$kind")
  [ "$n" = 1 ] || { grep refused "$LOG"; fail "$kind from 127.0.0.1 logged $n times, want 1"; }
done
for kind in client_certificate_unverified wrong_credentials; do
  n=$(count 127.0.0.2 "$kind")
  [ "$n" = 1 ] || { grep refused "$LOG"; fail "$kind from 127.0.0.2 logged $n times, want 1"; }
done
grep -q 'refused peer=127.0.0.1 reason=client_certificate_unverified detail=.*issuer is unknown' "$LOG" ||
  fail "another CA's certificate not logged as such: $(grep unverified "$LOG")"
grep -q 'refused peer=127.0.0.2 reason=client_certificate_unverified detail=.*expired' "$LOG" ||
  fail "the expired certificate not logged as such: $(grep unverified "$LOG")"
grep -q 'refused peer=127.0.0.1 reason=wrong_credentials detail=.*wrong password for user' "$LOG" ||
  fail "wrong password not logged as such"
! grep -qF "$PASSWORD" "$LOG" || fail "the password is in the exporter log"
ok "each refusal kind logged once per peer address ($(grep -c 'refused peer=' "$LOG") lines for $((5 * 7 + 6)) refusals), never the password"

# A flood of wrong passwords from one address (127.0.0.3), 8 requests at a time: bcrypt runs
# on the exporter's one authentication thread, at most 2 of an address's checks wait there,
# and the rest are told to retry (429) at once; the good client's remembered password is
# answered on the polling threads all along.
codes=""
for round in 1 2 3 4 5; do
  urls=()
  for _ in 1 2 3 4 5 6 7 8; do urls+=(-o /dev/null "$URL"); done
  codes+=$(curl -s --parallel --parallel-max 8 --max-time 30 --interface 127.0.0.3 "${CLIENT[@]}" \
    -u "prometheus:wrong" -w '%{http_code}\n' "${urls[@]}" || true)$'\n'
  [ "$(code "${CLIENT[@]}" -u "prometheus:$PASSWORD" "$URL")" = 200 ] ||
    fail "the good client during the flood: not 200"
  grep -qx 429 <<<"$codes" && break
done
grep -qx 429 <<<"$codes" || fail "8 wrong passwords at once from one address, 5 times: no 429 ($(tr '\n' ' ' <<<"$codes"))"
others=$(grep -vx '401\|429' <<<"$codes" | grep -v '^$' || true)
[ -z "$others" ] || fail "wrong passwords answered other than 401 or 429: $others"
wait_for_line "$LOG" "refused peer=127.0.0.3 reason=authentication_busy" 5
[ "$(count 127.0.0.3 authentication_busy)" = 1 ] || fail "authentication_busy from 127.0.0.3 not logged exactly once"
ok "wrong passwords 8 at a time: $(grep -cx 401 <<<"$codes") checked (401), $(grep -cx 429 <<<"$codes") told to retry (429) in $round round(s); the good client 200 throughout"

# --- a real Prometheus scrapes it: https, the CA, a client certificate, a password file ---
PROM_PORT=$(free_port)
cat >"$WORK/prometheus.yml" <<YML
global: {scrape_interval: 1s}
scrape_configs:
  - job_name: cpu_power_tls
    scheme: https
    scrape_interval: 200ms
    scrape_timeout: 190ms
    tls_config: {ca_file: $T/ca.crt, cert_file: $T/client.crt, key_file: $T/client.key}
    basic_auth: {username: prometheus, password_file: $T/password}
    static_configs: [{targets: ['127.0.0.1:$PORT']}]
YML
promtool check config "$WORK/prometheus.yml" >/dev/null || fail "promtool check config"
spawn prom prometheus --config.file="$WORK/prometheus.yml" --storage.tsdb.path="$WORK/tsdb" \
  --web.listen-address="127.0.0.1:$PROM_PORT"
PROM_PID=$LAST_PID
API="http://127.0.0.1:$PROM_PORT/api/v1"
families() {
  curl -s -G "$API/query" --data-urlencode 'query=count by (__name__) ({job="cpu_power_tls"})' |
    $PY -c 'import json,sys; print(" ".join(sorted(r["metric"]["__name__"] for r in json.load(sys.stdin)["data"]["result"])))' 2>/dev/null
}
has_families() { [[ "$(families)" == *cpu_power_acpi_watts*cpu_power_exporter_info* ]]; }
wait_until 30 "Prometheus to ingest the TLS exporter's metric families" has_families
up=$(curl -s -G "$API/query" --data-urlencode 'query=up{job="cpu_power_tls"}' |
  $PY -c 'import json,sys; print(json.load(sys.stdin)["data"]["result"][0]["value"][1])')
[ "$up" = 1 ] || fail "target not up: $up"
ok "Prometheus scrapes over TLS + client certificate + password_file: up=1, families $(families | wc -w)"
stop "$PROM_PID"

# --- cpu-power scrape with the password from a file --------------------------------------
SCRAPE_ARGS=(--endpoint "n1=127.0.0.1:$PORT" --interval-ms 200 --tls-ca-file "$T/ca.crt"
  --tls-cert-file "$T/client.crt" --tls-key-file "$T/client.key"
  --basic-auth-username prometheus --basic-auth-password-file "$T/password")
spawn scrape "$BIN/cpu-power" scrape --out "$WORK/scrape" --duration-s 2 "${SCRAPE_ARGS[@]}"
SCRAPE_PID=$LAST_PID
# Its argv once the spawned shell has exec'd it.
argv_captured() {
  tr '\0' ' ' <"/proc/$SCRAPE_PID/cmdline" >"$WORK/scrape.cmdline" 2>/dev/null &&
    grep -q -- "--basic-auth-password-file" "$WORK/scrape.cmdline"
}
wait_until 10 "cpu-power scrape's argv in /proc" argv_captured
wait_until 10 "cpu-power scrape to finish" gone "$SCRAPE_PID"
rows=$(($(wc -l <"$WORK/scrape/samples.csv") - 1))
((rows >= 4)) || { cat "$WORK/scrape.log"; fail "cpu-power scrape wrote $rows rows over TLS"; }
url=$($PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["nodes"]["n1"]["endpoint_url"])' "$WORK/scrape/cpu_manifest.json")
[ "$url" = "https://127.0.0.1:$PORT/metrics" ] || fail "manifest endpoint_url: $url"
errors=$($PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["nodes"]["n1"]["error_count"])' "$WORK/scrape/cpu_manifest.json")
[ "$errors" = 0 ] || fail "cpu-power scrape had $errors errors"
grep -q -- "--basic-auth-password-file" "$WORK/scrape.cmdline" || fail "argv not captured: $(cat "$WORK/scrape.cmdline")"
! grep -qF "$PASSWORD" "$WORK/scrape.cmdline" "$WORK/scrape.log" "$WORK/scrape/cpu_manifest.json" ||
  fail "the password shows in cpu-power scrape's argv, log or manifest"
ok "cpu-power scrape: $rows rows over https with the password from a file; not in its argv, log or manifest"

rc=0
"$BIN/cpu-power" scrape --out "$WORK/s2" --duration-s 1 --endpoint "n1=127.0.0.1:$PORT" \
  --tls-ca-file "$T/ca.crt" --tls-cert-file "$T/client.crt" >"$WORK/s2.log" 2>&1 || rc=$?
[ "$rc" = 2 ] && grep -q -- "--tls-key-file: a client certificate needs both" "$WORK/s2.log" ||
  fail "cert without key: exit $rc, $(cat "$WORK/s2.log")"
rc=0
"$BIN/cpu-power" scrape --out "$WORK/s2" --duration-s 1 --endpoint "n1=127.0.0.1:$PORT" \
  --basic-auth-username prometheus --basic-auth-password-file "$T/nope" >"$WORK/s2.log" 2>&1 || rc=$?
[ "$rc" = 2 ] && grep -q -- "--basic-auth-password-file: cannot read $T/nope" "$WORK/s2.log" ||
  fail "missing password file: exit $rc, $(cat "$WORK/s2.log")"
ok "cpu-power scrape: a certificate without its key, a missing password file: usage errors (2)"
stop "$EXPORTER_PID"

# --- cpu-power run: the exporters it starts get the web config, the collector the rest ----
cat >"$WORK/recipe.yaml" <<EOF
telemetry:
  enabled: true
  collect_interval_ms: 200
  request_timeout_seconds: 0.5
  cpu_power_exporter:
    web_config_file: $T/web.yml
    tls_config: {ca_file: $T/ca.crt, cert_file: $T/client.crt, key_file: $T/client.key}
    basic_auth: {username: prometheus, password_file: $T/password}
EOF
"$BIN/cpu-power" run --simulate gb200 --nodes a --config "$WORK/recipe.yaml" --log-dir "$WORK/dry" --dry-run -- true >"$WORK/dry.out"
grep -q -- "--web.config.file $T/web.yml" "$WORK/dry.out" || { cat "$WORK/dry.out"; fail "dry run: no --web.config.file"; }
grep -q "^scrape: *https, CA $T/ca.crt, client certificate $T/client.crt, basic auth user prometheus" "$WORK/dry.out" ||
  { cat "$WORK/dry.out"; fail "dry run: no scrape line"; }
rc=0
"$BIN/cpu-power" run --simulate gb200 --nodes a --config "$WORK/recipe.yaml" --log-dir "$WORK/run" \
  -- sleep "$(scaled 2)" >"$WORK/run.log" 2>&1 || rc=$?
[ "$rc" = 0 ] || { cat "$WORK/run.log"; fail "cpu-power run exited $rc"; }
rows=$(($(wc -l <"$WORK/run/power/cpu/samples.csv") - 1))
((rows >= 8)) || { cat "$WORK/run.log"; fail "cpu-power run collected $rows rows over TLS$(scale_note)"; }
grep -q "CPU power exporters ready count=1" "$WORK/run.log" || { cat "$WORK/run.log"; fail "readiness over TLS"; }
! grep -rqF "$PASSWORD" "$WORK/run.log" "$WORK/run" || fail "the password shows in the run's logs or files"
ok "cpu-power run: simulated exporter with the web config, ready over TLS, $rows rows, password nowhere"
finish
