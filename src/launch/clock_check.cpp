#include "launch/clock_check.hpp"

#include <fmt/core.h>
#include <sys/timex.h>
#include <sys/wait.h>

#include <charconv>
#include <cmath>
#include <filesystem>

#include "common/log.hpp"
#include "common/text.hpp"
#include "launch/process.hpp"
#include "launch/session_plan.hpp"

namespace cpupower::launch {
namespace {

using Clock = std::chrono::steady_clock;
using common::trim;

std::vector<std::string_view> lines_of(std::string_view text) {
  std::vector<std::string_view> out;
  while (!text.empty()) {
    const auto nl = text.find('\n');
    out.push_back(text.substr(0, nl));
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
  return out;
}

std::vector<std::string_view> words_of(std::string_view line) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    const std::size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t') ++i;
    if (i > start) out.push_back(line.substr(start, i - start));
  }
  return out;
}

std::optional<double> number(std::string_view s) {
  const auto v = common::parse_double(s);
  return v && std::isfinite(*v) ? v : std::nullopt;
}

std::optional<long> integer(std::string_view s) {
  long v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end == s.data()) return std::nullopt;
  return v;
}

// "Key : value" (chronyc, timedatectl status) or "key: value" (adjtimex): the value of the
// first line whose key, trimmed, is `key`.
std::optional<std::string_view> field(std::string_view text, std::string_view key, char sep) {
  for (const auto line : lines_of(text)) {
    const auto at = line.find(sep);
    if (at == std::string_view::npos) continue;
    if (trim(line.substr(0, at)) == key) return trim(line.substr(at + 1));
  }
  return std::nullopt;
}

ClockFinding finding(std::string tool, ClockSynced synced, std::string note) {
  ClockFinding f;
  f.tool = std::move(tool);
  f.synced = synced;
  f.note = std::move(note);
  return f;
}

ClockSynced yes_no(std::string_view value) {
  if (value == "yes") return ClockSynced::yes;
  if (value == "no") return ClockSynced::no;
  return ClockSynced::unknown;
}

}  // namespace

std::string_view clock_synced_name(ClockSynced s) {
  return s == ClockSynced::yes ? "yes" : s == ClockSynced::no ? "no" : "unknown";
}

ClockFinding parse_timedatectl(std::string_view text) {
  for (const auto& [key, sep] : {std::pair<std::string_view, char>{"NTPSynchronized", '='},
                                 {"System clock synchronized", ':'},
                                 {"NTP synchronized", ':'}}) {
    if (const auto v = field(text, key, sep)) {
      const auto synced = yes_no(*v);
      if (synced != ClockSynced::unknown) {
        return finding("timedatectl", synced,
                       fmt::format("{}{}{}", key, sep == '=' ? "=" : ": ", *v));
      }
    }
  }
  return finding("timedatectl", ClockSynced::unknown, "no synchronisation state in its output");
}

ClockFinding parse_chronyc_tracking(std::string_view text) {
  const auto leap = field(text, "Leap status", ':');
  if (!leap) return finding("chronyc", ClockSynced::unknown, "no Leap status in its output");
  const bool no = *leap == "Not synchronised" || *leap == "Not synchronized";
  const bool yes = *leap == "Normal" || *leap == "Insert second" || *leap == "Delete second";
  auto f = finding("chronyc",
                   no    ? ClockSynced::no
                   : yes ? ClockSynced::yes
                         : ClockSynced::unknown,
                   "Leap status: " + std::string(*leap));
  if (!no && !yes) return f;
  // "0.000012345 seconds fast of NTP time": the local clock is ahead.
  if (const auto system = field(text, "System time", ':')) {
    const auto w = words_of(*system);
    if (w.size() >= 3 && w[1] == "seconds" && (w[2] == "fast" || w[2] == "slow")) {
      if (const auto v = number(w[0])) f.offset_s = w[2] == "fast" ? *v : -*v;
    }
  }
  return f;
}

ClockFinding parse_ntpq_peers(std::string_view text) {
  std::optional<std::size_t> offset_column;
  std::size_t peers = 0;
  for (const auto line : lines_of(text)) {
    const auto w = words_of(line);
    if (w.empty()) continue;
    if (w.front() == "remote") {
      for (std::size_t i = 0; i < w.size(); ++i) {
        if (w[i] == "offset") offset_column = i;
      }
      continue;
    }
    if (!offset_column || w.front().find_first_not_of('=') == std::string_view::npos) continue;
    ++peers;
    const char tally = line.empty() ? ' ' : trim(line).front();
    if (tally != '*' && tally != 'o') continue;
    auto f = finding("ntpq", ClockSynced::yes, "selected peer " + std::string(w.front()));
    // The tally character sits on the remote name; columns count from it.
    if (*offset_column < w.size()) {
      if (const auto ms = number(w[*offset_column])) f.offset_s = *ms / 1000.0;
    }
    return f;
  }
  if (!offset_column) return finding("ntpq", ClockSynced::unknown, "no peer table in its output");
  if (peers == 0) return finding("ntpq", ClockSynced::no, "no peers");
  return finding("ntpq", ClockSynced::no, fmt::format("{} peer(s), none selected", peers));
}

ClockFinding parse_adjtimex(std::string_view text) {
  const auto status = field(text, "status", ':');
  const auto value =
      status ? integer(words_of(*status).empty() ? std::string_view() : words_of(*status).front())
             : std::nullopt;
  if (!value) return finding("adjtimex", ClockSynced::unknown, "no status in its output");
  const bool unsync = (*value & STA_UNSYNC) != 0;
  return finding("adjtimex", unsync ? ClockSynced::no : ClockSynced::yes,
                 fmt::format("status {:#x}: STA_UNSYNC {}", *value, unsync ? "set" : "clear"));
}

ClockFinding kernel_clock_finding(int state, long status, long maxerror_us, long esterror_us) {
  const bool unsync = state == TIME_ERROR || (status & STA_UNSYNC) != 0;
  return finding("ntp_adjtime", unsync ? ClockSynced::no : ClockSynced::yes,
                 fmt::format("state {} status {:#x} maxerror {}us esterror {}us", state, status,
                             maxerror_us, esterror_us));
}

ClockProbe clock_verdict(const std::vector<ClockFinding>& findings) {
  for (const auto* tool : {"chronyc", "ntpq", "timedatectl", "adjtimex", "ntp_adjtime"}) {
    for (const auto& f : findings) {
      if (f.tool != tool || f.synced == ClockSynced::unknown) continue;
      return {f.synced, f.offset_s, f.tool};
    }
  }
  return {};
}

std::string clock_result_line(const std::string& hostname, const ClockProbe& p) {
  return fmt::format("clock_sync synchronized={} offset_seconds={} tool={} hostname={}\n",
                     clock_synced_name(p.synced),
                     p.offset_s ? fmt::format("{}", *p.offset_s) : std::string("null"),
                     p.tool.value_or("null"), hostname);
}

std::optional<ClockProbe> parse_clock_output(std::string_view text) {
  std::optional<ClockProbe> out;
  for (const auto line : lines_of(text)) {
    const auto w = words_of(line);
    if (w.size() < 4 || w[0] != "clock_sync") continue;
    ClockProbe p;
    bool ok = true;
    for (std::size_t i = 1; i < 4; ++i) {
      const auto eq = w[i].find('=');
      if (eq == std::string_view::npos) {
        ok = false;
        break;
      }
      const auto key = w[i].substr(0, eq);
      const auto value = w[i].substr(eq + 1);
      if (key == "synchronized") {
        p.synced = yes_no(value);
      } else if (key == "offset_seconds") {
        if (value != "null") p.offset_s = number(value);
      } else if (key == "tool") {
        if (value != "null") p.tool = std::string(value);
      } else {
        ok = false;
      }
    }
    if (ok) out = p;
  }
  return out;
}

LocalClockCheck probe_local_clock(const std::string& hostname,
                                  std::chrono::milliseconds tool_timeout) {
  LocalClockCheck out;
  std::vector<ClockFinding> findings;
  out.output = "cpu-power clock-check on " + hostname + "\n";
  struct Tool {
    std::vector<std::string> argv;
    ClockFinding (*parse)(std::string_view);
  };
  const Tool tools[] = {
      {{"timedatectl", "status"}, parse_timedatectl},
      {{"chronyc", "-n", "tracking"}, parse_chronyc_tracking},
      {{"ntpq", "-pn"}, parse_ntpq_peers},
      // --print, never -p: busybox's adjtimex takes -p as a time constant to set.
      {{"adjtimex", "--print"}, parse_adjtimex},
  };
  for (const auto& t : tools) {
    // stdout and stderr together, as the tool interleaves them.
    const auto run = run_capture(t.argv, Clock::now() + tool_timeout, std::nullopt, true);
    const std::string name = shell_quote_argv(t.argv);
    if (!run.error.empty()) {
      out.output += "== " + name + ": not run (" + run.error + ")\n";
      continue;
    }
    if (!run.status) {
      out.output += fmt::format("== {}: stopped after {} ms\n", name, tool_timeout.count());
    } else {
      out.output += "== " + name + ": " + describe_status(*run.status) + "\n";
    }
    out.output += run.output;
    if (!run.output.empty() && run.output.back() != '\n') out.output += "\n";
    // A tool that failed says nothing about the clock (chronyc with no daemon prints an
    // error and exits 1): only a clean exit's output is read.
    if (run.status && WIFEXITED(*run.status) && WEXITSTATUS(*run.status) == 0) {
      findings.push_back(t.parse(run.output));
    }
  }
  struct timex tx {};
  tx.modes = 0;  // read only
  const int state = ::ntp_adjtime(&tx);
  if (state < 0) {
    out.output += "== ntp_adjtime(2): failed\n";
  } else {
    const auto f = kernel_clock_finding(state, tx.status, tx.maxerror, tx.esterror);
    out.output += "== ntp_adjtime(2): " + f.note + "\n";
    findings.push_back(f);
  }
  for (const auto& f : findings) {
    out.output +=
        fmt::format("finding tool={} synchronized={} offset_seconds={} note={}\n", f.tool,
                    clock_synced_name(f.synced),
                    f.offset_s ? fmt::format("{}", *f.offset_s) : "null", common::quoted(f.note));
  }
  out.probe = clock_verdict(findings);
  out.output += clock_result_line(hostname, out.probe);
  return out;
}

std::vector<std::string> clock_sync_failures(const artifacts::ClockSyncCheck& check) {
  std::vector<std::string> out;
  for (const auto& n : check.nodes) {
    const bool over = n.offset_seconds && std::abs(*n.offset_seconds) > check.max_offset_seconds;
    if (n.synchronized != "yes" || over) out.push_back(n.hostname);
  }
  return out;
}

artifacts::ClockSyncCheck check_session_clocks(const SessionPlan& plan,
                                               std::chrono::milliseconds step_timeout) {
  artifacts::ClockSyncCheck check;
  check.max_offset_seconds = kClockOffsetBoundS;
  for (const auto& node : plan.nodes) check.nodes.push_back({node, "unknown", {}, {}, {}});
  const auto file_of = [&](const std::string& node) { return "clock_sync_" + node + ".out"; };
  const auto path_of = [&](const std::string& node) { return plan.log_dir + "/" + file_of(node); };
  if (!plan.clock_sync_check) {
    log()->warn(
        "clock check off (telemetry.clock_sync_check: false): no node's clock is checked, and "
        "the artifacts say so");
  } else if (plan.mode == LaunchMode::slurm) {
    std::vector<pid_t> steps;
    for (const auto& step : plan.clock_steps) {
      log()->info("clock check starting name={} argv={}", step.name,
                  common::quoted(shell_quote_argv(step.srun)));
      SpawnOptions o;
      o.argv = step.srun;
      o.output_path = step.log;
      if (const auto child = spawn_process(o)) {
        steps.push_back(child->pid);
      } else {
        log()->warn("clock check step {} not started error={}", step.name,
                    common::quoted(child.error()));
      }
    }
    const auto deadline = Clock::now() + step_timeout;
    for (const auto pid : steps) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          std::max(deadline - Clock::now(), Clock::duration::zero()));
      if (!wait_for_exit(pid, left)) {
        log()->warn("clock check step still running after {} ms; stopped", step_timeout.count());
        terminate_process(pid, std::chrono::milliseconds(2000), true);
      }
    }
    for (auto& n : check.nodes) {
      std::error_code ec;
      if (!std::filesystem::is_regular_file(path_of(n.hostname), ec)) continue;
      n.output_file = file_of(n.hostname);
      const auto text = common::read_small_file(path_of(n.hostname), 1 << 20);
      if (!text) continue;
      if (const auto p = parse_clock_output(*text)) {
        n.synchronized = std::string(clock_synced_name(p->synced));
        n.offset_seconds = p->offset_s;
        n.tool = p->tool;
      }
    }
  } else {
    // Simulated nodes share this host's clock: one probe, recorded for each.
    const auto local = probe_local_clock(plan.nodes.empty() ? "localhost" : plan.nodes.front(),
                                         std::chrono::milliseconds(2000));
    for (auto& n : check.nodes) {
      const auto written = common::write_file_atomic(path_of(n.hostname), local.output, false);
      if (!written) {
        log()->warn("cannot write {} error={}", path_of(n.hostname),
                    common::quoted(written.error()));
      } else {
        n.output_file = file_of(n.hostname);
      }
      n.synchronized = std::string(clock_synced_name(local.probe.synced));
      n.offset_seconds = local.probe.offset_s;
      n.tool = local.probe.tool;
    }
  }
  std::size_t good = 0;
  for (const auto& n : check.nodes) {
    if (!plan.clock_sync_check) continue;
    const std::string where =
        n.output_file ? " (" + plan.log_dir + "/" + *n.output_file + ")" : std::string();
    if (n.synchronized == "no") {
      log()->warn(
          "clock of node {} is not synchronised (tool {}){}; its row times and window "
          "edges are not vouched for",
          n.hostname, n.tool.value_or("-"), where);
    } else if (n.synchronized == "unknown") {
      log()->warn("clock of node {} could not be checked{}", n.hostname,
                  n.output_file ? where : std::string(" (no output)"));
    } else if (n.offset_seconds && std::abs(*n.offset_seconds) > check.max_offset_seconds) {
      log()->warn("clock of node {} is {:+.6f} s off (tool {}), over the {} s bound{}", n.hostname,
                  *n.offset_seconds, n.tool.value_or("-"), check.max_offset_seconds, where);
    } else {
      ++good;
    }
  }
  if (plan.clock_sync_check) {
    log()->info("clock check: {} of {} node(s) synchronised within {} s", good, check.nodes.size(),
                check.max_offset_seconds);
  }
  const auto summary = plan.log_dir + "/" + std::string(kClockSyncSummaryFile);
  const auto written =
      common::write_file_atomic(summary, artifacts::clock_sync_check_json(check), true);
  if (!written) {
    log()->warn("cannot write {} error={}", summary, common::quoted(written.error()));
  }
  return check;
}

}  // namespace cpupower::launch
