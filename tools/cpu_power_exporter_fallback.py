#!/usr/bin/env python3
"""CPU power exporter, python3 standard library only: the fallback `cpu-power run` starts on
a node when no cpu-power-exporter binary can be found.

ACPI only (no --source): it serves the same `cpu_power_acpi_watts` family as the binary, with
the same labels in the same order (sensor, type, socket, oem_info, source), the same value
rules (zero, negative, non-finite, the firmware's invalid value, readings above 10,000 W and
failed reads are never values) and the same readiness line (`listening addr=<ip:port>`).
Before it listens it walks the binary's ACPI liveness rule (`--source acpi`): some channel must
be a socket total, and some total must read positive on a first probe or on one retry 1 s
later (each probe waits up to --max-age-s for every total's read); otherwise it exits 1 with
the binary's `Error:` line, so that a session counts the node as failed, not healthy. Sensors are read on one
thread per hwmon node, never on a request thread, so a hung firmware read cannot block
/health or /metrics; a reading older than --max-age-s is withheld.

Slow clients: a request must arrive whole within REQUEST_DEADLINE_S of its connection's accept
(or of the previous response on it), however slowly its bytes trickle in, and at most
MAX_CONNECTIONS connections are served at once (one thread each); one over that is closed at
accept. This is weaker than the binary, which keeps room for complete requests however many
slow ones arrive: here a flood of slow connections can hold every slot for up to 5 s.
"""

import argparse
import datetime
import http.server
import math
import os
import re
import signal
import socket
import sys
import threading
import time

FIRMWARE_INVALID_UW = "4294967295000"
MAX_SOCKET_WATTS = 10_000.0  # the physical bound of the binary and the collectors
PROBES = 2  # the liveness probe: a first pass and one retry
PROBE_RETRY_DELAY_S = 1.0

# (kind, phrase): the first phrase, in this order, directly followed by digits wins. No phrase
# gives "module": a firmware "Module Power Socket N" meter stays unclassified (type="other"),
# as in the binary; module power comes from NVML alone, which this fallback does not read.
PHRASES = [
    ("total", "grace power socket "),
    ("total", "total power socket "),
    ("total", "total power in uw socket "),
    ("total", "total input power socket "),
    ("total", "total input power in uw socket "),
    ("cpu_rail", "cpu rail power socket "),
    ("cpu_rail", "cpu rail power in uw socket "),
    ("cpu_rail", "cpu rail input power socket "),
    ("cpu_rail", "cpu rail input power in uw socket "),
    ("cpu_rail", "cpu power socket "),
    ("cpu_rail", "cpu power in uw socket "),
    ("cpu_rail", "cpu input power socket "),
    ("cpu_rail", "cpu input power in uw socket "),
    ("soc", "soc rail power socket "),
    ("soc", "soc rail power in uw socket "),
    ("soc", "soc rail input power socket "),
    ("soc", "soc rail input power in uw socket "),
    ("soc", "sysio power socket "),
    ("dram", "dram power socket "),
    ("dram", "dram power in uw socket "),
    ("dram", "dram input power socket "),
    ("dram", "dram input power in uw socket "),
]

HELP = "# HELP cpu_power_acpi_watts Grace CPU power rail reading from ACPI hwmon (W).\n"
TYPE = "# TYPE cpu_power_acpi_watts gauge\n"
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
REQUEST_DEADLINE_S = 5.0
MAX_CONNECTIONS = 512


def log(level, message):
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    sys.stdout.write(f"{now} {level:>5} cpu_power_exporter: {message}\n")
    sys.stdout.flush()


def classify(oem_info):
    text = oem_info.lower()
    for kind, phrase in PHRASES:
        at = text.find(phrase)
        if at < 0:
            continue
        digits = re.match(r"[0-9]+", text[at + len(phrase):])
        if digits:
            return kind, digits.group(0)
    return "other", ""


def natural_key(name):
    m = re.search(r"([0-9]+)$", name)
    return (name[: m.start()] if m else name, int(m.group(1)) if m else -1, name)


def read_text(path):
    try:
        with open(path, "r", encoding="utf-8", errors="replace") as f:
            return f.read(4096).strip()
    except OSError:
        return ""


def escape(value):
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def watts(text):
    """Watts from a power*_average text (microwatts), or None when it is no value."""
    text = text.strip()
    if not text or text == FIRMWARE_INVALID_UW:
        return None
    try:
        w = float(text) / 1e6
    except ValueError:
        return None
    return w if math.isfinite(w) and 0 < w <= MAX_SOCKET_WATTS else None


class Channel:
    def __init__(self, hwmon, channel, value_path, oem_info, has_metadata):
        self.hwmon = hwmon
        self.channel = channel
        self.sensor = f"{hwmon}/{channel}"
        self.value_path = value_path
        self.oem_info = oem_info
        self.has_metadata = has_metadata
        kind, sock = classify(oem_info)
        self.socket = sock
        self.labels = (
            f'sensor="{escape(self.sensor)}",type="{kind}",socket="{sock}",'
            f'oem_info="{escape(oem_info)}",source="acpi"'
        )
        self.kind = kind
        self.value = None  # (watts, monotonic time of the read's midpoint)
        self.value_start = None  # monotonic start of the read that gave self.value
        self.last_start = None  # monotonic start of the last completed read


def discover(root):
    """The ACPI power_meter channels under root, on both kernel layouts, in numeric order."""
    try:
        nodes = sorted((n for n in os.listdir(root) if n.startswith("hwmon")), key=natural_key)
    except OSError as e:
        raise SystemExit(f"Error: cannot list {root}: {e.strerror}")
    channels, by_identity = [], {}
    for node in nodes:
        node_dir = os.path.join(root, node)
        if "power_meter" not in (read_text(f"{node_dir}/name"), read_text(f"{node_dir}/device/name")):
            continue
        for sub in ("", "/device"):
            directory = node_dir + sub
            try:
                names = os.listdir(directory)
            except OSError:
                continue
            files = {}
            for name in names:
                m = re.fullmatch(r"(power[0-9]+)_(average|input)", name)
                if not m or os.path.isdir(os.path.join(directory, name)):
                    continue
                if m.group(1) not in files or m.group(2) == "average":
                    files[m.group(1)] = name
            for channel, name in files.items():
                oem = read_text(f"{directory}/{channel}_oem_info") or read_text(f"{directory}/{channel}_label")
                c = Channel(node, channel, os.path.join(directory, name), oem or channel, bool(oem))
                identity = os.path.realpath(c.value_path)
                if identity not in by_identity:
                    by_identity[identity] = len(channels)
                    channels.append(c)
                elif c.has_metadata and not channels[by_identity[identity]].has_metadata:
                    channels[by_identity[identity]] = c
    channels.sort(key=lambda c: (natural_key(c.hwmon), natural_key(c.channel)))
    return channels


class Readers:
    """One thread per hwmon node, each reading its channels on a fixed cadence."""

    def __init__(self, channels, interval_s):
        self.lock = threading.Lock()
        self.changed = threading.Condition(self.lock)
        groups = {}
        for c in channels:
            groups.setdefault(c.hwmon, []).append(c)
        for hwmon, members in groups.items():
            t = threading.Thread(target=self.run, args=(members, interval_s), name=hwmon, daemon=True)
            t.start()

    def run(self, members, interval_s):
        while True:
            cycle = time.monotonic()
            for c in members:
                start = time.monotonic()
                value = watts(read_text(c.value_path))
                end = time.monotonic()
                with self.changed:
                    c.last_start = start
                    if value is not None:
                        c.value = (value, (start + end) / 2)
                        c.value_start = start
                    self.changed.notify_all()
            time.sleep(max(0.0, cycle + interval_s - time.monotonic()))

    def wait_live(self, rows, since, timeout_s):
        """Waits until each of rows has completed a read started at or after since, or for
        timeout_s; returns how many then hold a value read since then (the binary's
        SampleTable::wait_live)."""
        with self.changed:
            self.changed.wait_for(
                lambda: all(c.last_start is not None and c.last_start >= since for c in rows), timeout_s
            )
            return sum(1 for c in rows if c.value_start is not None and c.value_start >= since)


def probe_acpi(root, channels, readers, max_age_s):
    """The binary's ACPI rung (sources/ladder.cpp): None when ACPI is live, else the reason."""
    totals = [c for c in channels if c.kind == "total"]
    if not totals:
        found = ", ".join(sorted({c.oem_info for c in channels}))
        return f"no ACPI socket-total power_meter channels under {root} (found: {found})"
    live = readers.wait_live(totals, time.monotonic(), max_age_s)
    if live == 0:
        time.sleep(PROBE_RETRY_DELAY_S)
        live = readers.wait_live(totals, time.monotonic(), max_age_s)
    if live == 0:
        return (
            f"no ACPI socket-total power_meter sensor under {root} read positive across "
            f"{PROBES} probe(s) ({len(channels)} sensors discovered)"
        )
    if live < len(totals):
        with readers.lock:
            now, missing = time.monotonic(), []
            for c in totals:
                fresh = c.value is not None and now - c.value[1] <= max_age_s
                if not fresh and c.socket not in missing:
                    missing.append(c.socket)
        log(
            "WARN",
            "ACPI socket totals report non-zero power on some sockets only; using ACPI, and the "
            "node's power is incomplete while the others give none "
            f"live={live} total={len(totals)} sockets_without_power={','.join(missing)}",
        )
    else:
        log("INFO", f"ACPI socket totals report non-zero power; using ACPI live={live} total={len(totals)}")
    return None


def make_handler(channels, readers, max_age_s):
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        timeout = REQUEST_DEADLINE_S  # no single read waits longer

        def handle_one_request(self):
            # The whole request, not each read, must come within the deadline: when it runs
            # out, shutting the socket ends the blocked read and the connection.
            timer = threading.Timer(REQUEST_DEADLINE_S, self.expire)
            timer.daemon = True
            timer.start()
            try:
                super().handle_one_request()
            finally:
                timer.cancel()

        def expire(self):
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

        def log_message(self, *args):  # no access log
            pass

        def reply(self, code, body, content_type="text/plain", extra=None, head=False):
            data = body.encode("utf-8")
            self.send_response(code)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            for k, v in (extra or {}).items():
                self.send_header(k, v)
            self.end_headers()
            if not head:
                self.wfile.write(data)

        def metrics(self):
            now = time.monotonic()
            lines = [HELP, TYPE]
            with readers.lock:
                for c in channels:
                    if c.value and now - c.value[1] <= max_age_s:
                        lines.append(f"cpu_power_acpi_watts{{{c.labels}}} {c.value[0]:.6f}\n")
            return "".join(lines)

        def route(self, head):
            path = self.path.split("?", 1)[0]
            if path == "/metrics":
                self.reply(200, self.metrics(), CONTENT_TYPE, head=head)
            elif path == "/health":
                self.reply(200, "ok\n", head=head)
            else:
                self.reply(404, "404 Not Found\n", head=head)

        def do_GET(self):
            self.route(False)

        def do_HEAD(self):
            self.route(True)

        def refuse(self):
            self.reply(405, "405 Method Not Allowed\n", extra={"Allow": "GET, HEAD"})

        do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = refuse

    return Handler


class BoundedServer(http.server.ThreadingHTTPServer):
    """One thread per connection, at most MAX_CONNECTIONS of them."""

    daemon_threads = True
    request_queue_size = 128

    def __init__(self, *args, **kwargs):
        self.slots = threading.BoundedSemaphore(MAX_CONNECTIONS)
        self.refused = 0
        super().__init__(*args, **kwargs)

    def process_request(self, request, client_address):
        if not self.slots.acquire(blocking=False):
            self.refused += 1
            if self.refused == 1:
                log("WARN", f"connection limit reached: {MAX_CONNECTIONS} connections open, closing new ones")
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except Exception:
            self.slots.release()
            raise

    def process_request_thread(self, request, client_address):
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.slots.release()


def main():
    parser = argparse.ArgumentParser(description="Grace CPU power exporter (python3 fallback, ACPI only)")
    parser.add_argument("--port", type=int, default=9405, help="listen port (0 picks a free one)")
    parser.add_argument("--bind", default="0.0.0.0", help="listen address, an IPv4 or IPv6 literal")
    parser.add_argument("--hwmon-root", default="/sys/class/hwmon", help="hwmon class directory")
    parser.add_argument("--read-interval-ms", type=int, default=100, help="sensor read cadence")
    parser.add_argument("--max-age-s", type=float, default=3.0, help="withhold older readings")
    args = parser.parse_args()  # usage errors exit 2
    if not 0 <= args.port <= 65535:
        parser.error("--port must be in 0..65535")

    channels = discover(args.hwmon_root)
    if not channels:
        print(f"Error: no ACPI power_meter hwmon sensors found under {args.hwmon_root}", file=sys.stderr)
        return 1
    readers = Readers(channels, max(args.read_interval_ms, 1) / 1000.0)
    reason = probe_acpi(args.hwmon_root, channels, readers, args.max_age_s)
    if reason:
        print(f"Error: {reason}", file=sys.stderr)
        return 1
    log("INFO", f"discovered ACPI sensors count={len(channels)} source=acpi (python fallback)")

    server_class = BoundedServer
    if ":" in args.bind:
        server_class = type("Server6", (BoundedServer,), {"address_family": socket.AF_INET6})
    try:
        server = server_class((args.bind, args.port), make_handler(channels, readers, args.max_age_s))
    except OSError as e:
        print(f"Error: cannot listen on {args.bind}:{args.port}: {e.strerror}", file=sys.stderr)
        return 1
    host, port = server.server_address[:2]
    log("INFO", f"listening addr={'[' + host + ']' if ':' in host else host}:{port}")

    def shutdown(signum, _frame):
        log("INFO", f"shutting down signal={signal.Signals(signum).name}")
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, shutdown)
    signal.signal(signal.SIGINT, shutdown)
    server.serve_forever(poll_interval=0.2)
    server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
