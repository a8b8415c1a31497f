// cpu-power validate RUN_DIR: a finished run directory checked offline the way the downstream
// consumers check it (module `validate`): one line per finding with the option or step that
// fixes it, a verdict per package and overall. Exit 0 only when every package present is
// publishable; 1 when one is not; 2 for usage errors or a directory that is no run.

#include <iostream>
#include <memory>
#include <set>

#include "apps/cpu-power/commands.hpp"
#include "validate/validate.hpp"

namespace cpupower::app {
namespace {

struct ValidateArgs {
  validate::Options options;
  std::vector<std::string> roles;
  bool json = false;
};

}  // namespace

void add_validate_command(CLI::App& app, Action& action) {
  auto args = std::make_shared<ValidateArgs>();
  auto* cmd = app.add_subcommand(
      "validate",
      "Check a finished run directory offline as the downstream consumers do: each finding "
      "with its reason code, file and fix; exit 0 only when every package is publishable");
  cmd->add_option("RUN_DIR", args->options.run_dir, "The run's log directory")->required();
  cmd->add_flag("--json", args->json, "Print the report as JSON (docs/formats.md)");
  cmd->add_option("--expect-role", args->roles,
                  "ROLE=COUNT: exactly COUNT GPUs mapped to ROLE (prefill, decode, agg); ROLE "
                  "alone: at least one. The roles found must be exactly those named. Repeatable");
  cmd->add_flag("--require-distinct-het-groups", args->options.require_distinct_het_groups,
                "Require each worker role to occupy its own heterogeneous Slurm group");
  cmd->add_option("--gpu-dir", args->options.gpu_dir,
                  "The GPU package, relative to RUN_DIR (telemetry.storage_subdir)")
      ->capture_default_str();
  cmd->add_option("--cpu-dir", args->options.cpu_dir,
                  "The CPU exporter leg's package, relative to RUN_DIR")
      ->capture_default_str();
  cmd->add_option("--host-dir", args->options.host_dir,
                  "The host-collector leg's package, relative to RUN_DIR "
                  "(telemetry.cpu_power.storage_subdir)")
      ->capture_default_str();
  cmd->callback([&action, args] {
    action = [args] {
      std::set<std::string> seen;
      for (const auto& text : args->roles) {
        auto e = validate::parse_role_expectation(text);
        if (!e) {
          std::cerr << "Error: " << e.error() << std::endl;
          return 2;
        }
        if (!seen.insert(e->role).second) {
          std::cerr << "Error: --expect-role " << e->role << " given twice" << std::endl;
          return 2;
        }
        args->options.expect_roles.push_back(*e);
      }
      const auto report = validate::validate_run(args->options);
      if (!report) {
        std::cerr << "Error: " << report.error() << std::endl;
        return 2;
      }
      std::cout << (args->json ? validate::render_json(*report) : validate::render_text(*report))
                << std::flush;
      return report->publishable ? 0 : 1;
    };
  });
}

}  // namespace cpupower::app
