// cpu-power check-config RECIPE: loads and validates a recipe's telemetry settings. Prints
// them resolved (defaults and derived values included) and exits 0, or prints every error as
// file:line:column: message on stderr and exits 1. Warnings (valid settings that can still put
// sample gaps over the 3.0 s bound) go to stderr as file:line:column: warning: message.

#include <iostream>
#include <memory>

#include "apps/cpu-power/commands.hpp"
#include "config/describe.hpp"
#include "config/load.hpp"

namespace cpupower::app {

void add_check_config_command(CLI::App& app, Action& action) {
  auto recipe = std::make_shared<std::string>();
  auto* cmd = app.add_subcommand("check-config", "Validate a recipe's telemetry settings");
  cmd->add_option("RECIPE", *recipe, "srtctl recipe (YAML)")->required();
  cmd->callback([&action, recipe] {
    action = [recipe] {
      const auto result = config::load_recipe_file(*recipe);
      if (!result.recipe) {
        for (const auto& e : result.errors) std::cerr << config::format_error(e) << "\n";
        std::cerr << result.errors.size() << (result.errors.size() == 1 ? " error" : " errors")
                  << " in " << *recipe << std::endl;
        return 1;
      }
      for (const auto& w : result.warnings) std::cerr << config::format_warning(w) << "\n";
      std::cout << "recipe: " << *recipe << " (valid)\n"
                << config::describe_recipe(*result.recipe) << std::flush;
      return 0;
    };
  });
}

}  // namespace cpupower::app
