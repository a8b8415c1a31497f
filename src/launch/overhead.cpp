#include "launch/overhead.hpp"

#include <fmt/core.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>

#include "common/log.hpp"
#include "common/text.hpp"
#include "launch/process.hpp"

namespace cpupower::launch {
namespace {

// Row 0 of the 4 x 4 Williams square; row i is it shifted by i (mod 4).
constexpr std::array<int, 4> kWilliamsRow0 = {0, 1, 3, 2};
// The rows in the order the rounds take them: 0 and 2 are mirror images, so are 1 and 3.
constexpr std::array<int, 4> kRoundRows = {0, 2, 1, 3};

// t_0.975 for 1-30 degrees of freedom (see t_quantile_975 in the header for how).
constexpr std::array<double, 30> kT975 = {
    12.706205, 4.302653, 3.182446, 2.776445, 2.570582, 2.446912, 2.364624, 2.306004,
    2.262157,  2.228139, 2.200985, 2.178813, 2.160369, 2.144787, 2.131450, 2.119905,
    2.109816,  2.100922, 2.093024, 2.085963, 2.079614, 2.073873, 2.068658, 2.063899,
    2.059539,  2.055529, 2.051831, 2.048407, 2.045230, 2.042272};

std::optional<std::uint64_t> status_number(std::string_view text, std::string_view key) {
  std::size_t at = 0;
  while (at < text.size()) {
    const auto end = std::min(text.find('\n', at), text.size());
    const auto line = text.substr(at, end - at);
    at = end + 1;
    if (line.size() <= key.size() || !line.starts_with(key) || line[key.size()] != ':') continue;
    auto value = common::trim(line.substr(key.size() + 1));
    if (value.ends_with(" kB")) value = common::trim(value.substr(0, value.size() - 3));
    return common::parse_u64(value);
  }
  return std::nullopt;
}

std::string pct(std::optional<double> fraction, const char* spec = "{:+.3f} %") {
  return fraction ? fmt::format(fmt::runtime(spec), *fraction * 100) : std::string("-");
}

std::string figure(std::optional<double> v, const char* spec) {
  return v ? fmt::format(fmt::runtime(spec), *v) : std::string("-");
}

double mib(std::uint64_t bytes) {
  return static_cast<double>(bytes) / (1024.0 * 1024.0);
}

// The cost table: one row per process kind, and their sum when there are two.
std::string cost_table(const std::vector<CostRow>& rows) {
  std::string out =
      fmt::format("  {:<16} {:>11} {:>11} {:>14} {:>11} {:>13}\n", "process", "measured s",
                  "CPU s/hour", "% of one core", "wake-ups/s", "peak RSS MiB");
  double per_hour = 0, core = 0, wakeups = 0, rss = 0;
  std::size_t summed = 0;
  for (const auto& r : rows) {
    const auto& f = r.figures;
    out +=
        fmt::format("  {:<16} {:>11.1f} {:>11} {:>14} {:>11} {:>13.1f}\n", r.process, f.seconds,
                    figure(f.cpu_seconds_per_hour(), "{:.2f}"), figure(f.core_percent(), "{:.3f}"),
                    figure(f.wakeups_per_second(), "{:.1f}"), mib(f.peak_rss_bytes));
    if (f.seconds > 0) {
      per_hour += *f.cpu_seconds_per_hour();
      core += *f.core_percent();
      wakeups += *f.wakeups_per_second();
      rss += mib(f.peak_rss_bytes);
      ++summed;
    }
  }
  if (summed > 1) {
    out += fmt::format("  {:<16} {:>11} {:>11.2f} {:>14.3f} {:>11.1f} {:>13.1f}\n",
                       "together (sum)", "", per_hour, core, wakeups, rss);
  }
  return out;
}

nlohmann::json cost_json(const std::vector<CostRow>& rows) {
  auto out = nlohmann::json::array();
  auto or_null = [](std::optional<double> v) { return v ? nlohmann::json(*v) : nlohmann::json(); };
  for (const auto& r : rows) {
    const auto& f = r.figures;
    out.push_back({{"process", r.process},
                   {"windows", f.windows},
                   {"seconds", f.seconds},
                   {"cpu_seconds", f.cpu_seconds},
                   {"cpu_seconds_per_hour", or_null(f.cpu_seconds_per_hour())},
                   {"core_pct", or_null(f.core_percent())},
                   {"context_switches", f.context_switches},
                   {"wakeups_per_second", or_null(f.wakeups_per_second())},
                   {"peak_rss_bytes", f.peak_rss_bytes}});
  }
  return out;
}

}  // namespace

std::string_view arm_key(Arm arm) {
  switch (arm) {
    case Arm::baseline:
      return "baseline";
    case Arm::exporter:
      return "exporter";
    case Arm::host_collector:
      return "host_collector";
    case Arm::both:
      return "both";
  }
  return "baseline";
}

std::string_view arm_name(Arm arm) {
  return arm == Arm::host_collector ? "host collector" : arm_key(arm);
}

bool arm_runs_exporter(Arm arm) {
  return arm == Arm::exporter || arm == Arm::both;
}

bool arm_runs_host_collector(Arm arm) {
  return arm == Arm::host_collector || arm == Arm::both;
}

std::vector<std::array<Arm, 4>> run_order(int rounds) {
  std::vector<std::array<Arm, 4>> order;
  for (int r = 0; r < rounds; ++r) {
    const int row = kRoundRows[static_cast<std::size_t>(r % 4)];
    std::array<Arm, 4> round{};
    for (std::size_t p = 0; p < 4; ++p) {
      round[p] = kArms[static_cast<std::size_t>((kWilliamsRow0[p] + row) % 4)];
    }
    order.push_back(round);
  }
  return order;
}

double t_quantile_975(int df) {
  if (df < 1) return std::nan("");
  if (df <= static_cast<int>(kT975.size())) return kT975[static_cast<std::size_t>(df - 1)];
  const double z = 1.959963984540054;  // the normal distribution's 0.975 quantile
  const double z2 = z * z;
  const double g1 = (z2 + 1) * z / 4;
  const double g2 = ((5 * z2 + 16) * z2 + 3) * z / 96;
  const double g3 = (((3 * z2 + 19) * z2 + 17) * z2 - 15) * z / 384;
  const double g4 = ((((79 * z2 + 776) * z2 + 1482) * z2 - 1920) * z2 - 945) * z / 92160;
  const double v = df;
  return z + g1 / v + g2 / (v * v) + g3 / (v * v * v) + g4 / (v * v * v * v);
}

Result<PairedDifference> paired_relative_difference(std::span<const double> baseline,
                                                    std::span<const double> arm) {
  if (baseline.size() != arm.size()) {
    return Error{
        fmt::format("{} baseline values for {} paired values", baseline.size(), arm.size())};
  }
  if (baseline.empty()) return Error{"no pairs"};
  std::vector<double> d;
  for (std::size_t i = 0; i < baseline.size(); ++i) {
    if (!std::isfinite(baseline[i]) || !std::isfinite(arm[i]) || baseline[i] == 0) {
      return Error{
          fmt::format("pair {}: baseline {} and value {} cannot give a relative difference", i + 1,
                      baseline[i], arm[i])};
    }
    d.push_back((arm[i] - baseline[i]) / baseline[i]);
  }
  PairedDifference out;
  out.n = d.size();
  double sum = 0;
  for (double x : d) sum += x;
  out.mean = sum / static_cast<double>(out.n);
  if (out.n < 2) return out;
  double ss = 0;
  for (double x : d) ss += (x - out.mean) * (x - out.mean);
  out.sd = std::sqrt(ss / static_cast<double>(out.n - 1));
  const double half =
      t_quantile_975(static_cast<int>(out.n - 1)) * out.sd / std::sqrt(static_cast<double>(out.n));
  out.ci_low = out.mean - half;
  out.ci_high = out.mean + half;
  return out;
}

Result<ProcStat> parse_proc_stat(std::string_view text) {
  const auto paren = text.rfind(')');
  if (paren == std::string_view::npos) return Error{"no ')' after the command name"};
  // After ") ": state is field 3, so utime (field 14) is the 12th word and stime the 13th.
  std::vector<std::string_view> words;
  std::size_t at = paren + 1;
  while (at < text.size() && words.size() < 13) {
    at = text.find_first_not_of(" \n", at);
    if (at == std::string_view::npos) break;
    const auto end = std::min(text.find_first_of(" \n", at), text.size());
    words.push_back(text.substr(at, end - at));
    at = end;
  }
  if (words.size() < 13)
    return Error{fmt::format("{} fields after the command name", words.size())};
  const auto utime = common::parse_u64(words[11]);
  const auto stime = common::parse_u64(words[12]);
  if (!utime || !stime) return Error{"utime or stime is not a number"};
  return ProcStat{*utime, *stime};
}

Result<ProcStatus> parse_proc_status(std::string_view text) {
  const auto voluntary = status_number(text, "voluntary_ctxt_switches");
  const auto nonvoluntary = status_number(text, "nonvoluntary_ctxt_switches");
  if (!voluntary || !nonvoluntary)
    return Error{"no voluntary_ctxt_switches/nonvoluntary_ctxt_switches"};
  return ProcStatus{*voluntary, *nonvoluntary, status_number(text, "VmHWM")};
}

Result<ProcessUsage> read_process_usage(pid_t pid, const std::string& proc_root) {
  const std::string dir = proc_root + "/" + std::to_string(pid);
  const auto stat_text = common::read_small_file(dir + "/stat", 64 * 1024);
  if (!stat_text) return Error{dir + "/stat: " + stat_text.error()};
  const auto stat = parse_proc_stat(*stat_text);
  if (!stat) return Error{dir + "/stat: " + stat.error()};
  const auto status_text = common::read_small_file(dir + "/status", 64 * 1024);
  if (!status_text) return Error{dir + "/status: " + status_text.error()};
  const auto status = parse_proc_status(*status_text);
  if (!status) return Error{dir + "/status: " + status.error()};

  ProcessUsage u;
  static const long ticks_per_second = [] {
    const long t = ::sysconf(_SC_CLK_TCK);
    return t > 0 ? t : 100;
  }();
  u.cpu_seconds = static_cast<double>(stat->utime_ticks + stat->stime_ticks) /
                  static_cast<double>(ticks_per_second);
  u.peak_rss_bytes = status->vm_hwm_kib.value_or(0) * 1024;
  // Every thread's own count; the process's status file holds the main thread's alone.
  std::error_code ec;
  std::uint64_t switches = 0;
  bool any = false;
  for (const auto& entry : std::filesystem::directory_iterator(dir + "/task", ec)) {
    const auto text = common::read_small_file(entry.path().string() + "/status", 64 * 1024);
    if (!text) continue;  // the thread ended meanwhile
    if (const auto t = parse_proc_status(*text)) {
      switches += t->voluntary_switches + t->nonvoluntary_switches;
      any = true;
    }
  }
  u.context_switches = any ? switches : status->voluntary_switches + status->nonvoluntary_switches;
  return u;
}

void CostFigures::add(const ProcessUsage& start, const ProcessUsage& end, double window_seconds) {
  ++windows;
  seconds += std::max(0.0, window_seconds);
  cpu_seconds += std::max(0.0, end.cpu_seconds - start.cpu_seconds);
  // A thread that ended in the window takes its switches with it: never a negative count.
  if (end.context_switches > start.context_switches) {
    context_switches += end.context_switches - start.context_switches;
  }
  peak_rss_bytes = std::max({peak_rss_bytes, start.peak_rss_bytes, end.peak_rss_bytes});
}

std::optional<double> CostFigures::cpu_seconds_per_hour() const {
  if (seconds <= 0) return std::nullopt;
  return cpu_seconds / seconds * 3600.0;
}

std::optional<double> CostFigures::core_percent() const {
  if (seconds <= 0) return std::nullopt;
  return cpu_seconds / seconds * 100.0;
}

std::optional<double> CostFigures::wakeups_per_second() const {
  if (seconds <= 0) return std::nullopt;
  return static_cast<double>(context_switches) / seconds;
}

Result<double> capture_metric(const std::string& output, const std::regex& re) {
  // Line by line: a match never spans lines, and std::regex's recursion stays bounded by a
  // line's length however long the output is.
  std::optional<std::string> last;
  for (const auto& line : common::split(output, '\n')) {
    for (auto it = std::sregex_iterator(line.begin(), line.end(), re); it != std::sregex_iterator();
         ++it) {
      if (it->size() > 1 && (*it)[1].matched) last = (*it)[1].str();
    }
  }
  if (!last) return Error{"no match in the output"};
  const auto value = common::parse_double(common::trim(*last));
  if (!value || !std::isfinite(*value)) {
    return Error{"the match's first group is not a number: " + common::quoted(*last)};
  }
  return *value;
}

Result<std::vector<ArmSummary>> summarize_arms(const std::vector<OverheadRun>& runs,
                                               bool use_metric) {
  // round -> arm -> value
  std::map<int, std::map<Arm, double>> by_round;
  for (const auto& r : runs) {
    if (use_metric && !r.metric) {
      return Error{fmt::format("round {}, arm {}: no metric", r.round, arm_name(r.arm))};
    }
    by_round[r.round][r.arm] = use_metric ? *r.metric : r.wall_seconds;
  }
  std::vector<ArmSummary> out;
  for (const Arm arm : kArms) {
    ArmSummary s;
    s.arm = arm;
    std::vector<double> values, base, paired;
    for (const auto& [round, arms] : by_round) {
      const auto it = arms.find(arm);
      if (it == arms.end()) continue;
      values.push_back(it->second);
      if (const auto b = arms.find(Arm::baseline); arm != Arm::baseline && b != arms.end()) {
        base.push_back(b->second);
        paired.push_back(it->second);
      }
    }
    s.n = values.size();
    double sum = 0;
    for (double v : values) sum += v;
    s.mean = values.empty() ? 0 : sum / static_cast<double>(values.size());
    if (!paired.empty()) {
      auto d = paired_relative_difference(base, paired);
      if (!d) return Error{fmt::format("arm {}: {}", arm_name(arm), d.error())};
      s.vs_baseline = *d;
    }
    out.push_back(s);
  }
  return out;
}

std::string overhead_text(const OverheadReport& r) {
  std::string out = fmt::format(
      "cpu-power overhead: {} rounds of 4 arms ({} runs, after {} warm-up run{}) of: {}\n",
      r.rounds, r.runs.size(), r.warmup_runs, r.warmup_runs == 1 ? "" : "s",
      shell_quote_argv(r.command));
  out += fmt::format("  exporter:       {} ({})", shell_quote_argv(r.exporter_argv),
                     r.exporter_origin);
  out += r.scrape_interval_seconds > 0
             ? fmt::format(", /metrics read every {} s\n", r.scrape_interval_seconds)
             : std::string(", not scraped\n");
  out += fmt::format("  host collector: {}\n", shell_quote_argv(r.host_collector_argv));
  for (const auto& w : r.warnings) out += "  warning: " + w + "\n";
  out += "\n";

  if (r.metric_regex) {
    out += fmt::format("workload metric /{}/ ({} is better: a {} difference is a cost)\n",
                       *r.metric_regex, r.higher_is_better ? "higher" : "lower",
                       r.higher_is_better ? "negative" : "positive");
  } else {
    out += "workload wall time, s (a positive difference is a slower workload)\n";
  }
  out += fmt::format("  {:<16} {:>5} {:>14} {:>13}   {}\n", "arm", "runs", "mean", "vs baseline",
                     "95 % CI");
  for (const auto& a : r.arms) {
    const auto& d = a.vs_baseline;
    std::string ci = "-";
    if (d && d->ci_low) ci = pct(d->ci_low) + " .. " + pct(d->ci_high);
    out += fmt::format("  {:<16} {:>5} {:>14.6g} {:>13}   {}\n", arm_name(a.arm), a.n, a.mean,
                       d ? pct(d->mean) : std::string("-"), ci);
  }
  out += "\ntelemetry cost while the workload ran (/proc: CPU time, context switches, VmHWM)\n";
  out += cost_table(r.cost_during_runs);
  if (r.idle_seconds > 0) {
    out += fmt::format("\ntelemetry cost on the idle node, both running {} s (--duration)\n",
                       r.idle_seconds);
    out += cost_table(r.cost_idle);
  }
  return out;
}

nlohmann::json overhead_json(const OverheadReport& r) {
  auto or_null = [](std::optional<double> v) { return v ? nlohmann::json(*v) : nlohmann::json(); };
  auto pct_or_null = [](std::optional<double> v) {
    return v ? nlohmann::json(*v * 100) : nlohmann::json();
  };
  nlohmann::json j;
  j["command"] = r.command;
  j["rounds"] = r.rounds;
  j["warmup_runs"] = r.warmup_runs;
  j["compared"] = r.metric_regex ? "metric" : "wall_seconds";
  j["metric_regex"] = r.metric_regex ? nlohmann::json(*r.metric_regex) : nlohmann::json();
  j["higher_is_better"] = r.metric_regex ? nlohmann::json(r.higher_is_better) : nlohmann::json();
  j["exporter"] = {{"argv", r.exporter_argv}, {"origin", r.exporter_origin}};
  j["host_collector"] = {{"argv", r.host_collector_argv}};
  j["scrape_interval_seconds"] =
      r.scrape_interval_seconds > 0 ? nlohmann::json(r.scrape_interval_seconds) : nlohmann::json();
  auto arms = nlohmann::json::array();
  for (const auto& a : r.arms) {
    const auto& d = a.vs_baseline;
    arms.push_back({{"arm", arm_key(a.arm)},
                    {"n", a.n},
                    {"mean", a.mean},
                    {"difference_pct", d ? nlohmann::json(d->mean * 100) : nlohmann::json()},
                    {"sd_pct", d && d->n > 1 ? nlohmann::json(d->sd * 100) : nlohmann::json()},
                    {"ci_low_pct", d ? pct_or_null(d->ci_low) : nlohmann::json()},
                    {"ci_high_pct", d ? pct_or_null(d->ci_high) : nlohmann::json()}});
  }
  j["arms"] = arms;
  auto runs = nlohmann::json::array();
  for (const auto& run : r.runs) {
    runs.push_back(
        {{"round", run.round},
         {"position", run.position},
         {"arm", arm_key(run.arm)},
         {"wall_seconds", run.wall_seconds},
         {"metric", or_null(run.metric)},
         {"exporter_pid",
          run.exporter_pid > 0 ? nlohmann::json(run.exporter_pid) : nlohmann::json()},
         {"host_collector_pid",
          run.host_collector_pid > 0 ? nlohmann::json(run.host_collector_pid) : nlohmann::json()}});
  }
  j["runs"] = runs;
  j["cost_during_runs"] = cost_json(r.cost_during_runs);
  j["idle_seconds"] = r.idle_seconds > 0 ? nlohmann::json(r.idle_seconds) : nlohmann::json();
  j["cost_idle"] = r.idle_seconds > 0 ? cost_json(r.cost_idle) : nlohmann::json();
  j["warnings"] = r.warnings;
  return j;
}

}  // namespace cpupower::launch
