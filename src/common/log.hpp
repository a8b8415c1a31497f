#pragma once
// Logging: one line per event on stdout, in the upstream exporter's layout (RFC 3339 UTC
// with microseconds, level, target, message, key=value fields), so that the `.out` files
// srun captures read the same whichever exporter binary produced them.

#include <spdlog/spdlog.h>

#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace cpupower::common {

// Parses trace|debug|info|warn|error|off; nullopt for anything else.
std::optional<spdlog::level::level_enum> parse_log_level(std::string_view text);

// Sets the level for every logger created through logger(). Safe to call more than once.
void init_logging(spdlog::level::level_enum level);

// The logger for a target such as "cpu_power_exporter" or "cpu_power_exporter::acpi".
std::shared_ptr<spdlog::logger> logger(const std::string& target);

// Quotes a field value as that layout prints Debug fields: plain when it is one token,
// otherwise in double quotes with \ and " escaped.
std::string quoted(std::string_view value);

}  // namespace cpupower::common
