#!/usr/bin/env python3
"""The energy report on damaged and hostile samples files, manifests and benchmark artifacts.

CPU samples cases (the first part): each case writes a damaged samples.csv and the same file with the damage taken out by hand
(what the report must read), reports both, and requires: exit status 0, the same joules for
every socket, node and total, no non-finite number anywhere in the JSON and no 'nan' or 'inf'
in the text, and a warning that names the file and the reason. Then both legs: rows written
twice add nothing at any level, nodes and devices missing from a file are named against the
manifests, unusable GPU files and bad token counts are errors naming the file and the field,
and the messages name the real problem. Usage: report_damage.py BIN WORK
"""
import json
import math
import os
import re
import subprocess
import sys

BIN, WORK = sys.argv[1], sys.argv[2]
HEADER = ("schema_version,timestamp_unix,hostname,source,sensor,socket_id,power_w,cpu_rail_w,"
          "soc_w,dram_w,module_w,total_power_w")
failures = []


def row(t, host, socket, power="100", total="200", sensor=None):
    sensor = sensor or "CPU%d:cpuSidePowerUsageW" % socket
    return "3,%s,%s,acpi,%s,%d,%s,,,,,%s" % (t, host, sensor, socket, power, total)


def rows(hosts=("node-a", "node-b"), until=23):
    out = []
    for i in range(until):
        for h in hosts:
            for s in (0, 1):
                out.append(row(1000 + i * 0.5, h, s))
    return out


def run_dir(name, csv_text):
    d = os.path.join(WORK, name)
    os.makedirs(os.path.join(d, "power", "cpu"), exist_ok=True)
    os.makedirs(os.path.join(d, "sa-bench_isl_1_osl_1"), exist_ok=True)
    with open(os.path.join(d, "sa-bench_isl_1_osl_1", "results_concurrency_4_gpus_8.json"), "w") as f:
        json.dump({"benchmark_start_time_unix": 1000.0, "benchmark_end_time_unix": 1010.0,
                   "duration": 10, "total_input_tokens": 100, "total_output_tokens": 50}, f)
    with open(os.path.join(d, "benchmark.out"), "w") as f:
        f.write("Successful requests: 100\n")
    with open(os.path.join(d, "power", "cpu", "samples.csv"), "wb") as f:
        f.write(csv_text.encode("latin-1"))
    return d


def report(d):
    out = os.path.join(d, "out.json")
    p = subprocess.run([BIN + "/cpu-power", "report", d, "--json-out", out],
                       capture_output=True)
    text = p.stdout.decode("utf-8", "replace")
    doc = None
    if os.path.exists(out):
        with open(out) as f:
            doc = json.load(f, parse_constant=lambda c: float(c))
    return p.returncode, text, doc


def finite_everywhere(x, path="$"):
    if isinstance(x, float) and not math.isfinite(x):
        return path
    if isinstance(x, dict):
        for k, v in x.items():
            bad = finite_everywhere(v, path + "." + k)
            if bad:
                return bad
    if isinstance(x, list):
        for i, v in enumerate(x):
            bad = finite_everywhere(v, "%s[%d]" % (path, i))
            if bad:
                return bad
    return None


def joules(doc):
    w = doc[0]
    out = {"total": w.get("cpu_total_joules")}
    for r in w.get("cpu_per_socket", []) + w.get("cpu_per_node", []):
        out[r["label"]] = r["joules"]
    return out


def case(name, damaged_lines, clean_lines, reason, terminate=True):
    end = "\r\n" if terminate else ""
    damaged = run_dir(name, "\r\n".join([HEADER] + damaged_lines) + end)
    clean = run_dir(name + "_clean", "\r\n".join([HEADER] + clean_lines) + "\r\n")
    rc, text, doc = report(damaged)
    crc, _, cdoc = report(clean)
    problems = []
    if rc != 0 or doc is None:
        problems.append("exit %d: %s" % (rc, text[-400:]))
    else:
        bad = finite_everywhere(doc)
        if bad:
            problems.append("non-finite number at " + bad)
        # (warnings quote the cells they refused, so only the figures are searched)
        figures = "\n".join(l for l in text.splitlines() if "samples.csv" not in l)
        if re.search(r"\b(nan|inf)\b", figures, re.I):
            problems.append("'nan' or 'inf' in the text report's figures")
        if crc == 0 and joules(doc) != joules(cdoc):
            problems.append("joules %s, want %s" % (joules(doc), joules(cdoc)))
        path = os.path.join(damaged, "power", "cpu", "samples.csv")
        warned = [w for w in doc[0]["warnings"] if w.startswith(path) and reason in w]
        if not warned:
            problems.append("no warning naming %s and '%s' in %s" % (path, reason, doc[0]["warnings"]))
    if problems:
        failures.append(name)
        print("FAIL %s: %s" % (name, "; ".join(problems)))
    else:
        print("ok - %s" % name)


base = rows()
# A host name holding a comma is quoted by the writer; the file must read as the same data.
quoted = [r.replace("node-a", '"gpu,node1"') for r in base]
plain = [r.replace("node-a", "gpu;node1") for r in base]
rc, _, qdoc = report(run_dir("quoted_host", "\r\n".join([HEADER] + quoted) + "\r\n"))
_, _, pdoc = report(run_dir("quoted_host_plain", "\r\n".join([HEADER] + plain) + "\r\n"))
if rc != 0 or qdoc is None or [v for v in joules(qdoc).values()] != [v for v in joules(pdoc).values()]:
    failures.append("quoted_host")
    print("FAIL quoted_host: exit %d, %s vs %s" % (rc, qdoc and joules(qdoc), joules(pdoc)))
else:
    print("ok - quoted_host")

# Non-finite, zero, negative and absurd readings (one row each, in the middle of the window).
for i, (name, power, reason) in enumerate([
        ("power_inf", "inf", "power_w is not a positive finite number"),
        ("power_minus_inf", "-inf", "power_w is not a positive finite number"),
        ("power_1e999", "1e999", "power_w is not a positive finite number"),
        ("power_nan", "nan", "power_w is not a positive finite number"),
        ("power_negative", "-5", "power_w is not a positive finite number"),
        ("power_zero", "0", "power_w is not a positive finite number"),
        ("power_absurd", "1e30", "power_w is above the physical bound")]):
    at = 20 + 4 * i  # node-a socket 0 of one scrape
    damaged = list(base)
    damaged[at] = row(1000 + (at // 4) * 0.5, "node-a", 0, power=power)
    clean = list(base)
    if "bound" in reason:
        del clean[at]  # the whole row is an error
    else:
        clean[at] = row(1000 + (at // 4) * 0.5, "node-a", 0, power="")
    case(name, damaged, clean, reason)

damaged = list(base)
damaged[21] = row(1000 + 5 * 0.5, "node-a", 1, total="inf")
clean = list(base)
clean[21] = row(1000 + 5 * 0.5, "node-a", 1, total="")
case("total_inf", damaged, clean, "total_power_w is not a positive finite number")

damaged = list(base)
damaged[16] = damaged[16].replace("1002.0", "nan")
clean = list(base)
del clean[16]
case("timestamp_nan", damaged, clean, "timestamp_unix is not a finite number")

# An unclosed quote costs its own line only (the rest of the file is a whole node's rows).
damaged = list(base)
damaged[8] = damaged[8].replace("CPU0:", '"CPU0:')
clean = list(base)
del clean[8]
case("unclosed_quote", damaged, clean, "a quote is never closed")

# A row torn by a killed writer and closed by a restarted one: fewer cells than the header.
damaged = list(base)
damaged.insert(30, "3,1007.5,node-a,acpi,CPU0:cpuSidePowerUsageW,0,10")
case("torn_row_closed_later", damaged, base, "wrong number of cells")

# The torn last line (no line end): its last cell may be cut short, so it is not used.
damaged = base[:-1] + [base[-1][:-2]]
case("torn_last_line", damaged, base[:-1], "the last line has no line end", terminate=False)

# A torn row that lost its socket_id would set the node total: skipped, and said.
damaged = list(base)
damaged.insert(30, "3,1007.5,node-a,acpi,CPU0:cpuSidePowerUsageW,,100,,,,,999")
case("blank_socket_id", damaged, base, "socket_id is not an integer")

# Socket ids outside 0..2^32-1 skip their rows, not the window.
damaged = list(base)
damaged.insert(30, row(1007.5, "node-a", 0).replace(",0,100,", ",-1,100,"))
damaged.insert(31, row(1007.5, "node-a", 0).replace(",0,100,", ",4294967296,100,"))
case("socket_id_out_of_range", damaged, base, "socket_id is not an integer in 0..4294967295")

# A header without rows: the leg reports nothing, and says so.
d = run_dir("header_only", HEADER + "\r\n")
rc, text, doc = report(d)
path = os.path.join(d, "power", "cpu", "samples.csv")
if doc is None or not any(w.startswith(path) and "without rows" in w for w in doc[0]["warnings"]):
    failures.append("header_only")
    print("FAIL header_only: exit %d, warnings %s" % (rc, doc and doc[0]["warnings"]))
else:
    print("ok - header_only")


# ---- the GPU package, the manifests and the benchmark artifacts --------------------------
GPU_HEADER = ("schema_version,timestamp_unix,scrape_seq,hostname,gpu_index,gpu_uuid,power_w,"
              "gpu_util_pct,sm_active,temperature_c")
GPU_WATTS = {("node-a", 0): 300.0, ("node-a", 1): 310.0, ("node-b", 0): 305.0, ("node-b", 1): 315.0}
ROLES = {"node-a": "prefill", "node-b": "decode"}


def gpu_rows(skip=lambda host, gpu, t: False):
    out = []
    for i in range(24):
        t = 1000 + i * 0.5
        for (h, g), w in sorted(GPU_WATTS.items()):
            if not skip(h, g, t):
                out.append("3,%s,%d,%s,%d,GPU-%s-%d,%s,50,0.5,40" % (t, i, h, g, h, g, w))
    return out


def gpu_csv(lines):
    return "".join(l + "\r\n" for l in [GPU_HEADER] + lines)


def gpu_manifest(csv_bytes, rows):
    import hashlib
    return {"schema_version": 1, "producer": "srt-slurm.dcgm-power", "status": "complete",
            "publication_valid": True,
            "expected_devices": [{"hostname": h, "gpu_index": g,
                                  "assignments": [{"worker_role": ROLES[h], "worker_index": 0,
                                                   "worker_process": g, "het_group": None}]}
                                 for (h, g) in sorted(GPU_WATTS)],
            "sample_row_count": rows, "samples_sha256": hashlib.sha256(csv_bytes).hexdigest()}


def gpu_run(name, gpu_text=None, cpu_lines=None, manifest="auto", cpu_manifest=None,
            host_leg=None, result=None):
    """A run with both legs: CPU rows() of node-a and node-b, four GPUs at constant power."""
    d = run_dir(name, "\r\n".join([HEADER] + (cpu_lines if cpu_lines is not None else base)) + "\r\n")
    if host_leg is not None:  # the host leg instead: cpu_power/samples.csv + manifest.json
        os.makedirs(os.path.join(d, "cpu_power"))
        os.rename(os.path.join(d, "power", "cpu", "samples.csv"), os.path.join(d, "cpu_power", "samples.csv"))
        with open(os.path.join(d, "cpu_power", "manifest.json"), "w") as f:
            json.dump(host_leg, f)
    if cpu_manifest is not None:
        with open(os.path.join(d, "power", "cpu", "cpu_manifest.json"), "w") as f:
            json.dump(cpu_manifest, f)
    clean = gpu_csv(gpu_rows()).encode()
    data = clean if gpu_text is None else gpu_text
    if data is not False:  # False: no samples.csv file
        with open(os.path.join(d, "power", "samples.csv"), "wb") as f:
            f.write(data)
    if manifest == "auto":
        manifest = gpu_manifest(clean, len(gpu_rows()))
    if manifest is not None:
        with open(os.path.join(d, "power", "manifest.json"), "w") as f:
            json.dump(manifest, f)
    if result is not None:
        with open(os.path.join(d, "sa-bench_isl_1_osl_1", "results_concurrency_4_gpus_8.json"), "w") as f:
            f.write(result)
    return d


def report_full(d):
    out = os.path.join(d, "out.json")
    if os.path.exists(out):
        os.remove(out)
    p = subprocess.run([BIN + "/cpu-power", "report", d, "--json-out", out], capture_output=True)
    doc = None
    if os.path.exists(out):
        with open(out) as f:
            doc = json.load(f)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace"), doc


def figures(w):
    out = {k: w.get(k) for k in ("cpu_total_joules", "gpu_total_joules", "combined_total_joules",
                                 "joules_per_output_token")}
    for k in ("cpu_per_socket", "cpu_per_node", "gpu_per_device", "gpu_per_role", "gpu_per_node"):
        for r in w.get(k, []):
            out[r["label"]] = round(r["joules"], 6)
    return out


def check(name, problems):
    if problems:
        failures.append(name)
        print("FAIL %s: %s" % (name, "; ".join(problems)))
    else:
        print("ok - %s" % name)


def warned(w, *words):
    return any(all(x in t for x in words) for t in w.get("warnings", []))


_, _, _, truth = report_full(gpu_run("gpu_clean"))
truth_w = truth[0]
p = []
if abs(truth_w["gpu_total_joules"] - 12300.0) > 1e-6:
    p.append("clean gpu_total_joules %s, want 12300 (4 GPUs, 10 s, 1230 W)" % truth_w["gpu_total_joules"])
# The one thing a clean run of these hand-made files lacks: a record of what the readings
# average (coverage not stated), said once per leg.
UNRECORDED = "power: the run's files do not record the averaging interval"
if [w for w in truth_w["warnings"] if UNRECORDED not in w]:
    p.append("clean run warns: %s" % truth_w["warnings"])
check("gpu_clean", p)

# 1. Every GPU row written twice: the same figures at every level, and a warning with the count.
d = gpu_run("gpu_rows_twice", gpu_csv([r for r in gpu_rows() for _ in (0, 1)]).encode())
rc, out, err, doc = report_full(d)
p = []
if doc is None:
    p.append("exit %d, no JSON: %s" % (rc, err))
else:
    if figures(doc[0]) != figures(truth_w):
        p.append("figures %s, want %s" % (figures(doc[0]), figures(truth_w)))
    if not warned(doc[0], os.path.join(d, "power", "samples.csv"), "96", "repeat"):
        p.append("no warning naming the file and the 96 repeated rows: %s" % doc[0]["warnings"])
check("gpu_rows_written_twice", p)

# The CPU file written twice: the same figures (each instant once), and said.
d = gpu_run("cpu_rows_twice", cpu_lines=base + base)
rc, out, err, doc = report_full(d)
p = []
if doc is None or figures(doc[0]) != figures(truth_w):
    p.append("exit %d: figures %s, want %s" % (rc, doc and figures(doc[0]), figures(truth_w)))
elif not warned(doc[0], os.path.join(d, "power", "cpu", "samples.csv"), "repeat"):
    p.append("no warning naming the repeated CPU rows: %s" % doc[0]["warnings"])
check("cpu_rows_written_twice", p)

# 2. A node or a device missing from a file: a warning naming it, in every window.
for name, skip, what in [
        ("gpu_node_missing", lambda h, g, t: h == "node-b", ["gpu/node-b/gpu0", "gpu/node-b/gpu1"]),
        ("gpu_device_missing", lambda h, g, t: (h, g) == ("node-a", 1), ["gpu/node-a/gpu1"])]:
    d = gpu_run(name, gpu_csv(gpu_rows(skip)).encode())
    rc, out, err, doc = report_full(d)
    p = []
    if doc is None:
        p.append("exit %d: %s" % (rc, err))
    else:
        w = doc[0]
        for label in what:
            if not warned(w, label, "expected"):
                p.append("no warning naming %s: %s" % (label, w["warnings"]))
        path = os.path.join(d, "power", "samples.csv")
        if not warned(w, path, "samples_sha256"):
            p.append("no warning that %s differs from samples_sha256" % path)
        if not warned(w, path, "sample_row_count"):
            p.append("no warning that %s has fewer rows than sample_row_count" % path)
    check(name, p)

cpu_nodes = {"node-a": {}, "node-b": {}}
for name, kwargs in [
        ("cpu_node_missing_exporter_leg", {"cpu_manifest": {"schema_version": 1, "nodes": cpu_nodes}}),
        ("cpu_node_missing_host_leg", {"host_leg": {"schema_version": 1, "expected_nodes": ["node-a", "node-b"],
                                                    "missing_nodes": []}})]:
    d = gpu_run(name, cpu_lines=[r for r in base if ",node-b," not in r], **kwargs)
    rc, out, err, doc = report_full(d)
    p = []
    if doc is None:
        p.append("exit %d: %s" % (rc, err))
    elif not warned(doc[0], "cpu/node-b", "expected"):
        p.append("no warning naming cpu/node-b: %s" % doc[0]["warnings"])
    check(name, p)

# A file the manifest does not describe (same rows, other bytes): the digest says so.
d = gpu_run("gpu_sha_mismatch", gpu_csv(gpu_rows()).replace("\r\n", "\n").encode())
rc, out, err, doc = report_full(d)
check("gpu_sha_mismatch", [] if doc and warned(doc[0], os.path.join(d, "power", "samples.csv"), "samples_sha256")
      else ["exit %d, no samples_sha256 warning: %s" % (rc, doc and doc[0]["warnings"])])

# 4. An unusable GPU samples file: exit 1, the file and the column or line named, no report.
gpu_path = lambda d: os.path.join(d, "power", "samples.csv")
clean_text = gpu_csv(gpu_rows())
for name, data, words in [
        ("gpu_header_upper_case", clean_text.replace(GPU_HEADER, GPU_HEADER.upper()).encode(), ["timestamp_unix"]),
        ("gpu_header_leading_spaces", clean_text.replace(GPU_HEADER, " " + GPU_HEADER.replace(",", ", ")).encode(),
         ["line 1", "schema_version", "blanks"]),
        ("gpu_power_w_renamed", clean_text.replace(",power_w,", ",power_watts,").encode(), ["power_w"]),
        ("gpu_random_bytes", bytes(random_bytes := bytearray((i * 7919 + 13) % 251 for i in range(4096))), ["column"]),
        ("gpu_duplicate_column", clean_text.replace(",temperature_c", ",power_w").encode(), ["power_w", "twice"])]:
    d = gpu_run(name, data)
    rc, out, err, doc = report_full(d)
    p = []
    if rc != 1:
        p.append("exit %d, want 1 (stdout %s)" % (rc, out[:300]))
    if not all(x in err for x in [gpu_path(d)] + words):
        p.append("stderr %r does not name %s and %s" % (err[:300], gpu_path(d), words))
    check(name, p)

d = gpu_run("gpu_nul_bytes", b"")
with open(gpu_path(d), "wb") as f:
    f.truncate(2 << 30)  # 2 GiB of NULs, sparse
rc, out, err, doc = report_full(d)
os.remove(gpu_path(d))
check("gpu_2gib_of_nuls", [] if rc == 1 and gpu_path(d) in err and "line 1" in err and "empty" not in err
      else ["exit %d, stderr %r" % (rc, err[:300])])

d = gpu_run("gpu_directory", False)
os.makedirs(gpu_path(d))
rc, out, err, doc = report_full(d)
check("gpu_samples_is_a_directory", [] if rc == 1 and gpu_path(d) in err and "directory" in err
      else ["exit %d, stderr %r stdout %r" % (rc, err[:300], out[:200])])

# An empty GPU file beside its manifest: said as empty, every expected device named, and no
# claim that the manifest is missing.
d = gpu_run("gpu_empty_file", b"")
rc, out, err, doc = report_full(d)
p = []
if doc is None:
    p.append("exit %d: %s" % (rc, err))
else:
    w = doc[0]
    if not warned(w, gpu_path(d), "empty file"):
        p.append("no 'empty file' warning: %s" % w["warnings"])
    if warned(w, "no manifest.json"):
        p.append("claims no manifest.json: %s" % w["warnings"])
    for label in ("gpu/node-a/gpu0", "gpu/node-b/gpu1"):
        if not warned(w, label, "expected"):
            p.append("no warning naming %s" % label)
check("gpu_empty_file_beside_manifest", p)

# The same damage to the CPU file: 2 GiB of NULs is no "empty file", a duplicated column is refused.
d = gpu_run("cpu_nul_bytes")
cpu_path = os.path.join(d, "power", "cpu", "samples.csv")
with open(cpu_path, "wb") as f:
    f.truncate(2 << 30)
rc, out, err, doc = report_full(d)
os.remove(cpu_path)
check("cpu_2gib_of_nuls", [] if rc == 1 and cpu_path in err and "line 1" in err and "empty" not in err
      else ["exit %d, stderr %r" % (rc, err[:300])])
d = gpu_run("cpu_duplicate_column", cpu_lines=[r + ",1" for r in base])
with open(os.path.join(d, "power", "cpu", "samples.csv"), "w", newline="") as f:
    f.write("\r\n".join([HEADER + ",power_w"] + [r + ",1" for r in base]) + "\r\n")
rc, out, err, doc = report_full(d)
check("cpu_duplicate_column", [] if rc == 1 and "power_w" in err and "twice" in err and "samples.csv" in err
      else ["exit %d, stderr %r" % (rc, err[:300])])

# 5. Token counts that are negative, strings or booleans fail the window, naming file and field.
for name, value in [("tokens_negative", "-640"), ("tokens_string", '"640"'), ("tokens_bool", "true")]:
    result = ('{"benchmark_start_time_unix": 1000.0, "benchmark_end_time_unix": 1010.0, "duration": 10, '
              '"total_input_tokens": 100, "total_output_tokens": %s}' % value)
    d = gpu_run(name, result=result)
    rc, out, err, doc = report_full(d)
    res = os.path.join(d, "sa-bench_isl_1_osl_1", "results_concurrency_4_gpus_8.json")
    e = doc and doc[0].get("error") or ""
    check(name, [] if rc == 1 and res in e and "total_output_tokens" in e
          else ["exit %d, window %s" % (rc, doc and doc[0])])

# The same for aiperf's aggregate, and a profile_export.jsonl line that is damaged, not "not
# an object": a UTF-8 byte order mark, a truncated record.
def aiperf_run(name, osl="4200.0", jsonl=None):
    d = gpu_run(name)
    os.remove(os.path.join(d, "sa-bench_isl_1_osl_1", "results_concurrency_4_gpus_8.json"))
    with open(os.path.join(d, "benchmark.out"), "w") as f:
        f.write("14:32:00.646 NOTICE   Phase profiling (profiling) started | target: 60.0s\n")
    art = os.path.join(d, "agentic", "conc_4", "aiperf_artifacts")
    os.makedirs(art)
    rec = {"metadata": {"benchmark_phase": "profiling", "request_start_ns": 1000 * 10**9,
                        "request_end_ns": 1010 * 10**9}}
    with open(os.path.join(art, "profile_export.jsonl"), "wb") as f:
        f.write(jsonl if jsonl is not None else (json.dumps(rec) + "\n").encode())
    with open(os.path.join(art, "profile_export_aiperf.json"), "w") as f:
        f.write('{"total_osl": {"avg": %s}, "total_isl": {"avg": 900.0}, '
                '"benchmark_duration": {"unit": "sec", "avg": 10.0}}' % osl)
    return d, art


d, art = aiperf_run("aiperf_tokens_negative", osl="-640")
rc, out, err, doc = report_full(d)
e = doc and doc[0].get("error") or ""
check("aiperf_tokens_negative", [] if rc == 1 and os.path.join(art, "profile_export_aiperf.json") in e
      and "total_osl.avg" in e else ["exit %d, window %s" % (rc, doc and doc[0])])
good = json.dumps({"metadata": {"benchmark_phase": "profiling", "request_start_ns": 1000 * 10**9,
                                "request_end_ns": 1010 * 10**9}})
for name, line, want in [("jsonl_bom", b"\xef\xbb\xbf" + good.encode(), "byte order mark"),
                         ("jsonl_truncated", good[:-9].encode(), "malformed JSON")]:
    d, art = aiperf_run(name, jsonl=line + b"\n")
    rc, out, err, doc = report_full(d)
    e = doc and doc[0].get("error") or ""
    check(name, [] if rc == 1 and os.path.join(art, "profile_export.jsonl") + ":1" in e and want in e
          and "not a JSON object" not in e else ["exit %d, error %r" % (rc, e)])

# 3. A dead CPU socket: node-a's socket 1 stops at 1005 (its node total after that is
# socket 0 alone with the old collector, blank with the new one). Windows before it are
# untouched; a window it touches fails or warns, naming the node and the socket, and never
# reports the partial total as node-a's energy.
def two_windows(d):
    for c, (s0, e0) in ((2, (1000.0, 1004.0)), (8, (1006.0, 1010.0))):
        with open(os.path.join(d, "sa-bench_isl_1_osl_1", "results_concurrency_%d_gpus_8.json" % c), "w") as f:
            json.dump({"benchmark_start_time_unix": s0, "benchmark_end_time_unix": e0, "duration": 4,
                       "total_input_tokens": 100, "total_output_tokens": 50}, f)


def dead_socket_rows(total_after):
    out = []
    for r in base:
        t = float(r.split(",")[1])
        if ",node-a," in r and t >= 1005:
            if ",1,100," in r:
                continue  # socket 1 is gone
            r = r[: r.rindex(",") + 1] + total_after
        out.append(r)
    return out


def socket_named(w):
    text = " ".join(w.get("warnings", [])) + " " + w.get("error", "")
    return "cpu/node-a/socket1" in text


for name, total_after, manifest in [
        ("dead_socket_old_manifest", "100", {"schema_version": 1, "nodes": {"node-a": {}, "node-b": {}}}),
        ("dead_socket_new_manifest", "", {"schema_version": 1, "nodes": {
            "node-a": {"sockets_expected": [0, 1],
                       "sockets_missing": {"1": {"rows": 14, "first_unix": 1005.0, "last_unix": 1011.0}}},
            "node-b": {"sockets_expected": [0, 1]}}})]:
    d = gpu_run(name, cpu_lines=dead_socket_rows(total_after), cpu_manifest=manifest)
    two_windows(d)
    rc, out, err, doc = report_full(d)
    p = []
    if doc is None:
        p.append("exit %d: %s" % (rc, err))
    else:
        by_c = {w["concurrency"]: w for w in doc}
        early, late, whole = by_c[2], by_c[4], by_c[8]
        if "error" in early or socket_named(early):
            p.append("the window before the socket died is touched: %s" % early.get("error", early["warnings"]))
        for w in (late, whole):
            if not socket_named(w):
                p.append("concurrency %s does not name cpu/node-a/socket1: %s" % (w["concurrency"], w.get("error", w["warnings"])))
            for row in w.get("cpu_per_node", []):
                if row["label"] == "cpu/node-a" and abs(row["avg_power_w"] - 200) > 1e-9:
                    p.append("concurrency %s reports cpu/node-a at %.1f W, a partial node" % (w["concurrency"], row["avg_power_w"]))
        if rc != 1:
            p.append("exit %d with a failed window" % rc)
    check(name, p)

# A socket dead for the whole run (new collector: no total): every window names it.
d = gpu_run("dead_socket_whole_run", cpu_lines=[r for r in base if not (",node-a," in r and ",1,100," in r)],
            cpu_manifest={"schema_version": 1, "nodes": {"node-a": {"sockets_expected": [0, 1]}, "node-b": {}}})
two_windows(d)
rc, out, err, doc = report_full(d)
p = []
for w in doc or []:
    if not socket_named(w):
        p.append("concurrency %s does not name cpu/node-a/socket1: %s" % (w["concurrency"], w.get("warnings")))
    if any(r["label"] == "cpu/node-a" for r in w.get("cpu_per_node", [])):
        p.append("concurrency %s reports the partial cpu/node-a" % w["concurrency"])
check("dead_socket_whole_run", p if doc else ["exit %d: %s" % (rc, err)])

# A symlink loop where benchmark.out should be is no "not found".
d = gpu_run("benchmark_out_loop")
os.remove(os.path.join(d, "benchmark.out"))
os.symlink("benchmark.out", os.path.join(d, "benchmark.out"))
rc, out, err, doc = report_full(d)
check("benchmark_out_symlink_loop", [] if rc == 1 and "benchmark.out" in err and "not found" not in err
      and "symbolic links" in err else ["exit %d, stderr %r" % (rc, err)])

print("%d failures" % len(failures))
sys.exit(1 if failures else 0)
