#!/usr/bin/env bash
# Slowloris against the exporter over loopback: 500 connections that trickle a request one
# byte at a time and never finish it, then 500 that send nothing, then both at once against
# an exporter whose file descriptor limit leaves room for 128 connections; meanwhile a good
# client scrapes /metrics on a fresh connection every 10 ms and must never fail. Also: a
# trickle cannot keep its connection past the 5 s request deadline, and a partial request
# whose client shuts its write side is let go at once. All attackers share 127.0.0.1 with the
# good client, so no per-address limit could tell them apart: the server must. The same on a
# TLS port (web config): idle connections and ClientHellos trickled a byte at a time are
# closed at the same deadline, the good client scrapes over TLS meanwhile, and connections
# held in their handshake cost the exporter no CPU time.
source "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3
SLOW="$(dirname "$0")/slow_clients.py"
# Each attacker process holds 500 sockets.
hard=$(ulimit -Hn)
[ "$hard" = unlimited ] || [ "$hard" -ge 1024 ] || fail "needs a hard RLIMIT_NOFILE of 1024 or more, not $hard"

# The p99 bound asserted here is looser than the 10 ms target (met in the runs recorded in
# docs/reliability.md): ctest runs this beside builds and other tests on two shared cores,
# where the good client's p99 is 10-40 ms with no attack at all (the baseline below prints
# it), because a descheduled client or server thread costs tens of ms (a `make test` at -j4
# saw 102.75 ms over TLS beside 500 idle connections, one slow scrape of 84). A locked-out
# client waits seconds or times out, so the loose bound still separates pass from fail. On a
# quiet machine, SLOW_CLIENTS_P99_MS=10 holds the documented figure.
P99_MS=$(scaled "${SLOW_CLIENTS_P99_MS:-250}")

# probe NAME SECONDS [any]: the good client; fails on any failed scrape or, unless "any",
# a p99 over the bound.
probe() {
  local name=$1 secs=$2 bound=${3:-} line
  "$PY" "$SLOW" probe "$PORT" "$secs" 10 2 ${TLS_FLAG:-} >"$WORK/$name.out" 2>&1 || { cat "$WORK/$name.out"; fail "$name: probe crashed"; }
  line=$(grep '^probe n=' "$WORK/$name.out")
  echo "# $name: $line"
  local n failures p99
  n=$(sed -E 's/.*n=([0-9]+).*/\1/' <<<"$line")
  failures=$(sed -E 's/.*failures=([0-9]+).*/\1/' <<<"$line")
  p99=$(sed -E 's/.*p99_ms=([0-9.]+).*/\1/' <<<"$line")
  [ "$failures" = 0 ] || { cat "$WORK/$name.out"; fail "$name: $failures of $n scrapes failed"; }
  # At least 20 a second (100 when nothing is slow): a stalled client would make only a few.
  [ "$n" -ge "$(awk "BEGIN { print int($secs * 20 / $TIME_SCALE) }")" ] || fail "$name: only $n scrapes in ${secs}s"
  [ "$bound" = any ] || "$PY" -c "import sys; sys.exit(0 if $p99 < $P99_MS else 1)" ||
    fail "$name: p99 ${p99} ms over ${P99_MS} ms$(scale_note)"
}

# attack NAME MODE CONNS SECONDS: attackers from 127.0.0.1, ready once every socket is tried.
attack() {
  spawn "$1" "$PY" "$SLOW" attack "$PORT" "$2" "$3" 2 "$4"
  ATTACK_PID=$LAST_PID
  wait_for_line "$WORK/$1.log" '^attack ready' 10
  echo "# $1: $(grep '^attack ready' "$WORK/$1.log")"
}

# attack_done NAME: waits for the attacker to finish and prints its summary; sets closed
# (connections the server closed) and held (the longest one was held, in s).
attack_done() {
  wait "$ATTACK_PID" || fail "$1: attacker exited with $?"
  ATTACK_DONE=$(grep '^attack done' "$WORK/$1.log") || { cat "$WORK/$1.log"; fail "$1: no summary"; }
  echo "# $1: $ATTACK_DONE"
  closed=$(sed -E 's/.*closed_by_server=([0-9]+).*/\1/' <<<"$ATTACK_DONE")
  held=$(sed -E 's/.*longest_held_s=([0-9.]+).*/\1/' <<<"$ATTACK_DONE")
}

start_sim sim "$WORK/node" --profile gb200 --model constant --no-noise
start_exporter exp --hwmon-root "$WORK/node"
probe baseline 1 any  # no attack: what this machine's noise does to the tail
ok "baseline without attack: no scrape failed"

# --- 500 trickling connections -------------------------------------------------------------
# Long enough for the 5 s deadline to close every trickle opened at the start.
DRIP_S=$(awk "BEGIN { print 5 + 1.5 * $TIME_SCALE }")
attack drip drip 500 "$DRIP_S"
# Meanwhile, partial requests whose client then shuts its write side. libmicrohttpd alone
# keeps a few in a hundred of them until its timeout (the unit test HalfClosedPartialRequest*
# holds a hundred to it on one polling thread).
spawn half "$PY" "$SLOW" halfclose "$PORT" "$(scaled 3)" 20
HALF_PID=$LAST_PID
probe probe_drip 5
ok "500 trickling connections: no scrape failed, p99 under ${P99_MS} ms"

wait "$HALF_PID" || fail "halfclose exited with $?"
ms=$(sed -nE 's/^halfclose n=[0-9]+ closed_after_ms=([0-9.]+).*/\1/p' "$WORK/half.log")
echo "# $(cat "$WORK/half.log")"
[ -n "$ms" ] && "$PY" -c "import sys; sys.exit(0 if $ms < $(scaled 500) else 1)" ||
  fail "half-closed partial request not closed within $(scaled 500) ms: $(cat "$WORK/half.log")$(scale_note)"
ok "20 half-closed partial requests each closed within ${ms} ms, under attack"

attack_done drip
# Every trickle opened at the start has been waiting 5 s for its request by 5.x s.
[ "$closed" -ge 500 ] || fail "only $closed trickling connections were closed in $DRIP_S s"
"$PY" -c "import sys; sys.exit(0 if $held < 5.0 + $(scaled 1) else 1)" ||
  fail "a trickling connection was held ${held} s, past the 5 s request deadline$(scale_note)"
ok "trickling connections closed at the 5 s request deadline (longest held ${held} s)"

# --- 500 connections that send nothing -------------------------------------------------------
attack idle idle 500 3
probe probe_idle 2.5
attack_done idle
ok "500 idle connections: no scrape failed, p99 under ${P99_MS} ms"

stop "$EXPORTER_PID"
grep -q 'slow clients: closed [0-9]* connections at the request deadline' "$WORK/exp.log" ||
  fail "no slow-client summary at shutdown: $(tail -3 "$WORK/exp.log")"

# --- both at once, with room for 128 connections ----------------------------------------------
# ulimit -n sets the hard limit too, so the exporter cannot raise it: it must say so and
# serve fewer connections, and still make room for the good client among 1000 attackers.
(ulimit -n 256 && exec "$BIN/cpu-power-exporter" --bind 127.0.0.1 --port 0 --hwmon-root "$WORK/node") \
  >"$WORK/exp_low.log" 2>&1 &
PIDS+=($!)
EXPORTER_PID=$!
wait_for_line "$WORK/exp_low.log" 'listening addr=' 15
PORT=$(grep -oE 'listening addr=[0-9.]+:[0-9]+' "$WORK/exp_low.log" | head -1 | sed 's/.*://')
grep -qF 'WARN cpu_power_exporter: file descriptor limit 256 leaves room for 128 connections, not 1024' "$WORK/exp_low.log" ||
  fail "no WARN about the low file descriptor limit: $(cat "$WORK/exp_low.log")"
attack drip_low drip 500 3.5
DRIP_PID=$ATTACK_PID
attack idle_low idle 500 3
probe probe_low 2.5
attack_done idle_low
ATTACK_PID=$DRIP_PID
attack_done drip_low
ok "500 trickling + 500 idle connections with room for 128: no scrape failed, p99 under ${P99_MS} ms"
stop "$EXPORTER_PID"

# --- the same on a TLS port ------------------------------------------------------------------
T="$WORK/tls"
mkdir -p "$T"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -keyout "$T/server.key" \
  -out "$T/server.crt" -subj /CN=localhost >"$T/openssl.log" 2>&1 || fail "openssl: $(cat "$T/openssl.log")"
printf 'tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n' >"$T/web.yml"
start_exporter exp_tls --hwmon-root "$WORK/node" --web.config.file "$T/web.yml"
TLS_FLAG=--tls
probe baseline_tls 1 any
ok "baseline over TLS without attack: no scrape failed"
# cpu_s PID: the process's CPU time (user + system), in seconds.
TCK=$(getconf CLK_TCK)
cpu_s() { awk -v t="$TCK" '{ printf "%.2f", ($14 + $15) / t }' "/proc/$1/stat"; }
# cpu_over PID SECONDS: CPU time PID spends over the next SECONDS. A polling thread that spins
# spends about a second a second; waiting ones next to none.
cpu_over() { local a b; a=$(cpu_s "$1"); sleep "$2"; b=$(cpu_s "$1"); awk "BEGIN { printf \"%.2f\", $b - $a }"; }
fds_before=$(ls "/proc/$EXPORTER_PID/fd" | wc -l)

# Ten connections that send nothing, then ten that stall in a ClientHello: held, and after
# the deadline has closed them.
for mode in idle hello; do
  attack "${mode}10_tls" "$mode" 10 "$(awk "BEGIN { print 6 + 1.5 * $TIME_SCALE }")"
  held_cpu=$(cpu_over "$EXPORTER_PID" 3)
  echo "# exporter CPU time over 3 s with 10 $mode TLS connections held: ${held_cpu} s"
  "$PY" -c "import sys; sys.exit(0 if $held_cpu < 0.3 else 1)" ||
    fail "the exporter spent ${held_cpu} s of CPU time in 3 s holding 10 $mode TLS connections"
  attack_done "${mode}10_tls"
  [ "$closed" -ge 10 ] || fail "only $closed of 10 $mode TLS connections were closed by the deadline"
  "$PY" -c "import sys; sys.exit(0 if $held < 5.0 + $(scaled 1) else 1)" ||
    fail "a $mode TLS connection was held ${held} s, past the 5 s request deadline$(scale_note)"
  after_cpu=$(cpu_over "$EXPORTER_PID" 3)
  echo "# exporter CPU time over 3 s after they were closed: ${after_cpu} s"
  "$PY" -c "import sys; sys.exit(0 if $after_cpu < 0.3 else 1)" ||
    fail "the exporter spent ${after_cpu} s of CPU time in 3 s after 10 $mode TLS connections were closed"
  ok "10 $mode TLS connections: closed at the deadline (longest held ${held} s), CPU time ${held_cpu} s held, ${after_cpu} s after"
done

DRIP_S=$(awk "BEGIN { print 5 + 1.5 * $TIME_SCALE }")
attack hello_tls hello 500 "$DRIP_S"
probe probe_hello_tls 5
attack_done hello_tls
[ "$closed" -ge 500 ] || fail "only $closed trickled ClientHellos were closed in $DRIP_S s"
"$PY" -c "import sys; sys.exit(0 if $held < 5.0 + $(scaled 1) else 1)" ||
  fail "a trickled ClientHello was held ${held} s, past the 5 s request deadline$(scale_note)"
ok "500 trickled ClientHellos: no TLS scrape failed, p99 under ${P99_MS} ms, closed at the 5 s deadline (longest held ${held} s)"

attack idle_tls idle 500 3
probe probe_idle_tls 2.5
attack_done idle_tls
ok "500 idle TLS connections: no TLS scrape failed, p99 under ${P99_MS} ms"
# Every connection the attackers left is let go: the descriptors come back.
for _ in $(seq 100); do
  fds=$(ls "/proc/$EXPORTER_PID/fd" | wc -l)
  [ "$fds" -le "$fds_before" ] && break
  sleep 0.1
done
[ "$fds" -le "$fds_before" ] || fail "the TLS exporter holds $fds descriptors after the attacks, $fds_before before"
ok "the TLS exporter holds $fds descriptors after the attacks, as before them"
stop "$EXPORTER_PID"
TLS_FLAG=

# --- the python fallback exporter ---------------------------------------------------------------
# Weaker by design (docs/reliability.md): one thread per connection, at most 512, so a flood
# can fill it; 300 trickles cannot, and each is closed at the same 5 s request deadline.
spawn fallback /usr/bin/python3 "$BIN/cpu_power_exporter_fallback.py" --bind 127.0.0.1 --port 0 \
  --hwmon-root "$WORK/node"
EXPORTER_PID=$LAST_PID
wait_for_line "$WORK/fallback.log" 'listening addr=' 15
PORT=$(grep -oE 'listening addr=[0-9.]+:[0-9]+' "$WORK/fallback.log" | head -1 | sed 's/.*://')
# The deadline counts from accept, and this server accepts 300 connections slowly (a thread
# and a timer each, under one interpreter lock), so the attacker, timing from connect, sees
# it seconds late on a busy machine.
PY_DRIP_S=$(awk "BEGIN { print 5 + 4 * $TIME_SCALE }")
attack drip_py drip 300 "$PY_DRIP_S"
probe probe_py 5 any
attack_done drip_py
# Without the deadline none would be closed: a byte every 2 s keeps each read's own timeout
# from firing. How many are closed by the end, and how late, depends on how fast the
# interpreter gets through its accept queue: beside two busy loops 239 of 300 were.
[ "$closed" -ge 150 ] || fail "fallback: only $closed trickling connections were closed in $PY_DRIP_S s"
"$PY" "$SLOW" halfclose "$PORT" "$(scaled 3)" 5 >"$WORK/half_py.log" 2>&1 || fail "fallback halfclose: $(cat "$WORK/half_py.log")"
grep -q 'closed_after_ms=[0-9]' "$WORK/half_py.log" || fail "fallback kept a half-closed partial request: $(cat "$WORK/half_py.log")"
ok "python fallback: 300 trickling connections, no scrape failed, $closed closed by the deadline (longest held ${held} s)"
stop "$EXPORTER_PID"

finish
