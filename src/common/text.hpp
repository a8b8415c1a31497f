#pragma once
// Small text and file helpers shared by every module.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.hpp"

namespace cpupower::common {

std::string_view trim(std::string_view s);
std::string to_lower(std::string_view s);

// Whole-string parses; nullopt on any leftover character, sign where none is allowed, or
// overflow.
std::optional<std::uint64_t> parse_u64(std::string_view s);
std::optional<std::int64_t> parse_i64(std::string_view s);
std::optional<double> parse_double(std::string_view s);

// The trailing decimal number of a name such as "hwmon12" or "power3" (nullopt if none), so
// that names can be ordered numerically: hwmon2 before hwmon10.
std::optional<std::uint64_t> trailing_number(std::string_view name);
bool natural_less(std::string_view a, std::string_view b);

// Reads a whole small file. The error is strerror text when it cannot be opened or read, and
// "larger than <max_bytes> bytes" when it is: a configuration, manifest or trace cut short
// could still parse and say less than the file does, so it is refused, never truncated.
Result<std::string> read_small_file(const std::string& path, std::size_t max_bytes = 4096);

// The first `max_bytes` of a file that may be longer (a growing log read for a line near
// its start); the error is strerror text.
Result<std::string> read_file_prefix(const std::string& path, std::size_t max_bytes);

// Writes a file atomically: temporary file in the same directory, then rename. The error
// names the step and the temporary file: "rename <tmp> -> <path>: <strerror>".
Status write_file_atomic(const std::string& path, std::string_view content,
                         bool fsync_file = false);

std::vector<std::string> split(std::string_view s, char sep);

// Text from outside (a host name, a path, a command line) made safe to print on a terminal or
// in a text file: C0 controls and DEL as \xNN (\n, \r, \t as such), C1 controls (U+0080 to
// U+009F, which terminals obey too) and the noncharacters U+FFFE and U+FFFF as \uNNNN, each
// byte that is not part of valid UTF-8 as \xNN, and the backslash doubled so that an escape is
// never ambiguous. Valid UTF-8 text stays as it is, ASCII included.
std::string escape_untrusted(std::string_view s);

// C0 controls and DEL as \xNN, every other byte as it is: text from a file kept to one line.
std::string escape_controls(std::string_view s);

// Whether `s` is well-formed UTF-8: no stray continuation byte, overlong form, surrogate or code
// point past U+10FFFF.
bool valid_utf8(std::string_view s);

// escape_untrusted, then XML's five special characters as entities: text or attribute content
// that keeps an XML document (an SVG) well-formed. XML 1.0 cannot carry a control character
// even as a character reference, so those are the visible escapes above.
std::string escape_untrusted_xml(std::string_view s);

}  // namespace cpupower::common
