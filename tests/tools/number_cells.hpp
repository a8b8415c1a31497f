#pragma once
// A fixed list of CSV number cells for holding the report's number parsing to the same doubles
// on every architecture: the cells the collectors write (17-digit time.time() stamps, watts
// with many decimals), the ones Python's float() also takes (exponents, blanks, inf, nan,
// signs), the halfway cases that decide between the fast and the long paths, and cells that
// are not numbers. The generated part uses integer arithmetic only (a fixed 64-bit LCG), so
// every build makes the same list. Each draw is its own statement: the order in which the
// operands of one expression are evaluated is unspecified, and GCC picks differently on x86-64
// and aarch64. Used by tests/tools/cell_bits.cpp and the unit tests.

#include <cstdint>
#include <string>
#include <vector>

namespace cpupower::testcells {

inline std::vector<std::string> number_cells() {
  std::vector<std::string> cells = {
      // collector output and the spellings seen in the field
      "1788310143.461",
      "1789416029.2655346",
      "1789416029.26553464",
      "1700000000.0000001",
      "94.29",
      "49.023",
      "5.1",
      "189.002",
      "0",
      "0.0",
      "-0.0",
      "00012.5",
      "1.",
      ".5",
      "-.5",
      "123456789012345678",
      "1234567890123456789",
      "12345678901234567890",
      "9007199254740992",
      "9007199254740993",
      "9007199254740993.0",
      "900719925474099.35",
      "0.1",
      "0.2",
      "0.3",
      "0.30000000000000004",
      "2.2250738585072014e-308",
      "4.9e-324",
      "1e-400",
      "1.7976931348623157e308",
      "1e309",
      "-1e309",
      "1e-05",
      "1E5",
      "1e+05",
      "6.02214076e23",
      "-2.5e-3",
      " 94.29 ",
      "\t7\t",
      "+7",
      "+7.25",
      "-7.25",
      "++7",
      "+-7",
      "-",
      "+",
      ".",
      "",
      " ",
      "inf",
      "-inf",
      "Infinity",
      "nan",
      "NaN",
      "-nan",
      "12abc",
      "1,5",
      "0x10",
      "1e",
      "1e+",
      "--1",
      "1..2",
      "١٢",
      "1_000",
      // halfway between two doubles: the x87 path must send these the long way
      "9007199254740993",
      "9007199254740995",
      "18014398509481990",
      "18014398509481986",
      "1.8014398509481985",
      "180143985094819850",
      "4503599627370497.5",
      "1152921504606846977",
      "11529215046068469770",
      "1152921504606846.977",
  };
  // Generated: timestamps with 1 to 9 decimals, watts with 1 to 17 significant decimals,
  // mantissas near 2^53 and up to 19 digits, and exponent forms.
  std::uint64_t state = 0x9E3779B97F4A7C15ULL;
  const auto next = [&state]() {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return state >> 11;
  };
  const auto digits = [&](int n) {
    std::string s;
    for (int i = 0; i < n; ++i) s += static_cast<char>('0' + next() % 10);
    return s;
  };
  for (int i = 0; i < 4000; ++i) {
    const int decimals = 1 + static_cast<int>(next() % 9);
    const std::string int_part = digits(8);
    cells.push_back("17" + int_part + "." + digits(decimals));
  }
  for (int i = 0; i < 4000; ++i) {
    const int int_digits = 1 + static_cast<int>(next() % 4);
    const int frac_digits = 1 + static_cast<int>(next() % 17);
    const bool negative = next() % 5 == 0;
    const std::string int_part = digits(int_digits);
    cells.push_back((negative ? "-" : "") + int_part + "." + digits(frac_digits));
  }
  for (int i = 0; i < 4000; ++i) {
    // 16 to 19 digits with the point anywhere: mantissas above 2^53, the x87 path's range.
    const int n = 16 + static_cast<int>(next() % 4);
    std::string s = digits(n);
    if (s[0] == '0') s[0] = '1';
    const auto point = static_cast<std::size_t>(next() % static_cast<std::uint64_t>(n));
    if (point > 0) s.insert(point, ".");
    cells.push_back(s);
  }
  for (int i = 0; i < 2000; ++i) {
    const int exp = static_cast<int>(next() % 80) - 40;
    const std::string lead = digits(1);
    const int frac_digits = 1 + static_cast<int>(next() % 16);
    cells.push_back(lead + "." + digits(frac_digits) + "e" + std::to_string(exp));
  }
  return cells;
}

}  // namespace cpupower::testcells
