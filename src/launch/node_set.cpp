#include "launch/node_set.hpp"

#include <algorithm>
#include <set>

#include "common/text.hpp"
#include "launch/process.hpp"

extern char** environ;

namespace cpupower::launch {
namespace {

// Items of a comma-separated list whose bracket ranges may hold commas: "n[1,3-4],m".
std::vector<std::string> split_top_level(std::string_view text) {
  std::vector<std::string> out;
  std::string item;
  int depth = 0;
  for (char c : text) {
    if (c == '[') ++depth;
    if (c == ']' && depth > 0) --depth;
    if (c == ',' && depth == 0) {
      out.push_back(std::move(item));
      item.clear();
    } else {
      item += c;
    }
  }
  out.push_back(std::move(item));
  return out;
}

}  // namespace

Env current_env() {
  Env env;
  for (char** e = environ; e && *e; ++e) {
    const std::string_view kv(*e);
    const auto eq = kv.find('=');
    if (eq != std::string_view::npos) env.emplace(kv.substr(0, eq), kv.substr(eq + 1));
  }
  return env;
}

Result<std::vector<std::string>> parse_node_list(std::string_view text,
                                                 const HostlistExpander& expand) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const auto& raw : split_top_level(text)) {
    const std::string item(common::trim(raw));
    if (item.empty()) continue;
    std::vector<std::string> names{item};
    if (item.find('[') != std::string::npos) {
      auto expanded = expand(item);
      if (!expanded) return Error{expanded.error()};
      names = std::move(*expanded);
    }
    for (auto& n : names) {
      if (seen.insert(n).second) out.push_back(std::move(n));
    }
  }
  return out;
}

Result<std::optional<Allocation>> allocation_from_env(const Env& env,
                                                      const HostlistExpander& expand) {
  const auto job = env.find("SLURM_JOB_ID");
  if (job == env.end() || job->second.empty()) return std::optional<Allocation>();
  Allocation a;
  a.job_id = job->second;
  auto get = [&](const std::string& key) -> std::string {
    const auto it = env.find(key);
    return it == env.end() ? std::string() : it->second;
  };
  const auto het_size = common::parse_u64(get("SLURM_HET_SIZE"));
  if (het_size && *het_size > 0) {
    for (std::uint64_t g = 0; g < *het_size; ++g) {
      const std::string key = "SLURM_JOB_NODELIST_HET_GROUP_" + std::to_string(g);
      auto nodes = parse_node_list(get(key), expand);
      if (!nodes) return Error{nodes.error()};
      a.groups.push_back({static_cast<int>(g), std::move(*nodes)});
    }
    return std::optional(std::move(a));
  }
  std::string list = get("SLURM_JOB_NODELIST");
  if (list.empty()) list = get("SLURM_NODELIST");
  auto nodes = parse_node_list(list, expand);
  if (!nodes) return Error{nodes.error()};
  a.groups.push_back({-1, std::move(*nodes)});
  return std::optional(std::move(a));
}

GroupedNodes group_nodes(const std::vector<std::string>& nodes,
                         const std::optional<Allocation>& allocation) {
  GroupedNodes out;
  const bool het =
      allocation && !allocation->groups.empty() && allocation->groups.front().het_group >= 0;
  if (!het) {
    if (!nodes.empty()) out.groups.push_back({-1, nodes});
    return out;
  }
  std::vector<NodeGroup> groups;
  for (const auto& g : allocation->groups) groups.push_back({g.het_group, {}});
  for (const auto& node : nodes) {
    bool placed = false;
    for (std::size_t i = 0; i < groups.size() && !placed; ++i) {
      const auto& members = allocation->groups[i].nodes;
      if (std::find(members.begin(), members.end(), node) != members.end()) {
        groups[i].nodes.push_back(node);
        placed = true;
      }
    }
    if (!placed) out.errors.push_back("node '" + node + "' not in any het component");
  }
  for (auto& g : groups) {
    if (!g.nodes.empty()) out.groups.push_back(std::move(g));
  }
  return out;
}

HostlistExpander scontrol_expander() {
  return [](const std::string& expr) -> Result<std::vector<std::string>> {
    const auto result = run_capture({"scontrol", "show", "hostnames", expr},
                                    std::chrono::steady_clock::now() + std::chrono::seconds(30));
    if (!result.error.empty() || !result.status || *result.status != 0) {
      return Error{"scontrol show hostnames " + expr + " failed" +
                   (result.error.empty() ? std::string() : ": " + result.error)};
    }
    std::vector<std::string> names;
    for (const auto& line : common::split(result.output, '\n')) {
      const auto name = common::trim(line);
      if (!name.empty()) names.emplace_back(name);
    }
    return names;
  };
}

}  // namespace cpupower::launch
