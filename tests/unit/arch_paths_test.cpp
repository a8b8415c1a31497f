// Every architecture-specific path beside its portable twin, held to the same answers: the
// CSV record scan (SSE2 on x86, the portable SWAR scan everywhere), the plain-decimal parse
// (x87 extended precision on x86, the portable long way everywhere), and the report's column
// memory at the page size of the running kernel (4 KiB on x86, 4 or 64 KiB on Grace). On x86
// both paths run; on aarch64 the portable ones run under both names, so the same test holds.

#include <gtest/gtest.h>
#include <unistd.h>

#include <bit>
#include <charconv>
#include <cstdint>
#include <string>
#include <vector>

#include "../tools/number_cells.hpp"
#include "artifacts/csv_stream.hpp"
#include "report/doubles.hpp"

namespace cpupower {
namespace {

using artifacts::detail::Decimal;

std::uint64_t bits_of(double v) {
  return std::bit_cast<std::uint64_t>(v);
}

// The correctly rounded double of a plain decimal cell ('+' allowed), by std::from_chars.
double reference(std::string_view cell) {
  if (!cell.empty() && cell.front() == '+') cell.remove_prefix(1);
  double v = 0;
  const auto [end, ec] = std::from_chars(cell.data(), cell.data() + cell.size(), v);
  EXPECT_EQ(ec, std::errc()) << cell;
  EXPECT_EQ(end, cell.data() + cell.size()) << cell;
  return v;
}

TEST(ArchPaths, FastDecimalBothWaysMatchFromChars) {
  std::size_t exact_extended = 0;
  std::size_t exact_portable = 0;
  for (const std::string& cell : testcells::number_cells()) {
    double portable = 0;
    double extended = 0;
    const Decimal p = artifacts::detail::fast_decimal_with<false>(cell, &portable);
    const Decimal e = artifacts::detail::fast_decimal_with<true>(cell, &extended);
    if (p == Decimal::exact) {
      ++exact_portable;
      EXPECT_EQ(bits_of(portable), bits_of(reference(cell))) << cell;
    }
    if (e == Decimal::exact) {
      ++exact_extended;
      EXPECT_EQ(bits_of(extended), bits_of(reference(cell))) << cell;
    }
    // The portable path only ever declines more; it never answers differently.
    if (p == Decimal::exact) {
      EXPECT_EQ(e, Decimal::exact) << cell;
    }
    if (e != Decimal::exact) {
      EXPECT_EQ(p, e) << cell;
    }
    double parsed = 0;
    if (p == Decimal::exact || e == Decimal::exact) {
      ASSERT_TRUE(artifacts::parse_number(cell, &parsed)) << cell;
      EXPECT_EQ(bits_of(parsed), bits_of(reference(cell))) << cell;
    }
  }
  EXPECT_GT(exact_portable, 4000u);
  if (artifacts::detail::kExtendedPrecisionPath) {
    EXPECT_GT(exact_extended, exact_portable + 3000) << "the x87 path took too few cells";
  } else {
    EXPECT_EQ(exact_extended, exact_portable);
  }
}

TEST(ArchPaths, HalfwayQuotientsGoTheLongWay) {
  // 2^53 + 1 sits exactly halfway between two doubles: ties to even gives 2^53.
  double v = 0;
  EXPECT_NE(artifacts::detail::fast_decimal_with<true>("9007199254740993", &v), Decimal::exact);
  ASSERT_TRUE(artifacts::parse_number("9007199254740993", &v));
  EXPECT_EQ(v, 9007199254740992.0);
  ASSERT_TRUE(artifacts::parse_number("9007199254740995", &v));
  EXPECT_EQ(v, 9007199254740996.0);
}

// Random CSV text with every case the splitter knows: quotes, doubled quotes, quoted line
// breaks, CR LF, blank lines, a missing final line end, long and empty cells.
std::string random_csv(std::uint64_t seed) {
  std::uint64_t state = seed;
  const auto next = [&state]() {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return state >> 33;
  };
  static const char* const kPieces[] = {
      "1789416029.2655346",         "94.29",          "",     "node-a",    "\"quoted, cell\"",
      "\"a \"\"b\"\" c\"",          "\"two\nlines\"", "x\"y", "acpi",      "CPU Power Socket 0",
      "0123456789abcdef0123456789", "\"\"",           " ",    "\"tail\"x", "\xc3\xa9t\xc3\xa9"};
  std::string text;
  const std::size_t records = 1 + next() % 40;
  for (std::size_t r = 0; r < records; ++r) {
    const std::size_t cells = next() % 14;
    for (std::size_t c = 0; c < cells; ++c) {
      if (c > 0) text += ',';
      text += kPieces[next() % std::size(kPieces)];
    }
    const auto end = next() % 6;
    if (end == 0) text += "\r\n";
    if (end == 1) text += "\n\n";
    if (end >= 2) text += "\n";
  }
  if (next() % 3 == 0 && !text.empty()) text.pop_back();
  return text;
}

TEST(ArchPaths, VectorAndPortableRecordScansAgree) {
  for (std::uint64_t seed = 1; seed <= 3000; ++seed) {
    const std::string text = random_csv(seed);
    ASSERT_EQ(artifacts::detail::split_records(text, true),
              artifacts::detail::split_records(text, false))
        << "seed " << seed << ":\n"
        << text;
  }
}

TEST(ArchPaths, RecordScanKnownAnswer) {
  const std::string text =
      "a,b,\"c,d\"\r\n"
      "\"e\"\"f\",,\"g\nh\"\n"
      "\n"
      "0123456789,0123456789,0123456789,0123456789\n"
      "last";
  const std::vector<std::vector<std::string>> want = {
      {"a", "b", "c,d"},
      {"e\"f", "", "g\nh"},
      {""},
      {"0123456789", "0123456789", "0123456789", "0123456789"},
      {"last"}};
  EXPECT_EQ(artifacts::detail::split_records(text, true), want);
  EXPECT_EQ(artifacts::detail::split_records(text, false), want);
}

TEST(ArchPaths, QuotedRecordWithManyShortCellsKeepsThem) {
  // A quoted record's cells are copied into pooled strings; the pool growing while the
  // record is split must not move the cells already split (short strings live inside the
  // string object).
  std::string text = "\"q\"";
  std::vector<std::string> want = {"q"};
  for (int i = 0; i < 60; ++i) {
    text += "," + std::to_string(i);
    want.push_back(std::to_string(i));
  }
  text += "\n";
  for (const bool vector_path : {true, false}) {
    const auto records = artifacts::detail::split_records(text, vector_path);
    ASSERT_EQ(records.size(), 1u);
    EXPECT_EQ(records[0], want);
  }
  std::vector<std::string> seen;
  artifacts::scan_csv_text(
      "h\n" + text, [](const std::vector<std::string>&) { return true; },
      [&](std::size_t, const artifacts::CsvRecord& r) {
        seen.assign(r.cells.begin(), r.cells.end());
      });
  EXPECT_EQ(seen, want);
}

TEST(ArchPaths, MappedColumnsAtThisKernelsPageSize) {
  // A column grows across many pages of whatever size the kernel uses, is merged block by
  // block, and keeps every value.
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  ASSERT_GE(page, 4096u);
  report::Doubles a;
  report::Doubles b;
  const std::size_t n = 3 * (2u << 20) / sizeof(double) + page / 3;
  for (std::size_t i = 0; i < n; ++i) a.push_back(static_cast<double>(i));
  b.reserve_address_space(2 * n);
  for (std::size_t i = 0; i < n; ++i) b.push_back(-static_cast<double>(i));
  b.append_consuming(a);
  ASSERT_EQ(b.size(), 2 * n);
  EXPECT_TRUE(a.empty());
  for (std::size_t i = 0; i < n; ++i) {
    ASSERT_EQ(b[i], -static_cast<double>(i));
    ASSERT_EQ(b[n + i], static_cast<double>(i));
  }
}

}  // namespace
}  // namespace cpupower
