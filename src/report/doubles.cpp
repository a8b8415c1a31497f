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
constexpr std::size_t kHugePage = 2u << 20;

// Small arrays round to pages, large ones to 2 MiB so they can live in transparent huge
// pages: a page fault per 4 KiB was a fifth of the load time of a large file, far more than
// copying a column when it doubles.
std::size_t bytes_for(std::size_t n) {
  const std::size_t bytes = std::max<std::size_t>(n * sizeof(double), kPage);
  const std::size_t unit = bytes >= kHugePage ? kHugePage : kPage;
  return (bytes + unit - 1) / unit * unit;
}

}  // namespace

void Doubles::advance() {
  if (limit_ >= capacity_) {
    grow(size_ + 1);
    return;
  }
  constexpr std::size_t kStep = (256u << 10) / sizeof(double);
  const std::size_t next = std::min(capacity_, limit_ + kStep);
  // MADV_POPULATE_WRITE (Linux 5.14+) is only a hint here; older kernels fault as usual.
  ::madvise(data_ + limit_, (next - limit_) * sizeof(double), MADV_POPULATE_WRITE);
  limit_ = next;
}

void Doubles::grow(std::size_t at_least) {
  const std::size_t want = std::max(at_least, capacity_ * 2);
  const std::size_t new_bytes = bytes_for(want);
  void* p = nullptr;
  if (new_bytes < kHugePage) {
    p = data_ == nullptr
            ? ::mmap(nullptr, new_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
            : ::mremap(data_, bytes_for(capacity_), new_bytes, MREMAP_MAYMOVE);
    if (p == MAP_FAILED) throw std::bad_alloc();
  } else {
    // Huge pages need 2 MiB alignment: map more, trim the ends, copy the old contents over.
    void* raw = ::mmap(nullptr, new_bytes + kHugePage, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) throw std::bad_alloc();
    const auto base = reinterpret_cast<std::uintptr_t>(raw);
    const std::uintptr_t aligned = (base + kHugePage - 1) / kHugePage * kHugePage;
    if (aligned > base) ::munmap(raw, aligned - base);
    ::munmap(reinterpret_cast<void*>(aligned + new_bytes), base + kHugePage - aligned);
    p = reinterpret_cast<void*>(aligned);
    ::madvise(p, new_bytes, MADV_HUGEPAGE);  // a hint; without THP this is ordinary memory
    if (data_ != nullptr) {
      std::memcpy(p, data_, size_ * sizeof(double));
      ::munmap(data_, bytes_for(capacity_));
    }
  }
  data_ = static_cast<double*>(p);
  capacity_ = new_bytes / sizeof(double);
  limit_ = capacity_;
}

void Doubles::reserve_address_space(std::size_t n) {
  if (data_ != nullptr || n == 0) return;
  const std::size_t bytes =
      (n * sizeof(double) + kHugePage - 1) / kHugePage * kHugePage + kHugePage;
  void* raw = ::mmap(nullptr, bytes + kHugePage, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (raw == MAP_FAILED) return;
  const auto base = reinterpret_cast<std::uintptr_t>(raw);
  const std::uintptr_t aligned = (base + kHugePage - 1) / kHugePage * kHugePage;
  if (aligned > base) ::munmap(raw, aligned - base);
  ::munmap(reinterpret_cast<void*>(aligned + bytes), base + kHugePage - aligned);
  data_ = reinterpret_cast<double*>(aligned);
  capacity_ = bytes / sizeof(double);
  limit_ = 0;  // populated step by step as values arrive
  // Small columns stay in 4 KiB pages; only what grows past 2 MiB gets huge pages.
  ::madvise(reinterpret_cast<char*>(data_) + kHugePage, bytes - kHugePage, MADV_HUGEPAGE);
}

void Doubles::append(std::span<const double> values) {
  if (values.empty()) return;
  reserve(size_ + values.size());
  std::memcpy(data_ + size_, values.data(), values.size() * sizeof(double));
  size_ += values.size();
  limit_ = std::max(limit_, size_);
}

void Doubles::append_fill(std::size_t n, double value) {
  reserve(size_ + n);
  std::fill(data_ + size_, data_ + size_ + n, value);
  size_ += n;
  limit_ = std::max(limit_, size_);
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
