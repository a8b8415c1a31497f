// Prints how the report parses each cell of tests/tools/number_cells.hpp: one line per cell
// with the bit pattern of parse_number's double (or "none"), parse_cell_int's value (or
// "none") and the cell itself, escaped. The output must be byte-identical on every
// architecture; make test-arm64 compares the x86 build's output with the arm64 build's.
// Exits 1 when this build's own paths disagree (the fast path against the portable one, or
// either against std::from_chars, which rounds correctly).

#include <bit>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "artifacts/csv_stream.hpp"
#include "number_cells.hpp"

namespace {

std::string escaped(std::string_view s) {
  std::string out;
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u >= 0x7F || c == '\\') {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", u);
      out += buf;
    } else {
      out += c;
    }
  }
  return out;
}

std::string bits(bool ok, double v) {
  if (!ok) return "none";
  char buf[24];
  std::snprintf(buf, sizeof buf, "%016llx",
                static_cast<unsigned long long>(std::bit_cast<std::uint64_t>(v)));
  return buf;
}

}  // namespace

int main() {
  using namespace cpupower::artifacts;
  int disagreements = 0;
  for (const std::string& cell : cpupower::testcells::number_cells()) {
    double v = 0;
    const bool ok = parse_number(cell, &v);
    // The fast decimal path, both ways, against from_chars where it claims an exact result.
    for (const bool extended : {false, true}) {
      double fast = 0;
      const auto kind = extended ? detail::fast_decimal_with<true>(cell, &fast)
                                 : detail::fast_decimal_with<false>(cell, &fast);
      if (kind != detail::Decimal::exact) continue;
      std::string_view digits = cell;
      if (!digits.empty() && digits.front() == '+') digits.remove_prefix(1);
      double want = 0;
      std::from_chars(digits.data(), digits.data() + digits.size(), want);
      if (!ok || std::bit_cast<std::uint64_t>(fast) != std::bit_cast<std::uint64_t>(want) ||
          std::bit_cast<std::uint64_t>(v) != std::bit_cast<std::uint64_t>(want)) {
        std::fprintf(stderr, "disagreement on '%s': %s fast path %s, from_chars %s\n",
                     escaped(cell).c_str(), extended ? "extended" : "portable",
                     bits(true, fast).c_str(), bits(true, want).c_str());
        ++disagreements;
      }
    }
    const auto i = parse_cell_int(cell);
    std::printf("%s %s %s\n", bits(ok, v).c_str(), i ? std::to_string(*i).c_str() : "none",
                escaped(cell).c_str());
  }
  return disagreements == 0 ? 0 : 1;
}
