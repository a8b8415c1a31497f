// One CSV number cell parsed two ways: std::from_chars, and the loader's fast path for plain
// decimals of at most 15 digits (artifacts::detail::plain_decimal, Clinger's path), over 10
// million collector-style watts ("108.830"). Both give the same doubles (tests/tools/
// cell_bits checks that on every cell it lists). Usage: number_parse_bench

#include <charconv>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "artifacts/csv.hpp"

int main() {
  std::vector<std::string> cells;
  unsigned state = 12345;
  for (int i = 0; i < 1000; ++i) {
    state = state * 1103515245u + 12345u;
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3f", 95 + (state >> 16) % 20000 / 100.0);
    cells.emplace_back(buf);
  }
  for (int mode = 0; mode < 2; ++mode) {
    double sum = 0;
    const auto t0 = std::chrono::steady_clock::now();
    for (int r = 0; r < 10000; ++r) {
      for (const auto& c : cells) {
        double v = 0;
        if (mode == 0) {
          std::from_chars(c.data(), c.data() + c.size(), v);
        } else {
          cpupower::artifacts::detail::plain_decimal(c, &v);
        }
        sum += v;
      }
    }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("%-32s %.1f ns a cell (checksum %.17g)\n",
                mode == 0 ? "std::from_chars" : "plain_decimal (Clinger's path)", s / 1e7 * 1e9,
                sum);
  }
  return 0;
}
