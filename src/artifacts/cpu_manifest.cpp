#include "artifacts/cpu_manifest.hpp"

#include <nlohmann/json.hpp>

#include "common/json_fields.hpp"
#include "common/text.hpp"

namespace cpupower::artifacts {
namespace {

using Json = nlohmann::ordered_json;
// JSON has no NaN or infinity; a clock value that is not finite is as good as unknown.
using common::number_or_null;
using common::or_null;

}  // namespace

std::string render_cpu_manifest(const CpuManifest& manifest) {
  Json nodes = Json::object();
  for (const auto& [host, node] : manifest.nodes) {
    Json missing = Json::object();
    for (const auto& [socket, gap] : node.sockets_missing) {
      missing[std::to_string(socket)] = Json{
          {"rows", gap.rows},
          {"first_unix", number_or_null(gap.first_unix)},
          {"last_unix", number_or_null(gap.last_unix)},
      };
    }
    nodes[host] = Json{
        {"resolved_mode", node.resolved_mode},
        {"scrape_count", node.scrape_count},
        {"error_count", node.error_count},
        {"endpoint_url", node.endpoint_url},
        {"last_error", or_null(node.last_error)},
        {"missed_slots", node.missed_slots},
        {"first_sample_unix", number_or_null(node.first_sample_unix)},
        {"last_sample_unix", number_or_null(node.last_sample_unix)},
        {"sockets_expected", node.sockets_expected},
        {"sockets_missing", std::move(missing)},
        {"status", node.status},
        {"duplicate_series", node.duplicate_series},
        {"average_interval_s",
         node.average_interval_min_s && node.average_interval_max_s
             ? Json{{"min", *node.average_interval_min_s}, {"max", *node.average_interval_max_s}}
             : Json(nullptr)},
    };
  }
  Json write_errors = Json::array();
  for (const auto& e : manifest.write_errors) {
    write_errors.push_back(Json{
        {"error", e.error},
        {"count", e.count},
        {"first_unix", number_or_null(e.first_unix)},
        {"last_unix", number_or_null(e.last_unix)},
    });
  }
  Json changes = Json::array();
  for (const auto& c : manifest.samples_file_changes) {
    changes.push_back(Json{
        {"at_unix", number_or_null(c.at_unix)},
        {"change", c.change},
        {"rows_in_old_file", c.rows_in_old_file},
    });
  }
  Json doc{
      {"schema_version", kCpuManifestSchemaVersion},
      {"producer", manifest.producer},
      {"producer_git_commit", or_null(manifest.producer_git_commit)},
      {"started_at_unix", number_or_null(manifest.started_at_unix)},
      {"stopped_at_unix", number_or_null(manifest.stopped_at_unix)},
      {"nodes", std::move(nodes)},
      {"rows_written", manifest.rows_written},
      {"rows_dropped", manifest.rows_dropped},
      {"write_errors", std::move(write_errors)},
      {"samples_file_changes", std::move(changes)},
      {"samples_schema_version", or_null(manifest.samples_schema_version)},
  };
  if (!manifest.clock_steps.empty()) {
    Json steps = Json::array();
    for (const auto& c : manifest.clock_steps) {
      steps.push_back(Json{{"at_unix", c.at_unix}, {"step_s", c.step_s}});
    }
    doc["clock_steps"] = std::move(steps);
  }
  // Replace invalid UTF-8 (a hostname or error text from the wire) rather than throw.
  return doc.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

Status write_cpu_manifest(const std::string& path, const CpuManifest& manifest) {
  return common::write_file_atomic(path, render_cpu_manifest(manifest), true);
}

Result<CpuManifest> parse_cpu_manifest(std::string_view text) {
  const Json doc = Json::parse(text, nullptr, false);
  if (doc.is_discarded()) return Error{"not JSON"};
  const auto nodes = doc.find("nodes");
  if (!doc.is_object() || !doc.contains("producer") || !doc["producer"].is_string() ||
      nodes == doc.end() || !nodes->is_object()) {
    return Error{R"(not an object with "producer" and "nodes")"};
  }
  using common::get_to;
  CpuManifest m;
  m.samples_schema_version.reset();
  get_to(doc, "producer", m.producer);
  for (const auto& [host, value] : nodes->items())
    get_to(value, "resolved_mode", m.nodes[host].resolved_mode);
  get_to(doc, "samples_schema_version", m.samples_schema_version);
  return m;
}

}  // namespace cpupower::artifacts
