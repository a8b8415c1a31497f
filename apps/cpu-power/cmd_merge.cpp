// cpu-power merge: the host-collector leg's final step on its own. The run session calls the
// same merge after stopping the collectors; this command redoes it by hand, e.g. after the
// head node crashed, from the directory alone.

#include <filesystem>
#include <iostream>
#include <memory>
#include <set>

#include "apps/cpu-power/commands.hpp"
#include "common/text.hpp"
#include "hostleg/manifest.hpp"
#include "hostleg/merge.hpp"

namespace cpupower::app {
namespace {

namespace fs = std::filesystem;

struct MergeArgs {
  std::string dir;
  std::string expected_nodes;
  bool required = false;
  bool interrupted = false;
};

std::vector<std::string> parse_node_list(const std::string& text) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const auto& part : common::split(text, ',')) {
    const std::string name(common::trim(part));
    if (!name.empty() && seen.insert(name).second) out.push_back(name);
  }
  return out;
}

// Settings the run session recorded in the manifest fill in whatever the command line
// leaves out, so that a re-merge needs only the directory. The reasons only the run knew
// (an interruption, readiness, collectors that died) are kept too: merging the same files
// again must not turn an incomplete run into a complete one.
hostleg::MergeSettings to_settings(const MergeArgs& args, bool expected_given) {
  hostleg::MergeSettings s;
  s.cpu_dir = args.dir;
  std::error_code ec;
  const std::string manifest_path = (fs::path(args.dir) / hostleg::kManifestFilename).string();
  if (fs::exists(manifest_path, ec)) {
    if (const auto m = hostleg::read_host_manifest(manifest_path)) {
      s.job_id = m->job_id;
      s.run_name = m->run_name;
      s.requested_source = m->requested_source;
      s.sample_interval_seconds = m->sample_interval_seconds;
      s.expected_nodes = m->expected_nodes;
      s.required = m->required;
      s.producer_git_commit = m->producer_git_commit;
      s.failed_processes = m->failed_processes;
      for (const auto& code : m->reason_codes) {
        if (code == hostleg::kReasonInterrupted) {
          s.interrupted = true;
        } else if (!hostleg::is_merge_reason(code)) {
          s.readiness_reasons.push_back(code);
        }
      }
    } else {
      std::cerr << "Warning: ignoring " << m.error() << "\n";
    }
  }
  if (expected_given) {
    s.expected_nodes = parse_node_list(args.expected_nodes);
  } else if (s.expected_nodes.empty()) {
    s.expected_nodes = hostleg::hosts_with_files(args.dir);
  }
  s.required = s.required || args.required;
  s.interrupted = s.interrupted || args.interrupted;
  return s;
}

}  // namespace

void add_merge_command(CLI::App& app, Action& action) {
  auto args = std::make_shared<MergeArgs>();
  auto* cmd = app.add_subcommand(
      "merge", "Merge a host-collector leg's nodes/*.csv into samples.csv and manifest.json");
  cmd->add_option("DIR", args->dir, "The CPU directory, holding nodes/ (and ready/)")->required();
  auto* expected = cmd->add_option("--expected-nodes", args->expected_nodes,
                                   "Comma-separated hosts that should have samples (default: "
                                   "the manifest's, else every host with files)");
  cmd->add_flag("--required", args->required, "Exit 1 when the telemetry is not publishable");
  cmd->add_flag("--interrupted", args->interrupted, "The run was interrupted");
  cmd->callback([&action, args, expected] {
    std::error_code ec;
    if (!fs::is_directory(args->dir, ec)) {
      action = [dir = args->dir] {
        std::cerr << "Error: " << dir << ": not a directory" << std::endl;
        return 2;
      };
      return;
    }
    const bool expected_given = expected->count() > 0;
    action = [args, expected_given] {
      const auto outcome = hostleg::merge_host_samples(to_settings(*args, expected_given));
      std::cout << hostleg::summary_line(outcome) << std::endl;
      if (!outcome.error.empty()) std::cerr << "Error: " << outcome.error << std::endl;
      return outcome.exit_nonzero ? 1 : 0;
    };
  });
}

}  // namespace cpupower::app
