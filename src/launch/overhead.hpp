#pragma once
// `cpu-power overhead`: what the telemetry costs a workload. The workload runs in four arms,
// baseline (no telemetry), the exporter alone, the host collector alone and both, once per
// arm in each of N rounds; every telemetry arm is compared with the baseline run of the same
// round (a pair). This header holds the pure parts, each testable without a process: the run
// order, the paired statistics, the /proc readers and the cost figures, the metric capture
// and the text and JSON renderings. The processes themselves are overhead_run.hpp's.

#include <sys/types.h>

#include <array>
#include <cstdint>
#include <optional>
#include <regex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.hpp"

namespace cpupower::launch {

enum class Arm { baseline, exporter, host_collector, both };
inline constexpr std::array<Arm, 4> kArms = {Arm::baseline, Arm::exporter, Arm::host_collector,
                                             Arm::both};

// "baseline", "exporter", "host collector", "both": for people.
std::string_view arm_name(Arm arm);
// "baseline", "exporter", "host_collector", "both": JSON values and file names.
std::string_view arm_key(Arm arm);
bool arm_runs_exporter(Arm arm);
bool arm_runs_host_collector(Arm arm);

// The order of the runs: round r's four arms in the order they run. Round r takes row
// {0, 2, 1, 3}[r % 4] of a 4 x 4 Williams square (row i is 0 1 3 2 shifted by i, mod 4), in
// which row 2 is row 0 reversed and row 3 row 1 reversed. So:
// - every two rounds (an even N) give each arm the same sum of positions, and a drift that is
//   linear in time adds the same to every arm's pairs: it cancels from the mean difference;
// - every four rounds (N a multiple of 4) put each arm once in each position, and each arm
//   once right after each other arm (what one arm leaves behind, a warm cache or a hot
//   package, reaches every other arm equally).
std::vector<std::array<Arm, 4>> run_order(int rounds);

// The two-sided 95 % quantile of Student's t with `df` degrees of freedom (t_0.975), df >= 1.
// df 1-30 from a table, computed to six decimals by bisection on the t distribution's CDF
// (written as a regularized incomplete beta function, evaluated by its continued fraction);
// above 30 the series of t in powers of 1/df around the normal quantile 1.959964 (terms
// up to 1/df^4), which agrees with that bisection to six decimals from df 30 on.
double t_quantile_975(int df);

// The mean relative difference of paired runs, (arm - baseline) / baseline per pair, with its
// 95 % confidence interval (Student's t, n - 1 degrees of freedom). Fractions, not percent.
struct PairedDifference {
  std::size_t n = 0;
  double mean = 0;               // mean of the per-pair relative differences
  double sd = 0;                 // their sample standard deviation (n - 1); 0 for n = 1
  std::optional<double> ci_low;  // unset for n = 1
  std::optional<double> ci_high;
};

// An error when the series differ in length, are empty, or a value is not finite or a
// baseline is 0.
Result<PairedDifference> paired_relative_difference(std::span<const double> baseline,
                                                    std::span<const double> arm);

// --- /proc ------------------------------------------------------------------------------

// utime and stime of /proc/PID/stat (fields 14 and 15, in clock ticks), read after the last
// ')' so that a command name with spaces or parentheses cannot shift them.
struct ProcStat {
  std::uint64_t utime_ticks = 0;
  std::uint64_t stime_ticks = 0;
};
Result<ProcStat> parse_proc_stat(std::string_view text);

// voluntary_ctxt_switches, nonvoluntary_ctxt_switches and VmHWM (kB) of a /proc/PID/status or
// /proc/PID/task/TID/status. The switches are required, VmHWM is not (a thread's status has
// it too; a kernel thread's has none).
struct ProcStatus {
  std::uint64_t voluntary_switches = 0;
  std::uint64_t nonvoluntary_switches = 0;
  std::optional<std::uint64_t> vm_hwm_kib;
};
Result<ProcStatus> parse_proc_status(std::string_view text);

// One process as /proc shows it now. CPU: utime + stime of the whole thread group (threads
// that ended included; the kernel keeps their sum to the scheduler's own runtime, so it is
// exact to one tick, 1/sysconf(_SC_CLK_TCK) s). Wake-ups: voluntary + nonvoluntary context
// switches summed over the threads alive now (a thread that ended took its count with it).
// Peak RSS: VmHWM.
struct ProcessUsage {
  double cpu_seconds = 0;
  std::uint64_t context_switches = 0;
  std::uint64_t peak_rss_bytes = 0;
};
Result<ProcessUsage> read_process_usage(pid_t pid, const std::string& proc_root = "/proc");

// The cost of one kind of process over the windows it was measured in: what each window
// added between its two readings, summed. Peak RSS is the largest seen.
struct CostFigures {
  std::size_t windows = 0;
  double seconds = 0;      // measured time, summed over the windows
  double cpu_seconds = 0;  // CPU time in those windows
  std::uint64_t context_switches = 0;
  std::uint64_t peak_rss_bytes = 0;

  void add(const ProcessUsage& start, const ProcessUsage& end, double window_seconds);
  // Each nullopt until some time was measured.
  std::optional<double> cpu_seconds_per_hour() const;
  std::optional<double> core_percent() const;  // % of one core
  std::optional<double> wakeups_per_second() const;
};

// --- the workload's metric --------------------------------------------------------------

// The value of --metric: the first capture group of the *last* match of `re` in `output`,
// searched line by line (a match never spans lines), as a finite number (a run's summary
// line comes last). An error when nothing matches or the group is not a number.
Result<double> capture_metric(const std::string& output, const std::regex& re);

// --- the report -------------------------------------------------------------------------

struct OverheadRun {
  int round = 0;     // 1-based
  int position = 0;  // 1-4 within the round
  Arm arm = Arm::baseline;
  double wall_seconds = 0;
  std::optional<double> metric;
  pid_t exporter_pid = -1;  // the telemetry of this run, -1 when the arm has none
  pid_t host_collector_pid = -1;
};

struct ArmSummary {
  Arm arm = Arm::baseline;
  std::size_t n = 0;
  double mean = 0;                              // of the compared value
  std::optional<PairedDifference> vs_baseline;  // unset for the baseline
};

struct CostRow {
  std::string process;  // "exporter", "host collector"
  CostFigures figures;
};

struct OverheadReport {
  std::vector<std::string> command;
  int rounds = 0;
  int warmup_runs = 0;
  std::optional<std::string> metric_regex;  // unset: wall time is compared
  bool higher_is_better = true;             // of the metric
  std::vector<std::string> exporter_argv;
  std::string exporter_origin;  // "beside cpu-power", "--exporter-command", ...
  std::vector<std::string> host_collector_argv;
  double scrape_interval_seconds = 0;  // 0: the exporter was not scraped
  std::vector<OverheadRun> runs;
  std::vector<ArmSummary> arms;
  std::vector<CostRow> cost_during_runs;
  double idle_seconds = 0;            // --duration; 0: no idle measurement
  std::vector<CostRow> cost_idle;     // with idle_seconds
  std::vector<std::string> warnings;  // said in the text and the JSON
};

// Each arm's mean and, for the telemetry arms, its paired difference with the baseline of
// the same rounds (the metric when the report has one, else wall time). An error when a
// run has no value to compare.
Result<std::vector<ArmSummary>> summarize_arms(const std::vector<OverheadRun>& runs,
                                               bool use_metric);

std::string overhead_text(const OverheadReport& report);
nlohmann::json overhead_json(const OverheadReport& report);

}  // namespace cpupower::launch
