#!/usr/bin/env python3
"""The energy report on damaged and hostile CPU samples files.

Each case writes a damaged samples.csv and the same file with the damage taken out by hand
(what the report must read), reports both, and requires: exit status 0, the same joules for
every socket, node and total, no non-finite number anywhere in the JSON and no 'nan' or 'inf'
in the text, and a warning that names the file and the reason. Usage: report_damage.py BIN WORK
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

print("%d failures" % len(failures))
sys.exit(1 if failures else 0)
