// `cpu-power overhead`'s pure parts (launch/overhead.hpp): the run order and its drift
// cancellation, Student's t and the paired confidence interval, the /proc readers on fixed
// text, on a made-up /proc tree and on this test's own process, the cost figures, the
// metric capture, the summaries and renderings, and the telemetry's command lines.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <map>
#include <set>
#include <thread>

#include "common/text.hpp"
#include "launch/overhead.hpp"
#include "launch/overhead_run.hpp"
#include "test_tree.hpp"

namespace cpupower::launch {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// --- the run order ------------------------------------------------------------------------

TEST(OverheadOrder, EveryRoundRunsEachArmOnce) {
  for (const auto& round : run_order(7)) {
    const std::set<Arm> arms(round.begin(), round.end());
    EXPECT_EQ(arms.size(), 4u);
  }
  EXPECT_EQ(run_order(7).size(), 7u);
  EXPECT_TRUE(run_order(0).empty());
}

TEST(OverheadOrder, EveryFourRoundsPutEachArmOnceInEachPosition) {
  for (const int rounds : {4, 8, 12}) {
    std::map<std::pair<Arm, std::size_t>, int> count;
    for (const auto& round : run_order(rounds)) {
      for (std::size_t p = 0; p < 4; ++p) ++count[{round[p], p}];
    }
    for (const Arm arm : kArms) {
      for (std::size_t p = 0; p < 4; ++p) {
        EXPECT_EQ((count[{arm, p}]), rounds / 4) << arm_name(arm) << " at " << p;
      }
    }
  }
}

TEST(OverheadOrder, EveryFourRoundsPutEachArmRightAfterEachOtherOnce) {
  std::map<std::pair<Arm, Arm>, int> follows;
  for (const auto& round : run_order(4)) {
    for (std::size_t p = 1; p < 4; ++p) ++follows[{round[p - 1], round[p]}];
  }
  EXPECT_EQ(follows.size(), 12u);  // every ordered pair of two different arms
  for (const auto& [pair, n] : follows) EXPECT_EQ(n, 1);
}

// Every run of the workload takes 10 s plus a drift of 0.02 s per run before it (a node that
// warms up): the telemetry does nothing, so every arm's difference should be 0.
std::vector<OverheadRun> drifting_runs(const std::vector<std::array<Arm, 4>>& order) {
  std::vector<OverheadRun> runs;
  int t = 0;
  for (std::size_t r = 0; r < order.size(); ++r) {
    for (std::size_t p = 0; p < 4; ++p) {
      OverheadRun run;
      run.round = static_cast<int>(r + 1);
      run.position = static_cast<int>(p + 1);
      run.arm = order[r][p];
      run.wall_seconds = 10.0 + 0.02 * t++;
      runs.push_back(run);
    }
  }
  return runs;
}

TEST(OverheadOrder, AnEvenNumberOfRoundsCancelsALinearDrift) {
  for (const int rounds : {2, 4, 6, 8, 10}) {
    // Each arm's positions add up to the same sum, so the drift's absolute share of its
    // pairs' differences is 0 ...
    std::map<Arm, int> position_sum;
    for (const auto& round : run_order(rounds)) {
      for (std::size_t p = 0; p < 4; ++p) position_sum[round[p]] += static_cast<int>(p);
    }
    for (const Arm arm : kArms) EXPECT_EQ(position_sum[arm], position_sum[Arm::baseline]);
    // ... and the relative differences are left with second-order terms only (under
    // 0.005 %, against 0.2-0.6 % in a fixed order below).
    const auto arms = summarize_arms(drifting_runs(run_order(rounds)), false);
    ASSERT_TRUE(arms) << arms.error();
    for (const auto& a : *arms) {
      if (a.arm == Arm::baseline) continue;
      EXPECT_LT(std::abs(a.vs_baseline->mean), 5e-5) << rounds << " rounds, " << arm_name(a.arm);
    }
  }
  // The same drift with every round in one fixed order: "both", always last, looks 0.6 %
  // slower than the baseline (3 runs x 0.02 s of 10 s).
  const std::vector<std::array<Arm, 4>> fixed(4, kArms);
  const auto arms = summarize_arms(drifting_runs(fixed), false);
  ASSERT_TRUE(arms);
  EXPECT_NEAR((*arms)[3].vs_baseline->mean, 0.006, 2e-4);
}

// --- statistics --------------------------------------------------------------------------

TEST(OverheadStats, StudentTQuantiles) {
  // Computed by bisection on the t CDF (a regularized incomplete beta function by its
  // continued fraction) in python3; they agree with printed tables to their 3 decimals.
  EXPECT_DOUBLE_EQ(t_quantile_975(1), 12.706205);
  EXPECT_DOUBLE_EQ(t_quantile_975(3), 3.182446);
  EXPECT_DOUBLE_EQ(t_quantile_975(10), 2.228139);
  EXPECT_DOUBLE_EQ(t_quantile_975(30), 2.042272);
  // Past the table, the series in 1/df; the same bisection gives these to six decimals.
  EXPECT_NEAR(t_quantile_975(31), 2.039513, 1e-6);
  EXPECT_NEAR(t_quantile_975(40), 2.021075, 1e-6);
  EXPECT_NEAR(t_quantile_975(100), 1.983972, 1e-6);
  EXPECT_NEAR(t_quantile_975(1000), 1.962339, 1e-6);
  EXPECT_TRUE(std::isnan(t_quantile_975(0)));
}

TEST(OverheadStats, PairedRelativeDifferenceAndItsInterval) {
  const std::vector<double> base = {12.0, 12.5, 11.8, 12.2};
  const std::vector<double> arm = {12.3, 12.4, 12.1, 12.6};
  const auto d = paired_relative_difference(base, arm);
  ASSERT_TRUE(d) << d.error();
  // numpy: d = (a - b) / b; d.mean(), d.std(ddof=1), mean -+ 3.182446 * sd / sqrt(4).
  EXPECT_EQ(d->n, 4u);
  EXPECT_NEAR(d->mean, 0.018802653514865247, 1e-15);
  EXPECT_NEAR(d->sd, 0.018222574956291912, 1e-15);
  ASSERT_TRUE(d->ci_low && d->ci_high);
  EXPECT_NEAR(*d->ci_low, -0.01019352687481044, 1e-12);
  EXPECT_NEAR(*d->ci_high, 0.047798833904540934, 1e-12);
}

TEST(OverheadStats, OnePairHasNoIntervalAndEqualPairsAZeroWideOne) {
  const std::vector<double> one_b = {10}, one_a = {10.5};
  const auto one = paired_relative_difference(one_b, one_a);
  ASSERT_TRUE(one);
  EXPECT_DOUBLE_EQ(one->mean, 0.05);
  EXPECT_FALSE(one->ci_low);
  const std::vector<double> b = {10, 20}, a = {11, 22};
  const auto same = paired_relative_difference(b, a);
  ASSERT_TRUE(same);
  EXPECT_NEAR(*same->ci_low, 0.1, 1e-12);
  EXPECT_NEAR(*same->ci_high, 0.1, 1e-12);
}

TEST(OverheadStats, PairsThatGiveNoRelativeDifferenceAreErrors) {
  const std::vector<double> two = {1, 2}, three = {1, 2, 3}, none, zero = {0, 1},
                            nan = {std::nan(""), 1};
  EXPECT_FALSE(paired_relative_difference(two, three));
  EXPECT_FALSE(paired_relative_difference(none, none));
  EXPECT_THAT(paired_relative_difference(zero, two).error(), HasSubstr("pair 1"));
  EXPECT_FALSE(paired_relative_difference(two, nan));
}

// --- /proc --------------------------------------------------------------------------------

// A command name with spaces and parentheses, as /proc prints it.
constexpr const char* kStat =
    "4242 (cpu (power) x) S 1 4242 4242 0 -1 4194560 812 0 0 0 1234 567 0 0 20 0 9 0 "
    "12345 123456789 1700 18446744073709551615 1 1 0 0 0 0 0 4096 0 0 0 0 17 1 0 0 0 0 0\n";

constexpr const char* kStatus =
    "Name:\tcpu-power-expor\nState:\tS (sleeping)\nVmPeak:\t  300000 kB\nVmHWM:\t    7040 kB\n"
    "VmRSS:\t    6900 kB\nThreads:\t9\nvoluntary_ctxt_switches:\t120\n"
    "nonvoluntary_ctxt_switches:\t3\n";

TEST(OverheadProc, StatFieldsAfterTheLastParenthesis) {
  const auto s = parse_proc_stat(kStat);
  ASSERT_TRUE(s) << s.error();
  EXPECT_EQ(s->utime_ticks, 1234u);
  EXPECT_EQ(s->stime_ticks, 567u);
  EXPECT_FALSE(parse_proc_stat("4242 (x) S 1 2 3"));
  EXPECT_FALSE(parse_proc_stat("4242 x S 1 2 3 4 5 6 7 8 9 10 11 12 13"));
}

TEST(OverheadProc, StatusSwitchesAndPeakRss) {
  const auto s = parse_proc_status(kStatus);
  ASSERT_TRUE(s) << s.error();
  EXPECT_EQ(s->voluntary_switches, 120u);
  EXPECT_EQ(s->nonvoluntary_switches, 3u);
  EXPECT_EQ(s->vm_hwm_kib, std::optional<std::uint64_t>(7040));
  const auto no_hwm =
      parse_proc_status("voluntary_ctxt_switches:\t1\nnonvoluntary_ctxt_switches:\t2\n");
  ASSERT_TRUE(no_hwm);
  EXPECT_FALSE(no_hwm->vm_hwm_kib);
  EXPECT_FALSE(parse_proc_status("Name:\tx\nVmHWM:\t1 kB\n"));
}

TEST(OverheadProc, UsageSumsEveryThreadsSwitchesOnAMadeUpTree) {
  testing::TestTree proc;
  proc.write("4242/stat", kStat);
  proc.write("4242/status", kStatus);
  proc.write("4242/task/4242/status", kStatus);
  proc.write("4242/task/4250/status",
             "Name:\treader\nvoluntary_ctxt_switches:\t1000\nnonvoluntary_ctxt_switches:\t7\n");
  const auto u = read_process_usage(4242, proc.root());
  ASSERT_TRUE(u) << u.error();
  EXPECT_DOUBLE_EQ(u->cpu_seconds, (1234.0 + 567.0) / static_cast<double>(::sysconf(_SC_CLK_TCK)));
  EXPECT_EQ(u->context_switches, 120u + 3u + 1000u + 7u);
  EXPECT_EQ(u->peak_rss_bytes, 7040u * 1024u);
  EXPECT_THAT(read_process_usage(4243, proc.root()).error(), HasSubstr("4243/stat"));
}

TEST(OverheadProc, ThisProcessCpuTimeSwitchesAndRss) {
  const auto before = read_process_usage(::getpid());
  ASSERT_TRUE(before) << before.error();
  EXPECT_GT(before->peak_rss_bytes, 0u);
  // A thread that sleeps 20 times: 20 voluntary switches at least, counted while it lives.
  std::atomic<bool> slept{false}, done{false};
  std::thread sleeper([&] {
    for (int i = 0; i < 20; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    slept = true;
    while (!done) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  });
  while (!slept) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  // 200 ms of CPU on this thread, by the process's own CPU clock.
  timespec start{}, now{};
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &start);
  volatile double sink = 0;
  do {
    for (int i = 0; i < 100000; ++i) sink = sink + std::sqrt(static_cast<double>(i));
    ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
  } while ((now.tv_sec - start.tv_sec) + (now.tv_nsec - start.tv_nsec) * 1e-9 < 0.2);
  const auto after = read_process_usage(::getpid());
  done = true;
  sleeper.join();
  ASSERT_TRUE(after) << after.error();
  // To one tick at each reading. qemu-user answers /proc/self/stat with its own fields and
  // leaves utime and stime at 0 (emulated unit tests run with CPUPOWER_EMULATED): there the
  // CPU time can only be held not to go backwards; the parsing is the made-up tree's above.
  const double least = std::getenv("CPUPOWER_EMULATED")
                           ? 0.0
                           : 0.2 - 2.0 / static_cast<double>(::sysconf(_SC_CLK_TCK));
  EXPECT_GE(after->cpu_seconds - before->cpu_seconds, least);
  EXPECT_GE(after->context_switches, before->context_switches + 20);
  EXPECT_GE(after->peak_rss_bytes, before->peak_rss_bytes);
}

TEST(OverheadProc, CostFiguresAddWindows) {
  CostFigures f;
  EXPECT_FALSE(f.core_percent());
  f.add({1.0, 100, 5 << 20}, {1.02, 300, 6 << 20}, 10.0);
  f.add({2.0, 500, 6 << 20}, {2.016, 400, 4 << 20}, 10.0);  // a thread ended: no switches
  EXPECT_EQ(f.windows, 2u);
  EXPECT_DOUBLE_EQ(f.seconds, 20.0);
  EXPECT_NEAR(f.cpu_seconds, 0.036, 1e-12);
  EXPECT_NEAR(*f.cpu_seconds_per_hour(), 6.48, 1e-9);  // 0.036 s / 20 s x 3600
  EXPECT_NEAR(*f.core_percent(), 0.18, 1e-9);
  EXPECT_DOUBLE_EQ(*f.wakeups_per_second(), 10.0);  // 200 switches / 20 s
  EXPECT_EQ(f.peak_rss_bytes, 6u << 20);
}

// --- the metric ---------------------------------------------------------------------------

TEST(OverheadMetric, TheLastMatchsFirstGroup) {
  const std::regex re(R"(throughput: ([0-9.]+) tok/s)");
  const std::string out = "warmup\nthroughput: 10.5 tok/s\n...\nthroughput: 1234.5 tok/s\ndone\n";
  const auto v = capture_metric(out, re);
  ASSERT_TRUE(v) << v.error();
  EXPECT_DOUBLE_EQ(*v, 1234.5);
  EXPECT_THAT(capture_metric("nothing here", re).error(), HasSubstr("no match"));
  EXPECT_THAT(capture_metric("rate=fast", std::regex("rate=(\\w+)")).error(),
              HasSubstr("not a number"));
}

// --- summaries and renderings -------------------------------------------------------------

std::vector<OverheadRun> two_rounds(bool metric) {
  std::vector<OverheadRun> runs;
  const double wall[2][4] = {{10.0, 10.1, 10.0, 10.2}, {10.0, 10.0, 10.1, 10.2}};
  for (int r = 0; r < 2; ++r) {
    for (std::size_t a = 0; a < 4; ++a) {
      OverheadRun run;
      run.round = r + 1;
      run.position = static_cast<int>(a + 1);
      run.arm = kArms[a];
      run.wall_seconds = wall[r][a];
      if (metric) run.metric = 1000.0 / wall[r][a];
      run.exporter_pid = arm_runs_exporter(run.arm) ? 100 + static_cast<int>(a) : -1;
      runs.push_back(run);
    }
  }
  return runs;
}

TEST(OverheadSummary, EachArmAgainstTheBaselineOfItsRounds) {
  const auto arms = summarize_arms(two_rounds(false), false);
  ASSERT_TRUE(arms) << arms.error();
  ASSERT_EQ(arms->size(), 4u);
  EXPECT_EQ((*arms)[0].arm, Arm::baseline);
  EXPECT_FALSE((*arms)[0].vs_baseline);
  EXPECT_DOUBLE_EQ((*arms)[0].mean, 10.0);
  EXPECT_EQ((*arms)[1].n, 2u);
  EXPECT_NEAR((*arms)[1].vs_baseline->mean, 0.005, 1e-12);  // +1 % and 0 %
  EXPECT_NEAR((*arms)[3].vs_baseline->mean, 0.02, 1e-12);
  EXPECT_NEAR(*(*arms)[3].vs_baseline->ci_low, 0.02, 1e-12);
  EXPECT_THAT(summarize_arms(two_rounds(false), true).error(), HasSubstr("no metric"));
}

OverheadReport report(bool metric) {
  OverheadReport r;
  r.command = {"sh", "-c", "work 1"};
  r.rounds = 2;
  r.warmup_runs = 1;
  if (metric) r.metric_regex = "rate ([0-9.]+)";
  r.exporter_argv = {"/opt/cpu-power-exporter", "--port", "0"};
  r.exporter_origin = "beside cpu-power";
  r.host_collector_argv = {"/opt/cpu-power", "host-collect"};
  r.scrape_interval_seconds = 1;
  r.runs = two_rounds(metric);
  r.arms = *summarize_arms(r.runs, metric);
  CostFigures f;
  f.add({1.0, 100, 5 << 20}, {1.02, 300, 6 << 20}, 10.0);
  r.cost_during_runs = {{"exporter", f}, {"host collector", f}};
  return r;
}

TEST(OverheadRender, TextNamesEveryArmItsIntervalAndTheCosts) {
  const auto text = overhead_text(report(false));
  EXPECT_THAT(text,
              HasSubstr("2 rounds of 4 arms (8 runs, after 1 warm-up run) of: sh -c 'work 1'"));
  EXPECT_THAT(text, HasSubstr("a positive difference is a slower workload"));
  EXPECT_THAT(text, HasSubstr("95 % CI"));
  EXPECT_THAT(text, HasSubstr("host collector"));
  EXPECT_THAT(text, HasSubstr("+2.000 % .. +2.000 %"));  // "both", the same in both rounds
  EXPECT_THAT(text, HasSubstr("together (sum)"));
  EXPECT_THAT(text, Not(HasSubstr("idle node")));
  EXPECT_THAT(overhead_text(report(true)),
              HasSubstr("higher is better: a negative difference is a cost"));
}

TEST(OverheadRender, JsonHasEveryArmRunAndCost) {
  const auto j = overhead_json(report(false));
  EXPECT_EQ(j["compared"], "wall_seconds");
  EXPECT_EQ(j["warmup_runs"], 1);
  EXPECT_TRUE(j["metric_regex"].is_null());
  ASSERT_EQ(j["arms"].size(), 4u);
  EXPECT_EQ(j["arms"][2]["arm"], "host_collector");
  EXPECT_TRUE(j["arms"][0]["ci_low_pct"].is_null());
  EXPECT_NEAR(j["arms"][1]["difference_pct"].get<double>(), 0.5, 1e-9);
  EXPECT_TRUE(j["arms"][1]["ci_low_pct"].is_number());
  EXPECT_EQ(j["runs"].size(), 8u);
  EXPECT_TRUE(j["runs"][0]["exporter_pid"].is_null());
  EXPECT_EQ(j["runs"][1]["exporter_pid"], 101);
  EXPECT_NEAR(j["cost_during_runs"][0]["core_pct"].get<double>(), 0.2, 1e-9);
  EXPECT_TRUE(j["idle_seconds"].is_null());
  const auto m = overhead_json(report(true));
  EXPECT_EQ(m["compared"], "metric");
  EXPECT_EQ(m["higher_is_better"], true);
}

// --- the telemetry's command lines --------------------------------------------------------

TEST(OverheadCommands, TheResolvedExporterAtItsDefaultsOnLoopback) {
  OverheadOptions o;
  o.hwmon_root = "/tmp/tree";
  ExporterChoice native{
      ExporterKind::native, "/opt/bin/cpu-power-exporter", "beside cpu-power", {}};
  const auto c = telemetry_commands(o, native, "/opt/bin/cpu-power");
  ASSERT_TRUE(c) << c.error();
  EXPECT_THAT(c->exporter_argv,
              ElementsAre("/opt/bin/cpu-power-exporter", "--port", "0", "--source", "auto",
                          "--bind", "127.0.0.1", "--hwmon-root", "/tmp/tree"));
  EXPECT_EQ(c->exporter_origin, "beside cpu-power");
  EXPECT_THAT(c->host_collector_argv,
              ElementsAre("/opt/bin/cpu-power", "host-collect", "--interval-seconds", "0.1",
                          "--hostname", "overhead", "--hwmon-root", "/tmp/tree"));
  EXPECT_TRUE(c->warnings.empty());
}

TEST(OverheadCommands, AnExporterCommandReplacesTheResolvedOne) {
  OverheadOptions o;
  o.source = "acpi";
  o.exporter_command = {"python3", "tools/cpu_power_exporter_fallback.py"};
  const auto c = telemetry_commands(o, ExporterChoice{}, "cpu-power");
  ASSERT_TRUE(c) << c.error();
  EXPECT_THAT(c->exporter_argv, ElementsAre("python3", "tools/cpu_power_exporter_fallback.py",
                                            "--port", "0", "--bind", "127.0.0.1"));
  EXPECT_EQ(c->exporter_origin, "--exporter-command");
  EXPECT_THAT(c->host_collector_argv,
              ElementsAre("cpu-power", "host-collect", "--interval-seconds", "0.1", "--hostname",
                          "overhead", "--source", "acpi"));
}

TEST(OverheadCommands, NoExporterIsAnErrorNamingTheFlag) {
  ExporterChoice none;
  none.warnings = {"no cpu-power-exporter (CPU_POWER_EXPORTER_BIN, beside cpu-power, PATH)"};
  const auto c = telemetry_commands(OverheadOptions{}, none, "cpu-power");
  ASSERT_FALSE(c);
  EXPECT_THAT(c.error(), HasSubstr("--exporter-command"));
  ExporterChoice fallback{ExporterKind::python_fallback, "/x/fallback.py", "fallback", {}};
  OverheadOptions o;
  o.source = "dcgm";
  const auto f = telemetry_commands(o, fallback, "cpu-power");
  ASSERT_TRUE(f);
  EXPECT_THAT(f->exporter_argv,
              ElementsAre("python3", "/x/fallback.py", "--port", "0", "--bind", "127.0.0.1"));
  EXPECT_EQ(f->warnings.size(), 2u);  // the fallback is measured; --source does not reach it
}

}  // namespace
}  // namespace cpupower::launch
