#include "launch/prometheus_sd.hpp"

#include <filesystem>
#include <nlohmann/json.hpp>

#include "common/text.hpp"
#include "launch/session_plan.hpp"

namespace cpupower::launch {

std::string sd_target(const scrape::Endpoint& endpoint) {
  const bool v6 = endpoint.address.find(':') != std::string::npos;
  return (v6 ? "[" + endpoint.address + "]" : endpoint.address) + ":" +
         std::to_string(endpoint.port);
}

std::string prometheus_sd_json(const std::vector<scrape::Endpoint>& endpoints,
                               const std::optional<std::string>& job_id,
                               const std::string& run_name) {
  auto groups = nlohmann::ordered_json::array();
  for (const auto& e : endpoints) {
    nlohmann::ordered_json group;
    group["targets"] = nlohmann::ordered_json::array({sd_target(e)});
    auto& labels = group["labels"];
    labels["node"] = e.hostname;
    if (job_id && !job_id->empty()) labels["job_id"] = *job_id;
    if (!run_name.empty()) labels["run_name"] = run_name;
    groups.push_back(std::move(group));
  }
  // Label values must be UTF-8: invalid bytes in a name are replaced, never refused.
  return groups.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

std::string sd_run_name(const SessionPlan& plan) {
  if (plan.recipe.name && !plan.recipe.name->empty()) return *plan.recipe.name;
  auto dir = std::filesystem::path(plan.log_dir);
  if (!dir.has_filename()) dir = dir.parent_path();  // a trailing '/'
  return dir.filename().string();
}

Status write_prometheus_sd(const std::string& log_dir, const std::string& text) {
  return common::write_file_atomic(log_dir + "/" + kPrometheusSdFile, text);
}

}  // namespace cpupower::launch
