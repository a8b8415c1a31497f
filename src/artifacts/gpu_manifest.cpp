#include "artifacts/gpu_manifest.hpp"

#include <algorithm>
#include <cmath>
#include <concepts>
#include <limits>
#include <nlohmann/json.hpp>

#include "artifacts/gpu_samples_check.hpp"
#include "common/json_fields.hpp"
#include "common/text.hpp"
#include "common/version.hpp"

namespace cpupower::artifacts {
namespace {

using Json = nlohmann::ordered_json;
using common::is_optional;
using common::number_or_null;

// ---- the keys of each object, in the contract's order ----------------------------------

// One list per object of the manifest, f(key, member), that the writer and the strict reader
// both walk, so a key is spelled, placed and typed once.
template <class T, class U>
concept Is = std::same_as<std::remove_const_t<T>, U>;

// What a clock check node's `synchronized` may say.
constexpr std::string_view kClockStates[] = {"yes", "no", "unknown"};

void fields(Is<GpuUtilizationMetric> auto& u, auto&& f) {
  f("column", u.column);
  f("source_metric", u.source_metric);
  f("unit", u.unit);
}

void fields(Is<GpuAssignment> auto& a, auto&& f) {
  f("worker_role", a.worker_role);
  f("worker_index", a.worker_index);
  f("worker_process", a.worker_process);
  f("het_group", a.het_group);
}

void fields(Is<GpuExpectedDevice> auto& d, auto&& f) {
  f("hostname", d.hostname);
  f("gpu_index", d.gpu_index);
  f("assignments", d.assignments);
}

// sample_times_unix is not written.
void fields(Is<GpuObservedDevice> auto& d, auto&& f) {
  f("hostname", d.hostname);
  f("gpu_index", d.gpu_index);
  f("gpu_uuids", d.gpu_uuids);
  f("first_sample_time_unix", d.first_sample_time_unix);
  f("last_sample_time_unix", d.last_sample_time_unix);
}

void fields(Is<GpuWindowKey> auto& w, auto&& f) {
  f("benchmark_type", w.benchmark_type);
  f("concurrency", w.concurrency);
}

void fields(Is<GpuWindowValidation> auto& v, auto&& f) {
  f("benchmark_type", v.benchmark_type);
  f("concurrency", v.concurrency);
  f("window_file", v.window_file);
  f("power_coverage_valid", v.power_coverage_valid);
  f("reason_codes", v.reason_codes);
  f("per_device_max_sample_gap_seconds", v.per_device_max_sample_gap_seconds);
}

void fields(Is<GpuArtifactError> auto& e, auto&& f) {
  f("path", e.path);
  f("reason_codes", e.reason_codes);
}

void fields(Is<GpuDcgmExporter> auto& e, auto&& f) {
  f("container_image_resolved", e.container_image_resolved);
  f("container_image_sha256", e.container_image_sha256);
  f("port", e.port);
  f("command", e.command);
}

void fields(Is<ClockSyncNode> auto& n, auto&& f) {
  f("hostname", n.hostname);
  f("synchronized", n.synchronized, kClockStates);
  f("offset_seconds", n.offset_seconds);
  f("tool", n.tool);
  f("output_file", n.output_file);
}

void fields(Is<ClockSyncCheck> auto& c, auto&& f) {
  f("schema_version", c.schema_version);
  f("max_offset_seconds", c.max_offset_seconds);
  f("nodes", c.nodes);
}

// In the order they are read; gpu_manifest_json moves clock_sync_check, an addition to the
// contract's keys, after all of them.
void fields(Is<GpuManifest> auto& m, auto&& f) {
  f("schema_version", m.schema_version);
  f("producer", m.producer);
  f("producer_version", m.producer_version);
  f("producer_git_commit", m.producer_git_commit);
  f("source_metric", m.source_metric);
  f("unit", m.unit);
  f("power_scope", m.power_scope);
  f("samples_schema_version", m.samples_schema_version);
  f("utilization_metrics", m.utilization_metrics);
  f("timestamp_source", m.timestamp_source);
  f("job_id", m.job_id);
  f("run_name", m.run_name);
  f("sample_interval_seconds", m.sample_interval_seconds);
  f("request_timeout_seconds", m.request_timeout_seconds);
  f("max_scrape_duration_seconds", m.max_scrape_duration_seconds);
  f("required", m.required);
  f("started_at_unix", m.started_at_unix);
  f("stopped_at_unix", m.stopped_at_unix);
  f("status", m.status);
  f("publication_valid", m.publication_valid);
  f("dcgm_exporter", m.dcgm_exporter);
  f("expected_devices", m.expected_devices);
  f("observed_devices", m.observed_devices);
  f("expected_windows", m.expected_windows);
  f("scrape_count", m.scrape_count);
  f("sample_row_count", m.sample_row_count);
  f("samples_sha256", m.samples_sha256);
  f("window_validations", m.window_validations);
  f("artifact_errors", m.artifact_errors);
  f("clock_sync_check", m.clock_sync_check);
  f("clock_sync_failures", m.clock_sync_failures);
  f("reason_codes", m.reason_codes);
}

using Gaps = std::vector<std::pair<std::string, double>>;

// ---- writing: a number that is not finite is null, an unset optional null ---------------

template <class T>
Json to_json(const T& v) {
  if constexpr (std::is_same_v<T, double> || std::is_same_v<T, std::optional<double>>) {
    return number_or_null(v);
  } else if constexpr (is_optional<T>::value) {
    return v ? to_json(*v) : Json(nullptr);
  } else if constexpr (std::is_same_v<T, GpuRunStatus>) {
    return gpu_run_status_name(v);
  } else if constexpr (std::is_same_v<T, ReasonSet>) {
    return v.codes();
  } else if constexpr (std::is_same_v<T, Gaps>) {
    Json out = Json::object();
    for (const auto& [device, gap_s] : v) out[device] = number_or_null(gap_s);
    return out;
  } else if constexpr (std::is_arithmetic_v<T> || std::is_same_v<T, std::string>) {
    return v;
  } else if constexpr (requires { v.begin(); }) {
    Json out = Json::array();
    for (const auto& item : v) out.push_back(to_json(item));
    return out;
  } else {
    Json out = Json::object();
    fields(v, [&](std::string_view key, const auto& member, auto&&...) {
      out[std::string(key)] = to_json(member);
    });
    return out;
  }
}

// ---- reading: every key present with its type -------------------------------------------

// Thrown inside the parser only: the first key that is not what the contract says.
struct BadKey {
  std::string message;
};

// The members of one object; `where` ("", "dcgm_exporter.", "expected_devices[0].") is
// what messages put before a key.
struct Reader {
  const Json& obj;
  std::string where;

  [[noreturn]] void bad(std::string_view key, const std::string& wanted) const {
    throw BadKey{where + std::string(key) + ": not " + wanted};
  }

  template <class T>
  void operator()(std::string_view key, T& out) const {
    const auto it = obj.find(std::string(key));
    if constexpr (std::is_same_v<T, std::optional<ClockSyncCheck>>) {
      if (it == obj.end()) return;  // an addition: older manifests lack it
    }
    if (it == obj.end()) throw BadKey{where + std::string(key) + ": missing"};
    read(*it, key, out);
  }

  void operator()(std::string_view key, std::string& out,
                  std::span<const std::string_view> allowed) const {
    (*this)(key, out);
    if (std::find(allowed.begin(), allowed.end(), out) != allowed.end()) return;
    std::string wanted;
    for (std::size_t i = 0; i < allowed.size(); ++i) {
      wanted += (i == 0 ? "" : i + 1 == allowed.size() ? " or " : ", ") + std::string(allowed[i]);
    }
    bad(key, wanted);
  }

  // `null`: " or null" where the contract allows null and says so.
  template <class T>
  void read(const Json& v, std::string_view key, T& out, const char* null = "") const {
    if constexpr (is_optional<T>::value) {
      using V = typename T::value_type;
      out.reset();
      if (v.is_null()) return;
      read(v, key, out.emplace(),
           std::is_arithmetic_v<V> && !std::is_same_v<V, bool> ? "" : " or null");
    } else if constexpr (std::is_same_v<T, std::string>) {
      if (!v.is_string()) bad(key, std::string("a string") + null);
      out = v.template get<std::string>();
    } else if constexpr (std::is_same_v<T, bool>) {
      if (!v.is_boolean()) bad(key, std::string("a boolean") + null);
      out = v.template get<bool>();
    } else if constexpr (std::is_same_v<T, double>) {
      if (!v.is_number() || !std::isfinite(v.template get<double>())) bad(key, "a finite number");
      out = v.template get<double>();
    } else if constexpr (std::is_same_v<T, std::uint64_t>) {
      if (!v.is_number_integer() || (!v.is_number_unsigned() && v.template get<long long>() < 0)) {
        bad(key, "an integer >= 0");
      }
      out = v.template get<std::uint64_t>();
    } else if constexpr (std::is_same_v<T, long long> || std::is_same_v<T, int>) {
      if (!v.is_number_integer() ||
          (v.is_number_unsigned() &&
           v.template get<std::uint64_t>() >
               static_cast<std::uint64_t>(std::numeric_limits<long long>::max()))) {
        bad(key, "an integer");
      }
      out = static_cast<T>(v.template get<long long>());
    } else if constexpr (std::is_same_v<T, GpuRunStatus>) {
      std::string name;
      read(v, key, name);
      const auto status = parse_gpu_run_status(name);
      if (!status) bad(key, "a known status");
      out = *status;
    } else if constexpr (std::is_same_v<T, std::vector<std::string>> ||
                         std::is_same_v<T, ReasonSet>) {
      if (!v.is_array()) bad(key, "an array");
      out = {};
      for (const Json& s : v) {
        if (!s.is_string()) bad(key, "an array of strings");
        if constexpr (std::is_same_v<T, ReasonSet>) {
          out.add(s.template get<std::string>());
        } else {
          out.push_back(s.template get<std::string>());
        }
      }
    } else if constexpr (std::is_same_v<T, Gaps>) {
      if (!v.is_object()) bad(key, "an object");
      out.clear();
      for (const auto& [device, gap] : v.items()) {
        read(gap, std::string(key) + "." + device, out.emplace_back(device, 0).second);
      }
    } else if constexpr (requires { out.begin(); }) {
      if (!v.is_array()) bad(key, "an array");
      out.clear();
      for (const Json& item : v) {
        const std::string at = std::string(key) + "[" + std::to_string(out.size()) + "]";
        read(item, at, out.emplace_back());
      }
    } else {
      if (!v.is_object()) bad(key, std::string("an object") + null);
      fields(out, Reader{v, where + std::string(key) + "."});
    }
  }
};

}  // namespace

std::vector<GpuUtilizationMetric> gpu_utilization_metrics(int samples_schema_version) {
  if (samples_schema_version < kGpuSamplesSchemaV2) return {};
  return {{"gpu_util_pct", "DCGM_FI_DEV_GPU_UTIL", "percent"},
          {"sm_active", "DCGM_FI_PROF_SM_ACTIVE", "fraction"}};
}

std::string gpu_manifest_json(const GpuManifest& m) {
  Json doc = to_json(m);
  if (m.producer_version.empty()) doc["producer_version"] = kVersion;
  // An addition, after every key of the contract, so that readers of those ignore it.
  Json clock = std::move(doc["clock_sync_check"]);
  doc.erase("clock_sync_check");
  doc["clock_sync_check"] = std::move(clock);
  // Replace invalid UTF-8 (a hostname or UUID from the wire) rather than throw.
  return doc.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

std::string clock_sync_check_json(const ClockSyncCheck& check) {
  return to_json(check).dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
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
    fields(m, Reader{doc, ""});
  } catch (const BadKey& e) {
    return Error{e.message};
  }
  return m;
}

Result<GpuManifest> read_gpu_manifest(const std::string& path) {
  const auto text = common::read_small_file(path, SIZE_MAX);
  if (!text) return Error{path + ": cannot be read: " + text.error()};
  auto m = parse_gpu_manifest(*text);
  if (!m) return Error{path + ": " + m.error()};
  return m;
}

GpuPublication gpu_manifest_publication(const GpuManifest& m, const GpuReasons* samples_reasons) {
  return gpu_publication_valid({m.status, m.expected_devices, m.observed_devices,
                                m.expected_windows, m.window_validations, samples_reasons,
                                m.artifact_errors});
}

GpuExpectedDeviceEntry read_gpu_expected_device(const nlohmann::json& d) {
  using common::get_to;
  GpuExpectedDeviceEntry out;
  GpuExpectedDevice device;
  if (!d.is_object() || !get_to(d, "hostname", device.hostname) ||
      !get_to(d, "gpu_index", device.gpu_index)) {
    out.error = ": needs a string hostname and an integer gpu_index";
    return out;
  }
  auto& assignments = out.device.emplace(std::move(device)).assignments;
  const auto list = d.find("assignments");
  if (list == d.end()) return out;
  out.assignments = list->is_array();
  if (!out.assignments) {
    out.error = ".assignments: not an array";
    return out;
  }
  for (const auto& a : *list) {
    GpuAssignment assignment;
    if (!a.is_object() || !get_to(a, "worker_role", assignment.worker_role)) {
      if (out.error.empty()) out.error = ".assignments: each needs a string worker_role";
      continue;
    }
    get_to(a, "worker_index", assignment.worker_index);
    get_to(a, "worker_process", assignment.worker_process);
    get_to(a, "het_group", assignment.het_group);
    assignments.push_back(std::move(assignment));
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
