// Prints how the report parses each cell of tests/tools/number_cells.hpp: one line per cell
// with the bit pattern of parse_double's double (or "none"), parse_int's value (or "none")
// and the cell itself, escaped. The output must be byte-identical on every architecture;
// make test-arm64 compares the x86 build's output with the arm64 build's, and
// test_csv_python.sh compares it with Python's float() and int(). Exits 1 when the inline
// and the out-of-line parse disagree.

#include <bit>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "artifacts/csv.hpp"
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
    const bool ok = parse_double(cell, &v);
    // Both forms of parse_double must agree to the bit.
    const auto slow = parse_double(std::string_view(cell));
    if (ok != slow.has_value() ||
        (ok && std::bit_cast<std::uint64_t>(v) != std::bit_cast<std::uint64_t>(*slow))) {
      std::fprintf(stderr, "disagreement on '%s'\n", escaped(cell).c_str());
      ++disagreements;
    }
    const auto i = parse_int(cell);
    std::printf("%s %s %s\n", bits(ok, v).c_str(), i ? std::to_string(*i).c_str() : "none",
                escaped(cell).c_str());
  }
  return disagreements == 0 ? 0 : 1;
}
