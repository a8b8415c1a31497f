#!/usr/bin/python3
"""Scrapes with the right password while other clients send wrong ones as fast as they can.

Starts a simulated node (`cpu-power sim-node`) and `cpu-power-exporter` with a web config
holding one bcrypt user (cost 10 by default, exporter-toolkit's usual), then for --seconds:
one scraper GETs /metrics with the right password every 100 ms (a new connection each time,
so every polling thread is met), and --flooders clients GET it with a wrong password back to
back, each from its own loopback address (127.0.1.k) over --connections connections at once.
Prints the good scrapes' latency (median, 95th percentile, maximum, count over 1 s), what the
scraper and the flooders were answered, and the exporter's own bcrypt count from its
shutdown line.

--cold: the scraper's password is not checked before the flood (as after an exporter
restart): it starts 1 s into the flood, and the time to its first 200 is printed.

    /usr/bin/python3 bench/auth_flood.py build/bin [--flooders 8] [--connections 1]
        [--seconds 20] [--cold] [--json F]

Python's standard library only; libcrypt (libxcrypt) makes the hash.
"""
import argparse
import base64
import ctypes
import http.client
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time


def bcrypt_hash(password, cost):
    lib = ctypes.CDLL("libcrypt.so.1")
    lib.crypt_gensalt.restype = ctypes.c_char_p
    lib.crypt.restype = ctypes.c_char_p
    salt = lib.crypt_gensalt(b"$2y$", cost, None, 0)
    return lib.crypt(password.encode(), salt).decode()


def wait_line(proc, pattern, timeout_s, lines):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        lines.append(line)
        m = re.search(pattern, line)
        if m:
            return m
    sys.exit(f"auth_flood: no line matching {pattern!r}: {''.join(lines[-5:])}")


def get(port, auth, source="127.0.0.1", timeout_s=10):
    """(status or None on error/timeout, seconds)."""
    t0 = time.monotonic()
    try:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout_s,
                                       source_address=(source, 0))
        c.request("GET", "/metrics", headers={"Authorization": auth, "Connection": "close"})
        r = c.getresponse()
        r.read()
        c.close()
        return r.status, time.monotonic() - t0
    except (OSError, http.client.HTTPException):
        return None, time.monotonic() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("bin")
    ap.add_argument("--flooders", type=int, default=8)
    ap.add_argument("--connections", type=int, default=1)
    ap.add_argument("--cold", action="store_true")
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--cost", type=int, default=10)
    ap.add_argument("--json")
    a = ap.parse_args()

    work = tempfile.mkdtemp(prefix="auth-flood-")
    password = "right-" + os.urandom(6).hex()
    with open(os.path.join(work, "web.yml"), "w") as f:
        f.write(f"basic_auth_users:\n  prometheus: '{bcrypt_hash(password, a.cost)}'\n")
    good = "Basic " + base64.b64encode(f"prometheus:{password}".encode()).decode()
    wrong = "Basic " + base64.b64encode(b"prometheus:wrong").decode()

    sim = subprocess.Popen([os.path.join(a.bin, "cpu-power"), "sim-node", "--root",
                            os.path.join(work, "hwmon"), "--profile", "gh200", "--model",
                            "constant"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True)
    wait_line(sim, r"^sim-node ready", 20, [])
    exp_lines = []
    exp = subprocess.Popen([os.path.join(a.bin, "cpu-power-exporter"), "--bind", "127.0.0.1",
                            "--port", "0", "--hwmon-root", os.path.join(work, "hwmon"),
                            "--web.config.file", os.path.join(work, "web.yml")],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    port = int(wait_line(exp, r"listening addr=[0-9.]+:([0-9]+)", 20, exp_lines).group(1))
    drain = threading.Thread(target=lambda: exp_lines.extend(exp.stdout), daemon=True)
    drain.start()
    if not a.cold:
        status, _ = get(port, good)
        if status != 200:
            sys.exit(f"auth_flood: the right password got {status}")

    stop = threading.Event()
    lat, good_status = [], {}
    flood_status = {}
    first_ok = []
    lock = threading.Lock()

    def scraper():
        if a.cold:
            stop.wait(1.0)
        t0 = time.monotonic()
        while not stop.is_set():
            s, dt = get(port, good)
            with lock:
                lat.append(dt)
                good_status[str(s)] = good_status.get(str(s), 0) + 1
                if s == 200 and not first_ok:
                    first_ok.append(time.monotonic() - t0)
            stop.wait(max(0.0, 0.1 - dt))

    def flooder(source):
        while not stop.is_set():
            s, _ = get(port, wrong, source)
            with lock:
                flood_status[str(s)] = flood_status.get(str(s), 0) + 1

    # Each flooder from an address of its own (127.0.1.k), as separate attacking hosts would
    # be: the exporter's per-address bound then does not single them out.
    threads = [threading.Thread(target=scraper)] + [
        threading.Thread(target=flooder, args=(f"127.0.1.{k + 1}",))
        for k in range(a.flooders) for _ in range(a.connections)]
    for t in threads:
        t.start()
    time.sleep(a.seconds)
    stop.set()
    for t in threads:
        t.join()
    exp.send_signal(signal.SIGTERM)
    exp.wait(timeout=20)
    drain.join(timeout=5)
    sim.send_signal(signal.SIGTERM)
    sim.wait(timeout=20)

    runs = None
    for line in exp_lines:
        m = re.search(r"bcrypt_runs=(\d+)", line)
        if m:
            runs = int(m.group(1))
    lat.sort()
    out = {
        "flooders": a.flooders, "connections": a.connections, "cold": a.cold,
        "seconds": a.seconds, "cost": a.cost,
        "first_200_s": round(first_ok[0], 3) if first_ok else None,
        "good_scrapes": len(lat), "good_status": good_status,
        "good_median_ms": round(statistics.median(lat) * 1000, 1),
        "good_p95_ms": round(lat[int(0.95 * (len(lat) - 1))] * 1000, 1),
        "good_max_ms": round(lat[-1] * 1000, 1),
        "good_over_1s": sum(1 for x in lat if x > 1.0),
        "flood_status": flood_status, "bcrypt_runs": runs,
    }
    print(f"{a.flooders} flooders x {a.connections} connections, {a.seconds:g} s, bcrypt cost"
          f" {a.cost}{', cold' if a.cold else ''}")
    if a.cold:
        print(f"the scraper's first 200: {out['first_200_s']} s after its first request")
    print(f"good scrapes: {out['good_scrapes']} {good_status}, median {out['good_median_ms']} ms,"
          f" p95 {out['good_p95_ms']} ms, max {out['good_max_ms']} ms,"
          f" over 1 s: {out['good_over_1s']}")
    print(f"flooders answered: {flood_status}; exporter bcrypt runs: {runs}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)
    subprocess.run(["rm", "-rf", work])


if __name__ == "__main__":
    main()
