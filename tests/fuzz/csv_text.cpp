// The CSV reader (artifacts/csv) on text: whole, and fed in small pieces the way the file
// reader feeds it blocks (the unconsumed tail kept, the next piece appended), which must find
// the same records, lines and damage; parse_csv agrees with both. Every cell also goes through
// the number parsers, whose hot path (parse_double(cell, &out)) must give exactly what the
// careful one gives.

#include <cstring>
#include <string>

#include "../support/csv_table.hpp"
#include "artifacts/csv.hpp"
#include "csv_records.hpp"
#include "fuzz_util.hpp"

namespace {

namespace artifacts = cpupower::artifacts;
using cpupower::fuzz::Records;

Records whole(std::string_view text) {
  Records out;
  artifacts::CsvTextReader reader(text, true);
  artifacts::CsvRecord r;
  std::vector<artifacts::CsvDamage> damage;
  while (reader.next(r, damage)) {
    cpupower::fuzz::take_damage(damage, out);
    out.records.push_back(cpupower::fuzz::record_of(r));
  }
  cpupower::fuzz::take_damage(damage, out);
  FUZZ_CHECK(reader.offset() == text.size(), "whole text not consumed");
  return out;
}

Records in_pieces(std::string_view text, std::size_t piece) {
  Records out;
  artifacts::CsvTextReader reader(std::string_view{}, false);
  artifacts::CsvRecord r;
  std::vector<artifacts::CsvDamage> damage;
  std::string buf;
  std::size_t fed = 0;
  while (true) {
    const std::size_t n = std::min(piece, text.size() - fed);
    buf.append(text.substr(fed, n));
    fed += n;
    const bool final = fed == text.size();
    reader.reset(buf, final);
    while (reader.next(r, damage)) {
      cpupower::fuzz::take_damage(damage, out);
      out.records.push_back(cpupower::fuzz::record_of(r));
    }
    cpupower::fuzz::take_damage(damage, out);
    buf.erase(0, reader.offset());
    if (final) break;
  }
  return out;
}

bool same_bits(double a, double b) {
  return std::memcmp(&a, &b, sizeof a) == 0;
}

void check_cell(std::string_view cell) {
  const auto careful = artifacts::parse_double(cell);
  double fast = 0;
  const bool fast_ok = artifacts::parse_double(cell, &fast);
  FUZZ_CHECK(fast_ok == careful.has_value(), "parse_double paths disagree on '%.*s'",
             static_cast<int>(cell.size()), cell.data());
  if (careful) {
    FUZZ_CHECK(same_bits(fast, *careful), "parse_double paths disagree on '%.*s': %.17g vs %.17g",
               static_cast<int>(cell.size()), cell.data(), fast, *careful);
  }
  (void)artifacts::parse_int(cell);
  (void)artifacts::describe_bad_cell("column", cell);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = cpupower::fuzz::as_text(data, size);
  const Records all = whole(text);
  // Byte by byte costs a rescan of the record so far for every byte: small inputs only.
  for (const std::size_t piece : {std::size_t{1}, std::size_t{7}, std::size_t{64}}) {
    if (piece == 1 && size > 256) continue;
    FUZZ_CHECK(in_pieces(text, piece) == all, "pieces of %zu bytes read differently", piece);
  }
  const artifacts::CsvTable table = artifacts::parse_csv(text);
  FUZZ_CHECK(table.rows.size() + (all.records.empty() ? 0 : 1) == all.records.size());
  FUZZ_CHECK(table.damage.size() == all.damage.size());
  for (const auto& rec : all.records) {
    for (const auto& cell : rec.cells) check_cell(cell);
  }
  if (!table.header.empty()) {
    for (const auto& name : table.header) (void)artifacts::column_index(table.header, name);
  }
  return 0;
}
