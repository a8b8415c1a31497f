#pragma once
// A growable array of doubles in its own anonymous memory mapping. A loader that knows an
// upper bound reserves address space once, so the column is written in place and every
// page is zeroed and faulted exactly once; beyond the first 2 MiB the mapping is marked for
// transparent huge pages (one fault per 2 MiB instead of 512 - each fault is a trap into the
// hypervisor on a VM). With std::vector, repeated doubling copied and re-faulted every
// column, which dominated loading a large samples file. Without a reservation, small arrays
// grow by mremap (no copy) and large ones by copying into an aligned huge-page mapping.

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
  void append_fill(std::size_t n, double value);
  void truncate(std::size_t n) { size_ = n < size_ ? n : size_; }
  void reserve(std::size_t n) {
    if (n > capacity_) grow(n);
  }
  // Reserves address space for `n` values without committing memory (MAP_NORESERVE): pages
  // are only faulted in as values are written, and growing within `n` never copies. Only
  // for an empty array; silently does nothing when the mapping is refused.
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
  void grow(std::size_t at_least);
  void swap(Doubles& other) noexcept;

  double* data_ = nullptr;
  std::size_t size_ = 0;
  std::size_t capacity_ = 0;
  // push_back writes up to here without a check; inside a reservation, the pages below it
  // were faulted in ahead in one call (each page fault is a trap into the hypervisor on a
  // VM), so a column costs a few syscalls per 256 KiB instead of 64 faults.
  std::size_t limit_ = 0;
};

}  // namespace cpupower::report
