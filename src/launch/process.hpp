#pragma once
// Child processes started as an argv (never through a shell), so that node names and paths
// with spaces or shell metacharacters reach the program exactly as given.

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/log.hpp"
#include "common/result.hpp"

namespace cpupower::launch {

// The log of a `cpu-power run` session, which every part of it writes to.
inline std::shared_ptr<spdlog::logger> log() {
  return common::logger("cpu_power::run");
}

// Whether a file of the session was written; when not, logged "cannot write <path> ...".
bool written(const std::string& path, const Status& status);

struct SpawnOptions {
  std::vector<std::string> argv;  // argv[0] is looked up on PATH when it has no '/'
  // stdout and stderr go to this file (created, truncated); unset: inherited.
  std::optional<std::string> output_path;
  bool capture_stdout = false;    // stdout to a pipe (Child::stdout_fd); stderr as above
  bool stderr_to_stdout = false;  // stderr where stdout goes (with capture_stdout: the pipe)
  // Its own process group, so that a terminal's Ctrl-C reaches it only through us, and so
  // that stopping it reaches whatever it started.
  bool own_process_group = true;
  bool null_stdin = true;
  // SIGTERM to the child when this process dies, however it dies (SIGKILL included), so a
  // helper never outlives the session that started it (Linux PR_SET_PDEATHSIG). The kernel
  // sends it when the spawning *thread* ends: only for spawns from a thread that lives as
  // long as the process. Not for the benchmark command, which is never ours to stop.
  bool die_with_parent = false;
};

struct Child {
  pid_t pid = -1;
  int stdout_fd = -1;  // with capture_stdout; the caller closes it
};

// Starts the child with default signal dispositions and an empty signal mask (whatever
// this process blocks or ignores). An error when it could not be started (the program not
// found, not executable, ...), and its errno in `error_number`.
Result<Child> spawn_process(const SpawnOptions& options, int* error_number = nullptr);

// Waits for `pid` to exit, up to `timeout` (forever when unset), and reaps it. The raw wait
// status, or nullopt on timeout.
std::optional<int> wait_for_exit(pid_t pid,
                                 std::optional<std::chrono::milliseconds> timeout = std::nullopt);

// Its exit code, or 128 + the signal that killed it (as shells report it).
int exit_code_from_status(int wait_status);
std::string describe_status(int wait_status);  // "exit 3", "killed by SIGKILL"

// SIGTERM, then SIGKILL once `grace` has passed; to the whole group when `group`. Returns
// the wait status (reaped).
int terminate_process(pid_t pid, std::chrono::milliseconds grace, bool group);

struct CaptureResult {
  std::string output;         // stdout
  std::optional<int> status;  // unset when it had to be stopped at the deadline
  std::string error;          // could not be started
};

// Runs argv to completion with stdout captured (its first MiB), stopping it (SIGTERM, then
// SIGKILL after 1 s) at `deadline`. stderr goes to `stderr_path` when given, with `merge_stderr`
// into the captured output, else is inherited.
CaptureResult run_capture(const std::vector<std::string>& argv,
                          std::chrono::steady_clock::time_point deadline,
                          const std::optional<std::string>& stderr_path = std::nullopt,
                          bool merge_stderr = false);

// The port of a readiness line: the exporter's "listening addr=<ip>:<port>" (also
// "[v6]:port"), or `cpu-power sim-gpu`'s "listening on http://<ip>:<port>/metrics";
// nullopt when `text` has none.
std::optional<long> listening_port(const std::string& text);

// The long-lived helpers of one leg (exporters, collectors, srun steps): each started with
// its output to a file and die_with_parent (stopped with the session, even a SIGKILLed
// one), reaped when it ends early, and stopped all at once. `what` begins every log line
// ("CPU power exporter", "dcgm-exporter", "CPU power collector").
class ProcessSet {
 public:
  struct Process {
    std::string name;
    pid_t pid = -1;  // -1: never started, or reaped
    std::string log;
    std::vector<std::string> nodes;  // the nodes it serves
    bool failed = false;             // could not start, or ended before it was asked to stop
  };

  explicit ProcessSet(std::string what) : what_(std::move(what)) {}
  ~ProcessSet() { stop(std::chrono::milliseconds(2000)); }
  ProcessSet(const ProcessSet&) = delete;
  ProcessSet& operator=(const ProcessSet&) = delete;

  // Starts argv with stdout and stderr to `log`. False when it could not start ("<what>
  // launch failed"); either way it is kept, as the last process.
  bool spawn(std::string name, const std::vector<std::string>& argv, std::string log,
             std::vector<std::string> nodes = {});

  // Reaps every process that ended ("<what> exited early"), marking it failed; true when
  // any is still running.
  bool poll();

  // Waits until p's log has a readiness line (listening_port) and
  // returns its port; nullopt at `deadline`, on `give_up`, or when p ends first ("<what>
  // exited at startup", reaped and marked failed).
  std::optional<long> wait_listening(Process& p, std::chrono::steady_clock::time_point deadline,
                                     const std::function<bool()>& give_up);

  // Stops every process still running, all at once (a slow srun teardown must not add up
  // over them), each logged "<what> stopped". With `ask`: that signal to the process alone
  // first, and up to its wait for it to exit; then (or at once) SIGTERM to its group,
  // SIGKILL after `grace`.
  void stop(std::chrono::milliseconds grace,
            std::optional<std::pair<int, std::chrono::milliseconds>> ask = std::nullopt);

  // How many could not start or ended before they were asked to stop.
  std::size_t failed() const;

  std::vector<Process>& processes() { return processes_; }

 private:
  bool reap(Process& p, std::string_view when);

  std::string what_;
  std::vector<Process> processes_;
};

// argv joined for display, each word quoted for a POSIX shell only where needed.
std::string shell_quote_argv(const std::vector<std::string>& argv);

}  // namespace cpupower::launch
