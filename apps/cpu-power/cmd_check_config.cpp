// cpu-power check-config [--cluster-config SRTSLURM_YAML] RECIPE: loads and validates a
// recipe's telemetry settings (with the cluster configuration's GPU exporter and
// visible-devices variable when one is given). Prints
// them resolved (defaults and derived values included) and exits 0, or prints every error as
// file:line:column: message on stderr and exits 1. Warnings (valid settings that can still put
// sample gaps over the 3.0 s bound) go to stderr as file:line:column: warning: message.

#include <iostream>
#include <memory>
#include <optional>

#include "apps/cpu-power/commands.hpp"
#include "config/describe.hpp"
#include "config/load.hpp"

namespace cpupower::app {

void add_check_config_command(CLI::App& app, Action& action) {
  auto recipe = std::make_shared<std::string>();
  auto cluster_file = std::make_shared<std::string>();
  auto* cmd = app.add_subcommand("check-config", "Validate a recipe's telemetry settings");
  cmd->add_option("RECIPE", *recipe, "srtctl recipe (YAML)")->required();
  cmd->add_option("--cluster-config", *cluster_file,
                  "srtctl cluster configuration (srtslurm.yaml): its visible_devices_env and "
                  "default_gpu_exporter");
  cmd->callback([&action, recipe, cluster_file] {
    action = [recipe, cluster_file] {
      // Every error as file:line:column, then how many there were in `file`; exit 1.
      const auto failed = [](const auto& errors, const std::string& file) {
        for (const auto& e : errors) std::cerr << config::format_error(e) << "\n";
        std::cerr << errors.size() << (errors.size() == 1 ? " error" : " errors") << " in " << file
                  << std::endl;
        return 1;
      };
      std::optional<config::ClusterConfig> cluster;
      if (!cluster_file->empty()) {
        auto loaded = config::load_cluster_file(*cluster_file);
        if (!loaded.cluster) return failed(loaded.errors, *cluster_file);
        cluster = std::move(loaded.cluster);
      }
      const auto result = config::load_recipe_file(*recipe, cluster ? &*cluster : nullptr);
      if (!result.recipe) return failed(result.errors, *recipe);
      for (const auto& w : result.warnings) std::cerr << config::format_warning(w) << "\n";
      std::cout << "recipe: " << *recipe << " (valid)\n"
                << config::describe_recipe(*result.recipe) << std::flush;
      return 0;
    };
  });
}

}  // namespace cpupower::app
