#include "launch/process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <utility>

#include "common/log.hpp"
#include "common/text.hpp"

extern char** environ;

namespace cpupower::launch {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// posix_spawn's resources, released on every path.
struct SpawnSetup {
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attr;
  SpawnSetup() {
    posix_spawn_file_actions_init(&actions);
    posix_spawnattr_init(&attr);
  }
  ~SpawnSetup() {
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
  }
};

// The signals every child gets at their default disposition, whatever this process does
// with them.
constexpr int kDefaultSignals[] = {SIGINT,  SIGTERM, SIGCHLD, SIGHUP,
                                   SIGQUIT, SIGPIPE, SIGUSR1, SIGUSR2};

// Where posix_spawnp finds `name`: the name itself when it holds a '/', else the first
// executable file of that name in PATH (glibc's /bin:/usr/bin when PATH is unset; an empty
// entry is the current directory). ENOENT, or EACCES when only unexecutable files matched.
std::optional<std::string> find_program(const std::string& name, int* err) {
  if (name.find('/') != std::string::npos) return name;
  const char* env = std::getenv("PATH");
  const std::string path = env ? env : "/bin:/usr/bin";
  *err = ENOENT;
  std::size_t from = 0;
  while (from <= path.size()) {
    const auto to = std::min(path.find(':', from), path.size());
    const std::string dir = to == from ? "." : path.substr(from, to - from);
    from = to + 1;
    const std::string candidate = dir + "/" + name;
    struct stat st {};
    if (::stat(candidate.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    *err = EACCES;
  }
  return std::nullopt;
}

// The child's standard descriptors, opened here (close-on-exec) so that a failure names the
// file: posix_spawn reports an error in its own file actions as the program's. The child
// dup2s them into place, in this order: stdin, the output file, stdout into the pipe.
struct ChildFds {
  int in = -1;             // /dev/null, for stdin
  int out = -1;            // the output file: stdout and stderr, or stderr alone with a pipe
  int pipe[2] = {-1, -1};  // captured stdout: [0] for the caller, [1] for the child
  ~ChildFds() {
    for (int fd : {in, out, pipe[0], pipe[1]}) {
      if (fd >= 0) ::close(fd);
    }
  }
  int take_read_end() { return std::exchange(pipe[0], -1); }
};

// `fd` moved above the standard descriptors: with one of those closed in this process, a
// new descriptor can be 0, 1 or 2, and the child's dup2 onto itself would keep it
// close-on-exec. -1 (errno set) when it could not be moved.
int above_stdio(int fd) {
  if (fd < 0 || fd > 2) return fd;
  const int moved = ::fcntl(fd, F_DUPFD_CLOEXEC, 3);
  const int err = errno;
  ::close(fd);
  errno = err;
  return moved;
}

// posix_spawn cannot give a child a parent-death signal: fork, ask for it in the child, and
// then take posix_spawn's own steps (process group, signal mask and defaults, descriptors),
// with only async-signal-safe calls between fork and exec. A failure in the child reaches
// the parent as its errno over a close-on-exec pipe, which an exec closes empty.
std::optional<pid_t> fork_exec(const SpawnOptions& o, const ChildFds& fds,
                               const std::string& program, char* const argv[], int* err) {
  int report[2] = {-1, -1};
  if (::pipe2(report, O_CLOEXEC) != 0) {
    *err = errno;
    return std::nullopt;
  }
  sigset_t none;
  sigemptyset(&none);
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  const pid_t parent = ::getpid();

  const pid_t pid = ::fork();
  if (pid == 0) {
    auto die = [&] {
      const int e = errno;
      (void)!::write(report[1], &e, sizeof e);
      ::_exit(127);
    };
    if (o.own_process_group && ::setpgid(0, 0) != 0) die();
    if (::prctl(PR_SET_PDEATHSIG, SIGTERM) != 0) die();
    if (::getppid() != parent) ::_exit(128 + SIGTERM);  // the parent died before the request
    for (int sig : kDefaultSignals) ::sigaction(sig, &dfl, nullptr);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    if (fds.in >= 0 && ::dup2(fds.in, 0) < 0) die();
    if (fds.out >= 0 && ::dup2(fds.out, o.capture_stdout ? 2 : 1) < 0) die();
    if (fds.out >= 0 && !o.capture_stdout && ::dup2(1, 2) < 0) die();
    if (fds.pipe[1] >= 0 && ::dup2(fds.pipe[1], 1) < 0) die();
    if (o.stderr_to_stdout && ::dup2(1, 2) < 0) die();
    ::execve(program.c_str(), argv, environ);
    die();
  }
  *err = errno;
  ::close(report[1]);
  if (pid < 0) {
    ::close(report[0]);
    return std::nullopt;
  }
  int child_errno = 0;
  ssize_t got = 0;
  do {
    got = ::read(report[0], &child_errno, sizeof child_errno);
  } while (got < 0 && errno == EINTR);
  ::close(report[0]);
  if (got != static_cast<ssize_t>(sizeof child_errno)) return pid;  // exec'd
  wait_for_exit(pid);
  *err = child_errno;
  return std::nullopt;
}

}  // namespace

Result<Child> spawn_process(const SpawnOptions& o, int* error_number) {
  auto fail = [&](const std::string& what, int err) -> Result<Child> {
    if (error_number) *error_number = err;
    return Error{what + ": " + std::strerror(err)};
  };
  if (o.argv.empty()) return fail("spawn", EINVAL);
  ChildFds fds;
  if (o.null_stdin) {
    fds.in = above_stdio(::open("/dev/null", O_RDONLY | O_CLOEXEC));
    if (fds.in < 0) return fail("/dev/null", errno);
  }
  if (o.output_path) {
    fds.out =
        above_stdio(::open(o.output_path->c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    if (fds.out < 0) return fail(*o.output_path, errno);
  }
  if (o.capture_stdout) {
    if (::pipe2(fds.pipe, O_CLOEXEC) != 0) return fail("pipe", errno);
    fds.pipe[0] = above_stdio(fds.pipe[0]);
    fds.pipe[1] = above_stdio(fds.pipe[1]);
    if (fds.pipe[0] < 0 || fds.pipe[1] < 0) return fail("pipe", errno);
  }
  std::vector<char*> argv;
  for (const auto& a : o.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);

  if (o.die_with_parent) {
    int err = 0;
    const auto program = find_program(o.argv[0], &err);
    if (!program) return fail(o.argv[0], err);
    const auto pid = fork_exec(o, fds, *program, argv.data(), &err);
    if (!pid) return fail(o.argv[0], err);
    return Child{*pid, fds.take_read_end()};
  }

  SpawnSetup s;
  short flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF;
  if (o.own_process_group) {
    flags |= POSIX_SPAWN_SETPGROUP;
    posix_spawnattr_setpgroup(&s.attr, 0);
  }
  posix_spawnattr_setflags(&s.attr, flags);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&s.attr, &none);
  sigset_t defaults;
  sigemptyset(&defaults);
  for (int sig : kDefaultSignals) sigaddset(&defaults, sig);
  posix_spawnattr_setsigdefault(&s.attr, &defaults);
  if (fds.in >= 0) posix_spawn_file_actions_adddup2(&s.actions, fds.in, 0);
  if (fds.out >= 0) {
    posix_spawn_file_actions_adddup2(&s.actions, fds.out, o.capture_stdout ? 2 : 1);
    if (!o.capture_stdout) posix_spawn_file_actions_adddup2(&s.actions, 1, 2);
  }
  if (fds.pipe[1] >= 0) posix_spawn_file_actions_adddup2(&s.actions, fds.pipe[1], 1);
  if (o.stderr_to_stdout) posix_spawn_file_actions_adddup2(&s.actions, 1, 2);
  pid_t pid = -1;
  const int rc = ::posix_spawnp(&pid, argv[0], &s.actions, &s.attr, argv.data(), environ);
  if (rc != 0) return fail(o.argv[0], rc);
  return Child{pid, fds.take_read_end()};
}

std::optional<int> wait_for_exit(pid_t pid, std::optional<milliseconds> timeout) {
  const auto deadline = timeout ? Clock::now() + *timeout : Clock::time_point::max();
  auto nap = milliseconds(1);
  while (true) {
    int status = 0;
    const pid_t r = ::waitpid(pid, &status, timeout ? WNOHANG : 0);
    if (r == pid) return status;
    if (r < 0 && errno != EINTR) return 0;  // not our child (already reaped): nothing to wait for
    if (r == 0) {
      if (Clock::now() >= deadline) return std::nullopt;
      std::this_thread::sleep_for(nap);
      nap = std::min(nap * 2, milliseconds(20));
    }
  }
}

int exit_code_from_status(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

std::string describe_status(int status) {
  if (WIFEXITED(status)) return "exit " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    const char* name = sigabbrev_np(WTERMSIG(status));
    return std::string("killed by SIG") + (name ? name : std::to_string(WTERMSIG(status)).c_str());
  }
  return "status " + std::to_string(status);
}

int terminate_process(pid_t pid, milliseconds grace, bool group) {
  const pid_t target = group ? -pid : pid;
  ::kill(target, SIGTERM);
  if (const auto status = wait_for_exit(pid, grace)) {
    if (group) ::kill(target, SIGKILL);  // whatever it started and left behind
    return *status;
  }
  ::kill(target, SIGKILL);
  return wait_for_exit(pid).value_or(0);
}

CaptureResult run_capture(const std::vector<std::string>& argv, Clock::time_point deadline,
                          const std::optional<std::string>& stderr_path, bool merge_stderr) {
  CaptureResult result;
  SpawnOptions o;
  o.argv = argv;
  o.capture_stdout = true;
  o.output_path = stderr_path;
  o.stderr_to_stdout = merge_stderr;
  auto child = spawn_process(o);
  if (!child) {
    result.error = child.error();
    return result;
  }
  char buf[4096];
  bool open = true;
  while (open) {
    const auto left = std::chrono::ceil<milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) break;
    pollfd p{child->stdout_fd, POLLIN, 0};
    const int n = ::poll(&p, 1, static_cast<int>(std::min<long long>(left, 1000)));
    if (n < 0 && errno != EINTR) break;
    if (n <= 0) continue;
    const ssize_t got = ::read(child->stdout_fd, buf, sizeof buf);
    if (got > 0) {
      // The first MiB is kept; the rest is read and dropped so that the child never blocks.
      constexpr std::size_t kMaxOutput = 1 << 20;
      if (result.output.size() < kMaxOutput) {
        result.output.append(
            buf, std::min(static_cast<std::size_t>(got), kMaxOutput - result.output.size()));
      }
    } else if (got == 0 || errno != EINTR) {
      open = false;
    }
  }
  ::close(child->stdout_fd);
  if (open) {  // the deadline came first
    terminate_process(child->pid, milliseconds(1000), true);
    return result;
  }
  const auto left = std::chrono::ceil<milliseconds>(deadline - Clock::now());
  result.status = wait_for_exit(child->pid, std::max(left, milliseconds(0)));
  if (!result.status) terminate_process(child->pid, milliseconds(1000), true);
  return result;
}

// The digits after the address's last colon.
std::optional<long> listening_port(const std::string& text) {
  // The exporter's "listening addr=<ip>:<port>"; sim-gpu's "listening on http://<ip>:<port>/".
  std::size_t begin = std::string::npos;
  for (const std::string_view key : {"listening addr=", "listening on http://"}) {
    if (const auto at = text.find(key); at != std::string::npos) {
      begin = at + key.size();
      break;
    }
  }
  if (begin == std::string::npos) return std::nullopt;
  const std::string_view addr =
      std::string_view(text).substr(begin, text.find_first_of(" /\t\r\n", begin) - begin);
  const auto colon = addr.rfind(':');
  if (colon == std::string_view::npos) return std::nullopt;
  const std::string_view rest = addr.substr(colon + 1);
  const auto digits = rest.substr(0, rest.find_first_not_of("0123456789"));
  const auto port = common::parse_u64(std::string(digits));
  return port ? std::optional<long>(static_cast<long>(*port)) : std::nullopt;
}

bool ProcessSet::spawn(std::string name, const std::vector<std::string>& argv, std::string log,
                       std::vector<std::string> nodes) {
  SpawnOptions o;
  o.argv = argv;
  o.output_path = log;
  o.die_with_parent = true;
  const auto child = spawn_process(o);
  if (!child) {
    launch::log()->warn("{} launch failed name={} error={}", what_, name,
                        common::quoted(child.error()));
  }
  processes_.push_back(
      {std::move(name), child ? child->pid : -1, std::move(log), std::move(nodes), !child});
  return child.ok();
}

bool ProcessSet::reap(Process& p, std::string_view when) {
  int status = 0;
  if (p.pid <= 0 || ::waitpid(p.pid, &status, WNOHANG) != p.pid) return false;
  log()->warn("{} exited {} name={} status={} log={}", what_, when, p.name, describe_status(status),
              p.log);
  p.pid = -1;
  p.failed = true;
  return true;
}

bool ProcessSet::poll() {
  bool running = false;
  for (auto& p : processes_) running = (!reap(p, "early") && p.pid > 0) || running;
  return running;
}

std::size_t ProcessSet::failed() const {
  return static_cast<std::size_t>(std::count_if(processes_.begin(), processes_.end(),
                                                [](const Process& p) { return p.failed; }));
}

std::optional<long> ProcessSet::wait_listening(Process& p, Clock::time_point deadline,
                                               const std::function<bool()>& give_up) {
  while (p.pid > 0 && Clock::now() < deadline && !(give_up && give_up())) {
    if (const auto text = common::read_file_prefix(p.log, 1 << 20)) {
      if (const auto port = listening_port(*text)) return port;
    }
    if (reap(p, "at startup")) return std::nullopt;
    std::this_thread::sleep_for(milliseconds(20));
  }
  return std::nullopt;
}

void ProcessSet::stop(milliseconds grace, std::optional<std::pair<int, milliseconds>> ask) {
  std::vector<std::thread> stoppers;
  for (auto& p : processes_) {
    if (p.pid <= 0) continue;
    stoppers.emplace_back([&p, grace, ask, this] {
      std::optional<int> status;
      if (ask) {
        ::kill(p.pid, ask->first);
        status = wait_for_exit(p.pid, ask->second);
      }
      if (!status) status = terminate_process(p.pid, grace, true);
      log()->info("{} stopped name={} status={}", what_, p.name, describe_status(*status));
      p.pid = -1;
    });
  }
  for (auto& t : stoppers) t.join();
}

bool written(const std::string& path, const Status& status) {
  if (!status) log()->warn("cannot write {} error={}", path, common::quoted(status.error()));
  return status.ok();
}

std::string shell_quote_argv(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& a : argv) {
    if (!out.empty()) out += ' ';
    const bool plain = !a.empty() && a.find_first_not_of(
                                         "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                         "0123456789_-./=:,+%@") == std::string::npos;
    if (plain) {
      out += a;
      continue;
    }
    out += '\'';
    for (char c : a) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    out += '\'';
  }
  return out;
}

}  // namespace cpupower::launch
