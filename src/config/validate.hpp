#pragma once
// The telemetry rules of srtctl's SrtConfig._validate_telemetry, with its message texts,
// plus the checks it forgets: collect_interval_ms and storage_subdir are checked in every
// enabled configuration, not only with the GPU leg (a 0 ms interval is a busy loop, and the
// scraper writes below storage_subdir too). Not checked: Dynamo system ports (they need the
// backend's process layout) and the GPU leg's placement and concurrency rules.

#include <string_view>
#include <vector>

#include "config/error.hpp"
#include "config/recipe.hpp"

namespace cpupower::config {

// Every rule that fails, in the reference's order. Each error points at the field it names
// (or, for a default, at the nearest enclosing block given in the file).
std::vector<ConfigError> validate_recipe(const Recipe& recipe);

// Non-empty, not starting with '/' or '~', and no "..", "." or empty parts: a directory that
// stays strictly below the run's log directory, spelt one way only. (Control characters are
// refused when the recipe is read, config/load.cpp.)
bool is_safe_relative_subpath(std::string_view path);

}  // namespace cpupower::config
