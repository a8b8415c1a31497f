#pragma once
// The srun command lines, flag for flag as upstream's launcher builds them, so that the steps
// and their log files are the same:
//   srun [--jobid J] --overlap --nodes N --ntasks N --nodelist n1,n2 [--het-group=G]
//        --output <log_dir>/telemetry_cpu_power_exporter[.gG].%N.out [srun_options]
//        <exporter argv>
// %N is srun's per-node host name, so each node writes its own log (on a cluster the host
// name is the node name; see scripts/slurm-up.sh for fake nodes).

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "launch/node_set.hpp"

namespace cpupower::launch {

using SrunOptions = std::vector<std::pair<std::string, std::optional<std::string>>>;

struct SrunStep {
  std::optional<std::string> job_id;  // --jobid, when inside an allocation
  NodeGroup group;
  std::optional<std::string> output;  // --output
  SrunOptions srun_options;           // runtime.srun_options: --k=v, or --k
  std::vector<std::string> command;
};

std::vector<std::string> srun_argv(const SrunStep& step);

// ".g<G>" when the launch has several groups, else "".
std::string group_suffix(int het_group, bool several_groups);

// srun expands %-sequences in the whole --output path; "%%" is its literal '%'.
std::string percent_escaped(const std::string& path);

// <log_dir>/telemetry_cpu_power_exporter[.gG].%N.out, with any '%' in log_dir doubled.
std::string exporter_log_pattern(const std::string& log_dir, int het_group, bool several_groups);

// telemetry_cpu_power_exporter, or telemetry_cpu_power_exporter_g<G> with several groups.
std::string exporter_process_name(int het_group, bool several_groups);

// One node's log file once srun has expanded %N.
std::string exporter_log_for_node(const std::string& log_dir, int het_group, bool several_groups,
                                  const std::string& node);

}  // namespace cpupower::launch
