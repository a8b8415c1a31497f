#include "report/json_value.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

namespace cpupower::report {
namespace {

// Why and where nlohmann refused a text: a SAX pass that keeps nothing but its error.
class ErrorLocator final : public nlohmann::json_sax<Json> {
 public:
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override { return true; }
  bool key(string_t&) override { return true; }
  bool end_object() override { return true; }
  bool start_array(std::size_t) override { return true; }
  bool end_array() override { return true; }
  bool parse_error(std::size_t position, const std::string& last_token,
                   const Json::exception& ex) override {
    position_ = position;
    token_ = last_token;
    id_ = ex.id;
    what_ = ex.what();
    return false;
  }

  // "<line>:<column>: <why>", lines counted from `first_line`.
  std::string describe(std::string_view text, std::size_t first_line) const {
    constexpr int kNumberOverflow = 406;  // out_of_range.406: "number overflow parsing '...'"
    if (id_ == kNumberOverflow) {
      // The position is just past the number, which is the last token read: point at its start.
      const std::size_t start =
          std::min(position_ - std::min(position_, token_.size()), text.size());
      const std::string_view before = text.substr(0, start);
      const std::size_t line =
          first_line + static_cast<std::size_t>(std::count(before.begin(), before.end(), '\n'));
      const std::size_t nl = before.rfind('\n');
      const std::size_t column = nl == std::string_view::npos ? start + 1 : start - nl;
      // A number of 400 digits is refused as well as 1e400; its first digits say enough.
      const std::string shown =
          token_.size() <= 32
              ? token_
              : fmt::format("{}... ({} characters)", token_.substr(0, 24), token_.size());
      return fmt::format("{}:{}: number out of a double's range: {}", line, column, shown);
    }
    // "[json.exception.parse_error.101] parse error at line 2, column 29: syntax error ...":
    // nlohmann's own place (its lexer counts the lines) and reason, without its prefix.
    std::size_t line = 0, column = 0;
    const auto at = what_.find(" at line ");
    if (at != std::string::npos &&
        std::sscanf(what_.c_str() + at, " at line %zu, column %zu", &line, &column) == 2) {
      const auto reason = what_.find(": ", at);
      return fmt::format("{}:{}: malformed JSON: {}", first_line + line - 1, column,
                         reason == std::string::npos ? what_ : what_.substr(reason + 2));
    }
    return fmt::format("{}:{}: malformed JSON: {}", first_line, 1, what_);
  }

 private:
  std::size_t position_ = 0;
  std::string token_;
  int id_ = 0;
  std::string what_;
};

}  // namespace

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

Result<Json> parse_json(std::string_view text, const std::string& name, std::size_t first_line) {
  // Without exceptions nlohmann hands back a "discarded" value on any error; only then is the
  // text read a second time to find where.
  Json doc = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_discarded()) return doc;
  ErrorLocator locator;
  if (Json::sax_parse(text, &locator)) return Error{name + ": malformed JSON"};  // never expected
  return Error{name + ":" + locator.describe(text, first_line)};
}

Result<Json> read_json_file(const std::string& path) {
  const auto text = read_text_file(path);
  if (!text) return Error{path + ": cannot be read"};
  return parse_json(*text, path);
}

Result<std::optional<double>> json_token_count(const Json& value, const std::string& path,
                                               const std::string& field) {
  if (value.is_null()) return std::optional<double>();
  const auto n = json_number(value);
  if (n && std::isfinite(*n) && *n >= 0) return n;
  std::string shown = value.dump();
  if (shown.size() > 40) shown = shown.substr(0, 40) + "...";
  return Error{path + ": " + field + " is " + shown + ", not a token count (a number >= 0)"};
}

}  // namespace cpupower::report
