#include "artifacts/host_manifest.hpp"

#include <exception>

#include "common/json_fields.hpp"
#include "common/text.hpp"

namespace cpupower::artifacts::host {
namespace {
using Json = nlohmann::ordered_json;
}  // namespace

std::string render_host_manifest(const HostManifest& m) {
  Json metadata = Json::object();
  for (const auto& [host, doc] : m.node_metadata) metadata[host] = doc;
  Json ready_errors = Json::object();
  for (const auto& [host, text] : m.ready_errors) ready_errors[host] = text;
  Json doc = Json::object();
  doc["schema_version"] = kManifestSchemaVersion;
  doc["job_id"] = m.job_id;
  doc["run_name"] = m.run_name;
  doc["status"] = m.status;
  doc["required"] = m.required;
  doc["requested_source"] = m.requested_source;
  doc["sample_interval_seconds"] = common::number_or_null(m.sample_interval_seconds);
  doc["expected_nodes"] = m.expected_nodes;
  doc["observed_nodes"] = m.observed_nodes;
  doc["missing_nodes"] = m.missing_nodes;
  doc["sample_row_count"] = m.sample_row_count.value_or(0);
  doc["reason_codes"] = m.reason_codes;
  doc["failed_processes"] = m.failed_processes;
  doc["producer_git_commit"] = common::or_null(m.producer_git_commit);
  doc["node_metadata"] = std::move(metadata);
  doc["updated_at_unix"] = common::number_or_null(m.updated_at_unix);
  doc["malformed_rows"] = m.malformed_rows;
  doc["torn_rows"] = m.torn_rows;
  doc["dropped_groups"] = m.dropped_groups;
  doc["malformed_files"] = m.malformed_files;
  doc["ready_errors"] = std::move(ready_errors);
  doc["problems"] = m.problems;
  return doc.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

Status write_host_manifest(const std::string& path, const HostManifest& manifest) {
  std::string text;
  try {
    text = render_host_manifest(manifest);
  } catch (const std::exception& e) {
    return Error{path + ": " + e.what()};
  }
  return common::write_file_atomic(path, text, true);
}

Result<HostManifest> parse_host_manifest(std::string_view text) {
  const Json doc = Json::parse(text, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) return Error{"not a JSON object"};
  HostManifest m;
  m.status.clear();
  try {
    using common::get_to;
    get_to(doc, "job_id", m.job_id);
    get_to(doc, "run_name", m.run_name);
    get_to(doc, "status", m.status);
    get_to(doc, "required", m.required);
    get_to(doc, "requested_source", m.requested_source);
    get_to(doc, "sample_interval_seconds", m.sample_interval_seconds);
    get_to(doc, "expected_nodes", m.expected_nodes);
    get_to(doc, "observed_nodes", m.observed_nodes);
    get_to(doc, "missing_nodes", m.missing_nodes);
    get_to(doc, "sample_row_count", m.sample_row_count);
    get_to(doc, "reason_codes", m.reason_codes);
    get_to(doc, "failed_processes", m.failed_processes);
    get_to(doc, "producer_git_commit", m.producer_git_commit);
    if (const auto it = doc.find("node_metadata"); it != doc.end() && it->is_object()) {
      for (const auto& [host, value] : it->items()) m.node_metadata[host] = value;
    }
    get_to(doc, "updated_at_unix", m.updated_at_unix);
    get_to(doc, "malformed_rows", m.malformed_rows);
    get_to(doc, "torn_rows", m.torn_rows);
    get_to(doc, "dropped_groups", m.dropped_groups);
    get_to(doc, "malformed_files", m.malformed_files);
    if (const auto it = doc.find("ready_errors"); it != doc.end() && it->is_object()) {
      for (const auto& [host, value] : it->items()) {
        if (value.is_string()) m.ready_errors[host] = value.get<std::string>();
      }
    }
    get_to(doc, "problems", m.problems);
  } catch (const std::exception& e) {
    return Error{e.what()};
  }
  return m;
}

Result<HostManifest> read_host_manifest(const std::string& path) {
  const auto text = common::read_small_file(path, 64u << 20);
  if (!text) return Error{path + ": " + text.error()};
  auto m = parse_host_manifest(*text);
  if (!m) return Error{path + ": " + m.error()};
  return m;
}

}  // namespace cpupower::artifacts::host
