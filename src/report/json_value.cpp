#include "report/json_value.hpp"

#include <fstream>
#include <sstream>

namespace cpupower::report {

std::optional<double> json_number(const Json& value) {
  if (!value.is_number()) return std::nullopt;
  return value.get<double>();
}

std::optional<double> json_member_number(const Json& object, const char* key) {
  if (!object.is_object()) return std::nullopt;
  const auto it = object.find(key);
  return it == object.end() ? std::nullopt : json_number(*it);
}

std::optional<std::string> read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return std::nullopt;
  return text.str();
}

std::optional<Json> read_json_file(const std::string& path, std::string* error) {
  const auto text = read_text_file(path);
  if (!text) {
    *error = path + ": cannot be read";
    return std::nullopt;
  }
  try {
    return Json::parse(*text);
  } catch (const Json::parse_error& e) {
    // "[json.exception.parse_error.101] parse error at line 3, column 1: syntax error ...":
    // the place and the reason, without the library's prefix.
    const std::string what = e.what();
    const auto at = what.find(" at line ");
    *error = path + ": malformed JSON" + (at == std::string::npos ? "" : what.substr(at));
    return std::nullopt;
  }
}

}  // namespace cpupower::report
