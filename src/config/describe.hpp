#pragma once
// The resolved telemetry settings of a valid recipe as `key: value` lines, defaults and
// derived values included, so that what will run can be read without knowing the defaults.

#include <string>

#include "config/recipe.hpp"

namespace cpupower::config {

std::string describe_recipe(const Recipe& recipe);

}  // namespace cpupower::config
