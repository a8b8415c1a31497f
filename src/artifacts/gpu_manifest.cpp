#include "artifacts/gpu_manifest.hpp"

#include <cmath>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

#include "artifacts/gpu_samples_check.hpp"
#include "common/json_fields.hpp"
#include "common/text.hpp"
#include "common/version.hpp"

namespace cpupower::artifacts {
namespace {

using Json = nlohmann::ordered_json;

// ---- writing --------------------------------------------------------------------------

using common::number_or_null;
using common::or_null;

Json reasons_json(const GpuReasons& reasons) {
  Json out = Json::array();
  for (const auto& c : reasons) out.push_back(c);
  return out;
}

Json assignment_json(const GpuAssignment& a) {
  return Json{{"worker_role", a.worker_role},
              {"worker_index", a.worker_index},
              {"worker_process", a.worker_process},
              {"het_group", or_null(a.het_group)}};
}

Json expected_device_json(const GpuExpectedDevice& d) {
  Json assignments = Json::array();
  for (const auto& a : d.assignments) assignments.push_back(assignment_json(a));
  return Json{{"hostname", d.hostname},
              {"gpu_index", d.gpu_index},
              {"assignments", std::move(assignments)}};
}

Json observed_device_json(const GpuObservedDevice& d) {
  return Json{{"hostname", d.hostname},
              {"gpu_index", d.gpu_index},
              {"gpu_uuids", d.gpu_uuids},
              {"first_sample_time_unix", number_or_null(d.first_sample_time_unix)},
              {"last_sample_time_unix", number_or_null(d.last_sample_time_unix)}};
}

Json validation_json(const GpuWindowValidation& v) {
  Json gaps = Json::object();
  for (const auto& [device, gap_s] : v.per_device_max_sample_gap_seconds) {
    gaps[device] = number_or_null(gap_s);
  }
  return Json{{"benchmark_type", v.benchmark_type},
              {"concurrency", v.concurrency},
              {"window_file", or_null(v.window_file)},
              {"power_coverage_valid", v.power_coverage_valid},
              {"reason_codes", reasons_json(v.reason_codes)},
              {"per_device_max_sample_gap_seconds", std::move(gaps)}};
}

template <typename T, typename F>
Json array_of(const std::vector<T>& items, F&& to_json) {
  Json out = Json::array();
  for (const auto& item : items) out.push_back(to_json(item));
  return out;
}

Json clock_sync_json_value(const ClockSyncCheck& c) {
  return Json{{"schema_version", c.schema_version},
              {"max_offset_seconds", number_or_null(c.max_offset_seconds)},
              {"nodes", array_of(c.nodes, [](const ClockSyncNode& n) {
                 return Json{{"hostname", n.hostname},
                             {"synchronized", n.synchronized},
                             {"offset_seconds", number_or_null(n.offset_seconds)},
                             {"tool", or_null(n.tool)},
                             {"output_file", or_null(n.output_file)}};
               })}};
}

// ---- reading --------------------------------------------------------------------------

// Thrown inside the parser only: the first key that is not what the contract says.
struct BadKey {
  std::string message;
};

const Json& need(const Json& obj, const std::string& where, const char* key) {
  const auto it = obj.find(key);
  if (it == obj.end()) throw BadKey{where + key + ": missing"};
  return *it;
}

[[noreturn]] void bad(const std::string& where, const char* key, const char* wanted) {
  throw BadKey{where + key + ": not " + wanted};
}

std::string get_string(const Json& obj, const std::string& where, const char* key) {
  const Json& v = need(obj, where, key);
  if (!v.is_string()) bad(where, key, "a string");
  return v.get<std::string>();
}

std::optional<std::string> get_string_or_null(const Json& obj, const std::string& where,
                                              const char* key) {
  const Json& v = need(obj, where, key);
  if (v.is_null()) return std::nullopt;
  if (!v.is_string()) bad(where, key, "a string or null");
  return v.get<std::string>();
}

long long get_int(const Json& obj, const std::string& where, const char* key) {
  const Json& v = need(obj, where, key);
  if (!v.is_number_integer() ||
      (v.is_number_unsigned() &&
       v.get<std::uint64_t>() >
           static_cast<std::uint64_t>(std::numeric_limits<long long>::max()))) {
    bad(where, key, "an integer");
  }
  return v.get<long long>();
}

std::optional<long long> get_int_or_null(const Json& obj, const std::string& where,
                                         const char* key) {
  if (need(obj, where, key).is_null()) return std::nullopt;
  return get_int(obj, where, key);
}

std::uint64_t get_count(const Json& obj, const std::string& where, const char* key) {
  const Json& v = need(obj, where, key);
  if (!v.is_number_integer() || (!v.is_number_unsigned() && v.get<long long>() < 0)) {
    bad(where, key, "an integer >= 0");
  }
  return v.get<std::uint64_t>();
}

double get_number(const Json& obj, const std::string& where, const char* key) {
  const Json& v = need(obj, where, key);
  if (!v.is_number() || !std::isfinite(v.get<double>())) bad(where, key, "a finite number");
  return v.get<double>();
}

std::optional<double> get_number_or_null(const Json& obj, const std::string& where,
                                         const char* key) {
  if (need(obj, where, key).is_null()) return std::nullopt;
  return get_number(obj, where, key);
}

bool get_bool(const Json& obj, const std::string& where, const char* key) {
  const Json& v = need(obj, where, key);
  if (!v.is_boolean()) bad(where, key, "a boolean");
  return v.get<bool>();
}

const Json& get_array(const Json& obj, const std::string& where, const char* key) {
  const Json& v = need(obj, where, key);
  if (!v.is_array()) bad(where, key, "an array");
  return v;
}

const Json& get_object(const Json& obj, const std::string& where, const char* key) {
  const Json& v = need(obj, where, key);
  if (!v.is_object()) bad(where, key, "an object");
  return v;
}

std::vector<std::string> get_strings(const Json& obj, const std::string& where, const char* key) {
  std::vector<std::string> out;
  for (const Json& s : get_array(obj, where, key)) {
    if (!s.is_string()) bad(where, key, "an array of strings");
    out.push_back(s.get<std::string>());
  }
  return out;
}

GpuReasons get_reasons(const Json& obj, const std::string& where, const char* key) {
  GpuReasons out;
  for (const auto& s : get_strings(obj, where, key)) out.add(s);
  return out;
}

// Each element of the array `key`, as an object, with its position for messages.
template <typename F>
void each_object(const Json& obj, const std::string& where, const char* key, F&& f) {
  std::size_t i = 0;
  for (const Json& item : get_array(obj, where, key)) {
    const std::string at = where + key + "[" + std::to_string(i++) + "].";
    if (!item.is_object()) throw BadKey{at.substr(0, at.size() - 1) + ": not an object"};
    f(item, at);
  }
}

GpuExpectedDevice expected_device(const Json& d, const std::string& at) {
  GpuExpectedDevice out{get_string(d, at, "hostname"), get_int(d, at, "gpu_index"), {}};
  each_object(d, at, "assignments", [&](const Json& a, const std::string& aat) {
    out.assignments.push_back({get_string(a, aat, "worker_role"), get_int(a, aat, "worker_index"),
                               get_int(a, aat, "worker_process"),
                               get_int_or_null(a, aat, "het_group")});
  });
  return out;
}

GpuObservedDevice observed_device(const Json& d, const std::string& at) {
  GpuObservedDevice out;
  out.hostname = get_string(d, at, "hostname");
  out.gpu_index = get_int(d, at, "gpu_index");
  out.gpu_uuids = get_strings(d, at, "gpu_uuids");
  out.first_sample_time_unix = get_number(d, at, "first_sample_time_unix");
  out.last_sample_time_unix = get_number(d, at, "last_sample_time_unix");
  return out;
}

GpuWindowValidation window_validation(const Json& v, const std::string& at) {
  GpuWindowValidation out;
  out.benchmark_type = get_string(v, at, "benchmark_type");
  out.concurrency = get_int(v, at, "concurrency");
  out.window_file = get_string_or_null(v, at, "window_file");
  out.power_coverage_valid = get_bool(v, at, "power_coverage_valid");
  out.reason_codes = get_reasons(v, at, "reason_codes");
  const Json& gaps = get_object(v, at, "per_device_max_sample_gap_seconds");
  const std::string gat = at + "per_device_max_sample_gap_seconds.";
  for (const auto& [device, gap] : gaps.items()) {
    out.per_device_max_sample_gap_seconds.emplace_back(device,
                                                       get_number(gaps, gat, device.c_str()));
  }
  return out;
}

GpuDcgmExporter dcgm_exporter(const Json& doc) {
  const std::string at = "dcgm_exporter.";
  const Json& e = get_object(doc, "", "dcgm_exporter");
  return {get_string(e, at, "container_image_resolved"),
          get_string_or_null(e, at, "container_image_sha256"), get_int(e, at, "port"),
          get_string(e, at, "command")};
}

void read_header_keys(const Json& doc, GpuManifest& m) {
  m.schema_version = static_cast<int>(get_int(doc, "", "schema_version"));
  m.producer = get_string(doc, "", "producer");
  m.producer_version = get_string(doc, "", "producer_version");
  m.producer_git_commit = get_string_or_null(doc, "", "producer_git_commit");
  m.source_metric = get_string(doc, "", "source_metric");
  m.unit = get_string(doc, "", "unit");
  m.power_scope = get_string(doc, "", "power_scope");
  m.samples_schema_version = static_cast<int>(get_int(doc, "", "samples_schema_version"));
  m.utilization_metrics.clear();
  each_object(doc, "", "utilization_metrics", [&](const Json& u, const std::string& at) {
    m.utilization_metrics.push_back({get_string(u, at, "column"),
                                     get_string(u, at, "source_metric"),
                                     get_string(u, at, "unit")});
  });
  m.timestamp_source = get_string(doc, "", "timestamp_source");
  m.job_id = get_string(doc, "", "job_id");
  m.run_name = get_string(doc, "", "run_name");
  m.sample_interval_seconds = get_number(doc, "", "sample_interval_seconds");
  m.request_timeout_seconds = get_number(doc, "", "request_timeout_seconds");
  m.max_scrape_duration_seconds = get_number_or_null(doc, "", "max_scrape_duration_seconds");
  m.required = get_bool(doc, "", "required");
}

void read_lifecycle_keys(const Json& doc, GpuManifest& m) {
  m.started_at_unix = get_number(doc, "", "started_at_unix");
  m.stopped_at_unix = get_number_or_null(doc, "", "stopped_at_unix");
  const auto status = parse_gpu_run_status(get_string(doc, "", "status"));
  if (!status) bad("", "status", "a known status");
  m.status = *status;
  const Json& valid = need(doc, "", "publication_valid");
  if (!valid.is_null() && !valid.is_boolean()) bad("", "publication_valid", "a boolean or null");
  m.publication_valid = valid.is_null() ? std::nullopt : std::optional<bool>(valid.get<bool>());
  m.dcgm_exporter = dcgm_exporter(doc);
}

void read_evidence_keys(const Json& doc, GpuManifest& m) {
  each_object(doc, "", "expected_devices", [&](const Json& d, const std::string& at) {
    m.expected_devices.push_back(expected_device(d, at));
  });
  each_object(doc, "", "observed_devices", [&](const Json& d, const std::string& at) {
    m.observed_devices.push_back(observed_device(d, at));
  });
  each_object(doc, "", "expected_windows", [&](const Json& w, const std::string& at) {
    m.expected_windows.push_back(
        {get_string(w, at, "benchmark_type"), get_int(w, at, "concurrency")});
  });
  m.scrape_count = get_count(doc, "", "scrape_count");
  m.sample_row_count = get_count(doc, "", "sample_row_count");
  m.samples_sha256 = get_string_or_null(doc, "", "samples_sha256");
  each_object(doc, "", "window_validations", [&](const Json& v, const std::string& at) {
    m.window_validations.push_back(window_validation(v, at));
  });
  each_object(doc, "", "artifact_errors", [&](const Json& e, const std::string& at) {
    m.artifact_errors.push_back({get_string(e, at, "path"), get_reasons(e, at, "reason_codes")});
  });
  // An addition to the contract's keys: read when present and not null.
  if (const auto it = doc.find("clock_sync_check"); it != doc.end() && !it->is_null()) {
    const std::string at = "clock_sync_check.";
    if (!it->is_object()) bad("", "clock_sync_check", "an object or null");
    ClockSyncCheck c;
    c.schema_version = static_cast<int>(get_int(*it, at, "schema_version"));
    c.max_offset_seconds = get_number(*it, at, "max_offset_seconds");
    each_object(*it, at, "nodes", [&](const Json& n, const std::string& where) {
      ClockSyncNode node;
      node.hostname = get_string(n, where, "hostname");
      node.synchronized = get_string(n, where, "synchronized");
      if (node.synchronized != "yes" && node.synchronized != "no" &&
          node.synchronized != "unknown") {
        bad(where, "synchronized", "yes, no or unknown");
      }
      node.offset_seconds = get_number_or_null(n, where, "offset_seconds");
      node.tool = get_string_or_null(n, where, "tool");
      node.output_file = get_string_or_null(n, where, "output_file");
      c.nodes.push_back(std::move(node));
    });
    m.clock_sync_check = std::move(c);
  }
  m.clock_sync_failures = get_strings(doc, "", "clock_sync_failures");
  m.reason_codes = get_reasons(doc, "", "reason_codes");
}

}  // namespace

std::vector<GpuUtilizationMetric> gpu_utilization_metrics(int samples_schema_version) {
  if (samples_schema_version < kGpuSamplesSchemaV2) return {};
  return {{"gpu_util_pct", "DCGM_FI_DEV_GPU_UTIL", "percent"},
          {"sm_active", "DCGM_FI_PROF_SM_ACTIVE", "fraction"}};
}

std::string gpu_manifest_json(const GpuManifest& m) {
  const Json exporter{
      {"container_image_resolved", m.dcgm_exporter.container_image_resolved},
      {"container_image_sha256", or_null(m.dcgm_exporter.container_image_sha256)},
      {"port", m.dcgm_exporter.port},
      {"command", m.dcgm_exporter.command},
  };
  const Json doc{
      {"schema_version", m.schema_version},
      {"producer", m.producer},
      {"producer_version", m.producer_version.empty() ? std::string(kVersion) : m.producer_version},
      {"producer_git_commit", or_null(m.producer_git_commit)},
      {"source_metric", m.source_metric},
      {"unit", m.unit},
      {"power_scope", m.power_scope},
      {"samples_schema_version", m.samples_schema_version},
      {"utilization_metrics", array_of(m.utilization_metrics,
                                       [](const GpuUtilizationMetric& u) {
                                         return Json{{"column", u.column},
                                                     {"source_metric", u.source_metric},
                                                     {"unit", u.unit}};
                                       })},
      {"timestamp_source", m.timestamp_source},
      {"job_id", m.job_id},
      {"run_name", m.run_name},
      {"sample_interval_seconds", number_or_null(m.sample_interval_seconds)},
      {"request_timeout_seconds", number_or_null(m.request_timeout_seconds)},
      {"max_scrape_duration_seconds", number_or_null(m.max_scrape_duration_seconds)},
      {"required", m.required},
      {"started_at_unix", number_or_null(m.started_at_unix)},
      {"stopped_at_unix", number_or_null(m.stopped_at_unix)},
      {"status", gpu_run_status_name(m.status)},
      {"publication_valid", or_null(m.publication_valid)},
      {"dcgm_exporter", exporter},
      {"expected_devices", array_of(m.expected_devices, expected_device_json)},
      {"observed_devices", array_of(m.observed_devices, observed_device_json)},
      {"expected_windows",
       array_of(m.expected_windows,
                [](const GpuWindowKey& w) {
                  return Json{{"benchmark_type", w.benchmark_type}, {"concurrency", w.concurrency}};
                })},
      {"scrape_count", m.scrape_count},
      {"sample_row_count", m.sample_row_count},
      {"samples_sha256", or_null(m.samples_sha256)},
      {"window_validations", array_of(m.window_validations, validation_json)},
      {"artifact_errors",
       array_of(m.artifact_errors,
                [](const GpuArtifactError& e) {
                  return Json{{"path", e.path}, {"reason_codes", reasons_json(e.reason_codes)}};
                })},
      {"clock_sync_failures", m.clock_sync_failures},
      {"reason_codes", reasons_json(m.reason_codes)},
      // An addition, after every key of the contract, so that readers of those ignore it.
      {"clock_sync_check",
       m.clock_sync_check ? clock_sync_json_value(*m.clock_sync_check) : Json(nullptr)},
  };
  // Replace invalid UTF-8 (a hostname or UUID from the wire) rather than throw.
  return doc.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

std::string clock_sync_check_json(const ClockSyncCheck& check) {
  return clock_sync_json_value(check).dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

Status write_gpu_manifest(const std::string& path, const GpuManifest& manifest) {
  return common::write_file_atomic(path, gpu_manifest_json(manifest), true);
}

Result<GpuManifest> parse_gpu_manifest(std::string_view json_text) {
  const Json doc = Json::parse(json_text, nullptr, false);
  if (doc.is_discarded()) return Error{"not JSON"};
  if (!doc.is_object()) return Error{"not a JSON object"};
  GpuManifest m;
  try {
    read_header_keys(doc, m);
    read_lifecycle_keys(doc, m);
    read_evidence_keys(doc, m);
  } catch (const BadKey& e) {
    return Error{e.message};
  }
  return m;
}

Result<GpuManifest> read_gpu_manifest(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error{path + ": cannot be read"};
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return Error{path + ": cannot be read"};
  auto m = parse_gpu_manifest(text.str());
  if (!m) return Error{path + ": " + m.error()};
  return m;
}

GpuPublication gpu_manifest_publication(const GpuManifest& m, const GpuReasons* samples_reasons) {
  GpuPublicationInputs in;
  in.status = m.status;
  in.expected_devices = m.expected_devices;
  in.observed_devices = m.observed_devices;
  in.expected_windows = m.expected_windows;
  in.window_validations = m.window_validations;
  in.samples_reasons = samples_reasons;
  in.artifact_errors = m.artifact_errors;
  return gpu_publication_valid(in);
}

GpuExpectedDeviceEntry read_gpu_expected_device(const nlohmann::json& d) {
  GpuExpectedDeviceEntry out;
  if (!d.is_object() || !d.contains("hostname") || !d["hostname"].is_string() ||
      !d.contains("gpu_index") || !d["gpu_index"].is_number_integer()) {
    out.error = ": needs a string hostname and an integer gpu_index";
    return out;
  }
  auto& device = out.device.emplace();
  device.hostname = d["hostname"].get<std::string>();
  device.gpu_index = d["gpu_index"].get<long long>();
  if (!d.contains("assignments")) return out;
  out.assignments = d["assignments"].is_array();
  if (!out.assignments) {
    out.error = ".assignments: not an array";
    return out;
  }
  const auto integer = [](const nlohmann::json& a, const char* key) {
    return a.contains(key) && a[key].is_number_integer()
               ? std::optional<long long>(a[key].get<long long>())
               : std::nullopt;
  };
  for (const auto& a : d["assignments"]) {
    if (!a.is_object() || !a.contains("worker_role") || !a["worker_role"].is_string()) {
      if (out.error.empty()) out.error = ".assignments: each needs a string worker_role";
      continue;
    }
    device.assignments.push_back(
        {a["worker_role"].get<std::string>(), integer(a, "worker_index").value_or(0),
         integer(a, "worker_process").value_or(0), integer(a, "het_group")});
  }
  return out;
}

Result<std::vector<GpuExpectedDevice>> read_gpu_roles_file(const std::string& path) {
  const auto text = common::read_small_file(path, 16u << 20);
  if (!text) return Error{text.error()};
  const auto json = nlohmann::json::parse(*text, nullptr, false);
  const auto* list = &json;
  if (json.is_object() && json.contains("expected_devices")) list = &json["expected_devices"];
  if (!list->is_array()) {
    return Error{path + ": expected a JSON array of devices or an object with expected_devices"};
  }
  std::vector<GpuExpectedDevice> out;
  for (std::size_t i = 0; i < list->size(); ++i) {
    auto entry = read_gpu_expected_device((*list)[i]);
    if (!entry.error.empty()) {
      return Error{path + ": expected_devices[" + std::to_string(i) + "]" + entry.error};
    }
    out.push_back(std::move(*entry.device));
  }
  return out;
}

GpuPublication settle_gpu_manifest(GpuManifest& m, GpuReasons reasons,
                                   const GpuSamplesCheck& samples) {
  m.observed_devices = samples.devices;
  m.scrape_count = samples.max_scrape_seq ? *samples.max_scrape_seq + 1 : 0;
  m.sample_row_count = samples.row_count;
  m.samples_sha256 = samples.sha256_hex;
  reasons.add_all(samples.reason_codes);
  reasons.add_all(gpu_device_reasons(m.expected_devices, m.observed_devices));
  for (const auto& v : m.window_validations) reasons.add_all(v.reason_codes);
  for (const auto& e : m.artifact_errors) reasons.add_all(e.reason_codes);
  m.status = gpu_terminal_status(reasons, m.required);
  m.reason_codes = std::move(reasons);
  const auto publication = gpu_manifest_publication(m, &samples.reason_codes);
  m.publication_valid = publication.valid;
  return publication;
}

}  // namespace cpupower::artifacts
