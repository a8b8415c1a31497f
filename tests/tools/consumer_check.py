#!/usr/bin/python3
"""A downstream benchmark pipeline's view of a run's power artifacts, written from its contract.

Usage: consumer_check.py LOG_DIR

Reads the GPU package (LOG_DIR/power/samples.csv, manifest.json, windows/*.json) and the CPU
package (LOG_DIR/power/cpu/samples.csv) the way such a consumer does, and checks them
strictly. Exit 0 printing "ok ..." lines and, for every completed window, the CPU energy of
every socket ("energy <window> cpu/<host>/socket<n> <joules>"); exit 1 printing each failure
as "FAIL <reason_code>: <detail>"; exit 2 on usage errors. Python 3 standard library only.

The contract, as this checker applies it:

GPU package
- samples.csv header exactly one of the v1..v3 GPU headers (samples_csv_header_mismatch);
  every row has the header's cell count, a schema_version cell equal to the header's version
  and a finite timestamp_unix (samples_csv_malformed); gpu_index a non-negative integer
  (gpu_index_missing); gpu_uuid non-empty (gpu_uuid_missing); power_w a finite
  non-negative number (invalid_power_value); (scrape_seq, hostname, gpu_index) unique
  (duplicate_sample_row).
- manifest.json a JSON object with the keys in MANIFEST_KEYS (manifest_missing,
  manifest_malformed, manifest_key_missing); every expected_devices entry names hostname
  and gpu_index.
- windows/*.json: at least one (measurement_window_missing); each an object with every key
  in WINDOW_KEYS, numeric start and end with end >= start (measurement_window_malformed).
  Windows whose status is "completed" are checked against the CPU package; others are
  listed and skipped.

CPU package
- samples.csv header exactly the v1 or v2 CPU header; anything else (the v3 header
  included) rejects the file whole (cpu_samples_header_mismatch).
- Every row: the header's cell count, a finite timestamp_unix, a non-empty hostname, a
  non-negative integer socket_id (cpu_samples_malformed); a schema_version cell equal to
  the header's version (cpu_schema_version_mismatch); power_w a finite non-negative number
  (cpu_invalid_power_value).
- One `source` per sensor kind per host (cpu_source_conflict); the kind is the sensor label
  with its digits dropped ("CPU0:cpuSidePowerUsageW" and "CPU1:cpuSidePowerUsageW" are one
  kind).
- Every host of the GPU package's samples has CPU rows (cpu_host_missing) for every socket
  0..N-1, N the largest socket count of those hosts (cpu_sockets_incomplete).
- Timestamps unique per (host, socket) (v1, one row per rail: per (host, socket, sensor))
  (cpu_duplicate_timestamp).
- For every completed window and every series of those hosts: a sample at or before the
  window start and one at or after its end (measurement_window_not_bracketed), and no two
  consecutive samples more than MAX_GAP_S apart from the last sample at or before the
  start to the first at or after the end (sample_gap_exceeded).
- Energy: the trapezoid rule over exactly [start, end], the power at an edge interpolated
  linearly between the samples around it (a sample on the edge is used as it is). v2 has one
  series per socket (power_w); v1 one per rail, printed as cpu/<host>/socket<n>/<sensor>.
"""

import csv
import glob
import io
import json
import math
import os
import re
import sys

MAX_GAP_S = 3.0

GPU_HEADERS = {
    1: "schema_version,timestamp_unix,scrape_seq,hostname,gpu_index,gpu_uuid,power_w",
    2: "schema_version,timestamp_unix,scrape_seq,hostname,gpu_index,gpu_uuid,power_w,"
    "gpu_util_pct,sm_active",
    3: "schema_version,timestamp_unix,scrape_seq,hostname,gpu_index,gpu_uuid,power_w,"
    "gpu_util_pct,sm_active,temperature_c",
}
CPU_HEADERS = {
    1: "schema_version,timestamp_unix,hostname,source,sensor,socket_id,power_w,total_power_w",
    2: "schema_version,timestamp_unix,hostname,source,sensor,socket_id,power_w,cpu_rail_w,soc_w,"
    "dram_w,total_power_w",
}
MANIFEST_KEYS = ("expected_devices",)
WINDOW_KEYS = (
    "schema_version",
    "benchmark_type",
    "result_path",
    "concurrency",
    "benchmark_start_time_unix",
    "benchmark_end_time_unix",
    "duration",
    "clock_source",
    "status",
    "reason",
)


class Report:
    def __init__(self):
        self.failures = []
        self.oks = []
        self.energy = []

    def fail(self, code, detail):
        self.failures.append((code, detail))

    def ok(self, text):
        self.oks.append(text)


def finite(text):
    """The cell as a float when it is a finite number, else None."""
    try:
        value = float(text)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


def non_negative_int(text):
    if text is None or not re.fullmatch(r"[0-9]+", text):
        return None
    return int(text)


def read_csv(path):
    """(header line, rows as lists) of a CSV file, the csv module's default dialect."""
    with open(path, "rb") as f:
        raw = f.read()
    text = raw.decode("utf-8", errors="replace")
    records = list(csv.reader(io.StringIO(text, newline="")))
    if not records:
        return None, []
    return ",".join(records[0]), records[1:]


# ---- GPU package ---------------------------------------------------------------------------


def check_gpu_samples(power, report):
    """The hosts of the GPU samples (None when the file could not be read)."""
    path = os.path.join(power, "samples.csv")
    if not os.path.isfile(path):
        report.fail("samples_csv_missing", path + ": not found")
        return None
    header, rows = read_csv(path)
    version = next((v for v, h in GPU_HEADERS.items() if h == header), None)
    if version is None:
        report.fail("samples_csv_header_mismatch",
                    "%s: header %r is no GPU samples header" % (path, header))
        return None
    names = header.split(",")
    seen = set()
    hosts = set()
    before = len(report.failures)
    for line, cells in enumerate(rows, start=2):
        where = "%s:%d" % (path, line)
        if len(cells) != len(names):
            report.fail("samples_csv_malformed",
                        "%s: %d cells, the header has %d" % (where, len(cells), len(names)))
            continue
        row = dict(zip(names, cells))
        if row["schema_version"] != str(version):
            report.fail("samples_csv_malformed", "%s: schema_version %r in a v%d file"
                        % (where, row["schema_version"], version))
        if finite(row["timestamp_unix"]) is None:
            report.fail("samples_csv_malformed", "%s: timestamp_unix %r is not a finite number"
                        % (where, row["timestamp_unix"]))
        if not row["hostname"]:
            report.fail("samples_csv_malformed", "%s: empty hostname" % where)
        index = non_negative_int(row["gpu_index"])
        if index is None:
            report.fail("gpu_index_missing", "%s: gpu_index %r is not a non-negative integer"
                        % (where, row["gpu_index"]))
        if not row["gpu_uuid"].strip():
            report.fail("gpu_uuid_missing", "%s: empty gpu_uuid" % where)
        power_w = finite(row["power_w"])
        if power_w is None or power_w < 0:
            report.fail("invalid_power_value", "%s: power_w %r is not a finite non-negative number"
                        % (where, row["power_w"]))
        key = (row["scrape_seq"], row["hostname"], row["gpu_index"])
        if key in seen:
            report.fail("duplicate_sample_row",
                        "%s: (scrape_seq, hostname, gpu_index) %r seen before" % (where, key))
        seen.add(key)
        if row["hostname"]:
            hosts.add(row["hostname"])
    if len(report.failures) == before:
        report.ok("GPU samples.csv v%d: %d rows, hosts %s"
                  % (version, len(rows), ",".join(sorted(hosts))))
    return hosts


def check_gpu_manifest(power, report):
    path = os.path.join(power, "manifest.json")
    if not os.path.isfile(path):
        report.fail("manifest_missing", path + ": not found")
        return
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        report.fail("manifest_malformed", "%s: %s" % (path, e))
        return
    if not isinstance(doc, dict):
        report.fail("manifest_malformed", "%s: not a JSON object" % path)
        return
    missing = [k for k in MANIFEST_KEYS if k not in doc]
    for key in missing:
        report.fail("manifest_key_missing", "%s: no %r" % (path, key))
    devices = doc.get("expected_devices")
    if "expected_devices" in doc and not isinstance(devices, list):
        report.fail("manifest_malformed", "%s: expected_devices is not a list" % path)
        return
    bad = False
    for i, device in enumerate(devices or []):
        if not isinstance(device, dict) or "hostname" not in device or "gpu_index" not in device:
            report.fail("manifest_malformed",
                        "%s: expected_devices[%d] lacks hostname or gpu_index" % (path, i))
            bad = True
    if not missing and not bad:
        report.ok("GPU manifest.json: keys %s present" % ", ".join(MANIFEST_KEYS))


def load_windows(power, report):
    """[(name, start, end)] of the completed windows."""
    paths = sorted(glob.glob(os.path.join(power, "windows", "*.json")))
    if not paths:
        report.fail("measurement_window_missing",
                    os.path.join(power, "windows") + ": no *.json")
        return []
    out = []
    for path in paths:
        name = os.path.basename(path)
        try:
            with open(path, encoding="utf-8") as f:
                doc = json.load(f)
        except (OSError, ValueError) as e:
            report.fail("measurement_window_malformed", "%s: %s" % (path, e))
            continue
        if not isinstance(doc, dict):
            report.fail("measurement_window_malformed", "%s: not a JSON object" % path)
            continue
        missing = [k for k in WINDOW_KEYS if k not in doc]
        if missing:
            report.fail("measurement_window_malformed", "%s: no %s" % (path, ", ".join(missing)))
            continue
        start = doc["benchmark_start_time_unix"]
        end = doc["benchmark_end_time_unix"]
        numbers = all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
            for v in (start, end)
        )
        if not numbers or end < start:
            report.fail("measurement_window_malformed", "%s: start %r, end %r" % (path, start, end))
            continue
        if doc["status"] != "completed":
            report.ok("window %s: status %r, not checked" % (name, doc["status"]))
            continue
        out.append((name, float(start), float(end)))
    return out


# ---- CPU package ---------------------------------------------------------------------------


def sensor_kind(sensor):
    return re.sub(r"[0-9]+", "", sensor)


def load_cpu(power, report):
    """{series key: [(t, w)] ascending}, version; None when the file is refused whole.
    Keys: (host, socket) for v2, (host, socket, sensor) for v1."""
    path = os.path.join(power, "cpu", "samples.csv")
    if not os.path.isfile(path):
        report.fail("cpu_samples_missing", path + ": not found")
        return None, None
    header, rows = read_csv(path)
    version = next((v for v, h in CPU_HEADERS.items() if h == header), None)
    if version is None:
        report.fail("cpu_samples_header_mismatch",
                    "%s: header %r is neither the v1 nor the v2 header" % (path, header))
        return None, None
    names = header.split(",")
    series = {}
    sources = {}  # (host, kind) -> {source: first line}
    stamps = set()
    before = len(report.failures)
    for line, cells in enumerate(rows, start=2):
        where = "%s:%d" % (path, line)
        if len(cells) != len(names):
            report.fail("cpu_samples_malformed",
                        "%s: %d cells, the header has %d" % (where, len(cells), len(names)))
            continue
        row = dict(zip(names, cells))
        if row["schema_version"] != str(version):
            report.fail("cpu_schema_version_mismatch", "%s: schema_version %r in a v%d file"
                        % (where, row["schema_version"], version))
        t = finite(row["timestamp_unix"])
        socket = non_negative_int(row["socket_id"])
        if t is None or not row["hostname"] or socket is None:
            report.fail("cpu_samples_malformed", "%s: timestamp_unix %r, hostname %r, socket_id %r"
                        % (where, row["timestamp_unix"], row["hostname"], row["socket_id"]))
            continue
        w = finite(row["power_w"])
        if w is None or w < 0:
            report.fail("cpu_invalid_power_value",
                        "%s: power_w %r is not a finite non-negative number"
                        % (where, row["power_w"]))
            continue
        host = row["hostname"]
        sources.setdefault((host, sensor_kind(row["sensor"])), {}).setdefault(row["source"], line)
        key = (host, socket) if version == 2 else (host, socket, row["sensor"])
        if (key, t) in stamps:
            report.fail("cpu_duplicate_timestamp", "%s: %s has a row at %r already"
                        % (where, "/".join(map(str, key)), row["timestamp_unix"]))
            continue
        stamps.add((key, t))
        series.setdefault(key, []).append((t, w))
    for (host, kind), seen in sorted(sources.items()):
        if len(seen) > 1:
            listed = ", ".join("%s (line %d)" % s for s in seen.items())
            report.fail("cpu_source_conflict", "%s: host %s, sensor kind %r has sources %s"
                        % (path, host, kind, listed))
    for key in series:
        series[key].sort()
    if len(report.failures) == before:
        report.ok("CPU samples.csv v%d: %d rows, %d series"
                  % (version, len(rows), len(series)))
    return series, version


def check_sockets(series, hosts, report):
    by_host = {}
    for key in series:
        by_host.setdefault(key[0], set()).add(key[1])
    wanted = max((max(by_host[h]) + 1 for h in hosts if h in by_host), default=0)
    good = True
    for host in sorted(hosts):
        if host not in by_host:
            report.fail("cpu_host_missing", "host %s of the GPU samples has no CPU rows" % host)
            good = False
            continue
        lacking = sorted(set(range(wanted)) - by_host[host])
        if lacking:
            report.fail("cpu_sockets_incomplete", "host %s: no CPU rows for socket %s (want 0..%d)"
                        % (host, ",".join(map(str, lacking)), wanted - 1))
            good = False
    if good and hosts:
        report.ok("CPU sockets 0..%d on every GPU host (%d)" % (wanted - 1, len(hosts)))


def label(key):
    text = "cpu/%s/socket%d" % (key[0], key[1])
    return text + "/" + key[2] if len(key) > 2 else text


def at(samples, i, j, x):
    (ta, wa), (tb, wb) = samples[i], samples[j]
    return wa + (wb - wa) * (x - ta) / (tb - ta)


def integrate(samples, start, end):
    """Joules over exactly [start, end]; samples bracket both edges."""
    times = [t for t, _ in samples]
    lo = next(i for i, t in enumerate(times) if t >= start)
    hi = max(i for i, t in enumerate(times) if t <= end) + 1  # first index after the window
    xs, ys = [], []
    if times[lo] != start:
        xs.append(start)
        ys.append(at(samples, lo - 1, lo, start))
    xs += times[lo:hi]
    ys += [w for _, w in samples[lo:hi]]
    if times[hi - 1] != end:
        xs.append(end)
        ys.append(at(samples, hi - 1, hi, end))
    return sum((xs[k + 1] - xs[k]) * (ys[k + 1] + ys[k]) / 2.0 for k in range(len(xs) - 1))


def check_window(name, start, end, series, hosts, report):
    good = True
    results = []
    for key in sorted(k for k in series if k[0] in hosts):
        samples = series[key]
        times = [t for t, _ in samples]
        before = [i for i, t in enumerate(times) if t <= start]
        after = [i for i, t in enumerate(times) if t >= end]
        if not before or not after:
            missing = "at or before the start" if not before else "at or after the end"
            report.fail("measurement_window_not_bracketed",
                        "window %s [%r, %r]: %s has no sample %s"
                        % (name, start, end, label(key), missing))
            good = False
            continue
        first, last = before[-1], after[0]
        gaps = [(times[i + 1] - times[i], times[i]) for i in range(first, last)]
        worst = max(gaps, default=(0.0, start))
        if worst[0] > MAX_GAP_S:
            report.fail("sample_gap_exceeded",
                        "window %s: %s samples %.3f s apart (from %r), over %.1f s"
                        % (name, label(key), worst[0], worst[1], MAX_GAP_S))
            good = False
            continue
        results.append((key, integrate(samples, start, end), worst[0]))
    if good:
        largest = max((g for _, _, g in results), default=0.0)
        report.ok("window %s [%r, %r]: %d CPU series bracketed, largest gap %.3f s"
                  % (name, start, end, len(results), largest))
        for key, joules, _ in results:
            report.energy.append((name, label(key), joules))


def check(log_dir):
    report = Report()
    power = os.path.join(log_dir, "power")
    hosts = check_gpu_samples(power, report)
    check_gpu_manifest(power, report)
    windows = load_windows(power, report)
    series, _ = load_cpu(power, report)
    if series is not None and hosts is not None:
        check_sockets(series, hosts, report)
        for name, start, end in windows:
            check_window(name, start, end, series, hosts, report)
    return report


def main(argv):
    if len(argv) != 2 or argv[1].startswith("-"):
        print("usage: consumer_check.py LOG_DIR", file=sys.stderr)
        return 2
    if not os.path.isdir(argv[1]):
        print("consumer_check.py: %s is not a directory" % argv[1], file=sys.stderr)
        return 2
    report = check(argv[1])
    for text in report.oks:
        print("ok " + text)
    for code, detail in report.failures:
        print("FAIL %s: %s" % (code, detail))
    if report.failures:
        return 1
    for window, series_label, joules in report.energy:
        print("energy %s %s %r" % (window, series_label, joules))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
