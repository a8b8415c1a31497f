#include "hostleg/manifest.hpp"

#include <cmath>
#include <exception>

#include "common/text.hpp"

namespace cpupower::hostleg {
namespace {

using Json = nlohmann::ordered_json;

// JSON has no NaN or infinity.
Json finite_or_null(double value) {
  if (!std::isfinite(value)) return nullptr;
  return value;
}

Json strings(const std::vector<std::string>& values) {
  Json out = Json::array();
  for (const auto& v : values) out.push_back(v);
  return out;
}

void get_string(const Json& doc, const char* key, std::string& out) {
  const auto it = doc.find(key);
  if (it != doc.end() && it->is_string()) out = it->get<std::string>();
}

void get_strings(const Json& doc, const char* key, std::vector<std::string>& out) {
  const auto it = doc.find(key);
  if (it == doc.end() || !it->is_array()) return;
  out.clear();
  for (const auto& v : *it) {
    if (v.is_string()) out.push_back(v.get<std::string>());
  }
}

void get_number(const Json& doc, const char* key, double& out) {
  const auto it = doc.find(key);
  if (it != doc.end() && it->is_number()) out = it->get<double>();
}

void get_count(const Json& doc, const char* key, std::uint64_t& out) {
  const auto it = doc.find(key);
  if (it != doc.end() && it->is_number_unsigned()) out = it->get<std::uint64_t>();
}

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
  doc["sample_interval_seconds"] = finite_or_null(m.sample_interval_seconds);
  doc["expected_nodes"] = strings(m.expected_nodes);
  doc["observed_nodes"] = strings(m.observed_nodes);
  doc["missing_nodes"] = strings(m.missing_nodes);
  doc["sample_row_count"] = m.sample_row_count;
  doc["reason_codes"] = strings(m.reason_codes);
  doc["failed_processes"] = strings(m.failed_processes);
  doc["producer_git_commit"] = m.producer_git_commit ? Json(*m.producer_git_commit) : Json(nullptr);
  doc["node_metadata"] = std::move(metadata);
  doc["updated_at_unix"] = finite_or_null(m.updated_at_unix);
  doc["malformed_rows"] = m.malformed_rows;
  doc["torn_rows"] = m.torn_rows;
  doc["dropped_groups"] = m.dropped_groups;
  doc["malformed_files"] = strings(m.malformed_files);
  doc["ready_errors"] = std::move(ready_errors);
  doc["problems"] = strings(m.problems);
  return doc.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

bool write_host_manifest(const std::string& path, const HostManifest& manifest,
                         std::string* error) {
  std::string text;
  try {
    text = render_host_manifest(manifest);
  } catch (const std::exception& e) {
    if (error) *error = path + ": " + e.what();
    return false;
  }
  return common::write_file_atomic(path, text, error, true);
}

std::optional<HostManifest> parse_host_manifest(std::string_view text, std::string* error) {
  const Json doc = Json::parse(text, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) {
    if (error) *error = "not a JSON object";
    return std::nullopt;
  }
  HostManifest m;
  try {
    get_string(doc, "job_id", m.job_id);
    get_string(doc, "run_name", m.run_name);
    get_string(doc, "status", m.status);
    if (const auto it = doc.find("required"); it != doc.end() && it->is_boolean()) {
      m.required = it->get<bool>();
    }
    get_string(doc, "requested_source", m.requested_source);
    get_number(doc, "sample_interval_seconds", m.sample_interval_seconds);
    get_strings(doc, "expected_nodes", m.expected_nodes);
    get_strings(doc, "observed_nodes", m.observed_nodes);
    get_strings(doc, "missing_nodes", m.missing_nodes);
    get_count(doc, "sample_row_count", m.sample_row_count);
    get_strings(doc, "reason_codes", m.reason_codes);
    get_strings(doc, "failed_processes", m.failed_processes);
    if (const auto it = doc.find("producer_git_commit"); it != doc.end() && it->is_string()) {
      m.producer_git_commit = it->get<std::string>();
    }
    if (const auto it = doc.find("node_metadata"); it != doc.end() && it->is_object()) {
      for (const auto& [host, value] : it->items()) m.node_metadata[host] = value;
    }
    get_number(doc, "updated_at_unix", m.updated_at_unix);
    get_count(doc, "malformed_rows", m.malformed_rows);
    get_count(doc, "torn_rows", m.torn_rows);
    get_count(doc, "dropped_groups", m.dropped_groups);
    get_strings(doc, "malformed_files", m.malformed_files);
    if (const auto it = doc.find("ready_errors"); it != doc.end() && it->is_object()) {
      for (const auto& [host, value] : it->items()) {
        if (value.is_string()) m.ready_errors[host] = value.get<std::string>();
      }
    }
    get_strings(doc, "problems", m.problems);
  } catch (const std::exception& e) {
    if (error) *error = e.what();
    return std::nullopt;
  }
  return m;
}

std::optional<HostManifest> read_host_manifest(const std::string& path, std::string* error) {
  std::string why;
  const auto text = common::read_small_file(path, &why, 64u << 20);
  if (!text) {
    if (error) *error = path + ": " + why;
    return std::nullopt;
  }
  auto m = parse_host_manifest(*text, &why);
  if (!m && error) *error = path + ": " + why;
  return m;
}

}  // namespace cpupower::hostleg
