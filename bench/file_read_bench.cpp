// Reading a large file from the page cache, the two ways a loader can: pread into one reused
// 4 MiB buffer (what the CSV scanner does), or mmap and touch every page (with or without
// MAP_POPULATE). Usage: file_read_bench FILE [pread|mmap|mmap-populate]; warm the page cache
// first (cat FILE >/dev/null).
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s FILE [pread|mmap|mmap-populate]\n", argv[0]);
    return 2;
  }
  const std::string mode = argc > 2 ? argv[2] : "pread";
  const int fd = ::open(argv[1], O_RDONLY | O_CLOEXEC);
  struct stat st {};
  if (fd < 0 || ::fstat(fd, &st) != 0) {
    std::perror(argv[1]);
    return 1;
  }
  const auto size = static_cast<std::size_t>(st.st_size);
  const auto t0 = std::chrono::steady_clock::now();
  unsigned long sum = 0;  // one byte per page, so that nothing is optimized away
  if (mode == "pread") {
    std::vector<char> buf(4u << 20);
    for (std::size_t off = 0; off < size; off += buf.size()) {
      const ssize_t n = ::pread(fd, buf.data(), buf.size(), static_cast<off_t>(off));
      if (n <= 0) break;
      for (ssize_t i = 0; i < n; i += 4096) sum += static_cast<unsigned char>(buf[i]);
    }
  } else {
    const int flags = MAP_PRIVATE | (mode == "mmap-populate" ? MAP_POPULATE : 0);
    void* p = ::mmap(nullptr, size, PROT_READ, flags, fd, 0);
    if (p == MAP_FAILED) {
      std::perror("mmap");
      return 1;
    }
    const auto* bytes = static_cast<const unsigned char*>(p);
    for (std::size_t i = 0; i < size; i += 4096) sum += bytes[i];
    ::munmap(p, size);
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("%s: %.3f s for %zu MiB (%lu)\n", mode.c_str(), s, size >> 20, sum);
  ::close(fd);
  return 0;
}
