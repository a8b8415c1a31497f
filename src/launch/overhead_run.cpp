#include "launch/overhead_run.hpp"

#include <arpa/inet.h>
#include <fmt/core.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <regex>
#include <sstream>
#include <thread>

#include "common/signals.hpp"
#include "common/text.hpp"
#include "launch/process.hpp"

namespace cpupower::launch {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// A helper finishes its sample or its response and exits well within this; past it, SIGKILL.
constexpr milliseconds kStopGrace{10000};
// How often a startup wait looks at the helpers' logs and markers.
constexpr milliseconds kStartupPoll{20};

sigset_t overhead_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGCHLD);
  return set;
}

// Waits up to `timeout` for SIGINT, SIGTERM or SIGCHLD (all blocked); the signal, or 0.
int wait_signal(milliseconds timeout) {
  const auto set = overhead_signals();
  const auto ms = std::max<long long>(0, timeout.count());
  timespec ts{static_cast<time_t>(ms / 1000), static_cast<long>((ms % 1000) * 1000000)};
  const int sig = ::sigtimedwait(&set, nullptr, &ts);
  return sig > 0 ? sig : 0;
}

bool is_stop(int sig) {
  return sig == SIGINT || sig == SIGTERM;
}

bool exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

double seconds_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// The last `lines` lines of a log, each on a line of its own, indented; for a failure message.
std::string log_tail(const std::string& path, std::size_t lines = 5) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  std::stringstream ss;
  ss << in.rdbuf();
  const auto all = common::split(ss.str(), '\n');
  std::vector<std::string> kept;
  for (auto it = all.rbegin(); it != all.rend() && kept.size() < lines; ++it) {
    if (!common::trim(*it).empty()) kept.push_back(*it);
  }
  std::string out;
  for (auto it = kept.rbegin(); it != kept.rend(); ++it) {
    out += "\n    " + common::escape_controls(*it);
  }
  return out;
}

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// One GET /metrics on 127.0.0.1:port, as the collector makes it each collect interval:
// whether a 200 came back, the body read to its end.
bool get_metrics(long port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  timeval tv{2, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bool good = false;
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0) {
    const std::string request =
        "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
    std::size_t sent = 0;
    while (sent < request.size()) {
      const ssize_t n = ::send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) break;
      sent += static_cast<std::size_t>(n);
    }
    std::string head;
    char buf[16384];
    ssize_t n = 0;
    while (sent == request.size() && (n = ::recv(fd, buf, sizeof buf, 0)) > 0) {
      if (head.size() < 16) head.append(buf, static_cast<std::size_t>(n));
    }
    good = n == 0 && (head.starts_with("HTTP/1.1 200") || head.starts_with("HTTP/1.0 200"));
  }
  ::close(fd);
  return good;
}

// The collector's side of the exporter's load: GET /metrics every interval on a fixed-rate
// schedule (slots that passed are skipped, never caught up).
class Scraper {
 public:
  Scraper(long port, double interval_seconds) {
    if (port <= 0 || interval_seconds <= 0) return;
    const auto period = std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double>(interval_seconds));
    thread_ = std::thread([this, port, period] { loop(port, period); });
  }
  ~Scraper() { stop(); }
  Scraper(const Scraper&) = delete;
  Scraper& operator=(const Scraper&) = delete;

  void stop() {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }
  std::size_t failed() const { return failed_; }

 private:
  void loop(long port, Clock::duration period) {
    auto next = Clock::now();
    std::unique_lock lock(mutex_);
    while (!stop_) {
      lock.unlock();
      const bool good = get_metrics(port);
      lock.lock();
      if (!good) ++failed_;
      const auto now = Clock::now();
      while (next <= now) next += period;
      cv_.wait_until(lock, next, [this] { return stop_; });
    }
  }

  std::mutex mutex_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::size_t failed_ = 0;  // written under mutex_, read after stop()
  std::thread thread_;
};

// What a step of a run came to: nothing wrong, or the failure to report.
struct Step {
  Step() = default;
  Step(OverheadFailure f, std::string m, int sig = 0)
      : failure(f), message(std::move(m)), signal(sig) {}
  OverheadFailure failure = OverheadFailure::none;
  std::string message;
  int signal = 0;
  bool ok() const { return failure == OverheadFailure::none; }
};

Step interrupted(int sig) {
  return {OverheadFailure::interrupted, std::string("interrupted by ") + common::signal_name(sig),
          sig};
}

// One telemetry process of a run.
struct Helper {
  Helper(std::string k, std::vector<std::string> a, std::string l)
      : kind(std::move(k)), argv(std::move(a)), log(std::move(l)) {}
  std::string kind;  // "exporter", "host collector"
  std::vector<std::string> argv;
  std::string log;
  std::string ready_marker;  // the host collector's
  std::string error_marker;
  pid_t pid = -1;
  std::optional<int> exit_status;  // once it ended (reaped)
  std::optional<long> port;        // the exporter's, once it listens
  bool ready = false;
  ProcessUsage at_start;

  // Whether it has ended; reaps it when it just did.
  bool ended() {
    if (exit_status) return true;
    int status = 0;
    if (pid > 0 && ::waitpid(pid, &status, WNOHANG) == pid) exit_status = status;
    return exit_status.has_value();
  }

  std::string describe() const { return fmt::format("the {} `{}`", kind, shell_quote_argv(argv)); }
};

// The telemetry of one run (or of the idle measurement): started, waited ready, measured,
// stopped. Whatever is still running is stopped when it goes.
class Telemetry {
 public:
  Telemetry(const OverheadOptions& o, const TelemetryCommands& c) : o_(o), c_(c) {}
  ~Telemetry() { stop(); }
  Telemetry(const Telemetry&) = delete;
  Telemetry& operator=(const Telemetry&) = delete;

  // Starts the exporter and/or the host collector with their files under `dir`, waits until
  // every one is ready, then takes the first /proc reading of each.
  Step start(bool exporter, bool host_collector, const std::string& dir) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (exporter) helpers_.push_back({"exporter", c_.exporter_argv, dir + "/exporter.log"});
    if (host_collector) {
      Helper h{"host collector", c_.host_collector_argv, dir + "/host-collect.log"};
      h.argv.insert(h.argv.end(),
                    {"--output-dir", dir + "/host/nodes", "--ready-dir", dir + "/host/ready"});
      h.ready_marker = dir + "/host/ready/" + c_.host_name + ".ready.json";
      h.error_marker = dir + "/host/ready/" + c_.host_name + ".error.json";
      helpers_.push_back(std::move(h));
    }
    for (auto& h : helpers_) {
      SpawnOptions so;
      so.argv = h.argv;
      so.output_path = h.log;
      so.die_with_parent = true;  // never outlives this command, however it ends
      const auto child = spawn_process(so);
      if (!child) {
        return {OverheadFailure::telemetry,
                fmt::format("cannot start {}: {}", h.describe(), child.error())};
      }
      h.pid = child->pid;
    }
    const auto deadline =
        Clock::now() + std::chrono::duration_cast<Clock::duration>(
                           std::chrono::duration<double>(o_.startup_timeout_seconds));
    while (true) {
      bool all = true;
      for (auto& h : helpers_) {
        if (!h.ready) h.ready = is_ready(h);
        if (h.ready) continue;
        all = false;
        if (h.ended()) {
          return {OverheadFailure::telemetry,
                  fmt::format("{} exited at startup ({}); its log {}:{}", h.describe(),
                              describe_status(*h.exit_status), h.log, log_tail(h.log))};
        }
        if (!h.error_marker.empty() && exists(h.error_marker)) {
          return {OverheadFailure::telemetry,
                  fmt::format("{} found no source ({}); its log {}:{}", h.describe(),
                              h.error_marker, h.log, log_tail(h.log))};
        }
      }
      if (all) break;
      if (Clock::now() >= deadline) {
        std::string which;
        for (const auto& h : helpers_) {
          if (!h.ready)
            which += fmt::format("; {} (log {}:{})", h.describe(), h.log, log_tail(h.log));
        }
        return {OverheadFailure::telemetry,
                fmt::format("telemetry not ready after {} s (--startup-timeout-s){}",
                            o_.startup_timeout_seconds, which)};
      }
      if (const int sig = wait_signal(kStartupPoll); is_stop(sig)) return interrupted(sig);
    }
    for (auto& h : helpers_) {
      auto usage = read_process_usage(h.pid);
      if (!usage) return {OverheadFailure::telemetry, h.describe() + ": " + usage.error()};
      h.at_start = *usage;
    }
    started_ = Clock::now();
    for (const auto& h : helpers_) {
      if (h.port) scraper_ = std::make_unique<Scraper>(*h.port, o_.scrape_interval_seconds);
    }
    return {};
  }

  // A helper that ended since start(): the failure naming it; otherwise nothing.
  Step check_alive() {
    for (auto& h : helpers_) {
      if (h.ended()) {
        return {OverheadFailure::telemetry,
                fmt::format("{} ended during the measurement ({}); its log {}:{}", h.describe(),
                            describe_status(*h.exit_status), h.log, log_tail(h.log))};
      }
    }
    return {};
  }

  // The second /proc reading of each helper, added to its kind's figures.
  Step measure(CostFigures* exporter, CostFigures* host_collector) {
    const auto now = Clock::now();
    for (auto& h : helpers_) {
      auto usage = read_process_usage(h.pid);
      if (!usage) return {OverheadFailure::telemetry, h.describe() + ": " + usage.error()};
      CostFigures* figures = h.kind == "exporter" ? exporter : host_collector;
      figures->add(h.at_start, *usage, seconds_between(started_, now));
    }
    return {};
  }

  pid_t pid_of(std::string_view kind) const {
    for (const auto& h : helpers_) {
      if (h.kind == kind) return h.pid;
    }
    return -1;
  }

  // SIGTERM to each one still running, then its exit waited for (SIGKILL after kStopGrace).
  void stop() {
    if (scraper_) scraper_->stop();
    for (auto& h : helpers_) {
      if (h.pid > 0 && !h.ended()) h.exit_status = terminate_process(h.pid, kStopGrace, true);
    }
  }

  std::size_t failed_scrapes() const { return scraper_ ? scraper_->failed() : 0; }

 private:
  bool is_ready(Helper& h) {
    if (!h.ready_marker.empty()) return exists(h.ready_marker);
    if (const auto text = common::read_file_prefix(h.log, 1 << 20)) {
      h.port = listening_port(*text);
    }
    return h.port.has_value();
  }

  const OverheadOptions& o_;
  const TelemetryCommands& c_;
  std::vector<Helper> helpers_;
  Clock::time_point started_;
  std::unique_ptr<Scraper> scraper_;
};

// Runs the workload to its end, its stdout and stderr to `log`; sets `wall` (steady clock,
// from just before the spawn to its reaping). Telemetry that ends meanwhile, or a stop
// signal, ends it early.
Step run_workload(const OverheadOptions& o, const std::string& log, Telemetry& telemetry,
                  double& wall) {
  SpawnOptions so;
  so.argv = o.command;
  so.output_path = log;
  so.die_with_parent = true;
  const auto t0 = Clock::now();
  const auto child = spawn_process(so);
  if (!child) {
    return {OverheadFailure::workload, fmt::format("cannot start the workload `{}`: {}",
                                                   shell_quote_argv(o.command), child.error())};
  }
  while (true) {
    int status = 0;
    if (::waitpid(child->pid, &status, WNOHANG) == child->pid) {
      wall = seconds_between(t0, Clock::now());
      if (status != 0) {
        return {
            OverheadFailure::workload,
            fmt::format("the workload `{}` failed ({}); its output {}:{}",
                        shell_quote_argv(o.command), describe_status(status), log, log_tail(log))};
      }
      return {};
    }
    if (auto dead = telemetry.check_alive(); !dead.ok()) {
      terminate_process(child->pid, milliseconds(2000), true);
      return dead;
    }
    // SIGCHLD wakes this at the workload's end; the timeout is only a safety net.
    if (const int sig = wait_signal(milliseconds(1000)); is_stop(sig)) {
      terminate_process(child->pid, milliseconds(2000), true);
      return interrupted(sig);
    }
  }
}

Result<std::string> make_work_dir(const std::string& given) {
  if (!given.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(given, ec);
    if (ec) return Error{given + ": " + ec.message()};
    return given;
  }
  const char* tmp = std::getenv("TMPDIR");
  std::string tmpl = std::string(tmp && *tmp ? tmp : "/tmp") + "/cpu-power-overhead.XXXXXX";
  if (!::mkdtemp(tmpl.data())) return Error{tmpl + ": " + std::strerror(errno)};
  return tmpl;
}

}  // namespace

Result<TelemetryCommands> telemetry_commands(const OverheadOptions& o,
                                             const ExporterChoice& exporter,
                                             const std::string& self_exe) {
  TelemetryCommands c;
  std::vector<std::string> extra = {"--bind", "127.0.0.1"};
  if (!o.hwmon_root.empty()) extra.insert(extra.end(), {"--hwmon-root", o.hwmon_root});
  if (!o.exporter_command.empty()) {
    c.exporter_argv = o.exporter_command;
    c.exporter_argv.insert(c.exporter_argv.end(), {"--port", "0"});
    c.exporter_argv.insert(c.exporter_argv.end(), extra.begin(), extra.end());
    c.exporter_origin = "--exporter-command";
  } else {
    if (exporter.kind == ExporterKind::none) {
      std::string why = "no exporter to measure";
      for (const auto& w : exporter.warnings) why += ": " + w;
      return Error{why + " (--exporter-command names one)"};
    }
    c.exporter_argv =
        exporter_argv(exporter, 0, o.source.empty() ? std::string("auto") : o.source, extra);
    c.exporter_origin = exporter.origin;
    if (exporter.kind == ExporterKind::python_fallback) {
      c.warnings.push_back(
          "no cpu-power-exporter was found: the Python fallback exporter is "
          "measured");
    }
    if (exporter.kind == ExporterKind::python_fallback && !o.source.empty() && o.source != "auto") {
      c.warnings.push_back("--source " + o.source +
                           " is not passed to the Python fallback exporter, which is ACPI-only "
                           "and has no --source");
    }
  }
  c.host_collector_argv = {
      self_exe,     "host-collect", "--interval-seconds", fmt::format("{}", o.interval_seconds),
      "--hostname", c.host_name};
  if (!o.hwmon_root.empty()) {
    c.host_collector_argv.insert(c.host_collector_argv.end(), {"--hwmon-root", o.hwmon_root});
  }
  if (!o.source.empty())
    c.host_collector_argv.insert(c.host_collector_argv.end(), {"--source", o.source});
  return c;
}

void block_overhead_signals() {
  const auto set = overhead_signals();
  ::pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

OverheadOutcome run_overhead(const OverheadOptions& o, const TelemetryCommands& c,
                             const std::function<void(const std::string&)>& progress) {
  OverheadOutcome out;
  auto say = [&](const std::string& line) {
    if (progress) progress(line);
  };
  std::optional<std::regex> metric;
  if (o.metric_regex) {
    try {
      metric.emplace(*o.metric_regex);
    } catch (const std::regex_error& e) {
      out.failure = OverheadFailure::workload;
      out.message = fmt::format("--metric {}: {}", *o.metric_regex, e.what());
      return out;
    }
  }
  const auto dir = make_work_dir(o.work_dir);
  if (!dir) {
    out.failure = OverheadFailure::telemetry;
    out.message = "cannot make the work directory: " + dir.error();
    return out;
  }
  const std::string work = *dir;
  auto fail = [&](const Step& step, const std::string& where) {
    out.failure = step.failure;
    out.signal = step.signal;
    out.message = where.empty() ? step.message : where + ": " + step.message;
    out.work_dir = work;
    return out;
  };

  OverheadReport report;
  report.command = o.command;
  report.rounds = o.rounds;
  report.warmup_runs = o.warmup_runs;
  report.metric_regex = o.metric_regex;
  report.higher_is_better = o.higher_is_better;
  report.exporter_argv = c.exporter_argv;
  report.exporter_origin = c.exporter_origin;
  report.host_collector_argv = c.host_collector_argv;
  report.scrape_interval_seconds = o.scrape_interval_seconds;
  report.warnings = c.warnings;
  if (o.rounds % 2 != 0) {
    report.warnings.push_back(
        "an odd number of pairs leaves a drift over time partly in the differences; an even "
        "--pairs cancels a linear drift, a multiple of 4 balances every position");
  }
  std::error_code mkdir_error;
  std::filesystem::create_directories(work + "/runs", mkdir_error);
  for (int w = 1; w <= o.warmup_runs; ++w) {
    Telemetry none(o, c);
    double wall = 0;
    const std::string where = fmt::format("warm-up run {} of {}", w, o.warmup_runs);
    const std::string log = fmt::format("{}/runs/warmup-{}.log", work, w);
    if (auto s = run_workload(o, log, none, wall); !s.ok()) return fail(s, where);
    say(fmt::format("{}: {:.3f} s, not counted", where, wall));
  }
  CostFigures exporter_cost, host_cost;
  const auto order = run_order(o.rounds);
  std::size_t failed_scrapes = 0;
  for (std::size_t r = 0; r < order.size(); ++r) {
    for (std::size_t p = 0; p < 4; ++p) {
      const Arm arm = order[r][p];
      const std::string where =
          fmt::format("round {} of {}, arm {}", r + 1, order.size(), arm_name(arm));
      const std::string tag = fmt::format("r{:02}-{}-{}", r + 1, p + 1, arm_key(arm));
      Telemetry telemetry(o, c);
      if (auto s = telemetry.start(arm_runs_exporter(arm), arm_runs_host_collector(arm),
                                   work + "/telemetry/" + tag);
          !s.ok()) {
        return fail(s, where);
      }
      OverheadRun run;
      run.round = static_cast<int>(r + 1);
      run.position = static_cast<int>(p + 1);
      run.arm = arm;
      run.exporter_pid = telemetry.pid_of("exporter");
      run.host_collector_pid = telemetry.pid_of("host collector");
      const std::string log = work + "/runs/" + tag + ".log";
      if (auto s = run_workload(o, log, telemetry, run.wall_seconds); !s.ok())
        return fail(s, where);
      if (auto s = telemetry.measure(&exporter_cost, &host_cost); !s.ok()) return fail(s, where);
      telemetry.stop();
      failed_scrapes += telemetry.failed_scrapes();
      std::string shown = fmt::format("{:.3f} s", run.wall_seconds);
      if (metric) {
        auto value = capture_metric(read_all(log), *metric);
        if (!value) {
          return fail({OverheadFailure::workload,
                       fmt::format("--metric {}: {} ({})", *o.metric_regex, value.error(), log)},
                      where);
        }
        run.metric = *value;
        shown += fmt::format(", metric {}", *value);
      }
      say(fmt::format("{}: {}", where, shown));
      report.runs.push_back(run);
    }
  }
  report.cost_during_runs = {{"exporter", exporter_cost}, {"host collector", host_cost}};

  if (o.idle_seconds > 0) {
    say(fmt::format("idle node: both legs for {} s", o.idle_seconds));
    CostFigures exporter_idle, host_idle;
    Telemetry telemetry(o, c);
    if (auto s = telemetry.start(true, true, work + "/telemetry/idle"); !s.ok()) {
      return fail(s, "idle measurement");
    }
    const auto end = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                        std::chrono::duration<double>(o.idle_seconds));
    while (Clock::now() < end) {
      if (auto s = telemetry.check_alive(); !s.ok()) return fail(s, "idle measurement");
      const auto left = std::chrono::ceil<milliseconds>(end - Clock::now());
      if (const int sig = wait_signal(std::min(left, milliseconds(1000))); is_stop(sig)) {
        return fail(interrupted(sig), "idle measurement");
      }
    }
    if (auto s = telemetry.measure(&exporter_idle, &host_idle); !s.ok()) {
      return fail(s, "idle measurement");
    }
    telemetry.stop();
    failed_scrapes += telemetry.failed_scrapes();
    report.idle_seconds = o.idle_seconds;
    report.cost_idle = {{"exporter", exporter_idle}, {"host collector", host_idle}};
  }
  if (failed_scrapes > 0) {
    report.warnings.push_back(fmt::format(
        "{} GET /metrics of the exporter failed (--scrape-interval-seconds)", failed_scrapes));
  }

  auto arms = summarize_arms(report.runs, metric.has_value());
  if (!arms) return fail({OverheadFailure::workload, arms.error()}, "");
  report.arms = std::move(*arms);
  out.report = std::move(report);
  if (o.work_dir.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(work, ec);
  } else {
    out.work_dir = work;
  }
  return out;
}

}  // namespace cpupower::launch
