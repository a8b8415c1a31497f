// Prints the records the project's CSV reader finds in a file, one JSON line each
// ({"line": N, "cells": [...], "terminated": true}), then one line per stepped-over damage
// ({"damage": N, "what": "..."}). With PIECES > 1 the file is read as that many byte ranges,
// the way the report reads a large file, and a last line {"ranges_meet": true|false} says
// whether the ranges joined exactly (else the report would read the file again in one
// piece). Bytes outside printable ASCII are written as \u00XX, so a reader decoding the file
// as Latin-1 compares cell for cell. Used by tests/tools/csv_vs_python.py.
// Usage: csv_records FILE [PIECES]
//        csv_records --batch   reads "PIECES FILE" lines from standard input and answers each
//                              as above, followed by {"end": true}: one process for many files,
//                              so a sanitized build is not started once a file.

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

#include "artifacts/csv.hpp"

namespace {

std::string json_string(std::string_view s) {
  std::string out = "\"";
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u >= 0x7F || c == '"' || c == '\\') {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", u);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

}  // namespace

// Prints FILE's records read in PIECES ranges; 0, or 1 with the error on standard error.
int dump(const std::string& path, std::size_t pieces) {
  using namespace cpupower::artifacts;
  std::size_t size = 0;
  {
    auto probe = CsvFileReader::open(path);
    if (!probe) {
      std::fprintf(stderr, "%s\n", probe.error().c_str());
      return 1;
    }
    size = probe->size();
  }
  std::size_t line_offset = 0;
  std::size_t last_stop = 0;
  bool meet = true;
  std::vector<CsvDamage> damage;
  for (std::size_t k = 0; k < pieces; ++k) {
    auto reader = CsvFileReader::open(path, size * k / pieces,
                                      k + 1 == pieces ? SIZE_MAX : size * (k + 1) / pieces);
    if (!reader) {
      std::fprintf(stderr, "%s\n", reader.error().c_str());
      return 1;
    }
    CsvRecord r;
    std::vector<CsvDamage> found;
    while (reader->next(r, found)) {
      std::string cells;
      for (const auto& c : r.cells) cells += (cells.empty() ? "" : ", ") + json_string(c);
      std::printf("{\"line\": %zu, \"cells\": [%s], \"terminated\": %s}\n", r.line + line_offset,
                  cells.c_str(), r.terminated ? "true" : "false");
    }
    if (!reader->error().empty()) {
      std::fprintf(stderr, "%s\n", reader->error().c_str());
      return 1;
    }
    for (auto& d : found) damage.push_back({d.line + line_offset, d.what});
    if (k > 0 && reader->first_offset() != last_stop) meet = false;
    if (reader->saw_quote() && pieces > 1) meet = false;
    last_stop = reader->stop_offset();
    line_offset += reader->lines();
  }
  for (const auto& d : damage) {
    std::printf("{\"damage\": %zu, \"what\": %s}\n", d.line, json_string(d.what).c_str());
  }
  if (pieces > 1) std::printf("{\"ranges_meet\": %s}\n", meet ? "true" : "false");
  return 0;
}

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: csv_records FILE [PIECES] | csv_records --batch\n");
    return 2;
  }
  if (std::string_view(argv[1]) == "--batch") {
    std::string line;
    while (std::getline(std::cin, line)) {
      const auto space = line.find(' ');
      if (space == std::string::npos) return 2;
      if (dump(line.substr(space + 1), std::strtoul(line.c_str(), nullptr, 10)) != 0) return 1;
      std::printf("{\"end\": true}\n");
    }
    return 0;
  }
  return dump(argv[1], argc > 2 ? std::strtoul(argv[2], nullptr, 10) : 1);
}
