#include "report/doubles.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <new>
#include <utility>

namespace cpupower::report {
namespace {

// The kernel's page size, asked once: 4 KiB on x86-64, 4 KiB or 64 KiB on aarch64 (Grace
// nodes often run 64 KiB kernels). madvise needs a page-aligned start: a range rounded to
// 4 KiB on a 64 KiB kernel is refused with EINVAL, and every page would fault one by one.
std::size_t page_bytes() {
  static const std::size_t page = [] {
    const long n = ::sysconf(_SC_PAGESIZE);
    return n > 0 ? static_cast<std::size_t>(n) : std::size_t{4096};
  }();
  return page;
}
constexpr std::size_t kStepBytes = 256u << 10;  // committed per call at most

template <typename T>
std::size_t bytes_for(std::size_t n) {
  const std::size_t page = page_bytes();
  const std::size_t bytes = std::max<std::size_t>(n * sizeof(T), page);
  return (bytes + page - 1) / page * page;
}

void* map_bytes(std::size_t bytes, int extra_flags) {
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | extra_flags, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  ::madvise(p, bytes, MADV_NOHUGEPAGE);  // see the header
  return p;
}

}  // namespace

template <typename T>
void Mapped<T>::commit(std::size_t n) {
  if (n <= limit_) return;
  // Ahead by as much as is committed already (one page at first, at most kStepBytes or one
  // page where pages are larger): a large column costs one call per 256 KiB, and the many
  // small columns of a block's chunk do not commit 256 KiB each that they never use.
  const std::size_t page = page_bytes();
  const std::size_t ahead =
      std::clamp(limit_, page / sizeof(T), std::max(kStepBytes, page) / sizeof(T));
  const std::size_t next = std::min(capacity_, std::max(n, limit_ + ahead));
  // MADV_POPULATE_WRITE (Linux 5.14+) is only a hint here; older kernels fault as usual.
  // The range starts on the page that holds value limit_.
  const auto first = reinterpret_cast<std::uintptr_t>(data_ + limit_) / page * page;
  const auto last = reinterpret_cast<std::uintptr_t>(data_ + next);
  ::madvise(reinterpret_cast<void*>(first), last - first, MADV_POPULATE_WRITE);
  limit_ = next;
}

template <typename T>
void Mapped<T>::advance() {
  if (size_ >= capacity_) grow(size_ + 1);
  commit(size_ + 1);
}

template <typename T>
void Mapped<T>::grow(std::size_t at_least) {
  const std::size_t want = std::max(at_least, capacity_ * 2);
  const std::size_t new_bytes = bytes_for<T>(want);
  void* p = nullptr;
  if (data_ == nullptr) {
    p = map_bytes(new_bytes, 0);
  } else {
    p = ::mremap(data_, bytes_for<T>(capacity_), new_bytes, MREMAP_MAYMOVE);
    if (p == MAP_FAILED) p = nullptr;
  }
  if (p == nullptr) throw std::bad_alloc();
  data_ = static_cast<T*>(p);
  capacity_ = new_bytes / sizeof(T);
  limit_ = std::min(limit_, size_);
}

template <typename T>
void Mapped<T>::reserve_address_space(std::size_t n) {
  if (data_ != nullptr || n == 0) return;
  const std::size_t bytes = bytes_for<T>(n);
  void* p = map_bytes(bytes, MAP_NORESERVE);
  if (p == nullptr) return;
  data_ = static_cast<T*>(p);
  capacity_ = bytes / sizeof(T);
  limit_ = 0;  // committed step by step as values arrive
}

template <typename T>
void Mapped<T>::append(std::span<const T> values) {
  if (values.empty()) return;
  reserve(size_ + values.size());
  commit(size_ + values.size());
  std::memcpy(data_ + size_, values.data(), values.size() * sizeof(T));
  size_ += values.size();
}

template <typename T>
void Mapped<T>::append_consuming(Mapped& from) {
  if (from.empty()) {
    from.release();
    return;
  }
  reserve(size_ + from.size());
  // Copy in blocks and return each copied block at once: the kernel reuses those pages for
  // the next block, so the merge needs almost no fresh memory.
  constexpr std::size_t kBlock = (2u << 20) / sizeof(T);
  for (std::size_t done = 0; done < from.size(); done += kBlock) {
    const std::size_t n = std::min(kBlock, from.size() - done);
    commit(size_ + done + n);
    std::memcpy(data_ + size_ + done, from.data_ + done, n * sizeof(T));
    // Blocks start on page boundaries (mappings are page aligned, blocks are 2 MiB).
    if (n == kBlock) ::madvise(from.data_ + done, kBlock * sizeof(T), MADV_DONTNEED);
  }
  size_ += from.size();
  from.release();
}

template <typename T>
void Mapped<T>::append_fill(std::size_t n, T value) {
  if (n == 0) return;
  reserve(size_ + n);
  commit(size_ + n);
  std::fill(data_ + size_, data_ + size_ + n, value);
  size_ += n;
}

template <typename T>
void Mapped<T>::release() {
  if (data_ != nullptr) ::munmap(data_, bytes_for<T>(capacity_));
  data_ = nullptr;
  size_ = capacity_ = limit_ = 0;
}

template <typename T>
void Mapped<T>::swap(Mapped& other) noexcept {
  std::swap(data_, other.data_);
  std::swap(size_, other.size_);
  std::swap(capacity_, other.capacity_);
  std::swap(limit_, other.limit_);
}

template class Mapped<double>;
template class Mapped<std::int32_t>;

}  // namespace cpupower::report
