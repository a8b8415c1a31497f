#pragma once
// Which worker nodes get an exporter, grouped the way srun must address them: one group per
// het-job component (srun --het-group=G), or a single group (het_group -1) otherwise.

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.hpp"

namespace cpupower::launch {

struct NodeGroup {
  int het_group = -1;  // -1: not a het job, no --het-group
  std::vector<std::string> nodes;

  bool operator==(const NodeGroup&) const = default;
};

// The Slurm job this process runs in, from its environment.
struct Allocation {
  std::string job_id;             // SLURM_JOB_ID (the het leader's id in a het job)
  std::vector<NodeGroup> groups;  // by het component, ascending; one group (-1) otherwise
};

using Env = std::map<std::string, std::string>;
// Expands a Slurm hostlist expression ("n[1-3],m7") into names, or an error.
using HostlistExpander = std::function<Result<std::vector<std::string>>(const std::string&)>;

// The process environment as a map.
Env current_env();

// Splits a node list at the commas that are not inside brackets, expanding each item that
// holds a bracket range through `expand` (scontrol show hostnames) and keeping the others as
// written, so names with shell metacharacters pass through untouched. Empty items and
// duplicates are dropped (first occurrence wins). The expander's error when it fails.
Result<std::vector<std::string>> parse_node_list(std::string_view text,
                                                 const HostlistExpander& expand);

// nullopt when SLURM_JOB_ID is not set. In a het job (SLURM_HET_SIZE) each component's
// SLURM_JOB_NODELIST_HET_GROUP_<g> is one group; otherwise SLURM_JOB_NODELIST is the group.
// An error when a node list cannot be expanded.
Result<std::optional<Allocation>> allocation_from_env(const Env& env,
                                                      const HostlistExpander& expand);

struct GroupedNodes {
  std::vector<NodeGroup> groups;    // in het group order; nodes in the order given
  std::vector<std::string> errors;  // "node 'x' not in any het component"
};

// Groups `nodes` by the het component that holds each one. Without a het allocation all
// nodes form one group (-1). A node that no component holds is an error and is left out; the
// other groups are still launched.
GroupedNodes group_nodes(const std::vector<std::string>& nodes,
                         const std::optional<Allocation>& allocation);

// `scontrol show hostnames EXPR`, run as an argv.
HostlistExpander scontrol_expander();

}  // namespace cpupower::launch
