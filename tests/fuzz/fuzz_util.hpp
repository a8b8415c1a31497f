#pragma once
// Shared by the fuzz targets: a check that fails the input (libFuzzer reports a crash, the
// replay test fails), and scratch files for the readers that only take a path.

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

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

}  // namespace cpupower::fuzz
