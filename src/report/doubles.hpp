#pragma once
// A growable array of doubles in its own anonymous memory mapping, for the columns of a
// large samples file. Memory is committed ahead of the writes in batches (one
// MADV_POPULATE_WRITE call per 256 KiB) instead of one page fault per 4 KiB page. On a VM
// fresh memory can cost more than parsing the text it holds: `memory_commit_bench` measured
// 520 MiB/s batched, 244 MiB/s with one fault per page and 467 MiB/s with fresh transparent
// huge pages (docs/performance.md), and a huge page wastes up to 2 MiB at the end of every
// column, so huge pages are declined. A loader that knows an upper bound reserves address
// space once and the column is written in place; without a reservation the mapping grows by
// mremap, which moves pages instead of copying them.

#include <cstddef>
#include <span>
#include <vector>

namespace cpupower::report {

class Doubles {
 public:
  Doubles() = default;
  explicit Doubles(std::span<const double> values) { append(values); }
  Doubles(std::size_t n, double value) { append_fill(n, value); }
  ~Doubles() { release(); }
  Doubles(Doubles&& other) noexcept { swap(other); }
  Doubles& operator=(Doubles&& other) noexcept {
    if (this != &other) {
      release();
      swap(other);
    }
    return *this;
  }
  Doubles(const Doubles& other) : Doubles(std::span<const double>(other.data(), other.size())) {}
  Doubles& operator=(const Doubles& other) {
    if (this != &other) *this = Doubles(other);
    return *this;
  }

  void push_back(double v) {
    if (size_ == limit_) advance();
    data_[size_++] = v;
  }
  void append(std::span<const double> values);
  // Appends all of `from` and empties it, returning its memory block by block as it is
  // copied: the kernel hands the freed pages straight back to this array, so a merge costs
  // almost no fresh memory (on a VM, first-touched memory is what makes loading slow).
  void append_consuming(Doubles& from);
  void append_fill(std::size_t n, double value);
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
  double* data() { return data_; }
  const double* data() const { return data_; }
  double& operator[](std::size_t i) { return data_[i]; }
  double operator[](std::size_t i) const { return data_[i]; }
  double& back() { return data_[size_ - 1]; }
  double back() const { return data_[size_ - 1]; }
  const double* begin() const { return data_; }
  const double* end() const { return data_ + size_; }
  double* begin() { return data_; }
  double* end() { return data_ + size_; }
  std::vector<double> to_vector() const { return {begin(), end()}; }

 private:
  void advance();
  void commit(std::size_t n);  // makes [0, n) writable without faults, n <= capacity_
  void grow(std::size_t at_least);
  void swap(Doubles& other) noexcept;

  double* data_ = nullptr;
  std::size_t size_ = 0;
  std::size_t capacity_ = 0;
  // push_back writes up to here without a check: the pages below it were committed ahead
  // in one call, so a column costs one syscall per 256 KiB instead of 64 faults.
  std::size_t limit_ = 0;
};

}  // namespace cpupower::report
