#pragma once
// A growable array of doubles (or 32-bit integers) in its own anonymous memory mapping, for
// the columns of a large samples file. Memory is committed ahead of the writes in batches (one
// MADV_POPULATE_WRITE call per 256 KiB) instead of one page fault per 4 KiB page. On a VM
// fresh memory can cost more than parsing the text it holds: `memory_commit_bench` measured
// 520 MiB/s batched, 244 MiB/s with one fault per page and 467 MiB/s with fresh transparent
// huge pages (docs/performance.md), and a huge page wastes up to 2 MiB at the end of every
// column, so huge pages are declined. A loader that knows an upper bound reserves address
// space once and the column is written in place; without a reservation the mapping grows by
// mremap, which moves pages instead of copying them.

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace cpupower::report {

template <typename T>
class Mapped {
 public:
  Mapped() = default;
  explicit Mapped(std::span<const T> values) { append(values); }
  Mapped(std::size_t n, T value) { append_fill(n, value); }
  ~Mapped() { release(); }
  Mapped(Mapped&& other) noexcept { swap(other); }
  Mapped& operator=(Mapped&& other) noexcept {
    if (this != &other) {
      release();
      swap(other);
    }
    return *this;
  }
  Mapped(const Mapped& other) : Mapped(std::span<const T>(other.data(), other.size())) {}
  Mapped& operator=(const Mapped& other) {
    if (this != &other) *this = Mapped(other);
    return *this;
  }

  void push_back(T v) {
    if (size_ == limit_) advance();
    data_[size_++] = v;
  }
  void append(std::span<const T> values);
  // Appends all of `from` and empties it, returning its memory block by block as it is
  // copied: the kernel hands the freed pages straight back to this array, so a merge costs
  // almost no fresh memory (on a VM, first-touched memory is what makes loading slow).
  void append_consuming(Mapped& from);
  void append_fill(std::size_t n, T value);
  void truncate(std::size_t n) { size_ = n < size_ ? n : size_; }
  void reserve(std::size_t n) {
    if (n > capacity_) grow(n);
  }
  // Reserves address space for `n` values without committing memory (MAP_NORESERVE): pages
  // are only committed as values are written, and growing within `n` never moves. Only for
  // an empty array; silently does nothing when the mapping is refused.
  void reserve_address_space(std::size_t n);
  void release();  // frees the memory; size becomes 0

  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T* data() { return data_; }
  const T* data() const { return data_; }
  T& operator[](std::size_t i) { return data_[i]; }
  T operator[](std::size_t i) const { return data_[i]; }
  T& back() { return data_[size_ - 1]; }
  T back() const { return data_[size_ - 1]; }
  const T* begin() const { return data_; }
  const T* end() const { return data_ + size_; }
  T* begin() { return data_; }
  T* end() { return data_ + size_; }
  std::vector<T> to_vector() const { return {begin(), end()}; }

 private:
  void advance();
  void commit(std::size_t n);  // makes [0, n) writable without faults, n <= capacity_
  void grow(std::size_t at_least);
  void swap(Mapped& other) noexcept;

  T* data_ = nullptr;
  std::size_t size_ = 0;
  std::size_t capacity_ = 0;
  // push_back writes up to here without a check: the pages below it were committed ahead
  // in one call, so a column costs one syscall per 256 KiB instead of 64 faults.
  std::size_t limit_ = 0;
};

using Doubles = Mapped<double>;
using Int32s = Mapped<std::int32_t>;
extern template class Mapped<double>;
extern template class Mapped<std::int32_t>;

}  // namespace cpupower::report
