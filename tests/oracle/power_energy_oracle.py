#!/usr/bin/python3
"""Independent oracle for `cpu-power report`: recomputes every number of the energy report
with pandas and numpy, the plain pandas method for a run's node energy (read_csv, skip blank
totals, de-duplicate per (hostname, timestamp), sort, np.trapezoid per group), with the
reference report's window snapping and numpy's linear percentile, plus our "interpolate"
edge mode.

It shares no code with the C++ report. Usage:
    power_energy_oracle.py LOG_DIR --edges snap|interpolate [--cpu-samples PATH] --json-out PATH
It writes the same JSON list (numbers, labels and per-window errors; free-text warnings are
not reproduced).
"""

import argparse
import datetime as dt
import json
import math
import pathlib
import re
import sys

import numpy as np
import pandas as pd

trapz = getattr(np, "trapezoid", None) or np.trapz
MAX_GAP = 3.0
RAILS = ("cpu_rail_w", "soc_w", "dram_w")
RAIL_NAMES = ("cpu_rail", "soc", "dram")
CPU_UTIL = ("cpu_util_total", "cpu_util_user", "cpu_util_nice", "cpu_util_sys", "cpu_util_irq")
GPU_UTIL = ("gpu_util_pct", "sm_active")
SUFFIX_KIND = {
    "cpuSidePowerUsageW": "total",
    "cpuRailPowerUsageW": "cpu_rail",
    "socPowerUsageW": "soc",
    "dramPowerUsageW": "dram",
    "modulePowerUsageW": "module",
    "cpuPowerUsageW": "dcgm",
}
# No label gives "module": a firmware "Module Power Socket N" meter is unclassified (other);
# module power comes from NVML alone, named CPU<n>:modulePowerUsageW or in module_w.
LABEL_KIND = [
    (r"grace power socket \d", "total"),
    (r"total (input )?power( in uw)? socket \d", "total"),
    (r"cpu rail (input )?power( in uw)? socket \d", "cpu_rail"),
    (r"soc rail (input )?power( in uw)? socket \d", "soc"),
    (r"dram (input )?power( in uw)? socket \d", "dram"),
    (r"cpu (input )?power( in uw)? socket \d", "cpu_rail"),
    (r"sysio power socket \d", "soc"),
]
RANK = ["total", "dcgm", "cpu_rail", "soc", "dram", "module", "other"]


class WindowError(Exception):
    pass


# ---------------------------------------------------------------------------- loading ----


def read_csv(path):
    # Every cell as text, blanks as "": csv.DictReader's view of the file.
    return pd.read_csv(path, dtype=str, keep_default_na=False, na_filter=False)


def series_from(df, tcol, vcol, keep_last=True):
    """(t, w) arrays from rows with a non-blank value; last row wins per timestamp."""
    d = df[df[vcol].str.strip() != ""]
    d = pd.DataFrame({"t": d[tcol].astype(float), "w": d[vcol].astype(float)})
    if keep_last:
        d = d.drop_duplicates(subset=["t"], keep="last")
    d = d.sort_values("t", kind="stable")
    return d["t"].to_numpy(), d["w"].to_numpy()


def classify(sensor):
    if ":" in sensor and sensor.split(":", 1)[1] in SUFFIX_KIND:
        return SUFFIX_KIND[sensor.split(":", 1)[1]]
    low = sensor.lower()
    for pattern, kind in LABEL_KIND:
        if re.search(pattern, low):
            return kind
    return "other"


def load_cpu(path):
    df = read_csv(path)
    df["_t"] = df["timestamp_unix"].astype(float)
    wide = all(c in df.columns for c in RAILS)
    # Node energy, the plain pandas way: rows with a node total, the last one per
    # (hostname, timestamp), sorted by time per host.
    totals = df[df["total_power_w"] != ""]
    per_node_ts = (
        totals[["hostname", "_t", "total_power_w"]]
        .drop_duplicates(subset=["hostname", "_t"], keep="last")
        .sort_values(["hostname", "_t"], kind="stable")
    )
    nodes = {}
    for host, g in per_node_ts.groupby("hostname", sort=True):
        nodes[host] = (g["_t"].to_numpy(), g["total_power_w"].astype(float).to_numpy())
    sockets = {}
    sock_rows = df[df["socket_id"] != ""].copy()
    sock_rows["_sock"] = sock_rows["socket_id"].astype(int)
    for (host, sock), g in sock_rows.groupby(["hostname", "_sock"], sort=True):
        entry = {"rails": {}, "module": None, "util": {}}
        if wide:
            entry["power"] = series_from(g, "_t", "power_w")
            for col, name in zip(RAILS, RAIL_NAMES):
                t, w = series_from(g, "_t", col)
                if len(t):
                    entry["rails"][name] = (t, w)
            if "module_w" in g.columns:
                t, w = series_from(g, "_t", "module_w")
                if len(t):
                    entry["module"] = (t, w)
        else:
            g = g[g["power_w"] != ""]
            kinds = {s: classify(s) for s in g["sensor"].unique()}
            best = min(kinds, key=lambda s: (RANK.index(kinds[s]), s))
            entry["power"] = series_from(g[g["sensor"] == best], "_t", "power_w")
            for name in RAIL_NAMES:
                rows = g[g["sensor"].map(kinds) == name]
                if len(rows):
                    entry["rails"][name] = series_from(rows, "_t", "power_w")
            rows = g[g["sensor"].map(kinds) == "module"]
            if len(rows):
                entry["module"] = series_from(rows, "_t", "power_w")
        for col in CPU_UTIL:
            if col in g.columns:
                t, w = series_from(g, "_t", col, keep_last=False)
                if len(t):
                    entry["util"][col] = (t, w)
        sockets[(host, sock)] = entry
    return {"nodes": nodes, "sockets": sockets, "module_nodes": module_nodes(sockets)}


def module_nodes(sockets):
    out = {}
    hosts = sorted({h for (h, _s) in sockets})
    for host in hosts:
        mods = [sockets[k]["module"] for k in sorted(sockets) if k[0] == host and sockets[k]["module"]]
        if not mods:
            continue
        frames = [pd.Series(w, index=t) for t, w in mods]
        joined = pd.concat(frames, axis=1, join="inner").sort_index()
        total = joined.iloc[:, 0].to_numpy().copy()
        for i in range(1, joined.shape[1]):
            total = total + joined.iloc[:, i].to_numpy()
        out[host] = (joined.index.to_numpy(dtype=float), total)
    return out


def load_gpu(path, manifest):
    df = read_csv(path)
    df["_t"] = df["timestamp_unix"].astype(float)
    df["_i"] = df["gpu_index"].astype(int)
    roles = {}
    if manifest is not None:
        for d in json.loads(manifest.read_text()).get("expected_devices", []):
            roles[(d["hostname"], d["gpu_index"])] = sorted({a["worker_role"] for a in d["assignments"]})
    powered = df[df["power_w"] != ""].copy()
    powered["_w"] = powered["power_w"].astype(float)
    devices = {}
    for (host, idx), g in df.groupby(["hostname", "_i"], sort=True):
        gp = powered[(powered["hostname"] == host) & (powered["_i"] == idx)].sort_values("_t", kind="stable")
        util = {}
        for col in GPU_UTIL:
            if col in g.columns:
                t, w = series_from(g, "_t", col, keep_last=False)
                if len(t):
                    util[col] = (t, w)
        devices[(host, idx)] = {
            "power": (gp["_t"].to_numpy(), gp["_w"].to_numpy()),
            "util": util,
            "roles": roles.get((host, idx), []),
        }
    nodes = {}
    for host, g in powered.groupby("hostname", sort=True):
        s = g.groupby("_t", sort=True)["_w"].sum()
        nodes[host] = (s.index.to_numpy(dtype=float), s.to_numpy())
    role_series = {}
    powered["_roles"] = [roles.get((h, i), []) for h, i in zip(powered["hostname"], powered["_i"])]
    exploded = powered.explode("_roles").dropna(subset=["_roles"])
    for (role, host), g in exploded.groupby(["_roles", "hostname"], sort=True):
        s = g.groupby("_t", sort=True)["_w"].sum()
        role_series[(role, host)] = (s.index.to_numpy(dtype=float), s.to_numpy())
    return {"devices": devices, "nodes": nodes, "roles": role_series}


# ---------------------------------------------------------------------------- windows ----


def iso(stamp, offset):
    try:
        d = dt.datetime.fromisoformat(stamp)
    except (TypeError, ValueError):
        return None
    if d.tzinfo is None and offset is not None:
        d = d.replace(tzinfo=offset)
    return d.timestamp()


def recorded_offset(art_dir):
    for d in (art_dir, art_dir.parent, art_dir.parent.parent):
        f = d / "agentic_power_timezone_offset.txt"
        if f.is_file():
            m = re.match(r"^([+-])(\d{2}):?(\d{2})$", f.read_text().strip())
            if not m:
                return None
            sign = -1 if m.group(1) == "-" else 1
            return dt.timezone(sign * dt.timedelta(hours=int(m.group(2)), minutes=int(m.group(3))))
    return None


def sa_bench_window(path, conc):
    r = json.loads(path.read_text())
    w = {"benchmark_type": "sa-bench", "source": str(path), "concurrency": conc}
    for key in ("benchmark_start_time_unix", "benchmark_end_time_unix", "total_input_tokens", "total_output_tokens"):
        if key not in r:
            raise WindowError(f"{path}: missing required field {key!r}", w)
    p90 = None
    for p, v in r.get("percentiles_tpot_ms") or []:
        if float(p) == 90.0:
            p90 = v
            break
    else:
        # sa-bench's benchmark_serving.py writes the scalar spelling.
        p90 = r.get("p90_tpot_ms")
    w.update(
        start=r["benchmark_start_time_unix"], end=r["benchmark_end_time_unix"],
        out=r["total_output_tokens"], inp=r["total_input_tokens"],
        tpot50=r.get("median_tpot_ms"), tpot90=p90, warm=(None, None), drain=None,
        reported={"source": "sa-bench-json", "start_unix": float(r["benchmark_start_time_unix"]),
                  "end_unix": float(r["benchmark_end_time_unix"]),
                  "duration_seconds": float(r["duration"]) if "duration" in r else None},
    )
    return w


def aiperf_window(jsonl, conc):
    w = {"benchmark_type": "aiperf", "source": str(jsonl), "concurrency": conc}
    starts, ends, wstarts, wends = [], [], [], []
    for line in jsonl.read_text().splitlines():
        if not line.strip():
            continue
        rec = json.loads(line)
        if rec.get("error"):
            continue
        meta = rec.get("metadata", {})
        if meta["benchmark_phase"] == "profiling":
            starts.append(meta["request_start_ns"])
            ends.append(meta["request_end_ns"])
        elif meta["benchmark_phase"] == "warmup" and "request_start_ns" in meta:
            wstarts.append(meta["request_start_ns"])
            wends.append(meta.get("request_end_ns") or meta["request_start_ns"])
    if not starts:
        raise WindowError(f"{jsonl}: no successful profiling-phase records", w)
    agg = json.loads((jsonl.parent / "profile_export_aiperf.json").read_text())
    start = float(min(starts)) / 1e9
    last_end = float(max(ends)) / 1e9
    end = last_end
    bd = agg.get("benchmark_duration")
    if isinstance(bd, dict) and isinstance(bd.get("avg"), (int, float)):
        scale = {"sec": 1.0, "s": 1.0, "seconds": 1.0, "ms": 1e-3}.get(bd.get("unit", "sec"))
        if scale is not None:
            end = min(start + float(bd["avg"]) * scale, last_end)
    tz = recorded_offset(jsonl.parent)
    dur = bd.get("avg") if isinstance(bd, dict) else bd
    itl = agg.get("inter_token_latency")
    w.update(
        start=start, end=end, out=agg["total_osl"]["avg"], inp=agg["total_isl"]["avg"],
        tpot50=itl.get("p50") if isinstance(itl, dict) else None,
        tpot90=itl.get("p90") if isinstance(itl, dict) else None,
        warm=(float(min(wstarts)) / 1e9, float(max(wends)) / 1e9) if wstarts else (None, None),
        drain=last_end if last_end > end else None,
        reported={"source": "aiperf-json", "start_unix": iso(agg.get("start_time"), tz),
                  "end_unix": iso(agg.get("end_time"), tz),
                  "duration_seconds": float(dur) if isinstance(dur, (int, float)) else None},
    )
    return w


def session_window(path):
    s = json.loads(path.read_text())
    return {"benchmark_type": "session", "source": str(path), "concurrency": None,
            "start": s["start_unix"], "end": s["end_unix"], "out": None, "inp": None,
            "tpot50": None, "tpot90": None, "warm": (None, None), "drain": None,
            "reported": {"source": "session-json", "start_unix": s["start_unix"], "end_unix": s["end_unix"],
                         "duration_seconds": s["end_unix"] - s["start_unix"]}}


def windows(log_dir):
    out = []
    for p in sorted(log_dir.rglob("sa-bench_*/results_concurrency_*.json")):
        m = re.match(r"^results_concurrency_(\d+)_", p.name)
        if m:
            out.append((int(m.group(1)), p, lambda p=p, c=int(m.group(1)): sa_bench_window(p, c)))
    for p in sorted(log_dir.rglob("conc_*/aiperf_artifacts/profile_export.jsonl")):
        m = re.match(r"^conc_(\d+)$", p.parent.parent.name)
        if m:
            out.append((int(m.group(1)), p, lambda p=p, c=int(m.group(1)): aiperf_window(p, c)))
    out.sort(key=lambda x: (x[0], x[1]))
    if not out and (log_dir / "session.json").is_file():
        return [lambda: session_window(log_dir / "session.json")]
    return [x[2] for x in out]


# ------------------------------------------------------------------------ integration ----


def stats(t, w, first, last):
    inside = w[first:last + 1]
    p5, p50, p95, p99 = np.percentile(inside, (5, 50, 95, 99))
    return {"sample_start_unix": float(t[first]), "sample_end_unix": float(t[last]),
            "samples": int(last - first + 1), "mean_w": float(np.mean(inside)),
            "min_w": float(np.min(inside)), "p5_w": float(p5), "p50_w": float(p50),
            "p95_w": float(p95), "p99_w": float(p99), "max_w": float(np.max(inside))}


def gap(t, x):
    i = np.searchsorted(t, x, side="left")
    before = x - t[i - 1] if i > 0 else None
    after = t[i] - x if i < len(t) else None
    return before, after


def snap(t, w, S, E, label):
    if len(t) == 0:
        raise WindowError(f"{label}: no power samples available")

    def nearest(x):
        i = int(np.searchsorted(t, x, side="left"))
        if i == 0:
            return 0
        if i == len(t):
            return len(t) - 1
        return i - 1 if (x - t[i - 1]) <= (t[i] - x) else i

    si, ei = nearest(S), nearest(E)
    for edge, idx, x in (("start", si, S), ("end", ei, E)):
        if abs(t[idx] - x) > MAX_GAP:
            raise WindowError(f"{label}: nearest sample to window {edge} is {abs(t[idx] - x):.3f}s away, no coverage")
    if ei <= si:
        raise WindowError(f"{label}: window narrower than the sample spacing")
    j = float(trapz(w[si:ei + 1], x=t[si:ei + 1]))
    return j, si, ei


def interpolate(t, w, S, E, label):
    if E < S:
        raise WindowError(f"{label}: window ends before it starts")
    if len(t) == 0:
        raise WindowError(f"{label}: no power samples available")
    lo = int(np.searchsorted(t, S, side="left"))
    hi = int(np.searchsorted(t, E, side="right"))
    n = len(t)
    xs, ys = [], []
    edge_s = not (lo < n and t[lo] == S)
    edge_e = not (hi > 0 and t[hi - 1] == E)
    for edge, needed, nxt, x in (("start", edge_s, lo, S), ("end", edge_e, hi, E)):
        if needed and not (0 < nxt < n and x - t[nxt - 1] <= MAX_GAP and t[nxt] - x <= MAX_GAP):
            b, a = gap(t, x)
            bt = f"{b:.3f}s before" if b is not None else "none"
            at = f"{a:.3f}s after" if a is not None else "none"
            raise WindowError(f"{label}: window {edge} at {x:.3f} is not bracketed by samples within "
                              f"{MAX_GAP:.1f}s (previous sample {bt}, next sample {at}), no coverage")

    def at(a, b, x):
        return w[a] + (w[b] - w[a]) * (x - t[a]) / (t[b] - t[a])

    if edge_s:
        xs.append(S)
        ys.append(at(lo - 1, lo, S))
    xs.extend(t[lo:hi])
    ys.extend(w[lo:hi])
    if edge_e:
        xs.append(E)
        ys.append(at(hi - 1, hi, E))
    j = float(trapz(np.array(ys, dtype=float), x=np.array(xs, dtype=float)))
    return j, (lo - 1 if edge_s else lo), (hi if edge_e else hi - 1)


def breakdown(series, S, E, label, edges):
    t, w = series
    j, first, last = (snap if edges == "snap" else interpolate)(t, w, S, E, label)
    row = {"label": label, "joules": j, "avg_power_w": j / (E - S) if E - S > 0 else 0.0}
    row.update(stats(t, w, first, last))
    return row


def util_rows(entries, S, E, groups_of):
    rows, groups = [], {}
    for label, util, groups_list in entries:
        for col in sorted(util):
            t, v = util[col]
            inside = v[(t >= S) & (t <= E)]
            if not len(inside):
                continue
            row = {"label": label, "column": col, "mean": float(np.mean(inside)),
                   "max": float(np.max(inside)), "samples": int(len(inside))}
            rows.append(row)
            for g in groups_list:
                groups.setdefault((g, col), []).append(row)
    for (g, col), members in sorted(groups.items()):
        rows.append({"label": g, "column": col, "mean": float(np.mean([m["mean"] for m in members])),
                     "max": max(m["max"] for m in members), "samples": sum(m["samples"] for m in members)})
    return rows


def ratio(rate, watts):
    return None if rate is None or not watts else rate / watts


def report_window(w, cpu, gpu, edges):
    S, E = float(w["start"]), float(w["end"])
    D = w["end"] - w["start"]
    r = {k: w[k] for k in ("benchmark_type", "source", "concurrency")}
    r.update(start_unix=w["start"], end_unix=w["end"], output_tokens=w["out"], input_tokens=w["inp"],
             tpot_p50_ms=w["tpot50"], tpot_p90_ms=w["tpot90"], warmup_start_unix=w["warm"][0],
             warmup_end_unix=w["warm"][1], drain_end_unix=w["drain"])
    sockets = cpu["sockets"] if cpu else {}
    r["cpu_per_socket"] = [breakdown(sockets[k]["power"], S, E, f"cpu/{k[0]}/socket{k[1]}", edges)
                           for k in sorted(sockets) if len(sockets[k]["power"][0])]
    r["cpu_per_node"] = [breakdown(s, S, E, f"cpu/{h}", edges) for h, s in sorted((cpu or {}).get("nodes", {}).items())]
    cpu_total = sum(x["joules"] for x in r["cpu_per_node"]) if cpu else 0.0
    r["cpu_total_joules"] = cpu_total
    devices = gpu["devices"] if gpu else {}
    r["gpu_per_device"] = [breakdown(devices[k]["power"], S, E, f"gpu/{k[0]}/gpu{k[1]}", edges)
                           for k in sorted(devices) if len(devices[k]["power"][0])]
    r["gpu_per_role"] = [breakdown(s, S, E, f"gpu/{h}/{role}", edges) for (role, h), s in sorted((gpu or {}).get("roles", {}).items())]
    r["gpu_per_node"] = [breakdown(s, S, E, f"gpu/{h}", edges) for h, s in sorted((gpu or {}).get("nodes", {}).items())]
    gpu_total = sum(x["joules"] for x in r["gpu_per_node"]) if gpu else 0.0
    r["gpu_total_joules"] = gpu_total
    C = cpu_total + gpu_total
    r["combined_total_joules"] = C
    O, I = w["out"], w["inp"]
    r["joules_per_output_token"] = C / O if O else None
    r["joules_per_total_token"] = C / (O + I) if O is not None and I is not None and O + I != 0 else None
    r["node_power"] = node_power(r, sockets, devices, S, E, edges)
    node_rows = r["cpu_per_node"] + r["gpu_per_node"]
    cs = min((x["sample_start_unix"] for x in node_rows), default=None)
    ce = max((x["sample_end_unix"] for x in node_rows), default=None)
    rep = dict(w["reported"])
    r["timing"] = {"computed": {"start_unix": w["start"], "end_unix": w["end"], "duration_seconds": D},
                   "reported": rep,
                   "coverage": {"sample_start_unix": cs, "sample_end_unix": ce,
                                "duration_seconds": None if cs is None else ce - cs}}
    has_gpu, has_cpu = bool(r["gpu_per_node"]), bool(r["cpu_per_node"])
    otps = O / D if D > 0 and O is not None else None
    ttps = (O + I) / D if D > 0 and O is not None and I is not None else None
    gw = gpu_total / D if has_gpu and D > 0 else None
    cw = cpu_total / D if has_cpu and D > 0 else None
    bw = C / D if has_gpu and has_cpu and D > 0 else None
    ngpu = len(r["gpu_per_device"]) if gpu else 0
    ngpu = sum(1 for k in devices if len(devices[k]["power"][0]))
    r["perf_per_watt"] = {
        "output_tokens_per_second": otps, "total_tokens_per_second": ttps, "num_gpus": ngpu,
        "output_tokens_per_second_per_gpu": otps / ngpu if ngpu and otps is not None else None,
        "gpu_avg_power_w": gw, "cpu_avg_power_w": cw, "combined_avg_power_w": bw,
        "output_tokens_per_second_per_gpu_watt": ratio(otps, gw),
        "output_tokens_per_second_per_cpu_watt": ratio(otps, cw),
        "output_tokens_per_second_per_combined_watt": ratio(otps, bw),
        "total_tokens_per_second_per_gpu_watt": ratio(ttps, gw),
        "total_tokens_per_second_per_cpu_watt": ratio(ttps, cw),
        "total_tokens_per_second_per_combined_watt": ratio(ttps, bw),
    }
    r["cpu_utilization"] = util_rows([(f"cpu/{k[0]}/socket{k[1]}", sockets[k]["util"], [f"cpu/{k[0]}"])
                                      for k in sorted(sockets)], S, E, None)
    r["gpu_utilization"] = util_rows([(f"gpu/{k[0]}/gpu{k[1]}", devices[k]["util"],
                                       [f"gpu/{k[0]}"] + [f"gpu/{k[0]}/{role}" for role in devices[k]["roles"]])
                                      for k in sorted(devices)], S, E, None)
    r["edges"] = edges
    r["module_per_socket"], r["module_per_node"] = [], []
    for k in sorted(sockets):
        if sockets[k]["module"] is not None:
            try:
                r["module_per_socket"].append(breakdown(sockets[k]["module"], S, E, f"cpu/{k[0]}/socket{k[1]}/module", edges))
            except WindowError:
                pass
    for h, s in sorted((cpu or {}).get("module_nodes", {}).items()):
        try:
            r["module_per_node"].append(breakdown(s, S, E, f"module/{h}", edges))
        except WindowError:
            pass
    r["module_total_joules"] = sum(x["joules"] for x in r["module_per_node"]) if r["module_per_node"] else None
    return r


def node_power(r, sockets, devices, S, E, edges):
    hosts = sorted({x["label"][4:] for x in r["cpu_per_node"] + r["gpu_per_node"]})
    out = []
    for h in hosts:
        rails = {}
        for name in RAIL_NAMES:
            vals = []
            for k in sorted(sockets):
                if k[0] == h and name in sockets[k]["rails"]:
                    try:
                        vals.append(breakdown(sockets[k]["rails"][name], S, E, "rail", edges)["avg_power_w"])
                    except WindowError:
                        pass
            if vals:
                total = 0.0
                for v in vals:
                    total += v
                rails[name] = total
        roles = sorted({role for k in devices if k[0] == h and len(devices[k]["power"][0]) for role in devices[k]["roles"]})
        out.append({
            "hostname": h,
            "gpu_w": next((x["avg_power_w"] for x in r["gpu_per_node"] if x["label"] == f"gpu/{h}"), None),
            "cpu_w": next((x["avg_power_w"] for x in r["cpu_per_node"] if x["label"] == f"cpu/{h}"), None),
            "cpu_rails_w": rails,
            "gpu_count": sum(1 for k in devices if k[0] == h and len(devices[k]["power"][0])),
            "socket_count": sum(1 for k in sockets if k[0] == h),
            "roles": roles,
        })
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("log_dir")
    ap.add_argument("--edges", choices=("snap", "interpolate"), default="interpolate")
    ap.add_argument("--cpu-samples")
    ap.add_argument("--json-out", required=True)
    args = ap.parse_args()
    log_dir = pathlib.Path(args.log_dir)
    found = sorted(log_dir.rglob("samples.csv"))
    cpu_path = pathlib.Path(args.cpu_samples) if args.cpu_samples else next(
        (p for p in found if p.parent.name in ("cpu", "cpu_power")), None)
    gpu_path = next((p for p in found if p.parent.name not in ("cpu", "cpu_power")), None)
    cpu = load_cpu(cpu_path) if cpu_path else None
    gpu = None
    if gpu_path:
        manifest = gpu_path.parent / "manifest.json"
        gpu = load_gpu(gpu_path, manifest if manifest.is_file() else None)
    out = []
    for make in windows(log_dir):
        try:
            w = make()
            out.append(report_window(w, cpu, gpu, args.edges))
        except WindowError as e:
            ident = e.args[1] if len(e.args) > 1 else {k: w[k] for k in ("benchmark_type", "source", "concurrency")}
            out.append({**ident, "error": e.args[0], "edges": args.edges})
    pathlib.Path(args.json_out).write_text(json.dumps(out, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
