#!/usr/bin/python3
"""Damaged copies of a real simulated run, for the validators' own tests: `cpu-power validate`
(tests/integration/test_validate.sh, the CASES below) and the consumers' validators
(tests/integration/test_consumers.sh, the CONSUMER_CASES, named with hyphens).

    validate_damage.py clock-synced RUN_DIR
                                        rewrite RUN_DIR's clock check in place as if every
                                        node's clock were synchronised (clock_sync.json and the
                                        GPU manifest's copy), for machines without a time daemon
    validate_damage.py damage CASE RUN_DIR
                                        break RUN_DIR (a copy of a publishable one) in place so that
                                        one rule fails (a case of either table)
    validate_damage.py all RUN_DIR OUT  one copy of RUN_DIR per case, OUT/case_<name>, each
                                        broken by its case (one process for all: the test's
                                        time goes to the validations, not to Python's start)
    validate_damage.py cases            print the names of the CASES

Python 3 standard library only.
"""

import csv
import glob
import hashlib
import io
import json
import os
import shutil
import sys


def read_csv(path):
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    return rows[0], rows[1:]


def write_csv(path, header, rows):
    out = io.StringIO(newline="")
    w = csv.writer(out)  # the default dialect: CRLF, as the writers do
    w.writerow(header)
    w.writerows(rows)
    with open(path, "w", newline="") as f:
        f.write(out.getvalue())


def load(path):
    with open(path) as f:
        return json.load(f)


def save(path, doc):
    with open(path, "w") as f:
        f.write(json.dumps(doc, indent=2) + "\n")


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


class Run:
    def __init__(self, d):
        self.d = d
        self.power = os.path.join(d, "power")
        self.gpu_samples = os.path.join(self.power, "samples.csv")
        self.gpu_manifest = os.path.join(self.power, "manifest.json")
        self.cpu_samples = os.path.join(self.power, "cpu", "samples.csv")
        self.cpu_manifest = os.path.join(self.power, "cpu", "cpu_manifest.json")
        self.host_samples = os.path.join(d, "cpu_power", "samples.csv")
        self.host_manifest = os.path.join(d, "cpu_power", "manifest.json")
        self.clock = os.path.join(d, "clock_sync.json")

    def bench_window(self):
        """(path, doc) of the benchmark's (not the session's) window file."""
        paths = [p for p in sorted(glob.glob(os.path.join(self.power, "windows", "*.json")))
                 if not p.endswith("/session.json")]
        return paths[0], load(paths[0])

    def session_window(self):
        return load(os.path.join(self.power, "windows", "session.json"))

    def edit_gpu_rows(self, fn):
        """fn(header, rows) -> rows; the manifest's digest and row count follow the file."""
        header, rows = read_csv(self.gpu_samples)
        write_csv(self.gpu_samples, header, fn(header, rows))
        m = load(self.gpu_manifest)
        m["samples_sha256"] = sha256(self.gpu_samples)
        m["sample_row_count"] = len(read_csv(self.gpu_samples)[1])
        save(self.gpu_manifest, m)

    def edit(self, path, fn):
        doc = load(path)
        doc = fn(doc) or doc
        save(path, doc)

    def edit_csv(self, path, fn):
        header, rows = read_csv(path)
        write_csv(path, header, fn(header, rows))


def clock_synced(d):
    run = Run(d)
    m = load(run.gpu_manifest)
    hosts = sorted({d["hostname"] for d in m["expected_devices"]})
    clock = {
        "schema_version": 1,
        "max_offset_seconds": 0.05,
        "nodes": [{"hostname": h, "synchronized": "yes", "offset_seconds": 0.0001,
                   "tool": "chronyc", "output_file": "clock_sync_%s.out" % h} for h in hosts],
    }
    # The run's own probe could not vouch for this machine's clock (no time daemon): the copy
    # stands for a run on synchronised nodes, in clock_sync.json and in the manifest alike.
    if "clock_sync_check" in m:
        m["clock_sync_check"] = clock
    m["clock_sync_failures"] = []
    if "clock_sync_unverified" in m["reason_codes"]:
        m["reason_codes"].remove("clock_sync_unverified")
    save(run.gpu_manifest, m)
    save(run.clock, clock)


# ---- the damage cases: name -> what it does --------------------------------------------------

def gpu_rows_of(header, rows, host, index):
    h, g = header.index("hostname"), header.index("gpu_index")
    return [r for r in rows if r[h] == host and r[g] == str(index)]


def first_device(run):
    d = load(run.gpu_manifest)["expected_devices"][0]
    return d["hostname"], d["gpu_index"]


def thin_device(run, start, end, keep):
    """Drops one device's rows strictly inside (start, end) unless keep(k) for their k-th."""
    host, index = first_device(run)

    def fn(header, rows):
        t, h, g = header.index("timestamp_unix"), header.index("hostname"), header.index("gpu_index")
        out, k = [], 0
        for r in rows:
            if r[h] == host and r[g] == str(index) and start < float(r[t]) < end:
                k += 1
                if not keep(k):
                    continue
            out.append(r)
        return out
    run.edit_gpu_rows(fn)


def shift_window(run, fn):
    """fn(window) edits the window's start, end and duration; the result follows."""
    path, w = run.bench_window()
    fn(w)
    save(path, w)
    result = os.path.join(run.d, w["result_path"])
    r = load(result)
    for k in ("benchmark_start_time_unix", "benchmark_end_time_unix", "duration"):
        r[k] = w[k]
    save(result, r)


def c_gpu_samples_missing(run):
    os.unlink(run.gpu_samples)


def c_gpu_header_v3(run):  # the original v3 header back (a fourth column appended)
    def fn(header, rows):
        header[:] = header + ["temperature_c"]
        return [["3"] + r[1:] + ["30"] for r in rows]
    run.edit_gpu_rows(fn)
    run.edit(run.gpu_manifest, lambda m: m.update(samples_schema_version=3))


def c_gpu_header_unknown(run):
    def fn(header, rows):
        header[header.index("power_w")] = "watts"
        return rows
    run.edit_gpu_rows(fn)


def c_gpu_malformed(run):
    def fn(header, rows):
        rows[3][header.index("power_w")] = "abc"
        return rows
    run.edit_gpu_rows(fn)


def c_gpu_duplicate(run):
    run.edit_gpu_rows(lambda header, rows: rows + [rows[0]])


def c_gpu_non_monotonic(run):
    host, index = first_device(run)

    def fn(header, rows):
        mine = gpu_rows_of(header, rows, host, index)
        t = header.index("timestamp_unix")
        mine[2][t], mine[3][t] = mine[3][t], mine[2][t]
        return rows
    run.edit_gpu_rows(fn)


def c_digest_null(run):
    run.edit(run.gpu_manifest, lambda m: m.update(samples_sha256=None))


def c_digest_wrong(run):
    run.edit(run.gpu_manifest, lambda m: m.update(samples_sha256="0" * 64))


def c_schema_version_wrong(run):
    run.edit(run.gpu_manifest, lambda m: m.update(samples_schema_version=1))


def c_gpu_manifest_missing(run):
    os.unlink(run.gpu_manifest)


def c_gpu_manifest_malformed(run):
    with open(run.gpu_manifest, "w") as f:
        f.write("{")


def c_producer(run):
    run.edit(run.gpu_manifest, lambda m: m.update(producer="someone-else"))


def c_gpu_evidence(run):
    run.edit(run.gpu_manifest, lambda m: m.update(sample_row_count=m["sample_row_count"] + 1))


def c_gpu_job_id(run):
    run.edit(run.gpu_manifest, lambda m: m.update(job_id=""))


def c_gpu_status(run):
    run.edit(run.gpu_manifest, lambda m: m.update(status="incomplete", publication_valid=False,
                                                  reason_codes=["exporter_exited"]))


def c_verdict(run):
    run.edit(run.gpu_manifest, lambda m: m.update(publication_valid=False))


def c_device_missing(run):
    def fn(m):
        extra = json.loads(json.dumps(m["expected_devices"][-1]))
        extra["gpu_index"] = 9
        m["expected_devices"].append(extra)
    run.edit(run.gpu_manifest, fn)


def c_device_unexpected(run):
    run.edit(run.gpu_manifest, lambda m: m.update(expected_devices=m["expected_devices"][1:]))


def c_uuid_changed(run):
    host, index = first_device(run)

    def fn(header, rows):
        gpu_rows_of(header, rows, host, index)[1][header.index("gpu_uuid")] = "GPU-other"
        return rows
    run.edit_gpu_rows(fn)


def c_roles_conflict(run):
    def fn(m):
        a = dict(m["expected_devices"][0]["assignments"][0], worker_role="prefill")
        m["expected_devices"][0]["assignments"].append(a)
    run.edit(run.gpu_manifest, fn)


def c_het_conflict(run):
    run.edit(run.gpu_manifest,
             lambda m: m["expected_devices"][0]["assignments"][0].update(het_group=1))


def c_window_missing(run):
    os.unlink(run.bench_window()[0])


def c_no_expected_window(run):
    run.edit(run.gpu_manifest, lambda m: m.update(expected_windows=[], window_validations=[]))


def c_window_unexpected(run):
    _, w = run.bench_window()
    key = (w["benchmark_type"], w["concurrency"])

    def fn(m):
        m["expected_windows"] = [e for e in m["expected_windows"]
                                 if (e["benchmark_type"], e["concurrency"]) != key]
    run.edit(run.gpu_manifest, fn)


def c_window_duplicate(run):
    path, w = run.bench_window()
    result = os.path.join(run.d, w["result_path"])
    copy = os.path.join(os.path.dirname(result), "copy_of_result.json")
    shutil.copy(result, copy)
    w["result_path"] = os.path.relpath(copy, run.d)
    save(os.path.join(run.power, "windows", "copy_of_result.json"), w)


def c_window_malformed(run):
    save(run.bench_window()[0], [])


def c_window_path_invalid(run):
    with open(os.path.join(run.power, "windows", "notes.txt"), "w") as f:
        f.write("not a window\n")


def c_window_incomplete(run):
    path, w = run.bench_window()
    w.update(status="running", benchmark_end_time_unix=None, duration=None)
    save(path, w)


def c_result_missing(run):
    _, w = run.bench_window()
    os.unlink(os.path.join(run.d, w["result_path"]))


def c_result_mismatch(run):
    _, w = run.bench_window()
    result = os.path.join(run.d, w["result_path"])
    r = load(result)
    r["benchmark_end_time_unix"] += 1.0
    save(result, r)


def c_result_path_invalid(run):
    path, w = run.bench_window()
    w["result_path"] = "../elsewhere/" + os.path.basename(w["result_path"])
    save(path, w)


def c_window_clock(run):
    shift_window(run, lambda w: w.update(duration=w["duration"] * 3))


def c_not_bracketed(run):
    end = load(run.gpu_manifest)["stopped_at_unix"]
    shift_window(run, lambda w: w.update(benchmark_start_time_unix=end + 10.0,
                                         benchmark_end_time_unix=end + 12.0, duration=2.0))


def c_gap(run):
    w = run.session_window()
    s = w["benchmark_start_time_unix"]
    thin_device(run, s + 0.3, s + 3.6, lambda k: False)


def c_loss(run):
    w = run.session_window()
    thin_device(run, w["benchmark_start_time_unix"], w["benchmark_end_time_unix"],
                lambda k: k % 2 == 0)


def c_clock_missing(run):  # no check at all: no clock_sync.json, none in the manifest
    os.unlink(run.clock)
    run.edit(run.gpu_manifest, lambda m: m.update(clock_sync_check=None))


def c_clock_malformed(run):
    with open(run.clock, "w") as f:
        f.write("not json")


def c_clock_unknown(run):
    run.edit(run.clock, lambda c: [n.update(synchronized="unknown", offset_seconds=None, tool=None)
                                   for n in c["nodes"]])


def c_clock_unsynced(run):
    run.edit(run.clock, lambda c: c["nodes"][0].update(synchronized="no"))


def c_clock_offset(run):
    run.edit(run.clock, lambda c: c["nodes"][-1].update(offset_seconds=-0.2))


def c_clock_in_manifest(run):  # passes: the check recorded in the manifest only
    clock = load(run.clock)
    os.unlink(run.clock)
    run.edit(run.gpu_manifest, lambda m: m.update(clock_sync_check=clock))


def c_clock_failures(run):
    run.edit(run.gpu_manifest, lambda m: m.update(clock_sync_failures=["node1"]))


def cpu_edit(run, fn):
    run.edit_csv(run.cpu_samples, fn)


def col(header, name):
    return header.index(name)


def c_cpu_missing(run):
    os.unlink(run.cpu_samples)


def c_cpu_header_v3(run):
    def fn(header, rows):
        i = col(header, "total_power_w")
        header.insert(i, "module_w")
        return [["3"] + r[1:i] + [""] + r[i:] for r in rows]
    cpu_edit(run, fn)
    run.edit(run.cpu_manifest, lambda c: c.update(samples_schema_version=3))


def c_cpu_malformed(run):
    cpu_edit(run, lambda header, rows: rows[:2] + [rows[2][:-1]] + rows[3:])


def c_cpu_version(run):
    def fn(header, rows):
        rows[1][0] = "3"
        return rows
    cpu_edit(run, fn)


def c_cpu_power(run):
    def fn(header, rows):
        rows[1][col(header, "power_w")] = "-1"
        return rows
    cpu_edit(run, fn)


def c_cpu_duplicate(run):
    cpu_edit(run, lambda header, rows: rows + [rows[0]])


def c_cpu_source(run):
    def fn(header, rows):
        rows[1][col(header, "source")] = "dcgm"
        return rows
    cpu_edit(run, fn)


def c_cpu_host_missing(run):
    cpu_edit(run, lambda header, rows: [r for r in rows if r[col(header, "hostname")] != "node2"])


def c_cpu_sockets(run):
    cpu_edit(run, lambda header, rows: [
        r for r in rows if not (r[col(header, "hostname")] == "node2"
                                and r[col(header, "socket_id")] == "1")])


def c_cpu_not_bracketed(run):
    s = run.session_window()["benchmark_start_time_unix"]
    cpu_edit(run, lambda header, rows: [
        r for r in rows if float(r[col(header, "timestamp_unix")]) > s])


def c_cpu_gap(run):
    s = run.session_window()["benchmark_start_time_unix"]

    def fn(header, rows):
        t, h, k = col(header, "timestamp_unix"), col(header, "hostname"), col(header, "socket_id")
        return [r for r in rows if not (r[h] == "node1" and r[k] == "0"
                                        and s + 0.3 < float(r[t]) < s + 3.6)]
    cpu_edit(run, fn)


def c_cpu_manifest_missing(run):
    os.unlink(run.cpu_manifest)


def c_cpu_manifest_malformed(run):
    with open(run.cpu_manifest, "w") as f:
        f.write("[1, 2")


def c_cpu_manifest_version(run):
    run.edit(run.cpu_manifest, lambda c: c.update(samples_schema_version=3))


def c_host_missing(run):
    os.unlink(run.host_samples)


def c_host_header(run):
    def fn(header, rows):
        header[col(header, "power_w")] = "watts"
        return rows
    run.edit_csv(run.host_samples, fn)


def c_host_manifest_missing(run):
    os.unlink(run.host_manifest)


def c_host_manifest_malformed(run):
    with open(run.host_manifest, "w") as f:
        f.write('"just a string"\n')


def c_host_job_id(run):
    run.edit(run.host_manifest, lambda m: m.update(job_id=""))


def c_host_status(run):
    run.edit(run.host_manifest, lambda m: m.update(status="incomplete", reason_codes=["interrupted"]))


def c_host_node_missing(run):
    run.edit_csv(run.host_samples, lambda header, rows: [
        r for r in rows if r[col(header, "hostname")] != "node2"])


def c_host_empty(run):
    run.edit_csv(run.host_samples, lambda header, rows: [])


def c_host_evidence(run):
    run.edit(run.host_manifest, lambda m: m.update(sample_row_count=m["sample_row_count"] + 5))


CASES = {name[2:]: fn for name, fn in sorted(globals().items()) if name.startswith("c_")}


# ---- the consumers' cases: each breaks one of a consumer validator's main rules -------------
# Unless the case is about the digest itself, the GPU manifest's samples_sha256 follows an edit
# of power/samples.csv (its sample_row_count does not).

def redigest(run):
    run.edit(run.gpu_manifest, lambda m: m.update(samples_sha256=sha256(run.gpu_samples)))


def sa_bench_window(run):
    for path in sorted(glob.glob(os.path.join(run.power, "windows", "*.json"))):
        w = load(path)
        if w["benchmark_type"] == "sa-bench":
            return w
    raise SystemExit("no sa-bench window in " + run.d)


def gpu_consumer_edit(run, fn, digest=True):
    run.edit_csv(run.gpu_samples, fn)
    if digest:
        redigest(run)


def k_gpu_digest(run):  # one power_w cell changed, the digest left as it was
    def fn(header, rows):
        rows[0][6] = repr(float(rows[0][6]) + 1.0)
        return rows
    gpu_consumer_edit(run, fn, digest=False)


def k_gpu_header_v3(run):  # rewritten with the v3 header (temperature_c appended)
    def fn(header, rows):
        header[:] = header + ["temperature_c"]
        return [["3"] + r[1:] + ["40"] for r in rows]
    gpu_consumer_edit(run, fn)


def k_gpu_loss(run):  # inside the sa-bench window, every third scrape of one GPU dropped
    w = sa_bench_window(run)

    def fn(header, rows):
        first = rows[0]
        inside = [r for r in rows if r[3] == first[3] and r[4] == first[4]
                  and w["benchmark_start_time_unix"] < float(r[1]) < w["benchmark_end_time_unix"]]
        drop = {id(r) for r in inside[1::3]}
        assert len(drop) >= 2, "window too short for the loss case"
        return [r for r in rows if id(r) not in drop]
    gpu_consumer_edit(run, fn)


def k_gpu_result(run):  # the sa-bench result's duration changed, its window left as it was
    rpath = os.path.join(run.d, sa_bench_window(run)["result_path"])
    result = load(rpath)
    result["duration"] = result["duration"] + 0.25
    with open(rpath, "w") as f:
        f.write(json.dumps(result))


def k_gpu_equal_times(run):  # one GPU's second sample dated as its first (equal, not decreasing)
    def fn(header, rows):
        mine = [r for r in rows if r[3] == rows[0][3] and r[4] == rows[0][4]]
        mine[1][1] = mine[0][1]
        return rows
    gpu_consumer_edit(run, fn)


def k_cpu_header_v3(run):  # rewritten with the v3 header (module_w added)
    def fn(header, rows):
        header[:] = header[:10] + ["module_w"] + header[10:]
        return [["3"] + r[1:10] + [""] + r[10:] for r in rows]
    run.edit_csv(run.cpu_samples, fn)


def k_cpu_socket_missing(run):  # every socket-1 row of the second host dropped
    def fn(header, rows):
        last = sorted({r[2] for r in rows})[-1]
        return [r for r in rows if not (r[2] == last and r[5] == "1")]
    run.edit_csv(run.cpu_samples, fn)


def k_cpu_source_mixed(run):  # the first data row's source set to dcgm
    def fn(header, rows):
        rows[0][3] = "dcgm"
        return rows
    run.edit_csv(run.cpu_samples, fn)


def k_cpu_gap(run):  # one socket's rows from 0.9 s before the window to 0.9 s after it dropped
    w = sa_bench_window(run)
    lo, hi = w["benchmark_start_time_unix"] - 0.9, w["benchmark_end_time_unix"] + 0.9

    def fn(header, rows):
        host, socket = rows[0][2], rows[0][5]
        return [r for r in rows if not (r[2] == host and r[5] == socket and lo < float(r[1]) < hi)]
    run.edit_csv(run.cpu_samples, fn)


CONSUMER_CASES = {
    "gpu-digest": k_gpu_digest,
    "gpu-job-id": c_gpu_job_id,  # the same damage as cpu-power validate's case
    "gpu-header-v3": k_gpu_header_v3,
    # the first data row written twice
    "gpu-duplicate-row": lambda run: gpu_consumer_edit(run, lambda h, rows: rows[:1] + rows),
    "gpu-loss": k_gpu_loss,
    "gpu-result": k_gpu_result,
    "gpu-equal-times": k_gpu_equal_times,
    "cpu-header-v3": k_cpu_header_v3,
    "cpu-socket-missing": k_cpu_socket_missing,
    "cpu-source-mixed": k_cpu_source_mixed,
    "cpu-duplicate-time": lambda run: run.edit_csv(run.cpu_samples, lambda h, rows: rows[:1] + rows),
    "cpu-gap": k_cpu_gap,
}


def main(argv):
    if argv[1:2] == ["clock-synced"] and len(argv) == 3:
        clock_synced(argv[2])
    elif argv[1:2] == ["damage"] and len(argv) == 4 and argv[2] in {**CASES, **CONSUMER_CASES}:
        {**CASES, **CONSUMER_CASES}[argv[2]](Run(argv[3]))
    elif argv[1:2] == ["all"] and len(argv) == 4:
        for name, fn in CASES.items():
            dst = os.path.join(argv[3], "case_" + name)
            shutil.copytree(argv[2], dst, symlinks=True)
            fn(Run(dst))
    elif argv[1:] == ["cases"]:
        print("\n".join(CASES))
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
