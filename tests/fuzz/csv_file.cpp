// The CSV file reader (artifacts/csv CsvFileReader): the whole file reads as the text reader
// reads its bytes, and, as the report's parallel load relies on, ranges split where
// report/cpu_load.cpp splits them read every record exactly once whenever they meet (the
// report reads a file with quotes, or ranges that do not meet, again in one piece).

#include <string>

#include "artifacts/csv.hpp"
#include "csv_records.hpp"
#include "fuzz_util.hpp"

namespace {

namespace artifacts = cpupower::artifacts;
using cpupower::fuzz::Records;

struct RangeRead {
  Records records;
  std::size_t lines = 0, first = 0, stop = 0;
  bool saw_quote = false;
};

RangeRead read_range(const std::string& path, std::size_t begin, std::size_t end) {
  RangeRead out;
  auto reader = artifacts::CsvFileReader::open(path, begin, end);
  FUZZ_CHECK(reader.ok(), "open: %s", reader.error().c_str());
  artifacts::CsvRecord r;
  std::vector<artifacts::CsvDamage> damage;
  while (reader->next(r, damage)) {
    cpupower::fuzz::take_damage(damage, out.records);
    out.records.records.push_back(cpupower::fuzz::record_of(r));
  }
  cpupower::fuzz::take_damage(damage, out.records);
  FUZZ_CHECK(reader->error().empty(), "read: %s", reader->error().c_str());
  out.lines = reader->lines();
  out.first = reader->first_offset();
  out.stop = reader->stop_offset();
  out.saw_quote = reader->saw_quote();
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = cpupower::fuzz::as_text(data, size);
  const std::string path = cpupower::fuzz::scratch_dir() + "/csv_file.csv";
  cpupower::fuzz::write_file(path, text);

  const RangeRead all = read_range(path, 0, SIZE_MAX);
  Records from_text;
  {
    artifacts::CsvTextReader reader(text, true);
    artifacts::CsvRecord r;
    std::vector<artifacts::CsvDamage> damage;
    while (reader.next(r, damage)) {
      cpupower::fuzz::take_damage(damage, from_text);
      from_text.records.push_back(cpupower::fuzz::record_of(r));
    }
    cpupower::fuzz::take_damage(damage, from_text);
  }
  FUZZ_CHECK(all.records == from_text, "file and text readers disagree");
  FUZZ_CHECK(all.first == 0 && all.stop == size);

  for (std::size_t pieces = 2; pieces <= 3; ++pieces) {
    std::vector<RangeRead> parts;
    for (std::size_t k = 0; k < pieces; ++k) {
      parts.push_back(read_range(path, size * k / pieces,
                                 k + 1 == pieces ? SIZE_MAX : size * (k + 1) / pieces));
    }
    bool clean = true;
    for (std::size_t k = 0; k < pieces; ++k) {
      if (parts[k].saw_quote || (k + 1 < pieces && parts[k].stop != parts[k + 1].first)) {
        clean = false;
      }
    }
    if (!clean) continue;
    Records joined;
    std::size_t lines = 0;
    for (const auto& p : parts) {
      for (auto rec : p.records.records) {
        rec.line += lines;
        joined.records.push_back(std::move(rec));
      }
      for (auto d : p.records.damage) {
        d.line += lines;
        joined.damage.push_back(std::move(d));
      }
      lines += p.lines;
    }
    FUZZ_CHECK(joined == all.records, "%zu ranges that meet read differently from the whole",
               pieces);
    FUZZ_CHECK(lines == all.lines, "%zu ranges count %zu lines, the whole %zu", pieces, lines,
               all.lines);
  }
  return 0;
}
