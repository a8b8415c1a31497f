#pragma once
// Shared by the fuzz targets: a check that fails the input (libFuzzer reports a crash, the
// replay test fails), scratch files for the readers that only take a path, and a loopback
// client for the targets that run a server.

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>

#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>

// A property of the product that must hold for every input: FUZZ_CHECK(cond) or
// FUZZ_CHECK(cond, "printf format", args...).
#define FUZZ_CHECK(cond, ...) \
  ((cond) ? void() : ::cpupower::fuzz::fail(__FILE__, __LINE__, #cond __VA_OPT__(, ) __VA_ARGS__))

namespace cpupower::fuzz {

[[noreturn]] inline void fail(const char* file, int line, const char* cond) {
  std::fprintf(stderr, "%s:%d: FUZZ_CHECK(%s) failed\n", file, line, cond);
  std::abort();
}

[[noreturn]] __attribute__((format(printf, 4, 5))) inline void fail(const char* file, int line,
                                                                    const char* cond,
                                                                    const char* format, ...) {
  std::fprintf(stderr, "%s:%d: FUZZ_CHECK(%s) failed: ", file, line, cond);
  va_list args;
  va_start(args, format);
  std::vfprintf(stderr, format, args);
  va_end(args);
  std::fprintf(stderr, "\n");
  std::abort();
}

// FUZZ_VERBOSE=1 in the environment: the targets say what they made of each input, for
// checking that a seed reaches as deep as it was meant to.
inline bool verbose() {
  static const bool on = std::getenv("FUZZ_VERBOSE") != nullptr;
  return on;
}

inline std::string_view as_text(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// A directory of this process's own under $TMPDIR (or /tmp), made on first use and removed at
// exit. A crashed run leaves it behind; its name says which process made it.
inline const std::string& scratch_dir() {
  // Never destroyed: the exit handler that removes the directory runs after static
  // destructors registered later.
  static const std::string* const dir = [] {
    const char* tmp = std::getenv("TMPDIR");
    auto* d = new std::string(std::string(tmp && *tmp ? tmp : "/tmp") + "/cpupower-fuzz-" +
                              std::to_string(::getpid()));
    std::filesystem::create_directories(*d);
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(scratch_dir(), ec);
    });
    return d;
  }();
  return *dir;
}

// Writes `content` to `path` (replacing it), creating its directory; aborts on failure, since
// a target that cannot write its input tests nothing.
inline void write_file(const std::string& path, std::string_view content) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  FUZZ_CHECK(fd >= 0, "cannot create %s", path.c_str());
  std::size_t done = 0;
  while (done < content.size()) {
    const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    FUZZ_CHECK(n > 0, "cannot write %s", path.c_str());
    done += static_cast<std::size_t>(n);
  }
  ::close(fd);
}

inline void remove_file(const std::string& path) {
  ::unlink(path.c_str());
}

// A target's in-process server (a type with a stop() that ends every thread it started: the
// HTTP server's and any other, such as the exporter service's socket watch), made at the first
// input and never destroyed. Its threads run until exit, which stops them first: an atexit
// handler registered after the static objects they use (the log registry, made by the
// server's constructor) runs before those objects are destroyed, so no thread of it ever
// touches one that is gone.
template <class Server>
Server& server_instance() {
  static Server* const server = [] {
    auto* made = new Server;
    std::atexit([] { server_instance<Server>().stop(); });
    return made;
  }();
  return *server;
}

// The loopback client. libFuzzer's -timeout runs a SIGALRM handler without SA_RESTART every
// few seconds, so any of these calls may return EINTR mid-input: each carries on instead, since
// an interrupted call says nothing about the server.

// A TCP connection to 127.0.0.1:port; fails the input when the server refuses it.
inline int connect_loopback(std::uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  FUZZ_CHECK(fd >= 0, "socket: %d", errno);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0) {
    // An interrupted connect goes on in the background (connect(2)): its outcome is the
    // socket's error once it is writable.
    FUZZ_CHECK(errno == EINTR, "the server no longer accepts connections: errno %d", errno);
    pollfd p{fd, POLLOUT, 0};
    while (::poll(&p, 1, -1) < 0) FUZZ_CHECK(errno == EINTR, "poll: errno %d", errno);
    int err = 0;
    socklen_t len = sizeof err;
    FUZZ_CHECK(::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0,
               "the server no longer accepts connections: errno %d", err);
  }
  return fd;
}

// Sends all of `bytes`, or as much as the server takes before it closes.
inline void send_all(int fd, std::string_view bytes) {
  std::size_t sent = 0;
  while (sent < bytes.size()) {
    const ssize_t n = ::send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    sent += static_cast<std::size_t>(n);
  }
}

// Whether `fd` has something to read (data or the end) within `ms` milliseconds.
inline bool readable_within(int fd, std::chrono::milliseconds ms) {
  const auto deadline = std::chrono::steady_clock::now() + ms;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    pollfd p{fd, POLLIN, 0};
    const int rc = ::poll(&p, 1, static_cast<int>(std::max<long>(left.count(), 0)));
    if (rc >= 0) return rc > 0;
    FUZZ_CHECK(errno == EINTR, "poll: errno %d", errno);
  }
}

// recv(2), again when interrupted.
inline ssize_t receive(int fd, char* buf, std::size_t size) {
  ssize_t n;
  do {
    n = ::recv(fd, buf, size, 0);
  } while (n < 0 && errno == EINTR);
  return n;
}

// Closes with a reset: no TIME_WAIT left behind, so a long run never runs out of ports.
inline void reset_close(int fd) {
  const linger reset{1, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
  ::close(fd);
}

}  // namespace cpupower::fuzz
