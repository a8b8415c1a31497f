#pragma once
// Loads a recipe: YAML syntax, types and keys, then the validation rules. A whole srtctl
// recipe loads: top-level sections other than telemetry, runtime, observability and
// benchmark are not read at all, and inside the sections read only the fields named in
// recipe.hpp matter. Inside `telemetry:` every key must be known: a misspelt key is an error
// naming it, since a silently ignored `colect_interval_ms` would run with the default.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/error.hpp"
#include "config/recipe.hpp"

namespace cpupower::config {

struct LoadResult {
  std::optional<Recipe> recipe;     // set when `errors` is empty
  std::vector<ConfigError> errors;  // in file order for syntax and types, then rule order
  // With a valid recipe: settings it allows that can still put sample gaps over the 3.0 s
  // bound (recipe_warnings); printed, never fatal.
  std::vector<ConfigError> warnings;
};

// The largest recipe file load_recipe_file reads: real recipes are a few kilobytes, and
// yaml-cpp holds some sixteen times the text in memory while parsing. A larger file is an
// error naming it and its size, before any parsing.
inline constexpr std::size_t kMaxRecipeBytes = std::size_t{1} << 20;

// `file` names the source in errors. With a cluster configuration (srtctl's srtslurm.yaml,
// load_cluster_*), a recipe that enables telemetry with no GPU exporter and no CPU leg
// inherits its default_gpu_exporter, and the recipe remembers the cluster's
// visible_devices_env.
LoadResult load_recipe_text(std::string_view text, const std::string& file,
                            const ClusterConfig* cluster = nullptr);
LoadResult load_recipe_file(const std::string& path, const ClusterConfig* cluster = nullptr);

struct ClusterLoadResult {
  std::optional<ClusterConfig> cluster;  // set when `errors` is empty
  std::vector<ConfigError> errors;
};

// srtslurm.yaml: every key but visible_devices_env and default_gpu_exporter is srtctl's and
// not read; those two are typed and validated (config/validate.hpp) with file:line:col
// messages. The same size cap as a recipe.
ClusterLoadResult load_cluster_text(std::string_view text, const std::string& file);
ClusterLoadResult load_cluster_file(const std::string& path);

// Parsing only, no rules: what load_recipe_* validates. Errors are appended to `errors`.
Recipe parse_recipe_text(std::string_view text, const std::string& file,
                         std::vector<ConfigError>& errors);

}  // namespace cpupower::config
