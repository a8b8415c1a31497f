#!/usr/bin/python3
"""consumer_check.py on small hand-made log directories: a good one, then one per failure."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import consumer_check  # noqa: E402

GPU_V2 = consumer_check.GPU_HEADERS[2]
CPU_V1 = consumer_check.CPU_HEADERS[1]
CPU_V2 = consumer_check.CPU_HEADERS[2]
CPU_V3 = ("schema_version,timestamp_unix,hostname,source,sensor,socket_id,power_w,cpu_rail_w,"
          "soc_w,dram_w,module_w,total_power_w")
HOSTS = ("node-a", "node-b")
TIMES = [100.0 + i for i in range(11)]  # 100 .. 110, one a second
START, END = 101.5, 108.25


def socket_power(host, socket, t):
    """Linear in t, so the trapezoid is exact: 50 + 2 (t - 100), plus 10 per socket and host."""
    return 50.0 + 2.0 * (t - 100.0) + 10.0 * socket + 20.0 * HOSTS.index(host)


def exact_joules(host, socket):
    base = 50.0 + 10.0 * socket + 20.0 * HOSTS.index(host)
    return base * (END - START) + ((END - 100.0) ** 2 - (START - 100.0) ** 2)


def window(**changes):
    doc = {
        "schema_version": 1,
        "benchmark_type": "session",
        "result_path": "session.json",
        "concurrency": None,
        "benchmark_start_time_unix": START,
        "benchmark_end_time_unix": END,
        "duration": END - START,
        "clock_source": "head_node_wall_clock",
        "status": "completed",
        "reason": None,
    }
    doc.update(changes)
    return doc


class LogDir:
    """A good log directory, built from lists that a test changes before write()."""

    def __init__(self):
        self.root = tempfile.mkdtemp(prefix="consumer_check_test.")
        self.gpu_header = GPU_V2
        self.gpu_rows = []
        seq = 0
        for t in TIMES:
            for host in HOSTS:
                self.gpu_rows.append(["2", repr(t), str(seq), host, "0", "GPU-" + host, "400.5",
                                      "80", "0.5"])
            seq += 1
        self.manifest = {"expected_devices": [
            {"hostname": h, "gpu_index": 0, "assignments": [{"worker_role": "prefill"}]}
            for h in HOSTS]}
        self.windows = {"session.json": window()}
        self.cpu_header = CPU_V2
        self.cpu_rows = []
        for t in TIMES:
            for host in HOSTS:
                p = [socket_power(host, s, t) for s in (0, 1)]
                for s in (0, 1):
                    sensor = "CPU%d:cpuSidePowerUsageW" % s
                    self.cpu_rows.append(["2", repr(t), host, "acpi", sensor, str(s), repr(p[s]),
                                          "", "", "", repr(p[0] + p[1])])

    def write(self):
        power = os.path.join(self.root, "power")
        os.makedirs(os.path.join(power, "cpu"), exist_ok=True)
        os.makedirs(os.path.join(power, "windows"), exist_ok=True)

        def csv_text(header, rows):
            return "".join(line + "\r\n" for line in [header] + [",".join(r) for r in rows])

        with open(os.path.join(power, "samples.csv"), "w", newline="") as f:
            f.write(csv_text(self.gpu_header, self.gpu_rows))
        with open(os.path.join(power, "manifest.json"), "w") as f:
            json.dump(self.manifest, f)
        for name, doc in self.windows.items():
            with open(os.path.join(power, "windows", name), "w") as f:
                f.write(doc if isinstance(doc, str) else json.dumps(doc))
        with open(os.path.join(power, "cpu", "samples.csv"), "w", newline="") as f:
            f.write(csv_text(self.cpu_header, self.cpu_rows))
        return self.root

    def check(self):
        return consumer_check.check(self.write())

    def close(self):
        shutil.rmtree(self.root, ignore_errors=True)


class ConsumerCheckTest(unittest.TestCase):
    def setUp(self):
        self.d = LogDir()

    def tearDown(self):
        self.d.close()

    def assertFails(self, *codes):
        report = self.d.check()
        got = sorted({code for code, _ in report.failures})
        self.assertEqual(got, sorted(codes), report.failures)
        return report

    def drop_cpu(self, keep):
        self.d.cpu_rows = [r for r in self.d.cpu_rows if keep(r)]

    # --- the good one -------------------------------------------------------------------

    def test_good_directory_passes_with_exact_energy(self):
        report = self.d.check()
        self.assertEqual(report.failures, [])
        got = {label: joules for _, label, joules in report.energy}
        self.assertEqual(sorted(got), ["cpu/%s/socket%d" % (h, s) for h in HOSTS for s in (0, 1)])
        for host in HOSTS:
            for s in (0, 1):
                self.assertAlmostEqual(got["cpu/%s/socket%d" % (host, s)], exact_joules(host, s),
                                       delta=1e-9 * exact_joules(host, s))
        self.assertTrue(any("window session.json" in ok for ok in report.oks), report.oks)

    def test_edges_on_samples_use_them_as_they_are(self):
        self.d.windows = {"w.json": window(benchmark_start_time_unix=102.0,
                                           benchmark_end_time_unix=107.0)}
        report = self.d.check()
        self.assertEqual(report.failures, [])
        joules = dict((label, j) for _, label, j in report.energy)["cpu/node-a/socket0"]
        self.assertAlmostEqual(joules, 50.0 * 5 + (49.0 - 4.0), delta=1e-9)

    def test_a_gap_of_exactly_three_seconds_is_accepted(self):
        self.drop_cpu(lambda r: not (r[2] == "node-a" and r[5] == "0"
                                     and r[1] in ("104.0", "105.0")))
        report = self.d.check()
        self.assertEqual(report.failures, [])
        self.assertTrue(any("largest gap 3.000 s" in ok for ok in report.oks), report.oks)

    def test_v1_cpu_file_is_accepted(self):
        self.d.cpu_header = CPU_V1
        self.d.cpu_rows = [["1", r[1], r[2], r[3], "Grace Power Socket " + r[5], r[5], r[6],
                            r[10]] for r in self.d.cpu_rows]
        report = self.d.check()
        self.assertEqual(report.failures, [])
        self.assertIn("cpu/node-a/socket1/Grace Power Socket 1",
                      [label for _, label, _ in report.energy])

    def test_windows_not_completed_are_skipped(self):
        self.d.windows["failed.json"] = window(status="failed", reason="benchmark_failed",
                                               benchmark_end_time_unix=500.0)
        report = self.d.check()
        self.assertEqual(report.failures, [])
        self.assertTrue(any("failed.json: status 'failed', not checked" in ok for ok in report.oks))

    # --- CPU package ----------------------------------------------------------------------

    def test_v3_header_is_refused_whole(self):
        self.d.cpu_header = CPU_V3
        self.d.cpu_rows = [r[:10] + [""] + r[10:] for r in self.d.cpu_rows]
        for r in self.d.cpu_rows:
            r[0] = "3"
        report = self.assertFails("cpu_samples_header_mismatch")
        self.assertEqual(report.energy, [])

    def test_schema_version_cell_must_match_the_header(self):
        self.d.cpu_rows[5][0] = "3"
        self.assertFails("cpu_schema_version_mismatch")

    def test_one_source_per_sensor_kind_per_host(self):
        self.d.cpu_rows[7][3] = "dcgm"  # node-b socket 1 at 101: acpi elsewhere
        report = self.assertFails("cpu_source_conflict")
        self.assertIn("host node-b", report.failures[0][1])

    def test_every_socket_on_every_gpu_host(self):
        self.drop_cpu(lambda r: not (r[2] == "node-b" and r[5] == "1"))
        report = self.assertFails("cpu_sockets_incomplete")
        self.assertIn("host node-b: no CPU rows for socket 1", report.failures[0][1])

    def test_every_gpu_host_has_cpu_rows(self):
        self.drop_cpu(lambda r: r[2] != "node-b")
        self.assertFails("cpu_host_missing")

    def test_timestamps_unique_per_host_and_socket(self):
        self.d.cpu_rows.append(list(self.d.cpu_rows[0]))
        self.assertFails("cpu_duplicate_timestamp")

    def test_window_edges_must_be_bracketed(self):
        self.d.windows = {"late.json": window(benchmark_end_time_unix=110.5)}
        report = self.assertFails("measurement_window_not_bracketed")
        self.assertIn("no sample at or after the end", report.failures[0][1])
        self.d.windows = {"early.json": window(benchmark_start_time_unix=99.0)}
        report = self.assertFails("measurement_window_not_bracketed")
        self.assertIn("no sample at or before the start", report.failures[0][1])

    def test_gap_over_three_seconds_inside_a_window(self):
        self.drop_cpu(lambda r: not (r[2] == "node-a" and r[5] == "0"
                                     and r[1] in ("104.0", "105.0", "106.0")))
        report = self.assertFails("sample_gap_exceeded")
        self.assertIn("cpu/node-a/socket0 samples 4.000 s apart (from 103.0)",
                      report.failures[0][1])

    def test_gap_at_the_edge_counts_too(self):
        # The samples around the start are then 100 and 104: the gap that spans the edge counts.
        self.drop_cpu(lambda r: not (r[2] == "node-a" and r[5] == "0"
                                     and r[1] in ("101.0", "102.0", "103.0")))
        self.assertFails("sample_gap_exceeded")

    def test_unreadable_power_is_refused(self):
        self.d.cpu_rows[3][6] = "nan"
        self.assertFails("cpu_invalid_power_value")

    def test_malformed_rows_are_named(self):
        self.d.cpu_rows[2] = self.d.cpu_rows[2][:5]
        self.d.cpu_rows[4][5] = "-1"
        report = self.assertFails("cpu_samples_malformed")
        self.assertEqual(len(report.failures), 2)

    def test_missing_cpu_package(self):
        self.d.write()
        os.remove(os.path.join(self.d.root, "power", "cpu", "samples.csv"))
        report = consumer_check.check(self.d.root)
        self.assertEqual([c for c, _ in report.failures], ["cpu_samples_missing"])

    # --- GPU package ----------------------------------------------------------------------

    def test_gpu_header_must_be_exact(self):
        self.d.gpu_header = GPU_V2 + ",extra"
        self.d.gpu_rows = [r + ["1"] for r in self.d.gpu_rows]
        self.assertFails("samples_csv_header_mismatch")

    def test_gpu_rows_unique_by_seq_host_index(self):
        self.d.gpu_rows.append(list(self.d.gpu_rows[3]))
        self.assertFails("duplicate_sample_row")

    def test_gpu_power_finite_and_non_negative(self):
        self.d.gpu_rows[1][6] = "-1"
        self.d.gpu_rows[2][6] = "inf"
        self.d.gpu_rows[3][6] = ""
        report = self.assertFails("invalid_power_value")
        self.assertEqual(len(report.failures), 3)

    def test_gpu_power_zero_is_a_value(self):
        self.d.gpu_rows[1][6] = "0"
        self.assertFails()

    def test_gpu_uuid_not_empty(self):
        self.d.gpu_rows[4][5] = ""
        self.assertFails("gpu_uuid_missing")

    def test_gpu_index_an_integer(self):
        self.d.gpu_rows[4][4] = "x"
        self.assertFails("gpu_index_missing")

    def test_gpu_schema_version_cell(self):
        self.d.gpu_rows[0][0] = "1"
        self.assertFails("samples_csv_malformed")

    def test_manifest_keys_present(self):
        self.d.manifest = {"devices": []}
        self.assertFails("manifest_key_missing")

    def test_manifest_must_parse(self):
        self.d.write()
        with open(os.path.join(self.d.root, "power", "manifest.json"), "w") as f:
            f.write("{not json")
        report = consumer_check.check(self.d.root)
        self.assertEqual([c for c, _ in report.failures], ["manifest_malformed"])

    def test_window_keys_present(self):
        doc = window()
        del doc["clock_source"]
        self.d.windows = {"w.json": doc}
        report = self.assertFails("measurement_window_malformed")
        self.assertIn("no clock_source", report.failures[0][1])

    def test_window_end_before_start(self):
        self.d.windows = {"w.json": window(benchmark_end_time_unix=START - 1)}
        self.assertFails("measurement_window_malformed")

    def test_no_windows(self):
        self.d.windows = {}
        self.assertFails("measurement_window_missing")

    # --- the command ----------------------------------------------------------------------

    def run_cli(self, *args):
        return subprocess.run([sys.executable, os.path.join(HERE, "consumer_check.py"), *args],
                              capture_output=True, text=True, check=False)

    def test_cli_exit_status_and_lines(self):
        root = self.d.write()
        good = self.run_cli(root)
        self.assertEqual(good.returncode, 0, good.stdout + good.stderr)
        lines = good.stdout.splitlines()
        self.assertTrue(all(line.startswith(("ok ", "energy ")) for line in lines), lines)
        energy = [line.split() for line in lines if line.startswith("energy ")]
        self.assertEqual(len(energy), 4)
        self.assertEqual(energy[0][:3], ["energy", "session.json", "cpu/node-a/socket0"])
        self.assertEqual(float(energy[0][3]), consumer_check.check(root).energy[0][2])

        self.d.cpu_header = CPU_V3
        bad = self.run_cli(self.d.write())
        self.assertEqual(bad.returncode, 1)
        self.assertIn("FAIL cpu_samples_header_mismatch: ", bad.stdout)
        self.assertNotIn("energy ", bad.stdout)

        self.assertEqual(self.run_cli().returncode, 2)
        self.assertEqual(self.run_cli(os.path.join(root, "nope")).returncode, 2)


if __name__ == "__main__":
    unittest.main()
