#!/usr/bin/python3
"""A benchmark pipeline's multinode power validator, written as a test from the contract.

Usage: multinode_power_validator.py RUN_DIR [--power-dir DIR] [--producer-pin SHA]
                                    [--prefill-gpus N] [--decode-gpus N]
                                    [--expect-cpu-source acpi|dcgm] [--cpu-best-effort]

A downstream pipeline publishes energy per token from the GPU package (RUN_DIR/power/:
manifest.json, samples.csv, windows/) and the CPU exporter leg's package beside it
(RUN_DIR/power/cpu/: samples.csv, cpu_manifest.json), read together:

GPU leg. The producer's stored verdict is never trusted: validity is recomputed from the
files exactly as the reference's own offline validator does (gpu_package_validator.py, which
this file imports), and the stored publication_valid must agree and be true. On top of that
the pipeline is stricter in three places: a device's timestamps must strictly increase in
scrape_seq order (two equal times are timestamp_non_monotonic), producer_git_commit must equal
the pipeline's pin (--producer-pin; without one the pin is not checked and a note says so),
and with --prefill-gpus/--decode-gpus the role counts must match exactly, each role in one het
group of its own unless no device of the deployment has a het group. Every completed window
other than the session's is a formal window (the session window when there is no other); the
GPU energy of every expected device is integrated over it (trapezoid, the power at each edge
interpolated linearly), and a non-finite figure is refused.

CPU leg (best-effort in the pipeline: a failure sets cpu_power_valid=0 and leaves the GPU
figures alone). samples.csv must carry the CPU v1 or v2 header (the v3 header is refused
whole); cpu_manifest.json must be a JSON object; every worker host of the GPU package must
show sockets 0 and 1 (two Grace sockets per compute tray); the headline sensor per socket is
module, else grace_socket, else dcgm_cpu_rail, one kind common to every socket, fed by one
source; each headline series must bracket every formal window with no gap over 3.0 s.

Output: one line per refusal, "REFUSED <reason_code> <file>: <detail>" ("CPU_INVALID ..."
under --cpu-best-effort, which then does not change the exit status), "note ..." and
"info ..." lines, and a verdict: "ACCEPTED gpu_power_valid=1 cpu_power_valid=1" (exit 0) or
"REFUSED <n> finding(s) gpu_power_valid=G cpu_power_valid=C" (exit 1); 2 on usage errors.
Python 3 standard library only.
"""

import argparse
import csv
import itertools
import json
import math
import os
import re
import sys
from pathlib import Path

sys.dont_write_bytecode = True  # no __pycache__ beside the sources when a test runs it
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpu_package_validator as gpu  # noqa: E402

# "Readers accept v1, v2 and v3, chosen by the exact header line" -- this consumer: v1 and v2.
CPU_HEADERS = {
    1: ["schema_version", "timestamp_unix", "hostname", "source", "sensor", "socket_id", "power_w", "total_power_w"],
    2: ["schema_version", "timestamp_unix", "hostname", "source", "sensor", "socket_id", "power_w", "cpu_rail_w",
        "soc_w", "dram_w", "total_power_w"],
}
# One GB200/GB300 compute tray per worker host, two Grace sockets per tray.
SOCKETS_PER_HOST = 2
# "The 3.0 s gap limit ... equals ... the report's edge limit"; the CPU leg shares it.
MAX_SAMPLE_GAP_SECONDS = 3.0

MODULE, GRACE, DCGM = "module", "grace_socket", "dcgm_cpu_rail"
HEADLINE_PREFERENCE = (MODULE, GRACE, DCGM)
# "sensor: CPU<n>:cpuSidePowerUsageW (ACPI socket total) or CPU<n>:cpuPowerUsageW (DCGM field 1130)"
SUFFIX_KINDS = {"cpuSidePowerUsageW": GRACE, "cpuPowerUsageW": DCGM}
# v1: "sensor the rail's raw label (e.g. Grace Power Socket 0)"
LABEL_KINDS = (
    (MODULE, re.compile(r"\bModule\s+Power\s+Socket\s+\d+\b", re.I)),
    (GRACE, re.compile(r"\bGrace\s+Power\s+Socket\s+\d+\b", re.I)),
    (GRACE, re.compile(r"\bTotal(?:\s+Input)?\s+Power(?:\s+in\s+uW)?\s+Socket\s+\d+\b", re.I)),
)
# v2 component rails ride on the Grace row: "cpu_rail_w, soc_w, dram_w: component rails".
RAIL_COLUMNS = {"cpu_rail_w": "cpu_rail", "soc_w": "cpu_sysio"}


def classify(sensor):
    _, _, suffix = sensor.partition(":")
    if suffix in SUFFIX_KINDS:
        return SUFFIX_KINDS[suffix]
    return next((kind for kind, pattern in LABEL_KINDS if pattern.search(sensor)), None)


def integrate(samples, start, end):
    """Trapezoid over exactly [start, end]; an edge's power interpolated between its neighbours."""
    def at(t):
        for (t0, w0), (t1, w1) in itertools.pairwise(samples):
            if t0 <= t <= t1:
                return w0 if t1 == t0 else w0 + (w1 - w0) * (t - t0) / (t1 - t0)
        raise ValueError("edge not bracketed")
    points = [(start, at(start))] + [(t, w) for t, w in samples if start < t < end] + [(end, at(end))]
    return sum((t1 - t0) * (w0 + w1) / 2 for (t0, w0), (t1, w1) in itertools.pairwise(points))


class Report:
    def __init__(self, cpu_best_effort):
        self.gpu = []
        self.cpu = []
        self.notes = []
        self.info = []
        self.cpu_best_effort = cpu_best_effort


# ---------------------------------------------------------------------------------- GPU leg


def gpu_leg(run_dir, power_dir, args, report):
    package = gpu.Package(power_dir, run_dir, strictly_increasing=True).run()
    report.gpu += package.findings.items
    manifest = package.manifest
    where = str(power_dir / "manifest.json")
    if manifest is None:
        return package, []
    # Producer pin: energy from a producer contract the pipeline does not know is never published.
    commit = manifest.get("producer_git_commit")
    if args.producer_pin is None:
        report.notes.append(f"producer pin not checked (--producer-pin); the package names producer_git_commit={commit!r}")
    elif commit != args.producer_pin:
        report.gpu.append(("producer_commit_mismatch", where, f"producer_git_commit {commit!r} != pin {args.producer_pin!r}"))

    # Role topology against the workflow's own GPU counts.
    expected_roles = {}
    if args.prefill_gpus:
        expected_roles["prefill"] = args.prefill_gpus
    if args.decode_gpus:
        expected_roles["decode"] = args.decode_gpus
    roles, conflicts = gpu.resolve_roles(package.expected)
    if not expected_roles:
        report.notes.append("role counts not checked (--prefill-gpus/--decode-gpus)")
    elif roles:
        report.gpu += [("topology_env_mismatch", where, d) for d in role_topology(package.expected, roles, expected_roles)]

    # Formal windows: completed ones other than the session's, else the session window.
    completed = [w for w in package.windows.values() if w["status"] == "completed"]
    formal = [w for w in completed if w["benchmark_type"] != "session"] or completed
    if not formal:
        report.gpu.append(("window_for_result_missing", where, "no completed measurement window"))
    if report.gpu:
        return package, formal
    per_key = {}
    for row in package.rows:
        per_key.setdefault((row.hostname, row.gpu_index), []).append((row.timestamp_unix, row.power_w))
    for window in formal:
        label = f"{window['benchmark_type']}/{window['concurrency']}"
        result_where = str(run_dir / window["result_path"])
        if window["benchmark_type"] == "sa-bench":
            result = json.loads((run_dir / window["result_path"]).read_text(encoding="utf-8"))
            for key in ("completed", "total_input_tokens", "total_output_tokens"):
                if not (gpu.is_number(result.get(key)) and result[key] > 0):
                    report.gpu.append(("invalid_benchmark_result", result_where, f"{key} is not a positive number"))
        energy = 0.0
        for d in package.expected:
            energy += integrate(sorted(per_key[(d["hostname"], d["gpu_index"])]), window["start"], window["end"])
        duration = window["end"] - window["start"]
        metrics = {"total_gpu_energy_j": energy, "avg_total_gpu_power_w": energy / duration,
                   "avg_power_w": energy / duration / len(package.expected)}
        bad = sorted(k for k, v in metrics.items() if not math.isfinite(v))
        if bad:
            report.gpu.append(("non_finite_power_metric", where, f"window {label}: {', '.join(bad)}"))
        else:
            report.info.append(f"gpu window {label} " + " ".join(f"{k}={v:.3f}" for k, v in metrics.items()))
    return package, formal


def role_topology(expected, roles, expected_roles):
    failures, counts = [], {}
    for role in roles.values():
        counts[role] = counts.get(role, 0) + 1
    if set(counts) != set(expected_roles):
        failures.append(f"expected roles {sorted(expected_roles)}, found {sorted(counts)}")
    for role, count in sorted(expected_roles.items()):
        if counts.get(role, 0) != count:
            failures.append(f"expected {count} {role} GPUs, found {counts.get(role, 0)}")
    groups, conflicts = gpu.resolve_het_groups(expected)
    if conflicts:
        return failures + [f"{code} (topology)" for code in conflicts]
    per_role = {}
    for d in expected:
        per_role.setdefault(roles[(d["hostname"], d["gpu_index"])], set()).add(groups[d["hostname"]])
    # A deployment without het jobs reports het_group null on every device and is exempt.
    non_het = all(g is None for g in groups.values())
    assigned = []
    for role, role_groups in sorted(per_role.items()):
        if len(role_groups) != 1:
            failures.append(f"role {role} spans het groups {sorted(role_groups, key=str)}")
            continue
        group = next(iter(role_groups))
        if group is None:
            if not non_het:
                failures.append(f"role {role} has het group None while other devices have one")
            continue
        assigned.append(group)
    if len(set(assigned)) != len(assigned):
        failures.append("roles share a het group")
    return failures


# ---------------------------------------------------------------------------------- CPU leg


def read_cpu_samples(path):
    if not path.is_file():
        return [], ["cpu_samples_missing"]
    rows, reasons = [], []
    try:
        with open(path, newline="", encoding="utf-8") as handle:
            reader = csv.reader(handle)
            header = next(reader, None)
            version = next((v for v, h in CPU_HEADERS.items() if header == h), None)
            if version is None:
                return [], ["cpu_samples_header_mismatch"]
            for raw in reader:
                row = parse_cpu_row(raw, version)
                if row is None:
                    reasons.append("cpu_samples_malformed")
                    continue
                rows.append(row)
    except (OSError, UnicodeDecodeError, csv.Error):
        reasons.append("cpu_samples_malformed")
    return rows, gpu.dedupe(reasons)


def parse_cpu_row(raw, version):
    header = CPU_HEADERS[version]
    # the header's cell count
    if len(raw) != len(header):
        return None
    try:
        schema_version = int(raw[0])
        timestamp = float(raw[1])
        socket = int(raw[5])
        power = float(raw[6])
    except ValueError:
        return None
    hostname, source, sensor = raw[2], raw[3], raw[4]
    # "schema_version: 3 on every row" (here: the header's version); hostname, source, sensor set
    if schema_version != version or not hostname or not source or not sensor:
        return None
    # "socket_id: the socket, a non-negative integer"; "power_w: the socket's primary reading"
    if not math.isfinite(timestamp) or not math.isfinite(power) or power < 0 or socket < 0:
        return None
    rails = []
    for column, family in RAIL_COLUMNS.items():
        if column not in header or raw[header.index(column)] == "":
            continue  # "an absent ... rail ... is an empty cell, never 0"
        try:
            watts = float(raw[header.index(column)])
        except ValueError:
            return None
        if not math.isfinite(watts) or watts < 0:
            return None
        rails.append((family, watts))
    return {"t": timestamp, "host": hostname, "source": source, "sensor": sensor, "socket": socket,
            "power": power, "rails": rails}


def cpu_leg(run_dir, power_dir, package, formal, args, report):
    """The CPU leg's verdict: a list of refusals, empty when valid (None when no leg was run)."""
    cpu_dir = power_dir / "cpu"
    findings = []
    where = str(cpu_dir / "samples.csv")
    if not cpu_dir.is_dir():
        if args.expect_cpu_source is None:
            report.notes.append("no CPU package (power/cpu/); the CPU leg is not evaluated")
            return None
        return [("cpu_artifacts_missing", str(cpu_dir), "no CPU package")]
    mpath = cpu_dir / "cpu_manifest.json"
    try:
        if not isinstance(json.loads(mpath.read_text(encoding="utf-8")), dict):
            raise ValueError("not an object")
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        findings.append(("cpu_manifest_invalid", str(mpath), str(exc)))
    rows, reasons = read_cpu_samples(cpu_dir / "samples.csv")
    findings += [(code, where, "CPU v1/v2 header and rows" if code != "cpu_samples_missing" else "no samples.csv")
                 for code in reasons]

    # (host, socket) -> kind -> {timestamp: watts}; a repeated timestamp is a malformed file.
    series, sources, duplicate = {}, {}, False
    for row in rows:
        kind = classify(row["sensor"])
        if kind is None:
            continue
        by_kind = series.setdefault((row["host"], row["socket"]), {})
        points = by_kind.setdefault(kind, {})
        if row["t"] in points:
            duplicate = True
        points[row["t"]] = row["power"]
        sources.setdefault(kind, set()).add(row["source"])
        if kind == GRACE:
            for family, watts in row["rails"]:
                by_kind.setdefault(family, {})[row["t"]] = watts
    if duplicate:
        findings.append(("cpu_samples_malformed", where, "a (host, socket, sensor) repeats a timestamp"))
    hosts = sorted({d["hostname"] for d in package.expected}) if package else []
    expected_keys = {(h, s) for h in hosts for s in range(SOCKETS_PER_HOST)}
    if not formal:
        findings.append(("cpu_window_unavailable", where, "no formal GPU window to integrate over"))
    if findings:
        return findings

    if not expected_keys or set(series) != expected_keys:
        missing = sorted(expected_keys - set(series))
        extra = sorted(set(series) - expected_keys)
        return [("cpu_socket_count_mismatch", where,
                 f"want sockets 0..{SOCKETS_PER_HOST - 1} on {hosts}; missing {missing}, unexpected {extra}")]
    common = set.intersection(*(set(kinds) for kinds in series.values()))
    selected = next((k for k in HEADLINE_PREFERENCE if k in common), None)
    if selected is None or len(sources[selected]) != 1:
        return [("cpu_sensor_kind_mixed", where,
                 f"headline kind {selected!r} with sources {sorted(sources.get(selected, ()))}")]
    source = next(iter(sources[selected]))
    if args.expect_cpu_source is not None and (
            source != args.expect_cpu_source or (args.expect_cpu_source == "acpi" and selected not in (GRACE, MODULE))):
        return [("cpu_sensor_source_mismatch", where, f"headline {selected} from {source}, want {args.expect_cpu_source}")]
    feeds = {selected: "module" if selected == MODULE else "cpu"}
    if selected == MODULE:
        grace = next((k for k in (GRACE, DCGM) if k in common), None)
        if grace:
            feeds[grace] = "cpu"
    if GRACE in feeds:
        feeds.update({rail: rail for rail in RAIL_COLUMNS.values() if rail in common})

    for window in formal:
        label = f"{window['benchmark_type']}/{window['concurrency']}"
        start, end = window["start"], window["end"]
        energy, dropped = {}, set()
        for (host, socket), by_kind in sorted(series.items()):
            for kind, family in feeds.items():
                samples = sorted(by_kind[kind].items())
                sequence = gpu.bracketing([t for t, _ in samples], start, end)
                gap = None if sequence is None else max((b - a for a, b in itertools.pairwise(sequence)), default=0.0)
                if gap is None or gap > MAX_SAMPLE_GAP_SECONDS:
                    if family in RAIL_COLUMNS.values():
                        dropped.add(family)  # a rail with gaps drops only its own figures
                    elif gap is None:
                        findings.append(("cpu_window_not_bracketed", where, f"window {label}: {host}/socket{socket}/{kind}"))
                    else:
                        findings.append(("cpu_sample_gap_exceeded", where,
                                         f"window {label}: {host}/socket{socket}/{kind} gap {gap:.3f} s"))
                    continue
                energy[family] = energy.get(family, 0.0) + integrate(samples, start, end)
        if findings:
            continue
        for family in dropped:
            energy.pop(family, None)
        duration = end - start
        if any(not math.isfinite(v) for v in energy.values()):
            findings.append(("non_finite_power_metric", where, f"window {label}"))
            continue
        report.info.append(f"cpu window {label} sensor_kind={selected} source={source} "
                           + " ".join(f"total_{k}_energy_j={v:.3f} avg_total_{k}_power_w={v / duration:.3f}"
                                      for k, v in sorted(energy.items())))
    return findings


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("run_dir", type=Path)
    p.add_argument("--power-dir", type=Path, help="the GPU package (default RUN_DIR/power)")
    p.add_argument("--producer-pin", help="the producer_git_commit the pipeline trusts")
    p.add_argument("--prefill-gpus", type=int, default=0)
    p.add_argument("--decode-gpus", type=int, default=0)
    p.add_argument("--expect-cpu-source", choices=("acpi", "dcgm"))
    p.add_argument("--cpu-best-effort", action="store_true",
                   help="as the pipeline publishes: a CPU refusal sets cpu_power_valid=0 and not the exit status")
    a = p.parse_args(argv)
    if not a.run_dir.is_dir():
        p.error(f"{a.run_dir}: not a directory")
    if a.prefill_gpus < 0 or a.decode_gpus < 0:
        p.error("GPU counts must be >= 0")
    power_dir = a.power_dir or a.run_dir / "power"
    report = Report(a.cpu_best_effort)
    if not power_dir.is_dir():
        report.gpu.append(("power_artifacts_missing", str(power_dir), "no GPU package"))
        package, formal = None, []
    else:
        package, formal = gpu_leg(a.run_dir, power_dir, a, report)
    cpu_findings = cpu_leg(a.run_dir, power_dir, package, formal, a, report) if power_dir.is_dir() else None
    report.cpu = cpu_findings or []

    for code, where, detail in report.gpu:
        print(f"REFUSED {code} {where}: {detail}")
    for code, where, detail in report.cpu:
        print(f"{'CPU_INVALID' if a.cpu_best_effort else 'REFUSED'} {code} {where}: {detail}")
    for line in report.notes:
        print(f"note {line}")
    for line in report.info:
        print(f"info {line}")
    gpu_valid = int(not report.gpu)
    cpu_valid = "n/a" if cpu_findings is None else int(not report.cpu)
    refusals = len(report.gpu) + (0 if a.cpu_best_effort else len(report.cpu))
    if refusals:
        print(f"REFUSED {refusals} finding(s) gpu_power_valid={gpu_valid} cpu_power_valid={cpu_valid}")
        return 1
    print(f"ACCEPTED gpu_power_valid={gpu_valid} cpu_power_valid={cpu_valid}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
