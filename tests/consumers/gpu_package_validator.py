#!/usr/bin/python3
"""The reference's own offline validator of a GPU power package, written as a test from the contract.

Usage: gpu_package_validator.py RUN_DIR [--power-dir DIR] [--result-root DIR]
                                [--expect-role ROLE=COUNT]... [--require-distinct-het-groups]

It reads the GPU (dcgm-exporter) package of a finished run, RUN_DIR/power/ by default
(manifest.json, samples.csv, windows/*.json), the way the reference's artifact validator does:
the manifest supplies the expected topology and producer identity, never the verdict; every
claim that can be derived from the files is derived again (samples, observed devices, the
window audit, artifact errors, the reasons they give, the publication verdict) and must agree
with what the manifest stores. Window result paths resolve under --result-root (RUN_DIR).

Output: one line per refusal, "REFUSED <reason_code> <file>: <detail>", then a verdict line,
"ACCEPTED <power dir>" (exit 0) or "REFUSED <n> finding(s)" (exit 1). Exit 2 on usage errors.
Python 3 standard library only.

What such a consumer accepts is narrower than what this project's readers accept: samples.csv
must carry the GPU v1 or v2 header (the reference's readers of its own contract version; a v3
file is refused whole, samples_csv_header_mismatch, and everything derived from the samples
then fails with it). The rules are quoted from docs/formats.md ("GPU leg") beside the code that
applies them; the few that only the consumer applies (stored evidence must equal the
recomputation, the wire fields) say so.
"""

import argparse
import csv
import hashlib
import itertools
import json
import math
import os
import re
import sys
from pathlib import Path, PurePosixPath

SCHEMA_VERSION = 1
PRODUCER = "srt-slurm.dcgm-power"
POWER_METRIC = "DCGM_FI_DEV_POWER_USAGE"
POWER_UNIT = "W"
POWER_SCOPE = "gpu_device_board_as_reported_by_dcgm"
CLOCK_SOURCE = "head_node_unix_clock"

# "v1  schema_version,timestamp_unix,scrape_seq,hostname,gpu_index,gpu_uuid,power_w
#  v2  ...,gpu_util_pct,sm_active" -- the consumer reads these two and no other.
GPU_HEADERS = {
    1: ["schema_version", "timestamp_unix", "scrape_seq", "hostname", "gpu_index", "gpu_uuid", "power_w"],
    2: ["schema_version", "timestamp_unix", "scrape_seq", "hostname", "gpu_index", "gpu_uuid", "power_w",
        "gpu_util_pct", "sm_active"],
}
# "gpu_util_pct: percent in 0..100, or empty (v2+)"; "sm_active: fraction in 0..1, or empty (v2+)"
UTILIZATION_COLUMNS = (("gpu_util_pct", "DCGM_FI_DEV_GPU_UTIL", "percent", 100.0),
                       ("sm_active", "DCGM_FI_PROF_SM_ACTIVE", "fraction", 1.0))

# "The 3.0 s gap limit is common::kMaxSampleGapS"
MAX_SAMPLE_GAP_SECONDS = 3.0
# "more than 5% of the expected intervals missing: sample_loss_exceeded"
MAX_MISSING_SAMPLE_FRACTION = 0.05
# "the wall span (end - start) ... differing from duration by more than max(0.5 s, 1% of duration)"
CLOCK_TOLERANCE_S = 0.5
CLOCK_TOLERANCE_FRACTION = 0.01

WORKER_ROLES = ("prefill", "decode", "agg")
WINDOW_STATUSES = ("running", "interrupted", "completed", "failed")

# "Every code a GPU package may carry" (docs/formats.md, Reason codes).
ALL_REASON_CODES = frozenset("""
exporter_startup_timeout exporter_launch_failed exporter_exited endpoint_timeout
endpoint_http_error endpoint_parse_error endpoint_resolution_failed sample_schedule_overrun
power_metric_missing duplicate_power_metric samples_csv_missing samples_csv_header_mismatch
samples_csv_malformed samples_digest_unavailable duplicate_sample_row gpu_index_missing
gpu_uuid_missing invalid_power_value unexpected_device expected_device_missing gpu_uuid_changed
mig_instance_unsupported timestamp_non_monotonic conflicting_worker_roles conflicting_het_groups
collector_exception collector_interrupted collector_join_timeout benchmark_child_reap_timeout
measurement_window_missing measurement_window_unexpected measurement_window_duplicate
measurement_window_malformed measurement_window_artifact_path_invalid
measurement_window_incomplete measurement_window_result_missing
measurement_window_result_mismatch measurement_window_result_path_invalid
measurement_window_clock_mismatch measurement_window_not_bracketed sample_gap_exceeded
sample_loss_exceeded clock_sync_unverified
""".split())
# "incomplete when any fatal lifecycle reason is present: exporter_exited, collector_exception,
#  collector_interrupted, collector_join_timeout, benchmark_child_reap_timeout"
FATAL_LIFECYCLE_REASONS = frozenset(("exporter_exited", "collector_exception", "collector_interrupted",
                                     "collector_join_timeout", "benchmark_child_reap_timeout"))
# "failed when required and a startup reason is present: exporter_startup_timeout,
#  exporter_launch_failed, endpoint_resolution_failed"
STARTUP_FAILURE_REASONS = frozenset(("exporter_startup_timeout", "exporter_launch_failed",
                                     "endpoint_resolution_failed"))
# Consumer rule: a failed launch or resolution can never leave complete evidence on disk.
UNRECOVERABLE_STARTUP_REASONS = frozenset(("exporter_launch_failed", "endpoint_resolution_failed"))
# The reasons a reader derives from the files alone; the manifest's set of these must equal
# the recomputed one (the others happened at run time and are only checked for vocabulary).
DISK_DERIVED_REASONS = frozenset("""
samples_csv_missing samples_csv_header_mismatch samples_csv_malformed duplicate_sample_row
timestamp_non_monotonic unexpected_device expected_device_missing gpu_uuid_changed
conflicting_worker_roles conflicting_het_groups measurement_window_missing
measurement_window_unexpected measurement_window_duplicate measurement_window_malformed
measurement_window_artifact_path_invalid measurement_window_incomplete
measurement_window_result_missing measurement_window_result_mismatch
measurement_window_result_path_invalid measurement_window_clock_mismatch
measurement_window_not_bracketed sample_gap_exceeded sample_loss_exceeded
""".split())

HEX64 = re.compile(r"[0-9a-f]{64}")
GIT_OBJECT_ID = re.compile(r"(?:[0-9a-f]{40}|[0-9a-f]{64})")


def dedupe(values):
    return list(dict.fromkeys(values))


def is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def is_whole(value, minimum=0):
    return isinstance(value, int) and not isinstance(value, bool) and value >= minimum


class Findings:
    """Refusals in the order found: (reason_code, file, detail)."""

    def __init__(self):
        self.items = []

    def add(self, code, where, detail):
        self.items.append((code, where, detail))

    def __bool__(self):
        return bool(self.items)

    def codes(self):
        return [code for code, _, _ in self.items]


# ---------------------------------------------------------------------------- samples.csv


class Row:
    __slots__ = ("schema_version", "timestamp_unix", "scrape_seq", "hostname", "gpu_index", "gpu_uuid",
                 "power_w")

    def __init__(self, **kw):
        for key, value in kw.items():
            setattr(self, key, value)

    @property
    def key(self):
        return (self.scrape_seq, self.hostname, self.gpu_index)


def _parse_row(raw, version):
    header = GPU_HEADERS[version]
    # "a row whose cell count differs from the header's"
    if len(raw) != len(header):
        return None
    try:
        schema_version = int(raw[0])
        timestamp_unix = float(raw[1])
        scrape_seq = int(raw[2])
        gpu_index = int(raw[4])
        power_w = float(raw[6])
        if version >= 2:
            # "an optional cell neither empty nor a number in its range"
            for offset, (_, _, _, top) in enumerate(UTILIZATION_COLUMNS):
                cell = raw[7 + offset]
                if cell != "":
                    value = float(cell)
                    if not math.isfinite(value) or value < 0 or value > top:
                        return None
    except ValueError:
        return None
    hostname, gpu_uuid = raw[3], raw[5]
    # "schema_version not the header's version"; "hostname or gpu_uuid empty"
    if schema_version != version or not hostname or not gpu_uuid:
        return None
    # "timestamp_unix not a finite number"; "power_w not a finite number >= 0"
    if not math.isfinite(timestamp_unix) or not math.isfinite(power_w) or power_w < 0:
        return None
    # "scrape_seq or gpu_index not an integer >= 0"
    if scrape_seq < 0 or gpu_index < 0:
        return None
    return Row(schema_version=schema_version, timestamp_unix=timestamp_unix, scrape_seq=scrape_seq,
               hostname=hostname, gpu_index=gpu_index, gpu_uuid=gpu_uuid, power_w=power_w)


def read_samples(path, strictly_increasing=False):
    """(rows kept, reasons, header version or None), as the strict reader gives them."""
    # "samples_csv_missing: no file at the path (or not a regular file); nothing else is read"
    if not path.is_file():
        return [], ["samples_csv_missing"], None
    reasons, rows, version = [], [], None
    try:
        with open(path, newline="", encoding="utf-8") as handle:
            reader = csv.reader(handle)
            header = next(reader, None)
            # "samples_csv_header_mismatch: the first line is not exactly the expected version's
            #  header ...; no row is read" -- expected here: v1 or v2.
            version = next((v for v, h in GPU_HEADERS.items() if header == h), None)
            if version is None:
                return [], ["samples_csv_header_mismatch"], None
            for raw in reader:
                row = _parse_row(raw, version)
                if row is None:
                    reasons.append("samples_csv_malformed")
                    continue
                rows.append(row)
    except (OSError, UnicodeDecodeError, csv.Error):
        # "a quote never closed; an unreadable file"
        reasons.append("samples_csv_malformed")

    # "duplicate_sample_row: a later row with a (scrape_seq, hostname, gpu_index) already seen:
    #  the first in file order is kept"
    seen, unique = set(), []
    for row in rows:
        if row.key in seen:
            reasons.append("duplicate_sample_row")
            continue
        seen.add(row.key)
        unique.append(row)

    # "timestamp_non_monotonic: a device's timestamps decrease in scrape_seq order (equal times
    #  do not)"
    per_device = {}
    for row in unique:
        per_device.setdefault((row.hostname, row.gpu_index), []).append(row)
    for device_rows in per_device.values():
        ordered = sorted(device_rows, key=lambda r: r.scrape_seq)
        if any((b.timestamp_unix <= a.timestamp_unix) if strictly_increasing else (b.timestamp_unix < a.timestamp_unix)
               for a, b in itertools.pairwise(ordered)):
            reasons.append("timestamp_non_monotonic")
            break
    return unique, dedupe(reasons), version


def observed_devices(rows):
    """"per device (hostname, gpu_index) (sorted) its UUIDs in scrape_seq order of first
    appearance and its sample times, which fill observed_devices and the window coverage"."""
    grouped = {}
    for row in rows:
        grouped.setdefault((row.hostname, row.gpu_index), []).append(row)
    devices = []
    for key in sorted(grouped):
        ordered = sorted(grouped[key], key=lambda r: r.scrape_seq)
        times = [r.timestamp_unix for r in ordered]
        devices.append({
            "hostname": key[0],
            "gpu_index": key[1],
            "gpu_uuids": dedupe(r.gpu_uuid for r in ordered),
            "first_sample_time_unix": min(times),
            "last_sample_time_unix": max(times),
            "_times": sorted(times),
        })
    return devices


def public(device):
    return {k: v for k, v in device.items() if not k.startswith("_")}


def sha256_file(path):
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


# ------------------------------------------------------------------------- manifest topology


class ManifestMalformed(Exception):
    pass


def _text(value, label):
    if not isinstance(value, str) or not value:
        raise ManifestMalformed(f"{label} is not a non-empty string: {value!r}")
    return value


def _whole(value, label, minimum):
    if not is_whole(value, minimum):
        raise ManifestMalformed(f"{label} is not an integer >= {minimum}: {value!r}")
    return value


def expected_devices_of(manifest):
    # "expected_devices: [{hostname, gpu_index, assignments: [{worker_role (prefill, decode or
    #  agg), worker_index, worker_process, het_group (integer or null)}]}]"
    entries = manifest.get("expected_devices") or []
    if not isinstance(entries, list):
        raise ManifestMalformed(f"expected_devices is not a list: {entries!r}")
    devices = []
    for entry in entries:
        if not isinstance(entry, dict):
            raise ManifestMalformed(f"an expected_devices entry is not an object: {entry!r}")
        assignments = entry.get("assignments") or []
        if not isinstance(assignments, list) or not assignments:
            raise ManifestMalformed(f"assignments is not a non-empty list: {assignments!r}")
        parsed = []
        for a in assignments:
            if not isinstance(a, dict):
                raise ManifestMalformed(f"an assignment is not an object: {a!r}")
            if a.get("worker_role") not in WORKER_ROLES:
                raise ManifestMalformed(f"worker_role is not one of {WORKER_ROLES}: {a.get('worker_role')!r}")
            het = a.get("het_group")
            parsed.append({
                "worker_role": a["worker_role"],
                "worker_index": _whole(a.get("worker_index"), "worker_index", 0),
                "worker_process": _whole(a.get("worker_process"), "worker_process", 0),
                "het_group": None if het is None else _whole(het, "het_group", 0),
            })
        devices.append({
            "hostname": _text(entry.get("hostname"), "hostname"),
            "gpu_index": _whole(entry.get("gpu_index"), "gpu_index", 0),
            "assignments": parsed,
        })
    return devices


def expected_windows_of(manifest):
    # "expected_windows: [{benchmark_type, concurrency}]"
    entries = manifest.get("expected_windows") or []
    if not isinstance(entries, list):
        raise ManifestMalformed(f"expected_windows is not a list: {entries!r}")
    out = []
    for entry in entries:
        if not isinstance(entry, dict):
            raise ManifestMalformed(f"an expected_windows entry is not an object: {entry!r}")
        out.append((_text(entry.get("benchmark_type"), "benchmark_type"),
                    _whole(entry.get("concurrency"), "concurrency", 1)))
    return out


def resolve_roles(expected):
    # "conflicting_worker_roles: an expected device whose assignments name other than one
    #  worker_role"
    roles = {}
    for d in expected:
        distinct = {a["worker_role"] for a in d["assignments"]}
        if len(distinct) != 1:
            return {}, ["conflicting_worker_roles"]
        roles[(d["hostname"], d["gpu_index"])] = distinct.pop()
    return roles, []


def resolve_het_groups(expected):
    # "conflicting_het_groups: an expected device whose assignments name other than one
    #  het_group (null counts), or two devices of one host in different groups"
    groups = {}
    for d in expected:
        distinct = {a["het_group"] for a in d["assignments"]}
        if len(distinct) != 1:
            return {}, ["conflicting_het_groups"]
        group = distinct.pop()
        if d["hostname"] in groups and groups[d["hostname"]] != group:
            return {}, ["conflicting_het_groups"]
        groups[d["hostname"]] = group
    return groups, []


def device_reasons(expected, observed):
    """"Device identity reasons (gpu_device_reasons), in this order"."""
    reasons = []
    expected_keys = {(d["hostname"], d["gpu_index"]) for d in expected}
    observed_keys = {(d["hostname"], d["gpu_index"]) for d in observed}
    # "expected_device_missing (no expected device, or an expected key without samples)"
    if not expected_keys or expected_keys - observed_keys:
        reasons.append("expected_device_missing")
    # "unexpected_device"
    if observed_keys - expected_keys:
        reasons.append("unexpected_device")
    # "gpu_uuid_changed (a device with several UUIDs, or a UUID on two devices)"
    if any(len(d["gpu_uuids"]) != 1 for d in observed):
        reasons.append("gpu_uuid_changed")
    else:
        uuids = [d["gpu_uuids"][0] for d in observed]
        if len(set(uuids)) != len(uuids):
            reasons.append("gpu_uuid_changed")
    reasons += resolve_roles(expected)[1]
    reasons += resolve_het_groups(expected)[1]
    return dedupe(reasons)


# ---------------------------------------------------------------------------------- windows


def safe_relative(value):
    # "a safe relative path under the log directory (not empty, not starting with / or ~, no ..
    #  component ...)"
    if not value or value.startswith(("/", "~")):
        return False
    parts = PurePosixPath(value).parts
    return bool(parts) and not any(part in ("..", "") for part in parts)


def stays_below(root, relative):
    # "... resolving below the log directory through symlinks"
    try:
        (root / relative).resolve().relative_to(root.resolve())
    except (ValueError, OSError):
        return False
    return True


def status_table_holds(status, end, duration, reason):
    # | running     | null   | null         | null |
    # | interrupted | null   | null         | non-empty string |
    # | completed   | finite | finite > 0   | null |
    # | failed      | finite | finite > 0   | non-empty string |
    if status == "running":
        return end is None and duration is None and reason is None
    if status == "interrupted":
        return end is None and duration is None and isinstance(reason, str) and bool(reason)
    if not is_number(end) or not is_number(duration) or duration <= 0:
        return False
    if status == "completed":
        return reason is None
    return isinstance(reason, str) and bool(reason)


def parse_window(path, relative, result_root):
    try:
        if path.stat().st_size > 1 << 20:
            return None, "measurement_window_malformed"
        payload = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return None, "measurement_window_malformed"
    # "a file that is not JSON, not an object, over 1 MiB, with schema_version, clock_source,
    #  status, benchmark_type, concurrency or benchmark_start_time_unix wrong ...:
    #  measurement_window_malformed"
    if not isinstance(payload, dict):
        return None, "measurement_window_malformed"
    status = payload.get("status")
    if (not is_whole(payload.get("schema_version"), 0) or payload.get("schema_version") != SCHEMA_VERSION
            or payload.get("clock_source") != CLOCK_SOURCE or status not in WINDOW_STATUSES
            or not isinstance(payload.get("benchmark_type"), str)
            or not is_whole(payload.get("concurrency"), -2**63)  # "a JSON integer (true, 4.0, "4" are not)"
            or not is_number(payload.get("benchmark_start_time_unix"))):
        return None, "measurement_window_malformed"
    # "a result_path that is not a string, not safe, resolves outside the log directory or has
    #  another stem: measurement_window_result_path_invalid (checked before the status table)"
    result_path = payload.get("result_path")
    if not isinstance(result_path, str) or not safe_relative(result_path):
        return None, "measurement_window_result_path_invalid"
    if not stays_below(result_root, result_path) or PurePosixPath(result_path).stem != path.stem:
        return None, "measurement_window_result_path_invalid"
    end, duration = payload.get("benchmark_end_time_unix"), payload.get("duration")
    if not status_table_holds(status, end, duration, payload.get("reason")):
        return None, "measurement_window_malformed"
    return {
        "relative_path": relative,
        "benchmark_type": payload["benchmark_type"],
        "concurrency": payload["concurrency"],
        "result_path": result_path,
        "status": status,
        "start": float(payload["benchmark_start_time_unix"]),
        "end": None if end is None else float(end),
        "duration": None if duration is None else float(duration),
    }, None


def scan_windows(power_dir, result_root, artifact_errors):
    """"Reading windows/ (scan_gpu_windows): every entry, in name order"."""
    parsed, duplicates = {}, set()
    windows_dir = power_dir / "windows"
    # "No windows/ directory: no window, no error"
    if not windows_dir.is_dir():
        return parsed, duplicates
    # "windows/ resolving outside the power directory (a symlink), or unreadable:
    #  measurement_window_artifact_path_invalid on windows, and no window is read"
    if not stays_below(power_dir, "windows"):
        artifact_errors.append({"path": "windows", "reason_codes": ["measurement_window_artifact_path_invalid"]})
        return parsed, duplicates
    try:
        entries = sorted(windows_dir.iterdir(), key=lambda p: p.name)
    except OSError:
        artifact_errors.append({"path": "windows", "reason_codes": ["measurement_window_artifact_path_invalid"]})
        return parsed, duplicates
    for path in entries:
        relative = f"windows/{path.name}"
        # "an entry that is a symlink, not a regular file, or not *.json:
        #  measurement_window_artifact_path_invalid"
        if path.is_symlink() or not path.is_file() or path.suffix != ".json":
            artifact_errors.append({"path": relative, "reason_codes": ["measurement_window_artifact_path_invalid"]})
            continue
        window, reason = parse_window(path, relative, result_root)
        if window is None:
            artifact_errors.append({"path": relative, "reason_codes": [reason]})
            continue
        key = (window["benchmark_type"], window["concurrency"])
        # "two or more usable files with one (benchmark_type, concurrency): every one of them
        #  measurement_window_duplicate"
        if key in duplicates:
            artifact_errors.append({"path": relative, "reason_codes": ["measurement_window_duplicate"]})
            continue
        previous = parsed.pop(key, None)
        if previous is not None:
            duplicates.add(key)
            artifact_errors.append({"path": previous["relative_path"], "reason_codes": ["measurement_window_duplicate"]})
            artifact_errors.append({"path": relative, "reason_codes": ["measurement_window_duplicate"]})
            continue
        parsed[key] = window
    return parsed, duplicates


def check_result(window, result_root):
    # "the result file (<log_dir>/<result_path>): not a regular file or not JSON:
    #  measurement_window_result_missing; not an object, or its benchmark_start_time_unix,
    #  benchmark_end_time_unix and duration not finite numbers equal to the window's:
    #  measurement_window_result_mismatch; the wall span (end - start) <= 0 or differing from
    #  duration by more than max(0.5 s, 1% of duration): measurement_window_clock_mismatch"
    result_file = result_root / window["result_path"]
    if not result_file.is_file():
        return ["measurement_window_result_missing"]
    try:
        result = json.loads(result_file.read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return ["measurement_window_result_missing"]
    if not isinstance(result, dict):
        return ["measurement_window_result_mismatch"]
    for key, mine in (("benchmark_start_time_unix", window["start"]), ("benchmark_end_time_unix", window["end"]),
                      ("duration", window["duration"])):
        value = result.get(key)
        if not is_number(value) or value != mine:
            return ["measurement_window_result_mismatch"]
    wall = window["end"] - window["start"]
    tolerance = max(CLOCK_TOLERANCE_S, CLOCK_TOLERANCE_FRACTION * window["duration"])
    if wall <= 0 or abs(wall - window["duration"]) > tolerance:
        return ["measurement_window_clock_mismatch"]
    return []


def bracketing(times, start, end):
    # "take the last sample at or before start, every sample strictly inside, and the first
    #  sample at or after end (the bracketing samples)"
    before = [t for t in times if t <= start]
    after = [t for t in times if t >= end]
    if not before or not after:
        return None
    return [before[-1], *[t for t in times if start < t < end], after[0]]


def loss_exceeded(sequence, interval):
    # "loss: expected intervals = floor((last - first bracketing sample) /
    #  sample_interval_seconds), observed = distinct bracketing sample times - 1; more than 5%
    #  of the expected intervals missing: sample_loss_exceeded ... A sample_interval_seconds that
    #  is not a finite positive number fails this rule too."
    if not is_number(interval) or interval <= 0:
        return True
    expected = math.floor((sequence[-1] - sequence[0]) / interval)
    if expected <= 0:
        return False
    observed = len(set(sequence)) - 1
    missing = max(0, expected - observed)
    return missing / expected > MAX_MISSING_SAMPLE_FRACTION


def coverage(start, end, expected, observed, interval):
    by_key = {(d["hostname"], d["gpu_index"]): d for d in observed}
    gaps, reasons = {}, []
    # "coverage, for every expected device in (hostname, gpu_index) order"
    for key in sorted({(d["hostname"], d["gpu_index"]) for d in expected}):
        device = by_key.get(key)
        if device is None:
            reasons.append("measurement_window_not_bracketed")
            continue
        # "other than exactly one UUID: gpu_uuid_changed"
        if len(device["gpu_uuids"]) != 1:
            reasons.append("gpu_uuid_changed")
            continue
        sequence = bracketing(device["_times"], start, end)
        # "no samples, or none at or before start, or none at or after end:
        #  measurement_window_not_bracketed"
        if sequence is None:
            reasons.append("measurement_window_not_bracketed")
            continue
        largest = max((b - a for a, b in itertools.pairwise(sequence)), default=0.0)
        gaps[f"{device['hostname']}/{device['gpu_uuids'][0]}"] = largest
        # "the largest gap between consecutive bracketing samples over 3.0 s (3.0 passes):
        #  sample_gap_exceeded"
        if largest > MAX_SAMPLE_GAP_SECONDS:
            reasons.append("sample_gap_exceeded")
        if loss_exceeded(sequence, interval):
            reasons.append("sample_loss_exceeded")
    return gaps, reasons


def validate_windows(power_dir, result_root, expected_windows, expected, observed, interval, artifact_errors):
    """One validation per expected window, as the consumer recomputes it; (validations, parsed)."""
    parsed, duplicates = scan_windows(power_dir, result_root, artifact_errors)
    # "a usable window no one expected: measurement_window_unexpected"
    for key, window in sorted(parsed.items(), key=lambda kv: (kv[0][0], kv[0][1])):
        if key not in set(expected_windows):
            artifact_errors.append({"path": window["relative_path"], "reason_codes": ["measurement_window_unexpected"]})
    validations = []
    for benchmark_type, concurrency in expected_windows:
        window = parsed.get((benchmark_type, concurrency))
        entry = {"benchmark_type": benchmark_type, "concurrency": concurrency, "window_file": None,
                 "power_coverage_valid": False, "reason_codes": [], "per_device_max_sample_gap_seconds": {}}
        # "no usable file: measurement_window_missing, or measurement_window_duplicate when
        #  duplicates removed it; window_file is null"
        if window is None:
            entry["reason_codes"] = ["measurement_window_duplicate" if (benchmark_type, concurrency) in duplicates
                                     else "measurement_window_missing"]
            validations.append(entry)
            continue
        entry["window_file"] = window["relative_path"]
        reasons = []
        # "status not completed: measurement_window_incomplete"
        if window["status"] != "completed":
            reasons.append("measurement_window_incomplete")
        else:
            reasons += check_result(window, result_root)
        gaps = {}
        if not reasons:
            gaps, found = coverage(window["start"], window["end"], expected, observed, interval)
            reasons += found
            # Consumer rule: a window that fails coverage keeps no gap map.
            if found:
                gaps = {}
        entry["reason_codes"] = dedupe(reasons)
        entry["per_device_max_sample_gap_seconds"] = gaps
        # "power_coverage_valid is true when the window has no reason"
        entry["power_coverage_valid"] = not reasons
        validations.append(entry)
    return validations, parsed


def same_json(stored, recomputed):
    """JSON equality where a boolean never passes for a number."""
    if is_number(stored) or is_number(recomputed) or isinstance(stored, float) or isinstance(recomputed, float):
        return is_number(stored) and is_number(recomputed) and stored == recomputed
    if type(stored) is not type(recomputed):
        return False
    if isinstance(stored, list):
        return len(stored) == len(recomputed) and all(same_json(a, b) for a, b in zip(stored, recomputed))
    if isinstance(stored, dict):
        return stored.keys() == recomputed.keys() and all(same_json(stored[k], recomputed[k]) for k in stored)
    return stored == recomputed


# --------------------------------------------------------------------------------- the checks


def check_wire(manifest, findings, where):
    """The manifest's own fields, whatever the files say."""
    # "schema_version 1"; "producer "srt-slurm.dcgm-power""; "source_metric
    #  "DCGM_FI_DEV_POWER_USAGE""; "unit "W""; "power_scope ..."; "timestamp_source
    #  "head_node_unix_clock""
    if not is_whole(manifest.get("schema_version"), 0) or manifest.get("schema_version") != SCHEMA_VERSION:
        findings.add("manifest_key_invalid", where, f"schema_version is {manifest.get('schema_version')!r}, expected 1")
    for key, expected in (("producer", PRODUCER), ("source_metric", POWER_METRIC), ("unit", POWER_UNIT),
                          ("power_scope", POWER_SCOPE), ("timestamp_source", CLOCK_SOURCE)):
        if manifest.get(key) != expected:
            findings.add("manifest_key_invalid", where, f"{key} is {manifest.get(key)!r}, expected {expected!r}")
    # "job_id, run_name: strings"; "producer_version: this build's version" -- the consumer
    # refuses an empty one.
    for key in ("producer_version", "job_id", "run_name"):
        value = manifest.get(key)
        if not (isinstance(value, str) and value):
            findings.add("job_id_invalid" if key == "job_id" else "manifest_key_invalid", where,
                         f"{key} is not a non-empty string: {value!r}")
    # "producer_git_commit: string or null" -- the consumer wants a full lowercase object id.
    commit = manifest.get("producer_git_commit")
    if commit is not None and not (isinstance(commit, str) and GIT_OBJECT_ID.fullmatch(commit)):
        findings.add("manifest_key_invalid", where,
                     f"producer_git_commit is neither null nor a full lowercase Git object ID: {commit!r}")
    # "only complete can publish"
    if manifest.get("status") != "complete":
        findings.add("status_not_complete", where, f"status is {manifest.get('status')!r}, expected 'complete'")
    started, stopped = manifest.get("started_at_unix"), manifest.get("stopped_at_unix")
    if not is_number(started):
        findings.add("manifest_key_invalid", where, "started_at_unix is not a finite number")
    if not is_number(stopped):
        findings.add("manifest_key_invalid", where, "stopped_at_unix is not finite in a terminal manifest")
    elif is_number(started) and stopped < started:
        findings.add("manifest_key_invalid", where, "stopped_at_unix precedes started_at_unix")
    for key in ("sample_interval_seconds", "request_timeout_seconds"):
        value = manifest.get(key)
        if not (is_number(value) and value > 0):
            findings.add("manifest_key_invalid", where, f"{key} is not finite and positive: {value!r}")
    # "it equals the recipe's ceiling on the sample interval"
    interval = manifest.get("sample_interval_seconds")
    if is_number(interval) and interval > MAX_SAMPLE_GAP_SECONDS:
        findings.add("manifest_key_invalid", where,
                     f"sample_interval_seconds {interval} exceeds the {MAX_SAMPLE_GAP_SECONDS} s coverage limit")
    # "max_scrape_duration_seconds: the slowest scrape, or null before the first"
    slowest = manifest.get("max_scrape_duration_seconds")
    if slowest is not None and not (is_number(slowest) and slowest >= 0):
        findings.add("manifest_key_invalid", where, "max_scrape_duration_seconds is neither null nor >= 0")
    for key in ("scrape_count", "sample_row_count"):
        if not is_whole(manifest.get(key), 0):
            findings.add("manifest_key_invalid", where, f"{key} is not a non-negative integer: {manifest.get(key)!r}")
    # "samples_sha256: SHA-256 of the finalized samples.csv, or null" -- a consumer needs it.
    digest = manifest.get("samples_sha256")
    if digest is None:
        findings.add("samples_sha256_missing", where, "samples_sha256 is missing")
    elif not (isinstance(digest, str) and HEX64.fullmatch(digest)):
        findings.add("samples_sha256_missing", where, f"samples_sha256 is not a lowercase SHA-256 digest: {digest!r}")
    required = manifest.get("required")
    if not isinstance(required, bool):
        findings.add("manifest_key_invalid", where, f"required is {required!r}, expected a boolean")
    # "publication_valid: null until terminal, then the verdict"
    if not isinstance(manifest.get("publication_valid"), bool):
        findings.add("manifest_key_invalid", where,
                     f"publication_valid is {manifest.get('publication_valid')!r}, expected a boolean")
    # "reason_codes: every reason of the run, each once, in the order first recorded"
    reasons = manifest.get("reason_codes")
    if not isinstance(reasons, list) or not all(isinstance(r, str) for r in reasons):
        findings.add("manifest_key_invalid", where, "reason_codes is not a list of strings")
    else:
        unknown = sorted(set(reasons) - ALL_REASON_CODES)
        if unknown:
            findings.add("reason_code_unknown", where, f"reason_codes holds codes outside the contract: {', '.join(unknown)}")
        if len(reasons) != len(set(reasons)):
            findings.add("manifest_key_invalid", where, "reason_codes contains duplicates")
        blocking = set(FATAL_LIFECYCLE_REASONS) | (set(STARTUP_FAILURE_REASONS) if required is True else set())
        incompatible = sorted(set(reasons) & blocking)
        if incompatible:
            findings.add("lifecycle_failure", where,
                         f"complete manifest carries lifecycle-failure reasons: {', '.join(incompatible)}")
    # "dcgm_exporter: {container_image_resolved, container_image_sha256 (hex, or null when the
    #  image is not a regular file), port, command}"
    exporter = manifest.get("dcgm_exporter")
    if not isinstance(exporter, dict):
        findings.add("manifest_key_invalid", where, "dcgm_exporter is not an object")
    else:
        if not (isinstance(exporter.get("container_image_resolved"), str) and exporter["container_image_resolved"]):
            findings.add("manifest_key_invalid", where, "dcgm_exporter.container_image_resolved is empty")
        image_digest = exporter.get("container_image_sha256")
        if image_digest is not None and not (isinstance(image_digest, str) and HEX64.fullmatch(image_digest)):
            findings.add("manifest_key_invalid", where, "dcgm_exporter.container_image_sha256 is not null or a digest")
        port = exporter.get("port")
        if not is_whole(port, 1) or port > 65535:
            findings.add("manifest_key_invalid", where, f"dcgm_exporter.port is not a valid port: {port!r}")
        if not (isinstance(exporter.get("command"), str) and exporter["command"]):
            findings.add("manifest_key_invalid", where, "dcgm_exporter.command is empty")


def check_schema_record(manifest, version, findings, where):
    """docs/formats.md: the manifest records the samples version written and its columns."""
    if version is None:
        return
    # "samples_schema_version: the samples.csv version written"
    if manifest.get("samples_schema_version") != version or not is_whole(manifest.get("samples_schema_version"), 0):
        findings.add("samples_schema_version_mismatch", where,
                     f"samples_schema_version is {manifest.get('samples_schema_version')!r}, samples.csv has the v{version} header")
    # "utilization_metrics: [{column: gpu_util_pct, ...}, {column: sm_active, ...}] ([] for samples v1)"
    want = [] if version == 1 else [{"column": c, "source_metric": m, "unit": u} for c, m, u, _ in UTILIZATION_COLUMNS]
    if manifest.get("utilization_metrics") != want:
        findings.add("samples_schema_version_mismatch", where,
                     f"utilization_metrics {manifest.get('utilization_metrics')!r} do not name the v{version} columns")


def check_topology(expected, expected_roles, require_distinct, findings, where):
    """--expect-role ROLE=COUNT and --require-distinct-het-groups: exact, as the canary wants."""
    roles, conflicts = resolve_roles(expected)
    if conflicts:
        for code in conflicts:
            findings.add(code, where, "worker roles conflict; role and het-group assertions not evaluated")
        return
    counts = {}
    for role in roles.values():
        counts[role] = counts.get(role, 0) + 1
    if expected_roles is not None:
        present = {role for role, count in expected_roles.items() if count > 0}
        if set(counts) != present:
            findings.add("expected_role_mismatch", where, f"expected roles {sorted(present)}, found {sorted(counts)}")
        for role, count in sorted(expected_roles.items()):
            if counts.get(role, 0) != count:
                findings.add("expected_role_mismatch", where, f"expected {count} {role} GPUs, found {counts.get(role, 0)}")
    if require_distinct:
        groups, conflicts = resolve_het_groups(expected)
        if conflicts:
            for code in conflicts:
                findings.add(code, where, "het groups conflict; distinct het-group assertion not evaluated")
            return
        per_role = {}
        for d in expected:
            per_role.setdefault(roles[(d["hostname"], d["gpu_index"])], set()).add(groups[d["hostname"]])
        assigned = []
        for role, role_groups in sorted(per_role.items()):
            if len(role_groups) != 1:
                findings.add("het_groups_not_distinct", where,
                             f"role {role} spans het groups {sorted(role_groups, key=str)}, expected exactly one")
                continue
            group = next(iter(role_groups))
            if not is_whole(group, 0):
                findings.add("het_groups_not_distinct", where, f"role {role} has het group {group!r}, expected an integer >= 0")
                continue
            assigned.append(group)
        if len(set(assigned)) != len(assigned):
            findings.add("het_groups_not_distinct", where, "roles share a het group")


class Package:
    """Everything recomputed from one GPU package; the multinode validator reuses it."""

    def __init__(self, power_dir, result_root, strictly_increasing=False):
        self.power_dir = power_dir
        self.result_root = result_root
        self.strictly_increasing = strictly_increasing
        self.findings = Findings()
        self.manifest = None
        self.expected = []
        self.expected_windows = []
        self.rows = []
        self.observed = []
        self.validations = []
        self.windows = {}
        self.header_version = None

    def rel(self, name):
        return os.path.join(str(self.power_dir), name)

    def run(self, expected_roles=None, require_distinct=False, check_digest=True):
        f = self.findings
        mpath = self.power_dir / "manifest.json"
        if not mpath.is_file():
            f.add("manifest_missing", str(mpath), "no manifest.json")
            return self
        try:
            manifest = json.loads(mpath.read_text(encoding="utf-8"))
        except (OSError, ValueError, UnicodeDecodeError) as exc:
            f.add("manifest_malformed", str(mpath), f"manifest unreadable: {exc}")
            return self
        if not isinstance(manifest, dict):
            f.add("manifest_malformed", str(mpath), f"not an object ({type(manifest).__name__})")
            return self
        self.manifest = manifest
        where = str(mpath)
        spath = self.power_dir / "samples.csv"

        check_wire(manifest, f, where)

        # "The digest is SHA-256 of the file's bytes, 64 lowercase hex digits"
        stored_digest = manifest.get("samples_sha256")
        if check_digest and isinstance(stored_digest, str) and HEX64.fullmatch(stored_digest):
            try:
                actual = sha256_file(spath)
            except OSError as exc:
                f.add("samples_sha256_mismatch", str(spath), f"samples_sha256 could not be verified: {exc}")
            else:
                if actual != stored_digest:
                    f.add("samples_sha256_mismatch", str(spath),
                          f"manifest records {stored_digest}, the file's SHA-256 is {actual}")

        try:
            self.expected = expected_devices_of(manifest)
            self.expected_windows = expected_windows_of(manifest)
        except (ManifestMalformed, KeyError, TypeError) as exc:
            f.add("manifest_malformed", where, str(exc))
            return self

        self.rows, sample_reasons, self.header_version = read_samples(spath, self.strictly_increasing)
        for code in sample_reasons:
            f.add(code, str(spath), {"samples_csv_header_mismatch": "the header is not the GPU v1 or v2 header",
                                     "samples_csv_missing": "no samples.csv"}.get(code, "strict reader"))
        check_schema_record(manifest, self.header_version, f, where)

        # Consumer rule: the rows lie inside the producer's lifecycle.
        started, stopped = manifest.get("started_at_unix"), manifest.get("stopped_at_unix")
        if self.rows and is_number(started) and is_number(stopped):
            first = min(r.timestamp_unix for r in self.rows)
            last = max(r.timestamp_unix for r in self.rows)
            if first < started:
                f.add("samples_outside_lifecycle", str(spath), f"samples start at {first!r}, before started_at_unix {started!r}")
            if last > stopped:
                f.add("samples_outside_lifecycle", str(spath), f"samples end at {last!r}, after stopped_at_unix {stopped!r}")

        self.observed = observed_devices(self.rows)
        dev_reasons = device_reasons(self.expected, self.observed)
        for code in dev_reasons:
            f.add(code, where, "device identity / topology")

        artifact_errors = []
        self.validations, self.windows = validate_windows(
            self.power_dir, self.result_root, self.expected_windows, self.expected, self.observed,
            manifest.get("sample_interval_seconds"), artifact_errors)
        # "expected_windows_empty: no expected window"
        if not self.expected_windows:
            f.add("expected_windows_empty", where, "no expected measurement window")
        for v in self.validations:
            for code in v["reason_codes"]:
                f.add(code, self.rel(v["window_file"] or "windows/"),
                      f"window {v['benchmark_type']}/{v['concurrency']}")
        for error in artifact_errors:
            for code in error["reason_codes"]:
                f.add(code, self.rel(error["path"]), "artifact error")

        check_topology(self.expected, expected_roles, require_distinct, f, where)
        self._check_stored_evidence(sample_reasons, dev_reasons, artifact_errors, where)
        return self

    def _check_stored_evidence(self, sample_reasons, dev_reasons, artifact_errors, where):
        """Consumer rule: every claim the manifest makes about its files holds for the files."""
        f, m = self.findings, self.manifest
        # "sample_row_count: rows the strict reader kept"
        if m.get("sample_row_count") != len(self.rows) or isinstance(m.get("sample_row_count"), bool):
            f.add("stored_evidence_mismatch", where,
                  f"sample_row_count is {m.get('sample_row_count')!r}, samples.csv has {len(self.rows)} rows")
        # "scrape_count: collection cycles, the final one included (at least the largest
        #  scrape_seq + 1)"
        if self.rows:
            least = max(r.scrape_seq for r in self.rows) + 1
            if not is_whole(m.get("scrape_count"), least):
                f.add("stored_evidence_mismatch", where, f"scrape_count is {m.get('scrape_count')!r}, the rows need {least}")
        if not self.observed:
            f.add("stored_evidence_mismatch", where, "no observed device in samples.csv")
        if not same_json(m.get("observed_devices"), [public(d) for d in self.observed]):
            f.add("stored_evidence_mismatch", where, "observed_devices differ from the devices samples.csv shows")
        if not same_json(m.get("window_validations"), self.validations):
            f.add("stored_evidence_mismatch", where, "window_validations differ from the recomputed window audit")
        if not same_json(m.get("artifact_errors"), artifact_errors):
            f.add("stored_evidence_mismatch", where, "artifact_errors differ from the recomputed artifact scan")
        recomputed = set(sample_reasons) | set(dev_reasons)
        recomputed |= {c for v in self.validations for c in v["reason_codes"]}
        recomputed |= {c for e in artifact_errors for c in e["reason_codes"]}
        stored = m.get("reason_codes")
        stored_list = stored if isinstance(stored, list) and all(isinstance(r, str) for r in stored) else None
        if stored_list is not None:
            stored_disk = set(stored_list) & DISK_DERIVED_REASONS
            if stored_disk != recomputed:
                f.add("stored_evidence_mismatch", where,
                      f"disk-derived reason_codes differ: stored only {sorted(stored_disk - recomputed)}, "
                      f"recomputed only {sorted(recomputed - stored_disk)}")
        # "publication_valid is true only when every rule holds"
        recorded = set(stored_list or ())
        lifecycle_ok = not (recorded & FATAL_LIFECYCLE_REASONS) and not (
            m.get("required") is True and recorded & STARTUP_FAILURE_REASONS)
        digest = m.get("samples_sha256")
        verdict = (lifecycle_ok and not (recorded & UNRECOVERABLE_STARTUP_REASONS) and not dev_reasons
                   and bool(self.expected_windows) and all(v["power_coverage_valid"] for v in self.validations)
                   and not sample_reasons and isinstance(digest, str) and bool(HEX64.fullmatch(digest))
                   and not artifact_errors)
        stored_verdict = m.get("publication_valid")
        if isinstance(stored_verdict, bool):
            if stored_verdict != verdict:
                f.add("publication_verdict_mismatch", where, f"publication_valid is {stored_verdict}, recomputed {verdict}")
            elif not stored_verdict:
                f.add("publication_invalid", where, "the stored verdict is publication_valid: false")
        for label, keys in (("expected_devices", [(d["hostname"], d["gpu_index"]) for d in self.expected]),
                            ("expected_windows", list(self.expected_windows))):
            if len(set(keys)) != len(keys):
                f.add("stored_evidence_mismatch", where, f"{label} contains duplicate keys")


def parse_roles(values):
    if not values:
        return None
    roles = {}
    for value in values:
        role, sep, count = value.partition("=")
        if not sep or role not in WORKER_ROLES or not count.isdigit():
            raise argparse.ArgumentTypeError(f"--expect-role wants ROLE=COUNT with ROLE in {WORKER_ROLES}: {value!r}")
        roles[role] = int(count)
    return roles


def print_findings(findings):
    for code, where, detail in findings.items:
        print(f"REFUSED {code} {where}: {detail}")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("run_dir", type=Path)
    p.add_argument("--power-dir", type=Path, help="the GPU package (default RUN_DIR/power)")
    p.add_argument("--result-root", type=Path, help="where window result paths resolve (default RUN_DIR)")
    p.add_argument("--expect-role", action="append", default=[], metavar="ROLE=COUNT")
    p.add_argument("--require-distinct-het-groups", action="store_true")
    a = p.parse_args(argv)
    try:
        roles = parse_roles(a.expect_role)
    except argparse.ArgumentTypeError as exc:
        p.error(str(exc))
    if not a.run_dir.is_dir():
        p.error(f"{a.run_dir}: not a directory")
    power_dir = a.power_dir or a.run_dir / "power"
    package = Package(power_dir, a.result_root or a.run_dir).run(roles, a.require_distinct_het_groups)
    print_findings(package.findings)
    if package.findings:
        print(f"REFUSED {len(package.findings.items)} finding(s)")
        return 1
    print(f"ACCEPTED {power_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
