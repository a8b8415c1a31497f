#pragma once
// Small helpers over nlohmann::json for the benchmark artifacts, which the report reads
// without trusting their types.

#include <nlohmann/json.hpp>

#include <optional>
#include <string>

namespace cpupower::report {

using Json = nlohmann::ordered_json;

// A JSON number as a double; nullopt for anything else (booleans included).
std::optional<double> json_number(const Json& value);
std::optional<double> json_member_number(const Json& object, const char* key);

// Parses a whole file; nullopt with `error` ("<path>: ...") when unreadable or malformed.
std::optional<Json> read_json_file(const std::string& path, std::string* error);

// The whole file as text; nullopt when it cannot be read.
std::optional<std::string> read_text_file(const std::string& path);

}  // namespace cpupower::report
