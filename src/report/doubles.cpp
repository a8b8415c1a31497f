#include "report/doubles.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <new>
#include <utility>

namespace cpupower::report {
namespace {

constexpr std::size_t kPage = 4096;
constexpr std::size_t kStep = (256u << 10) / sizeof(double);  // values committed per call

std::size_t bytes_for(std::size_t n) {
  const std::size_t bytes = std::max<std::size_t>(n * sizeof(double), kPage);
  return (bytes + kPage - 1) / kPage * kPage;
}

void* map_bytes(std::size_t bytes, int extra_flags) {
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | extra_flags, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  ::madvise(p, bytes, MADV_NOHUGEPAGE);  // see the header
  return p;
}

}  // namespace

void Doubles::commit(std::size_t n) {
  if (n <= limit_) return;
  // Ahead by as much as is committed already (one page at first, at most kStep): a large
  // column costs one call per 256 KiB, and the many small columns of a block's chunk do
  // not commit 256 KiB each that they never use.
  const std::size_t ahead = std::clamp(limit_, kPage / sizeof(double), kStep);
  const std::size_t next = std::min(capacity_, std::max(n, limit_ + ahead));
  // MADV_POPULATE_WRITE (Linux 5.14+) is only a hint here; older kernels fault as usual.
  // The range starts on the page that holds value limit_.
  const auto first = reinterpret_cast<std::uintptr_t>(data_ + limit_) / kPage * kPage;
  const auto last = reinterpret_cast<std::uintptr_t>(data_ + next);
  ::madvise(reinterpret_cast<void*>(first), last - first, MADV_POPULATE_WRITE);
  limit_ = next;
}

void Doubles::advance() {
  if (size_ >= capacity_) grow(size_ + 1);
  commit(size_ + 1);
}

void Doubles::grow(std::size_t at_least) {
  const std::size_t want = std::max(at_least, capacity_ * 2);
  const std::size_t new_bytes = bytes_for(want);
  void* p = nullptr;
  if (data_ == nullptr) {
    p = map_bytes(new_bytes, 0);
  } else {
    p = ::mremap(data_, bytes_for(capacity_), new_bytes, MREMAP_MAYMOVE);
    if (p == MAP_FAILED) p = nullptr;
  }
  if (p == nullptr) throw std::bad_alloc();
  data_ = static_cast<double*>(p);
  capacity_ = new_bytes / sizeof(double);
  limit_ = std::min(limit_, size_);
}

void Doubles::reserve_address_space(std::size_t n) {
  if (data_ != nullptr || n == 0) return;
  const std::size_t bytes = bytes_for(n);
  void* p = map_bytes(bytes, MAP_NORESERVE);
  if (p == nullptr) return;
  data_ = static_cast<double*>(p);
  capacity_ = bytes / sizeof(double);
  limit_ = 0;  // committed step by step as values arrive
}

void Doubles::append(std::span<const double> values) {
  if (values.empty()) return;
  reserve(size_ + values.size());
  commit(size_ + values.size());
  std::memcpy(data_ + size_, values.data(), values.size() * sizeof(double));
  size_ += values.size();
}

void Doubles::append_consuming(Doubles& from) {
  if (from.empty()) {
    from.release();
    return;
  }
  reserve(size_ + from.size());
  // Copy in blocks and return each copied block at once: the kernel reuses those pages for
  // the next block, so the merge needs almost no fresh memory.
  constexpr std::size_t kBlock = (2u << 20) / sizeof(double);
  for (std::size_t done = 0; done < from.size(); done += kBlock) {
    const std::size_t n = std::min(kBlock, from.size() - done);
    commit(size_ + done + n);
    std::memcpy(data_ + size_ + done, from.data_ + done, n * sizeof(double));
    // Blocks start on page boundaries (mappings are page aligned, blocks are 2 MiB).
    if (n == kBlock) ::madvise(from.data_ + done, kBlock * sizeof(double), MADV_DONTNEED);
  }
  size_ += from.size();
  from.release();
}

void Doubles::append_fill(std::size_t n, double value) {
  if (n == 0) return;
  reserve(size_ + n);
  commit(size_ + n);
  std::fill(data_ + size_, data_ + size_ + n, value);
  size_ += n;
}

void Doubles::release() {
  if (data_ != nullptr) ::munmap(data_, bytes_for(capacity_));
  data_ = nullptr;
  size_ = capacity_ = limit_ = 0;
}

void Doubles::swap(Doubles& other) noexcept {
  std::swap(data_, other.data_);
  std::swap(size_, other.size_);
  std::swap(capacity_, other.capacity_);
  std::swap(limit_, other.limit_);
}

}  // namespace cpupower::report
