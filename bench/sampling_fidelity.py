#!/usr/bin/python3
"""Sampling fidelity: how often each channel's published value is refreshed.

Runs a simulated GB200 node (6 rails) whose reads each block for SLOW_MS (a FIFO answering
after the delay, like the ~150 ms firmware round trip), and measures, per channel, the
period between successive reads that reached the exporter, from its own counters over a
fixed window. Then runs the reference's schedule on the same node for comparison: sleep 1 s,
then read every channel in turn. Usage: sampling_fidelity.py BIN_DIR [SLOW_MS] [SECONDS]
"""
import os, re, subprocess, sys, tempfile, time, glob, urllib.request

BIN = sys.argv[1] if len(sys.argv) > 1 else "build/bin"
SLOW_MS = int(sys.argv[2]) if len(sys.argv) > 2 else 150
SECONDS = float(sys.argv[3]) if len(sys.argv) > 3 else 10.0


def wait_for(path, pattern, timeout=15):
    end = time.time() + timeout
    while time.time() < end:
        try:
            m = re.search(pattern, open(path).read())
            if m:
                return m
        except FileNotFoundError:
            pass
        time.sleep(0.05)
    raise SystemExit(f"timed out waiting for {pattern} in {path}")


def start_sim(work, slow_ms):
    faults = []
    if slow_ms:
        for k in ["total:0", "cpu_rail:0", "soc:0", "total:1", "cpu_rail:1", "soc:1"]:
            faults += ["--fault", f"{k}=slow:{slow_ms}"]
    log = os.path.join(work, "sim.log")
    p = subprocess.Popen([f"{BIN}/cpu-power", "sim-node", "--root", f"{work}/hwmon", "--profile",
                          "gb200", "--model", "constant"] + faults,
                         stdout=open(log, "w"), stderr=subprocess.STDOUT)
    wait_for(log, r"sim-node ready")
    return p


def reads_totals(url):
    body = urllib.request.urlopen(url, timeout=2).read().decode()
    return {m.group(1): int(m.group(2)) for m in
            re.finditer(r'^cpu_power_exporter_reads_total\{sensor="([^"]+)"\} (\d+)$', body, re.M)}


def measure_ours(work, slow_ms):
    sim = start_sim(work, slow_ms)
    log = os.path.join(work, f"exp{slow_ms}.log")
    exp = subprocess.Popen([f"{BIN}/cpu-power-exporter", "--bind", "127.0.0.1", "--port", "0",
                            "--hwmon-root", f"{work}/hwmon"], stdout=open(log, "w"),
                           stderr=subprocess.STDOUT)
    port = wait_for(log, r"listening addr=[0-9.]+:(\d+)").group(1)
    url = f"http://127.0.0.1:{port}/metrics"
    time.sleep(1.0)
    a, t0 = reads_totals(url), time.monotonic()
    time.sleep(SECONDS)
    b, t1 = reads_totals(url), time.monotonic()
    exp.terminate(); exp.wait()
    sim.terminate(); sim.wait()
    return {s: (t1 - t0) / max(1, b[s] - a[s]) for s in sorted(a)}


def measure_reference_schedule(work, slow_ms):
    """The reference's acpi-poller: sleep 1 s, then read every channel in turn."""
    sim = start_sim(work, slow_ms)
    files = sorted(glob.glob(f"{work}/hwmon/hwmon*/power1_average"))
    files = [f for f in files if "power_meter" in open(os.path.join(os.path.dirname(f), "name")).read()]
    last = {f: None for f in files}
    periods = {f: [] for f in files}
    end = time.monotonic() + SECONDS + 2
    while time.monotonic() < end:
        time.sleep(1.0)
        for f in files:
            open(f).read()
            now = time.monotonic()
            if last[f] is not None:
                periods[f].append(now - last[f])
            last[f] = now
    sim.terminate(); sim.wait()
    return {os.path.basename(os.path.dirname(f)) + "/power1": sum(p) / len(p) for f, p in periods.items() if p}


def main():
    rows = []
    for slow in (SLOW_MS, 0):
        with tempfile.TemporaryDirectory() as work:
            ours = measure_ours(work, slow)
        with tempfile.TemporaryDirectory() as work:
            ref = measure_reference_schedule(work, slow)
        rows.append((slow, ours, ref))
    print("| read time per channel | channel | ours: refresh period (s) | reference schedule (s) |")
    print("|---|---|---|---|")
    for slow, ours, ref in rows:
        for s in ours:
            print(f"| {slow} ms | {s} | {ours[s]:.3f} | {ref.get(s, float('nan')):.3f} |")
    for slow, ours, ref in rows:
        print(f"\n- reads of {slow} ms: worst refresh period ours {max(ours.values()):.3f} s, "
              f"reference schedule {max(ref.values()):.3f} s")


if __name__ == "__main__":
    main()
