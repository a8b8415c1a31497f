// What fresh memory costs on this machine, the figure behind report::Doubles' allocation
// policy: MiB/s to map and first-write N MiB (default 512) of anonymous memory four ways.
// On a VM each first touch of a page may trap into the hypervisor, which can make fresh
// memory slower than parsing the file it holds. Usage: memory_commit_bench [MIB]
#include <sys/mman.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

constexpr std::size_t kHuge = 2u << 20;

char* map_aligned(std::size_t bytes, int advice) {
  auto* raw = static_cast<char*>(::mmap(nullptr, bytes + kHuge, PROT_READ | PROT_WRITE,
                                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0));
  if (raw == MAP_FAILED) std::exit(1);
  char* p =
      reinterpret_cast<char*>((reinterpret_cast<std::uintptr_t>(raw) + kHuge - 1) / kHuge * kHuge);
  ::madvise(p, bytes, advice);
  return p;
}

// Maps, optionally commits in 256 KiB batches, then writes every byte; MiB/s of the whole.
double run(std::size_t bytes, int advice, bool batched) {
  const auto t0 = std::chrono::steady_clock::now();
  char* p = map_aligned(bytes, advice);
  if (batched) {
    for (std::size_t off = 0; off < bytes; off += 256u << 10) {
      ::madvise(p + off, 256u << 10, MADV_POPULATE_WRITE);
    }
  }
  std::memset(p, 1, bytes);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ::munmap(p, bytes);
  return static_cast<double>(bytes >> 20) / s;
}

}  // namespace

int main(int argc, char** argv) {
  const std::size_t mib = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 512;
  const std::size_t bytes = mib << 20;
  std::printf("fresh memory, %zu MiB each, MiB/s (map + first write):\n", mib);
  std::printf("  4 KiB pages, one fault per page:        %8.0f\n",
              run(bytes, MADV_NOHUGEPAGE, false));
  std::printf("  4 KiB pages, committed in 256 KiB calls: %8.0f\n",
              run(bytes, MADV_NOHUGEPAGE, true));
  std::printf("  2 MiB transparent huge pages:           %8.0f\n",
              run(bytes, MADV_HUGEPAGE, false));
  std::printf("  2 MiB huge pages, just freed by us:      %8.0f\n",
              run(bytes, MADV_HUGEPAGE, false));
  return 0;
}
