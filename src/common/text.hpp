#pragma once
// Small text and file helpers shared by every module.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

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

// Reads a whole small file. nullopt when it cannot be opened or read; `error` (if given)
// receives strerror text.
std::optional<std::string> read_small_file(const std::string& path, std::string* error = nullptr,
                                           std::size_t max_bytes = 4096);

// Writes a file atomically: temporary file in the same directory, then rename.
bool write_file_atomic(const std::string& path, std::string_view content,
                       std::string* error = nullptr, bool fsync_file = false);

std::vector<std::string> split(std::string_view s, char sep);

}  // namespace cpupower::common
