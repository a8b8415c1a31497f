#!/usr/bin/env python3
"""Slow and idle HTTP clients against an exporter on loopback, and a good client that times
its scrapes meanwhile. python3 standard library only.

  slow_clients.py attack PORT MODE CONNS INTERVAL_S DURATION_S
      MODE drip: every connection sends one more byte of a request that never ends, one byte
      every INTERVAL_S (phases spread over the interval), like slowloris.
      MODE idle: every connection sends nothing.
      MODE hello: like drip, with the bytes of a TLS ClientHello (for a TLS port).
      A connection the server closes is opened again about INTERVAL_S later (0.5 to 1.5
      times, so that reopening never turns into a flood of new connections).
      Prints "attack ready open=N failed=M" once every connection has been tried, then after
      DURATION_S "attack done ..." with how many connections the server closed and the longest
      time one of them was held open (drip: how long a trickle kept its slot).
  slow_clients.py probe PORT DURATION_S PAUSE_MS TIMEOUT_S
      GET /metrics on a fresh connection (Connection: close), one after the other with
      PAUSE_MS between them, for DURATION_S. A failure is a refused, reset or timed-out
      connection, a status other than 200 or a body without the ACPI family. Prints
      "probe n=... failures=... p50_ms=... p99_ms=... max_ms=..." and the first failures.
  slow_clients.py halfclose PORT TIMEOUT_S COUNT
      COUNT times, one after the other: sends part of a request header, shuts its write side
      (SHUT_WR) and waits for the server to close the connection. Prints
      "halfclose n=COUNT closed_after_ms=..." with the slowest, or timeout(TIMEOUT_S).

  --tls anywhere on the command line: the probe scrapes over TLS (https, the server's
  certificate not checked).
"""

import errno
import random
import resource
import selectors
import socket
import ssl
import sys
import time

HOST = "127.0.0.1"
DRIP = b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Drip: "
TLS = None  # an ssl.SSLContext with --tls


def client_context():
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return ctx


def client_hello():
    """The first flight of a real TLS client (its ClientHello), made without a socket."""
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    obj = client_context().wrap_bio(incoming, outgoing)
    try:
        obj.do_handshake()
    except ssl.SSLWantReadError:
        pass
    return outgoing.read()


def raise_fd_limit():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft < hard:
        target = hard if hard != resource.RLIM_INFINITY else 1 << 20
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))


class Attacker:
    def __init__(self, port, mode, conns, interval):
        self.port, self.mode, self.interval = port, mode, interval
        self.drip = client_hello() if mode == "hello" else DRIP
        self.sel = selectors.DefaultSelector()
        self.slots = [None] * conns  # per slot: dict(sock, opened, sent, next) or None
        self.reopen_at = [0.0] * conns
        self.closed_by_server = 0
        self.failed = 0
        self.longest_closed_s = 0.0

    def reopen_time(self, now):
        # Spread over the interval: the attack holds on to what it can, it does not flood.
        return now + random.uniform(0.5, 1.5) * self.interval

    def open(self, i, now):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        rc = s.connect_ex((HOST, self.port))
        if rc not in (0, errno.EINPROGRESS):
            s.close()
            self.failed += 1
            self.reopen_at[i] = self.reopen_time(now)
            return
        slot = {"sock": s, "opened": now, "sent": 0, "connected": rc == 0,
                "next": now + random.uniform(0, self.interval)}
        self.slots[i] = slot
        self.sel.register(s, selectors.EVENT_READ | (0 if rc == 0 else selectors.EVENT_WRITE), i)

    def drop(self, i, now, by_server):
        slot = self.slots[i]
        self.sel.unregister(slot["sock"])
        slot["sock"].close()
        self.slots[i] = None
        self.reopen_at[i] = self.reopen_time(now)
        if by_server:
            self.closed_by_server += 1
            self.longest_closed_s = max(self.longest_closed_s, now - slot["opened"])
        else:
            self.failed += 1

    def on_event(self, i, mask, now):
        slot = self.slots[i]
        if slot is None:
            return
        s = slot["sock"]
        if not slot["connected"] and mask & selectors.EVENT_WRITE:
            if s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) != 0:
                self.drop(i, now, by_server=False)
                return
            slot["connected"] = True
            self.sel.modify(s, selectors.EVENT_READ, i)
        if mask & selectors.EVENT_READ:
            try:
                data = s.recv(4096)
            except BlockingIOError:
                return
            except OSError:
                data = b""
            if not data:  # EOF or reset: the server let go of the connection
                self.drop(i, now, by_server=True)

    def tick(self, now):
        for i, slot in enumerate(self.slots):
            if slot is None:
                if now >= self.reopen_at[i]:
                    self.open(i, now)
                continue
            if self.mode == "idle" or not slot["connected"] or now < slot["next"]:
                continue
            n = slot["sent"]
            byte = self.drip[n:n + 1] or b"a"
            try:
                slot["sock"].send(byte)
                slot["sent"] += 1
            except OSError:
                self.drop(i, now, by_server=True)
                continue
            slot["next"] = now + self.interval

    def pending(self):
        return sum(1 for s in self.slots if s is not None and not s["connected"])

    def run(self, duration):
        start = time.monotonic()
        for i in range(len(self.slots)):
            self.open(i, start)
        # Ready once every connection has been tried: connected, refused, or 2 s passed.
        while self.pending() and time.monotonic() - start < 2.0:
            for key, mask in self.sel.select(timeout=0.05):
                self.on_event(key.data, mask, time.monotonic())
        opened = sum(1 for s in self.slots if s is not None and s["connected"])
        print("attack ready open=%d failed=%d" % (opened, self.failed), flush=True)
        end = start + duration
        while True:
            now = time.monotonic()
            if now >= end:
                break
            for key, mask in self.sel.select(timeout=min(0.05, end - now)):
                self.on_event(key.data, mask, time.monotonic())
            self.tick(time.monotonic())
        still = sum(1 for s in self.slots if s is not None)
        print("attack done mode=%s closed_by_server=%d longest_held_s=%.2f open_at_end=%d failed=%d"
              % (self.mode, self.closed_by_server, self.longest_closed_s, still, self.failed),
              flush=True)


def scrape(port, timeout):
    """One GET /metrics on a fresh connection; returns (seconds, error or None)."""
    t0 = time.monotonic()
    try:
        with socket.create_connection((HOST, port), timeout=timeout) as raw:
            raw.settimeout(max(0.001, timeout - (time.monotonic() - t0)))
            # As Prometheus (Go) does: over TLS the request follows the client's last
            # handshake message, which Nagle would hold for the server's delayed ACK.
            raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            s = TLS.wrap_socket(raw) if TLS else raw
            s.sendall(b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            chunks = []
            while True:
                remaining = timeout - (time.monotonic() - t0)
                if remaining <= 0:
                    raise socket.timeout("timed out")
                s.settimeout(remaining)
                chunk = s.recv(65536)
                if not chunk:
                    break
                chunks.append(chunk)
    except OSError as e:
        return time.monotonic() - t0, "%s: %s" % (type(e).__name__, e)
    elapsed = time.monotonic() - t0
    data = b"".join(chunks)
    if not data.startswith(b"HTTP/1.1 200 "):
        return elapsed, "status line %r" % data[:40]
    if b"\ncpu_power_acpi_watts{" not in data:
        return elapsed, "body without cpu_power_acpi_watts (%d bytes)" % len(data)
    return elapsed, None


def percentile(sorted_values, q):
    if not sorted_values:
        return float("nan")
    k = min(len(sorted_values) - 1, max(0, int(round(q * len(sorted_values) + 0.5)) - 1))
    return sorted_values[k]


def probe(port, duration, pause_ms, timeout):
    end = time.monotonic() + duration
    times, failures = [], []
    while time.monotonic() < end:
        elapsed, error = scrape(port, timeout)
        times.append(elapsed)
        if error:
            failures.append("after %.3f s: %s" % (elapsed, error))
        time.sleep(pause_ms / 1000.0)
    ms = sorted(t * 1000.0 for t in times)
    print("probe n=%d failures=%d p50_ms=%.2f p99_ms=%.2f max_ms=%.2f"
          % (len(ms), len(failures), percentile(ms, 0.50), percentile(ms, 0.99), ms[-1]),
          flush=True)
    for f in failures[:5]:
        print("probe failure: " + f, flush=True)


def halfclose_once(port, timeout):
    """Milliseconds until the server ends a half-closed partial request, or None."""
    s = socket.create_connection((HOST, port), timeout=timeout)
    s.sendall(b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Partial: ")
    s.shutdown(socket.SHUT_WR)
    t0 = time.monotonic()
    try:
        while s.recv(4096):
            pass
    except socket.timeout:
        return None
    except OSError:  # a reset also lets go of the slot
        pass
    finally:
        s.close()
    return (time.monotonic() - t0) * 1000.0


def halfclose(port, timeout, count):
    worst = 0.0
    for _ in range(count):
        ms = halfclose_once(port, timeout)
        if ms is None:
            print("halfclose n=%d closed_after_ms=timeout(%.0f s)" % (count, timeout), flush=True)
            return
        worst = max(worst, ms)
    print("halfclose n=%d closed_after_ms=%.1f (the slowest)" % (count, worst), flush=True)


def main(argv):
    global TLS
    raise_fd_limit()
    if "--tls" in argv:
        argv = [a for a in argv if a != "--tls"]
        TLS = client_context()
    cmd = argv[1] if len(argv) > 1 else ""
    if cmd == "attack" and len(argv) == 7 and argv[3] in ("drip", "idle", "hello"):
        Attacker(int(argv[2]), argv[3], int(argv[4]), float(argv[5])).run(float(argv[6]))
    elif cmd == "probe" and len(argv) == 6:
        probe(int(argv[2]), float(argv[3]), float(argv[4]), float(argv[5]))
    elif cmd == "halfclose" and len(argv) == 5:
        halfclose(int(argv[2]), float(argv[3]), int(argv[4]))
    else:
        sys.stderr.write(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
