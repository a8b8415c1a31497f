#include "launch/srun_argv.hpp"

namespace cpupower::launch {

std::vector<std::string> srun_argv(const SrunStep& step) {
  std::vector<std::string> argv{"srun"};
  if (step.job_id) argv.insert(argv.end(), {"--jobid", *step.job_id});
  const std::string n = std::to_string(step.group.nodes.size());
  std::string nodelist;
  for (const auto& node : step.group.nodes) nodelist += (nodelist.empty() ? "" : ",") + node;
  argv.insert(argv.end(), {"--overlap", "--nodes", n, "--ntasks", n, "--nodelist", nodelist});
  if (step.group.het_group >= 0) {
    argv.push_back("--het-group=" + std::to_string(step.group.het_group));
  }
  if (step.output) argv.insert(argv.end(), {"--output", *step.output});
  for (const auto& [key, value] : step.srun_options) {
    argv.push_back("--" + key + (value ? "=" + *value : std::string()));
  }
  argv.insert(argv.end(), step.command.begin(), step.command.end());
  return argv;
}

std::string group_suffix(int het_group, bool several_groups) {
  return several_groups ? ".g" + std::to_string(het_group) : std::string();
}

std::string percent_escaped(const std::string& path) {
  std::string out;
  for (char c : path) out += c == '%' ? std::string("%%") : std::string(1, c);
  return out;
}

std::string exporter_log_pattern(const std::string& log_dir, int het_group, bool several_groups) {
  return percent_escaped(log_dir) + "/telemetry_cpu_power_exporter" +
         group_suffix(het_group, several_groups) + ".%N.out";
}

std::string exporter_process_name(int het_group, bool several_groups) {
  return several_groups ? "telemetry_cpu_power_exporter_g" + std::to_string(het_group)
                        : std::string("telemetry_cpu_power_exporter");
}

std::string exporter_log_for_node(const std::string& log_dir, int het_group, bool several_groups,
                                  const std::string& node) {
  return log_dir + "/telemetry_cpu_power_exporter" + group_suffix(het_group, several_groups) + "." +
         node + ".out";
}

}  // namespace cpupower::launch
