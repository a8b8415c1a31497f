// Discovery, windows (sa-bench, aiperf with its fallbacks, session), whole-run reports and
// their text and JSON output, against the reference report's tests and worked examples.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <regex>

#include "report/discovery.hpp"
#include "report/phase_log.hpp"
#include "report/render.hpp"
#include "report/run_report.hpp"
#include "report/window.hpp"

namespace cpupower::report {
namespace {

namespace fs = std::filesystem;

class RunDir : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(testing::TempDir()) /
           ("report_run_" +
            std::string(testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string write(const std::string& rel, const std::string& text) {
    const fs::path p = dir_ / rel;
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << text;
    return p.string();
  }
  std::string dir() const { return dir_.string(); }

  // _write_sa_bench_run plus a flat CPU series around the window.
  void sa_bench_run(double start, double end, double cpu_w) {
    write("benchmark.out", "Successful requests: 40\n");
    write("sa-bench_isl_1_osl_1/results_concurrency_4_gpus_1.json",
          "{\"benchmark_start_time_unix\": " + std::to_string(start) +
              ", \"benchmark_end_time_unix\": " + std::to_string(end) +
              ", \"duration\": 9.8, \"total_input_tokens\": 1500, \"total_output_tokens\": 500}");
    std::string csv =
        "schema_version,timestamp_unix,hostname,source,sensor,socket_id,power_w,total_power_w\n";
    for (double t = start - 1; t <= end + 1; t += 1) {
      csv += "1," + std::to_string(t) + ",node-a,acpi,Grace Power Socket 0,0," +
             std::to_string(cpu_w) + "," + std::to_string(cpu_w) + "\n";
    }
    write("power/cpu/samples.csv", csv);
  }

  fs::path dir_;
};

// benchmark.out tells the benchmark: aiperf's profiling-phase NOTICE lines or sa-bench's result
// banner; both, or neither, is an error.
TEST_F(RunDir, DetectsBenchmarkTypeFromMarkers) {
  EXPECT_TRUE(has_aiperf_marker(
      "09:00:01.000 NOTICE   Phase profiling (profiling) started | target: 3600.0s duration"));
  EXPECT_FALSE(has_aiperf_marker("Phase profiling (profiling) sending complete | sent=63"));
  EXPECT_TRUE(has_aiperf_marker("Phase profiling (profiling) complete"));
  EXPECT_TRUE(has_sa_bench_marker("============ Serving Benchmark Result ============"));
  write("power/cpu/samples.csv", "timestamp_unix\n");
  write("benchmark.out", "Phase profiling (profiling) started\nSuccessful requests: 1\n");
  EXPECT_NE(discover_run(dir(), std::nullopt).error.find("both aiperf and sa-bench"),
            std::string::npos);
  write("benchmark.out", "nothing here\n");
  EXPECT_NE(discover_run(dir(), std::nullopt).error.find("neither aiperf nor sa-bench"),
            std::string::npos);
}

// Inputs are found by their directory: cpu/ and cpu_power/ hold CPU samples, any other
// samples.csv is the GPU leg's; sa-bench results need `results_concurrency_<N>_` inside
// sa-bench_*; two candidates for one leg are an error unless --cpu-samples picks one.
TEST_F(RunDir, DiscoveryByParentDirectory) {
  write("benchmark.out", "Successful requests: 1\n");
  write("sa-bench_isl_1_osl_1/results_concurrency_1_gpus_1.json", "{}");
  write("sa-bench_isl_1_osl_1/results_concurrency_2.json", "{}");  // no '_' after N: ignored
  write("power/windows/results_concurrency_1_gpus_1.json", "{}");
  write("power/cpu/samples.csv", "x\n");
  write("power/samples.csv", "x\n");
  Discovery d = discover_run(dir(), std::nullopt);
  ASSERT_TRUE(d.run) << d.error;
  EXPECT_EQ(*d.run->cpu_samples, dir() + "/power/cpu/samples.csv");
  EXPECT_EQ(*d.run->gpu_samples, dir() + "/power/samples.csv");
  ASSERT_EQ(d.run->sources.size(), 1u);
  EXPECT_EQ(d.run->sources[0].concurrency, 1);
  write("cpu_power/samples.csv", "x\n");
  write("cpu_power/nodes/node-a.csv", "x\n");
  d = discover_run(dir(), std::nullopt);
  EXPECT_EQ(d.error, "multiple CPU power samples.csv found below " + dir() + ": " + dir() +
                         "/cpu_power/samples.csv, " + dir() +
                         "/power/cpu/samples.csv; pick one with --cpu-samples");
  d = discover_run(dir(), dir() + "/cpu_power/samples.csv");
  ASSERT_TRUE(d.run);
  EXPECT_EQ(*d.run->cpu_samples, dir() + "/cpu_power/samples.csv");
  EXPECT_EQ(discover_run(dir(), dir() + "/nope.csv").error, dir() + "/nope.csv: not found");
  write("stray/samples.csv", "x\n");
  EXPECT_EQ(discover_run(dir(), dir() + "/cpu_power/samples.csv").error,
            "multiple GPU power samples.csv found below " + dir() + ": [PosixPath('" + dir() +
                "/power/samples.csv'), PosixPath('" + dir() + "/stray/samples.csv')]");
}

TEST_F(RunDir, DiscoveryErrorsInReferenceOrder) {
  EXPECT_EQ(discover_run(dir(), std::nullopt).error, dir() + "/benchmark.out: not found");
  write("benchmark.out", "Successful requests: 1\n");
  EXPECT_EQ(discover_run(dir() + "/", std::nullopt).error,
            "no power samples.csv (CPU or GPU) found below " + dir());
  write("power/samples.csv", "x\n");
  EXPECT_EQ(discover_run(dir(), std::nullopt).error,
            "no sa-bench result artifacts found below " + dir());
}

TEST_F(RunDir, SessionWindowWhenThereAreNoBenchmarkArtifacts) {
  write("power/cpu/samples.csv", "x\n");
  write(
      "session.json",
      R"({"schema_version": 1, "command": ["cmd", "arg"], "start_unix": 1788310140.123, "end_unix": 1788310200.456, "exit_code": 0})");
  const Discovery d = discover_run(dir(), std::nullopt);
  ASSERT_TRUE(d.run) << d.error;
  EXPECT_EQ(d.run->benchmark_type, "session");
  const Window w = load_session_window(d.run->sources[0].path);
  EXPECT_EQ(w.error, "");
  EXPECT_DOUBLE_EQ(w.start_unix, 1788310140.123);
  EXPECT_DOUBLE_EQ(w.end_unix, 1788310200.456);
  EXPECT_EQ(*w.reported.note, "command: cmd arg (exit code 0)");
}

// An sa-bench window is its result JSON's own start and end (an integer stays an integer),
// with its tokens, TPOT p50 and the 90th entry of percentiles_tpot_ms, and its duration (or a
// note that it has none) for comparison.
TEST_F(RunDir, SaBenchWindowFields) {
  Window w = load_sa_bench_window(
      write("r.json", R"({"benchmark_start_time_unix": 100, "benchmark_end_time_unix": 101.5,
        "total_input_tokens": 10, "total_output_tokens": 20, "duration": 59.7,
        "median_tpot_ms": 12.3, "percentiles_tpot_ms": [[50, 12.3], [90, 18.7], [99, 25.0]]})"),
      4);
  EXPECT_TRUE(w.start_json.is_number_integer());
  EXPECT_DOUBLE_EQ(w.end_unix, 101.5);
  EXPECT_EQ(*w.output_tokens, 20);
  EXPECT_EQ(*w.tpot_p50_ms, 12.3);
  EXPECT_EQ(*w.tpot_p90_ms, 18.7);
  EXPECT_EQ(*w.reported.duration_seconds, 59.7);
  w = load_sa_bench_window(
      write("r2.json", R"({"benchmark_start_time_unix": 1, "benchmark_end_time_unix": 2,
        "total_input_tokens": 1, "total_output_tokens": 1, "percentiles_tpot_ms": null})"),
      1);
  EXPECT_FALSE(w.tpot_p90_ms);
  EXPECT_EQ(*w.reported.note, "result JSON has no 'duration' field");
  w = load_sa_bench_window(write("r3.json", R"({"benchmark_start_time_unix": 1})"), 1);
  EXPECT_EQ(w.error, dir() + "/r3.json: missing required field 'benchmark_end_time_unix'");
}

std::string record(const char* phase, double start_s, double end_s, bool error = false) {
  return std::string("{\"metadata\": {\"benchmark_phase\": \"") + phase +
         "\", \"request_start_ns\": " + std::to_string(static_cast<long long>(start_s * 1e9)) +
         ", \"request_end_ns\": " + std::to_string(static_cast<long long>(end_s * 1e9)) + "}" +
         (error ? ", \"error\": {\"code\": 500}" : ", \"error\": null") + "}\n";
}

TEST_F(RunDir, MalformedJsonErrorsSayWhereAndWhy) {
  Window w = load_sa_bench_window(
      write("r.json", "{\"benchmark_start_time_unix\": 1,\n \"benchmark_end_time_unix\": }\n"), 1);
  EXPECT_EQ(w.error, dir() +
                         "/r.json:2:29: malformed JSON: syntax error while parsing value - "
                         "unexpected '}'; expected '[', '{', or a literal");
  // A record cut off mid-line (a writer killed mid-write): its line and simdjson's reason.
  const std::string jsonl = write("conc_2/aiperf_artifacts/profile_export.jsonl",
                                  record("profiling", 1, 2) + "{\"metadata\": {\"benchmark_ph");
  w = load_aiperf_records_window(jsonl, 2, dir() + "/benchmark.out");
  EXPECT_EQ(w.error, jsonl + ":2: malformed JSON (A string is opened, but never closed.)");
}

// An aiperf window spans its successful profiling records: warmup records give the warmup
// span, records with an error are skipped, blank lines ignored; the aggregate beside the
// records is required for the tokens.
TEST_F(RunDir, AiperfRecordsFilterWarmupAndErrors) {
  const std::string jsonl =
      write("conc_8/aiperf_artifacts/profile_export.jsonl",
            record("warmup", 1e-9, 2e-9) + record("profiling", 1, 2) + "\n" +
                record("profiling", .5, 3) + record("profiling", 0, 999, true));
  Window w = load_aiperf_records_window(jsonl, 8, dir() + "/benchmark.out");
  EXPECT_NE(w.error.find("profile_export_aiperf.json: not found (expected alongside"),
            std::string::npos);
  write(
      "conc_8/aiperf_artifacts/profile_export_aiperf.json",
      R"({"total_osl": {"avg": 42}, "total_isl": {"avg": 7}, "inter_token_latency": {"p50": 8.86, "p90": 10.44}})");
  w = load_aiperf_records_window(jsonl, 8, dir() + "/benchmark.out");
  ASSERT_EQ(w.error, "");
  EXPECT_DOUBLE_EQ(w.start_unix, 0.5);
  EXPECT_DOUBLE_EQ(w.end_unix, 3.0);
  EXPECT_EQ(*w.output_tokens, 42);
  EXPECT_EQ(*w.input_tokens, 7);
  EXPECT_EQ(*w.tpot_p90_ms, 10.44);
  EXPECT_DOUBLE_EQ(*w.warmup_start_unix, 1e-9);
  EXPECT_FALSE(w.drain_end_unix);
  EXPECT_EQ(w.reported.source, "unavailable");
}

// An aiperf window ends at start + benchmark_duration, when aiperf stops issuing requests; a
// later last reply is the drain, kept beside the window.
TEST_F(RunDir, AiperfWindowEndsAtBenchmarkDuration) {
  const std::string jsonl =
      write("conc_1/aiperf_artifacts/profile_export.jsonl", record("profiling", 1000, 1100));
  write(
      "conc_1/aiperf_artifacts/profile_export_aiperf.json",
      R"({"total_osl": {"avg": 1}, "total_isl": {"avg": 1}, "benchmark_duration": {"unit": "sec", "avg": 99.5},
            "start_time": "2026-09-06T14:32:00.646759", "end_time": "2026-09-06T14:33:40.146759"})");
  write("conc_1/agentic_power_timezone_offset.txt", "+00:00\n");
  const Window w = load_aiperf_records_window(jsonl, 1, dir() + "/benchmark.out");
  ASSERT_EQ(w.error, "");
  EXPECT_DOUBLE_EQ(w.duration_s(), 99.5);
  EXPECT_DOUBLE_EQ(*w.drain_end_unix, 1100.0);
  EXPECT_EQ(w.reported.source, "aiperf-json");
  EXPECT_DOUBLE_EQ(*w.reported.duration_seconds, 99.5);
  EXPECT_NEAR(*w.reported.end_unix - *w.reported.start_unix, 99.5, 1e-6);
  EXPECT_NE(w.reported.note->find("recorded timezone offset"), std::string::npos);
}

// Without aggregate timing, aiperf's profiling NOTICE pair gives the reported duration: its
// elapsed= when there is one, else the stamps' difference (across midnight too); several
// profiling phases cannot be paired to one window.
TEST_F(RunDir, PhaseLogFallback) {
  const std::string out =
      write("benchmark.out",
            "22:09:07.432 NOTICE   Phase profiling (profiling) started | x\n"
            "22:29:07.900 NOTICE   Phase profiling (profiling) sending complete | sent=63\n"
            "22:29:07.932 NOTICE   Phase profiling (profiling) complete | completed=63 | "
            "elapsed=1200.50s (runner.py:1162)\n");
  ReportedTiming r = phase_log_timing(out);
  EXPECT_EQ(r.source, "aiperf-phase-log");
  EXPECT_DOUBLE_EQ(*r.duration_seconds, 1200.5);
  EXPECT_FALSE(r.start_unix);
  EXPECT_EQ(*r.note, "phase started 22:09:07.432, complete 22:29:07.932 (time-of-day only)");
  write("benchmark.out",
        "23:59:00.000 NOTICE   Phase profiling (profiling) started\n"
        "00:01:00.000 NOTICE   Phase profiling (profiling) complete\n");
  EXPECT_DOUBLE_EQ(*phase_log_timing(out).duration_seconds, 120.0);
  write("benchmark.out",
        "00:00:00.000 NOTICE   Phase profiling (profiling) started\n"
        "00:01:00.000 NOTICE   Phase profiling (profiling) complete\n"
        "00:02:00.000 NOTICE   Phase profiling (profiling) started\n"
        "00:03:00.000 NOTICE   Phase profiling (profiling) complete\n");
  r = phase_log_timing(out);
  EXPECT_EQ(r.source, "unavailable");
  EXPECT_NE(r.note->find("2 profiling phases"), std::string::npos);
  write("benchmark.out", "nothing\n");
  EXPECT_FALSE(phase_log_timing(out).note);
}

// An aggregate-only aiperf window reads its naive stamps in the recorded UTC offset and its
// warmup from the NOTICE lines; per-record exports win over aggregates for the same N.
TEST_F(RunDir, AiperfAggregateOnlyWindowWithRecordedOffset) {
  write("benchmark.out",
        "14:42:23.718 NOTICE   Phase warmup (warmup) started\n"
        "15:12:01.957 NOTICE   Phase warmup (warmup) complete | elapsed=1778.24s\n"
        "15:12:02.200 NOTICE   Phase profiling (profiling) started\n"
        "16:12:42.205 NOTICE   Phase profiling (profiling) complete | elapsed=3640.00s\n");
  const std::string agg = write(
      "agentic/conc_8/aiperf_artifacts/profile_export_aiperf.json",
      R"({"start_time": "2026-09-16T15:12:02.200000", "end_time": "2026-09-16T16:12:42.200000",
            "benchmark_duration": {"avg": 3640.0}, "total_osl": {"avg": 100}, "total_isl": {"avg": 50},
            "inter_token_latency": {"p50": 9, "p90": 11}})");
  write("agentic/conc_8/agentic_power_timezone_offset.txt", "-0700");
  const Discovery d = discover_run(dir(), std::nullopt);
  ASSERT_FALSE(d.run);  // no samples yet
  const Window w = load_aiperf_aggregate_window(agg, 8, dir() + "/benchmark.out");
  ASSERT_EQ(w.error, "");
  EXPECT_NEAR(w.start_unix, 1789596722.2, 0.01);
  EXPECT_NEAR(w.end_unix, 1789600362.2, 0.01);
  EXPECT_EQ(*w.output_tokens, 100);
  EXPECT_EQ(*w.tpot_p90_ms, 11.0);
  EXPECT_DOUBLE_EQ(*w.warmup_end_unix, w.start_unix);
  EXPECT_DOUBLE_EQ(*w.warmup_start_unix, w.start_unix - 1778.24);
  // The per-record export wins over the aggregate for the same N.
  write("agentic/conc_8/aiperf_artifacts/profile_export.jsonl", "");
  write("power/samples.csv", "x\n");
  const Discovery both = discover_run(dir(), std::nullopt);
  ASSERT_TRUE(both.run) << both.error;
  EXPECT_EQ(both.run->sources[0].kind, SourceKind::aiperf_records);
}

// The 510 J worked example through discovery, loading and the text report: 40, 44 and 42 W
// at 9, 15 and 21 s over a 10 s window, snapped. Interpolation lacks samples within 3 s of
// the edges, so the same window fails in that mode.
TEST_F(RunDir, EndToEndAiperf510Joules) {
  write("benchmark.out", "Phase profiling (profiling) complete\n");
  write("agentic/conc_4/aiperf_artifacts/profile_export.jsonl", record("profiling", 10, 20));
  write("agentic/conc_4/aiperf_artifacts/profile_export_aiperf.json",
        R"({"total_osl": {"avg": 5}, "total_isl": {"avg": 2}})");
  write("power/cpu/samples.csv",
        "schema_version,timestamp_unix,hostname,source,sensor,socket_id,power_w,total_power_w\n"
        "1,9,node-a,acpi,Grace Power Socket 0,0,40,40\n1,15,node-a,acpi,Grace Power Socket "
        "0,0,44,44\n"
        "1,21,node-a,acpi,Grace Power Socket 0,0,42,42\n");
  ReportOptions o;
  o.edges = Edges::snap;
  const ReportRun run = build_reports(dir(), o);
  ASSERT_EQ(run.error, "");
  ASSERT_EQ(run.windows.size(), 1u);
  const WindowReport& r = run.windows[0];
  EXPECT_DOUBLE_EQ(r.cpu_total_joules.get<double>(), 510.0);
  EXPECT_DOUBLE_EQ(r.gpu_total_joules.get<double>(), 0.0);
  EXPECT_DOUBLE_EQ(*r.joules_per_output_token, 102.0);
  EXPECT_DOUBLE_EQ(r.cpu_per_node[0].stats.avg_power_w, 51.0);
  EXPECT_DOUBLE_EQ(r.coverage->start_unix, 9.0);
  EXPECT_DOUBLE_EQ(r.coverage->end_unix, 21.0);
  const std::string text = render_text(run.windows, o.edges);
  EXPECT_NE(text.find("samples cover 9.000..21.000 (12.00s)"), std::string::npos) << text;
  // Interpolation needs samples within 3 s on both sides of each edge: this window fails.
  o.edges = Edges::interpolate;
  EXPECT_TRUE(build_reports(dir(), o).any_window_failed());
}

// The averaging interval the legs record: cpu_manifest.json's average_interval_s (exporter
// leg) and the host leg's node metadata. With it, coverage is stated; a manifest without it
// (an older collector) leaves coverage null, warned.
TEST_F(RunDir, CoverageComesFromTheAveragingTheManifestsRecord) {
  write("benchmark.out", "Successful requests: 40\n");
  write(
      "sa-bench_x/results_concurrency_4_gpus_1.json",
      R"({"benchmark_start_time_unix": 100.0, "benchmark_end_time_unix": 110.0, "duration": 10, "total_input_tokens": 1500, "total_output_tokens": 500})");
  // Readings every second, 100 W, then 300 W from 105.
  std::string rows =
      "schema_version,timestamp_unix,hostname,source,sensor,socket_id,power_w,cpu_rail_w,soc_w,"
      "dram_w,module_w,total_power_w\n";
  for (int t = 98; t <= 112; ++t) {
    const std::string w = t < 105 ? "100" : "300";
    rows += "3," + std::to_string(t) + ",node-a,acpi,CPU0:cpuSidePowerUsageW,0," + w + ",,,,," + w +
            "\n";
  }
  write("power/cpu/samples.csv", rows);
  const auto manifest = [&](const std::string& averaging) {
    write("power/cpu/cpu_manifest.json",
          R"({"producer": "srt-slurm.cpu-power", "nodes": {"node-a": {"resolved_mode": "acpi", )"
          R"("sockets_expected": [0], "sockets_missing": {})" +
              averaging + "}}}");
  };
  manifest(R"(, "average_interval_s": {"min": 0.5, "max": 0.5})");
  ReportRun run = build_reports(dir(), {});
  ASSERT_EQ(run.error, "");
  const WindowReport& r = run.windows.at(0);
  ASSERT_TRUE(r.cpu_per_node.at(0).stats.coverage);
  EXPECT_NEAR(*r.cpu_per_node[0].stats.coverage, 0.5, 1e-9);
  // The step between 104 and 105: 0.5 s uncovered, 0.5 s averaged, 200 W; the readings'
  // staleness at both, 100 W a reading each.
  const double gap = 200 * 0.5 / 2 + 200 * 0.5 / 8, dates = kDateResolutionS * 200;
  const double stale = kDateResolutionS * kDateResolutionS / 12 * 2 * 100 * 100;
  EXPECT_NEAR(r.cpu_per_node[0].stats.uncertainty_j,
              kCoverageFactor * std::sqrt((gap * gap + dates * dates) / 3 + stale), 1e-9);
  EXPECT_NEAR(*r.cpu_total_error.coverage, 0.5, 1e-9);
  EXPECT_DOUBLE_EQ(r.cpu_total_error.uncertainty_j, r.cpu_per_node[0].stats.uncertainty_j);
  EXPECT_DOUBLE_EQ(*r.joules_per_output_token_uncertainty, r.cpu_total_error.uncertainty_j / 500);
  for (const auto& w : r.warnings) EXPECT_EQ(w.find("averaging interval"), std::string::npos) << w;

  manifest("");  // an older collector's manifest
  run = build_reports(dir(), {});
  const WindowReport& old = run.windows.at(0);
  EXPECT_FALSE(old.cpu_per_node.at(0).stats.coverage);
  EXPECT_FALSE(old.cpu_total_error.coverage);
  EXPECT_NE(
      std::find(old.warnings.begin(), old.warnings.end(),
                "CPU power: the run's files do not record the averaging interval of cpu/node-a "
                "(an older collector, a DCGM source, or the GPU leg); coverage is not stated, "
                "and the uncertainty takes each sample as instantaneous"),
      old.warnings.end())
      << testing::PrintToString(old.warnings);

  // The host leg: its manifest's node metadata names each socket total's interval.
  fs::remove_all(dir() + "/power");
  write("cpu_power/manifest.json",
        R"({"status": "complete", "expected_nodes": ["node-a"], "node_metadata": {"node-a": )"
        R"({"sensors": [{"name": "CPU0:cpuSidePowerUsageW", "domain_kind": "total", )"
        R"("average_interval_ms": 1000}, {"name": "CPU0:socPowerUsageW", "domain_kind": "soc", )"
        R"("average_interval_ms": 50}]}}})");
  write("cpu_power/samples.csv", rows);
  ReportOptions o;
  o.cpu_samples = dir() + "/cpu_power/samples.csv";
  run = build_reports(dir(), o);
  ASSERT_EQ(run.error, "");
  const WindowReport& host = run.windows.at(0);
  ASSERT_TRUE(host.cpu_per_node.at(0).stats.coverage);
  EXPECT_DOUBLE_EQ(*host.cpu_per_node[0].stats.coverage, 1.0);  // 1 s averages every second
}

// perf/W per leg: throughput over average watts; the combined figures need both the CPU and
// the GPU leg, and a run with one leg says so in a warning.
TEST_F(RunDir, PerfPerWattNeedsBothLegsForCombined) {
  write("benchmark.out", "Successful requests: 40\n");
  write(
      "sa-bench_x/results_concurrency_4_gpus_1.json",
      R"({"benchmark_start_time_unix": 100.0, "benchmark_end_time_unix": 110.0, "duration": 9.8, "total_input_tokens": 1500, "total_output_tokens": 500})");
  std::string gpu =
      "schema_version,timestamp_unix,scrape_seq,hostname,gpu_index,gpu_uuid,power_w\n";
  for (int t = 99; t <= 111; ++t) gpu += "1," + std::to_string(t) + ",0,node-a,0,GPU-a,400.0\n";
  write("power/samples.csv", gpu);
  ReportRun run = build_reports(dir(), {});
  ASSERT_EQ(run.error, "");
  WindowReport r = run.windows[0];
  EXPECT_DOUBLE_EQ(*r.perf.output_tps, 50);
  EXPECT_DOUBLE_EQ(*r.perf.gpu_w, 400);
  EXPECT_DOUBLE_EQ(*r.perf.o_gpu, 0.125);
  EXPECT_DOUBLE_EQ(*r.perf.o_gpu, 1 / *r.joules_per_output_token);
  EXPECT_FALSE(r.perf.combined_w);
  EXPECT_FALSE(r.perf.cpu_w);
  EXPECT_EQ(r.gpu_per_device[0].stats.samples, 11u);
  EXPECT_NE(
      std::find(
          r.warnings.begin(), r.warnings.end(),
          "combined perf/W unavailable: no CPU power leg in this run (GPU-only figures reported)"),
      r.warnings.end());
  const std::string text = render_text(run.windows, Edges::interpolate);
  // A constant power: no uncertainty, and the GPU leg does not record its averaging interval.
  EXPECT_NE(text.find("gpu/node-a/gpu0: 4,000.00 J \u00b1 0 % (coverage unknown) (400.00 W avg; "
                      "p50=400.00 p95=400.00 p99=400.00 max=400.00 W)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("cpu: n/a | combined: n/a"), std::string::npos) << text;
  std::string cpu =
      "schema_version,timestamp_unix,hostname,source,sensor,socket_id,power_w,total_power_w\n";
  for (int t = 99; t <= 111; ++t)
    cpu += "1," + std::to_string(t) + ",node-a,acpi,Grace Power Socket 0,0,100,100\n";
  write("power/cpu/samples.csv", cpu);
  r = build_reports(dir(), {}).windows[0];
  EXPECT_DOUBLE_EQ(*r.perf.combined_w, 500);
  EXPECT_DOUBLE_EQ(*r.perf.o_comb, 0.1);
  EXPECT_DOUBLE_EQ(*r.perf.t_comb, 0.4);
  EXPECT_DOUBLE_EQ(*r.perf.o_cpu, 0.5);
  EXPECT_DOUBLE_EQ(*r.perf.t_cpu, 2.0);
}

// Socket energies that do not add up to the node total are a warning naming the likely
// cause; the sensor each socket was read from is reported.
TEST_F(RunDir, SocketSumCrossCheckWarning) {
  std::string csv =
      "schema_version,timestamp_unix,hostname,source,sensor,socket_id,power_w,total_power_w\n";
  for (int t = 9; t <= 21; ++t) {
    const std::string ts = std::to_string(t);
    csv += "1," + ts + ",n,acpi,Grace Power Socket 0,0,100,500\n1," + ts +
           ",n,acpi,Grace Power Socket 1,1,100,500\n";
  }
  write("power/cpu/samples.csv", csv);
  write("benchmark.out", "Successful requests: 1\n");
  write(
      "sa-bench_x/results_concurrency_1_gpus_1.json",
      R"({"benchmark_start_time_unix": 10, "benchmark_end_time_unix": 12, "total_input_tokens": 1, "total_output_tokens": 1})");
  const WindowReport r = build_reports(dir(), {}).windows[0];
  ASSERT_EQ(r.error, "");
  EXPECT_EQ(
      r.warnings[0],
      "CPU energy mismatch: per-socket sum 400 J vs node total 1,000 J (60.0% apart) -- socket "
      "series may be using the wrong sensor channel");
  EXPECT_EQ(r.cpu_sensors[0].sensor, "Grace Power Socket 0");
  const Json j = window_json(r);
  EXPECT_TRUE(j["timing"]["computed"]["duration_seconds"].is_number_integer());  // int - int
}

TEST_F(RunDir, OneFailingWindowDoesNotStopTheOthers) {
  sa_bench_run(100, 110, 100);
  write(
      "sa-bench_isl_1_osl_1/results_concurrency_8_gpus_1.json",
      R"({"benchmark_start_time_unix": 500, "benchmark_end_time_unix": 510, "total_input_tokens": 1, "total_output_tokens": 1})");
  write("sa-bench_isl_1_osl_1/results_concurrency_16_gpus_1.json",
        R"({"benchmark_start_time_unix": 1})");
  const ReportRun run = build_reports(dir(), {});
  ASSERT_EQ(run.windows.size(), 3u);
  EXPECT_EQ(run.windows[0].error, "");
  EXPECT_DOUBLE_EQ(run.windows[0].cpu_total_joules.get<double>(), 1000.0);
  EXPECT_NE(
      run.windows[1].error.find("cpu/node-a/socket0: window start at 500.000 is not bracketed"),
      std::string::npos);
  EXPECT_NE(run.windows[2].error.find("missing required field 'benchmark_end_time_unix'"),
            std::string::npos);
  EXPECT_TRUE(run.any_window_failed());
  const Json list = Json::parse(render_json(run.windows));
  EXPECT_EQ(list[1]["concurrency"], 8);
  EXPECT_TRUE(list[1].contains("error"));
  const std::string text = render_text(run.windows, Edges::interpolate);
  EXPECT_NE(text.find("[sa-bench concurrency=16] error: "), std::string::npos);
  EXPECT_NE(text.find("total energy across all concurrency points: 1,000.00 J"), std::string::npos);
}

TEST_F(RunDir, WriteRunReportWritesFourFilesAndNeverThrows) {
  sa_bench_run(100, 110, 100);
  const RunReportStatus ok = write_run_report(dir(), {});
  EXPECT_TRUE(ok.ok) << ok.message;
  EXPECT_EQ(ok.written.size(), 4u);
  EXPECT_TRUE(fs::exists(dir_ / "power_energy_report.json"));
  EXPECT_TRUE(fs::exists(dir_ / "power_energy_report.txt"));
  EXPECT_TRUE(fs::exists(dir_ / "power_energy_report.svg"));
  EXPECT_TRUE(fs::exists(dir_ / "power_report.html"));
  const RunReportStatus missing = write_run_report(dir() + "/nope", {});
  EXPECT_FALSE(missing.ok);
  EXPECT_EQ(missing.message, dir() + "/nope/benchmark.out: not found");
}

TEST_F(RunDir, EmptyCpuFileLeavesTheGpuLegReporting) {
  write("benchmark.out", "Successful requests: 1\n");
  write(
      "sa-bench_x/results_concurrency_1_gpus_1.json",
      R"({"benchmark_start_time_unix": 10, "benchmark_end_time_unix": 12, "total_input_tokens": 1, "total_output_tokens": 1})");
  write("power/cpu/samples.csv", "");
  write("power/samples.csv",
        "schema_version,timestamp_unix,scrape_seq,hostname,gpu_index,gpu_uuid,power_w\n"
        "1,9,0,n,0,G,100\n1,11,1,n,0,G,100\n1,13,2,n,0,G,100\n");
  const ReportRun run = build_reports(dir(), {});
  ASSERT_EQ(run.error, "");
  const WindowReport& r = run.windows[0];
  EXPECT_EQ(r.error, "");
  EXPECT_DOUBLE_EQ(r.gpu_total_joules.get<double>(), 200.0);
  EXPECT_EQ(r.warnings.back(), dir() + "/power/cpu/samples.csv: empty file, no CPU samples");
}

TEST_F(RunDir, SkippedRowsAreOneWarningPerLeg) {
  write("benchmark.out", "Successful requests: 1\n");
  write(
      "sa-bench_x/results_concurrency_1_gpus_1.json",
      R"({"benchmark_start_time_unix": 10, "benchmark_end_time_unix": 12, "total_input_tokens": 1, "total_output_tokens": 1})");
  write("power/cpu/samples.csv",
        "schema_version,timestamp_unix,hostname,source,sensor,socket_id,power_w,total_power_w\n"
        "1,9,n,acpi,s,0,50,50\n1,eleven,n,acpi,s,0,50,50\n1,13,n,acpi,s,0,50,50\n");
  write("power/samples.csv",
        "schema_version,timestamp_unix,scrape_seq,hostname,gpu_index,gpu_uuid,power_w\n"
        "1,9,0,n,0,G,100\n1,11,1,n,,G,100\n1,13,2,n,0,G,100\n");
  const ReportRun run = build_reports(dir(), {});
  ASSERT_EQ(run.error, "");
  const WindowReport& r = run.windows[0];
  EXPECT_EQ(r.error, "");
  EXPECT_DOUBLE_EQ(r.cpu_total_joules.get<double>(), 100.0);  // 9 -> 13 at 50 W, cut to 10-12
  EXPECT_THAT(
      r.warnings,
      testing::IsSupersetOf(
          {dir() + "/power/cpu/samples.csv: 1 of 3 rows skipped: timestamp_unix is not a "
                   "finite number (first at line 3: timestamp_unix 'eleven' is not a finite "
                   "number)",
           dir() + "/power/samples.csv: 1 of 3 rows skipped: gpu_index is not a "
                   "non-negative integer (first at line 3: gpu_index is blank)"}));
}

// Utilization is summarized per socket, node, GPU, GPU node and role.
TEST_F(RunDir, UtilizationSummariesAndTheirWarning) {
  write("benchmark.out", "Successful requests: 1\n");
  write(
      "sa-bench_x/results_concurrency_4_gpus_2.json",
      R"({"benchmark_start_time_unix": 10.0, "benchmark_end_time_unix": 20.0, "total_input_tokens": 1, "total_output_tokens": 1})");
  const std::string cpu_header =
      "schema_version,timestamp_unix,timestamp_local,hostname,source,sensor,socket_id,power_w,"
      "total_power_w,cpu_util_total,cpu_util_user,cpu_util_nice,cpu_util_sys,cpu_util_irq\n";
  write("cpu_power/samples.csv", cpu_header +
                                     "3,9,x,node-a,dcgm,CPU0:cpuPowerUsageW,0,40,40,0.1,,,,\n"
                                     "3,15,x,node-a,dcgm,CPU0:cpuPowerUsageW,0,40,40,0.5,,,,\n"
                                     "3,21,x,node-a,dcgm,CPU0:cpuPowerUsageW,0,40,40,0.9,,,,\n");
  std::string gpu =
      "schema_version,timestamp_unix,scrape_seq,hostname,gpu_index,gpu_uuid,power_w,gpu_util_pct,"
      "sm_active\n";
  const char* util[2][3] = {{"10", "60", "0"}, {"30", "80", "0"}};
  const char* times[3] = {"9", "15", "21"};
  for (int t = 0; t < 3; ++t) {
    for (int g = 0; g < 2; ++g) {
      gpu += std::string("2,") + times[t] + ",0,node-a," + std::to_string(g) + ",G,100," +
             util[g][t] + ",\n";
    }
  }
  write("power/samples.csv", gpu);
  write(
      "power/manifest.json",
      R"({"expected_devices": [{"hostname": "node-a", "gpu_index": 0, "assignments": [{"worker_role": "prefill"}]},
            {"hostname": "node-a", "gpu_index": 1, "assignments": [{"worker_role": "prefill"}]}]})");
  ReportOptions o;
  o.edges = Edges::snap;
  ReportRun run = build_reports(dir(), o);
  ASSERT_EQ(run.error, "");
  const WindowReport& r = run.windows[0];
  ASSERT_EQ(r.error, "");
  ASSERT_EQ(r.cpu_utilization.size(), 2u);  // socket, then node
  EXPECT_DOUBLE_EQ(r.cpu_utilization[0].mean, 0.5);
  EXPECT_EQ(r.cpu_utilization[1].label, "cpu/node-a");
  ASSERT_EQ(r.gpu_utilization.size(), 4u);  // gpu0, gpu1, node, prefill; no sm_active
  EXPECT_DOUBLE_EQ(r.gpu_utilization[0].mean, 60);
  EXPECT_DOUBLE_EQ(r.gpu_utilization[1].mean, 80);
  EXPECT_EQ(r.gpu_utilization[3].label, "gpu/node-a/prefill");
  EXPECT_DOUBLE_EQ(r.gpu_utilization[3].mean, 70);
  const std::string text = render_text(run.windows, o.edges);
  EXPECT_NE(text.find("gpu/node-a/gpu0 utilization: gpu_util_pct mean=60.00 max=60.00"),
            std::string::npos);
  EXPECT_NE(text.find("cpu/node-a/socket0 utilization: cpu_util_total mean=0.50 max=0.50"),
            std::string::npos);
  EXPECT_EQ(window_json(r)["gpu_utilization"][2].dump(),
            R"({"label":"gpu/node-a","column":"gpu_util_pct","mean":70.0,"max":80.0,"samples":2})");
  EXPECT_EQ(r.perf.num_gpus, 2);
  // Without a sample inside the window the column is a warning, not a row.
  write("cpu_power/samples.csv", cpu_header +
                                     "3,9,x,node-a,dcgm,CPU0:cpuPowerUsageW,0,40,40,0.1,,,,\n"
                                     "3,15,x,node-a,dcgm,CPU0:cpuPowerUsageW,0,40,40,,,,,\n"
                                     "3,21,x,node-a,dcgm,CPU0:cpuPowerUsageW,0,40,40,0.9,,,,\n");
  run = build_reports(dir(), o);
  EXPECT_TRUE(run.windows[0].cpu_utilization.empty());
  EXPECT_NE(std::find(run.windows[0].warnings.begin(), run.windows[0].warnings.end(),
                      "cpu/node-a/socket0 cpu_util_total: no samples inside the window, "
                      "utilization not reported"),
            run.windows[0].warnings.end());
}

// Throughput per GPU divides by the GPUs with samples; node percentiles come from the summed
// series, not from the devices' own.
TEST_F(RunDir, NodeStatisticsComeFromTheSummedSeries) {
  write("benchmark.out", "Successful requests: 1\n");
  write(
      "sa-bench_x/results_concurrency_4_gpus_4.json",
      R"({"benchmark_start_time_unix": 100.0, "benchmark_end_time_unix": 110.0, "total_input_tokens": 1500, "total_output_tokens": 500})");
  std::string gpu =
      "schema_version,timestamp_unix,scrape_seq,hostname,gpu_index,gpu_uuid,power_w\n";
  for (int t = 99; t <= 111; ++t) {
    const bool odd = t % 2 != 0;
    gpu += "1," + std::to_string(t) + ",0,n,0,G0," + (odd ? "100" : "300") + "\n";
    gpu += "1," + std::to_string(t) + ",0,n,1,G1," + (odd ? "300" : "100") + "\n";
    gpu += "1," + std::to_string(t) + ",0,n,2,G2,50\n1," + std::to_string(t) + ",0,n,3,G3,50\n";
  }
  write("power/samples.csv", gpu);
  const WindowReport r = build_reports(dir(), {}).windows[0];
  ASSERT_EQ(r.error, "");
  EXPECT_DOUBLE_EQ(r.gpu_per_node[0].stats.min_w, 500);
  EXPECT_DOUBLE_EQ(r.gpu_per_node[0].stats.max_w, 500);
  EXPECT_DOUBLE_EQ(r.gpu_per_device[0].stats.max_w, 300);
  EXPECT_EQ(r.perf.num_gpus, 4);
  EXPECT_DOUBLE_EQ(*r.perf.output_tps_per_gpu, 12.5);
}

// The superchip series of a node sums its sockets' module_w where both have a reading. Each
// window sums only its own stretch; a window without coverage still gets the error text of
// the whole series (how far the nearest summed sample is).
TEST_F(RunDir, ModuleNodeSumsPerWindowAndTheirCoverageWarning) {
  write("benchmark.out", "Successful requests: 2\n");
  write(
      "sa-bench_x/results_concurrency_1_gpus_4.json",
      R"({"benchmark_start_time_unix": 10.0, "benchmark_end_time_unix": 20.0, "total_input_tokens": 10, "total_output_tokens": 10})");
  write(
      "sa-bench_x/results_concurrency_2_gpus_4.json",
      R"({"benchmark_start_time_unix": 50.0, "benchmark_end_time_unix": 55.0, "total_input_tokens": 10, "total_output_tokens": 10})");
  std::string csv =
      "schema_version,timestamp_unix,hostname,source,sensor,socket_id,power_w,cpu_rail_w,soc_w,"
      "dram_w,module_w,total_power_w\n";
  for (int t = 0; t <= 60; ++t) {
    const std::string time = std::to_string(t);
    csv += "3," + time + ",node-a,acpi,CPU0:cpuSidePowerUsageW,0,100,,,,500,210\n";
    csv += "3," + time + ",node-a,acpi,CPU1:cpuSidePowerUsageW,1,110,,,," + (t <= 30 ? "600" : "") +
           ",210\n";
  }
  write("power/cpu/samples.csv", csv);
  const ReportRun run = build_reports(dir(), {});
  ASSERT_EQ(run.windows.size(), 2u);
  const WindowReport& covered = run.windows[0];
  ASSERT_EQ(covered.module_per_node.size(), 1u);
  EXPECT_EQ(covered.module_per_node[0].label, "module/node-a");
  EXPECT_DOUBLE_EQ(covered.module_per_node[0].stats.joules, 11000);
  EXPECT_EQ(covered.module_per_node[0].stats.samples, 11u);
  EXPECT_DOUBLE_EQ(covered.module_total_joules.value_or(0), 11000);
  const WindowReport& late = run.windows[1];
  EXPECT_TRUE(late.module_per_node.empty());
  const std::string expected =
      "module_w: module/node-a: window start at 50.000 is not bracketed by samples within 3.0s "
      "(previous sample 20.000s before, next sample none), no coverage";
  EXPECT_NE(std::find(late.warnings.begin(), late.warnings.end(), expected), late.warnings.end())
      << "warnings: " << ::testing::PrintToString(late.warnings);
}

// The reference report's worked example (fixture report/r4_example): the exact text block and
// the JSON's key order, the reference's keys first.
TEST(ReportGolden, ReferenceExampleTextAndJson) {
  const std::string root = std::string(CPUPOWER_FIXTURES) + "/report/r4_example";
  ReportOptions o;
  o.edges = Edges::snap;
  const ReportRun run = build_reports(root, o);
  ASSERT_EQ(run.error, "");
  std::ifstream expected_text(root + "/expected.txt");
  const std::string want((std::istreambuf_iterator<char>(expected_text)), {});
  std::string got = render_text(run.windows, o.edges);
  got = got.substr(0, got.rfind("edges: "));  // our one added line
  // Our additions, which the reference's text lacks: the error bars after the energies (and
  // the warning that this fixture's files do not record what the readings average).
  const std::string with_bars = got;
  got = std::regex_replace(got, std::regex(" \u00b1 [<0-9.]+ %( \\(coverage [^)]*\\))?"), "");
  got = std::regex_replace(got,
                           std::regex("  warning: (CPU|GPU) power: the run's files do not "
                                      "record the averaging interval[^\n]*\n"),
                           "");
  EXPECT_EQ(got, want);
  EXPECT_NE(with_bars.find("  cpu total:      1,000.00 J \u00b1 "), std::string::npos) << with_bars;
  EXPECT_NE(with_bars.find("(coverage unknown)"), std::string::npos) << with_bars;
  const Json j = window_json(run.windows[0]);
  std::vector<std::string> keys;
  for (const auto& [k, v] : j.items()) keys.push_back(k);
  const std::vector<std::string> reference_keys = {"benchmark_type",
                                                   "source",
                                                   "concurrency",
                                                   "start_unix",
                                                   "end_unix",
                                                   "output_tokens",
                                                   "input_tokens",
                                                   "tpot_p50_ms",
                                                   "tpot_p90_ms",
                                                   "warmup_start_unix",
                                                   "warmup_end_unix",
                                                   "drain_end_unix",
                                                   "cpu_per_socket",
                                                   "cpu_per_node",
                                                   "cpu_total_joules",
                                                   "node_power",
                                                   "cpu_sensors",
                                                   "gpu_per_device",
                                                   "gpu_per_role",
                                                   "gpu_per_node",
                                                   "gpu_total_joules",
                                                   "combined_total_joules",
                                                   "joules_per_output_token",
                                                   "joules_per_total_token",
                                                   "timing",
                                                   "perf_per_watt",
                                                   "cpu_utilization",
                                                   "gpu_utilization",
                                                   "warnings"};
  ASSERT_GE(keys.size(), reference_keys.size());
  EXPECT_EQ(std::vector<std::string>(keys.begin(), keys.begin() + reference_keys.size()),
            reference_keys);
  EXPECT_EQ(j["node_power"][0]["cpu_rails_w"].dump(),
            R"({"cpu_rail":40.0,"soc":15.0,"dram":10.0})");
  EXPECT_EQ(j["perf_per_watt"]["total_tokens_per_second_per_combined_watt"], 0.4);
  EXPECT_EQ(j["gpu_utilization"].size(), 3u);
  // The reference's example has no warning; ours are the two legs' unrecorded averaging.
  ASSERT_EQ(j["warnings"].size(), 2u);
  EXPECT_EQ(
      j["warnings"][0].get<std::string>().rfind("CPU power: the run's files do not record", 0), 0u);
  EXPECT_EQ(
      j["warnings"][1].get<std::string>().rfind("GPU power: the run's files do not record", 0), 0u);
  EXPECT_EQ(j["edges"], "snap");
  // Our error bars: every row, and the window's totals.
  for (const char* key : {"cpu_per_socket", "cpu_per_node", "gpu_per_device", "gpu_per_node"}) {
    for (const auto& row : j[key]) {
      EXPECT_TRUE(row["coverage"].is_null()) << key;
      EXPECT_TRUE(row["uncertainty_j"].is_number()) << key;
      EXPECT_TRUE(row["uncertainty_pct"].is_number()) << key;
    }
  }
  for (const char* key : {"cpu_total", "gpu_total", "combined_total"}) {
    EXPECT_TRUE(j["uncertainty"][key]["uncertainty_j"].is_number()) << key;
    EXPECT_TRUE(j["uncertainty"][key]["coverage"].is_null()) << key;
  }
  EXPECT_TRUE(j["uncertainty"]["module_total"].is_null());
  EXPECT_TRUE(j["uncertainty"]["joules_per_output_token"]["uncertainty"].is_number());
}

// render_json dumps every window on its own (in parallel) and indents it into the list: the
// text must be what one dump(2) of the whole list writes, with failed windows, nested
// objects, empty arrays and strings that hold escaped line breaks and non-ASCII text.
TEST(ReportJson, WindowByWindowDumpEqualsOneDumpOfTheList) {
  std::vector<WindowReport> reports(3);
  reports[0].window.benchmark_type = "sa-bench";
  reports[0].window.source = "results_concurrency_4_gpus_8.json";
  reports[0].window.concurrency = 4;
  reports[0].window.start_json = 1700000000.25;
  reports[0].window.end_json = 1700000100;
  reports[0].cpu_per_node.push_back({"cpu/node-a", {}});
  reports[0].cpu_per_node.back().stats.joules = 12345.678;
  reports[0].node_power.push_back({});
  reports[0].node_power.back().host = "node-a";
  reports[0].warnings = {"line one\nline two \"quoted\" \xc3\xa9t\xc3\xa9", ""};
  reports[1].window.benchmark_type = "aiperf";
  reports[1].error = "cpu/node-a: no power samples available";
  reports[2].window.benchmark_type = "session";
  Json list = Json::array();
  for (const auto& r : reports) list.push_back(window_json(r));
  EXPECT_EQ(render_json(reports), list.dump(2, ' ', true, Json::error_handler_t::replace) + "\n");
  EXPECT_EQ(render_json({}), "[]\n");
}

}  // namespace
}  // namespace cpupower::report
