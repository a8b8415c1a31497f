#pragma once
// Small helpers over nlohmann::json for the benchmark artifacts, which the report reads
// without trusting their types.

#include <nlohmann/json.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "common/result.hpp"

namespace cpupower::report {

using Json = nlohmann::ordered_json;

// A JSON number as a double; nullopt for anything else (booleans included).
std::optional<double> json_number(const Json& value);
std::optional<double> json_member_number(const Json& object, const char* key);

// A token count from a benchmark artifact: a finite number >= 0, or null (not reported: n/a).
// A negative count, a string, a boolean or anything else is an error naming the file and the
// field ("<path>: total_output_tokens is -640, not a token count (a number >= 0)"): a
// J/token or tok/s figure made from it would be wrong, not missing.
Result<std::optional<double>> json_token_count(const Json& value, const std::string& path,
                                               const std::string& field);

// Parses one JSON text. Never throws: an error names `name`, the line and the column, and
// says why - malformed JSON as nlohmann words it, or a number beyond a double's range (which
// nlohmann refuses, and which would otherwise abort the whole report):
//   "<name>:3:23: number out of a double's range: 1e400"
//   "<name>:2:29: malformed JSON: syntax error while parsing value - unexpected '}'; ..."
// `first_line` is the line the text starts on in its file (a JSONL record's line).
Result<Json> parse_json(std::string_view text, const std::string& name, std::size_t first_line = 1);

// Reads and parses a whole file, as parse_json with the path as the name.
Result<Json> read_json_file(const std::string& path);

// The whole file as text; nullopt when it cannot be read.
std::optional<std::string> read_text_file(const std::string& path);

}  // namespace cpupower::report
