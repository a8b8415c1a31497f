#include "artifacts/gpu_windows.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>

#include "artifacts/gpu_reasons.hpp"
#include "common/enum_names.hpp"
#include "common/json_fields.hpp"
#include "common/text.hpp"

namespace cpupower::artifacts {
namespace {

namespace fs = std::filesystem;
namespace reason = gpu_reason;
using ParsedJson = nlohmann::json;
using OrderedJson = nlohmann::ordered_json;

using common::number_or_null;

// The member `key` of an object, or null when absent (Python's dict.get).
const ParsedJson& member(const ParsedJson& obj, const char* key) {
  static const ParsedJson kNull;
  const auto it = obj.find(key);
  return it == obj.end() ? kNull : *it;
}

bool finite_number(const ParsedJson& v) {
  return v.is_number() && std::isfinite(v.get<double>());
}

bool strict_int(const ParsedJson& v) {
  return v.is_number_integer() &&
         (v.is_number_unsigned() ? v.get<std::uint64_t>() <= INT64_MAX : true);
}

// A number or null that the status table may reject: a present value that is not a finite
// number becomes NaN, so no status accepts it.
std::optional<double> optional_number(const ParsedJson& v) {
  if (v.is_null()) return std::nullopt;
  return finite_number(v) ? v.get<double>() : std::nan("");
}

bool non_empty(const std::optional<std::string>& s) {
  return s && !s->empty();
}

bool finite(const std::optional<double>& v) {
  return v && std::isfinite(*v);
}

// The components of a POSIX path as Python's PurePosixPath keeps them ("" and "." dropped).
std::vector<std::string_view> components(std::string_view path) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  while (start <= path.size()) {
    const auto slash = path.find('/', start);
    const auto end = slash == std::string_view::npos ? path.size() : slash;
    const auto part = path.substr(start, end - start);
    if (!part.empty() && part != ".") out.push_back(part);
    start = end + 1;
  }
  return out;
}

// The index of a name's suffix dot (Python: 0 < i < len - 1), or npos.
std::size_t suffix_dot(std::string_view name) {
  const auto i = name.rfind('.');
  return i != std::string_view::npos && i > 0 && i + 1 < name.size() ? i : std::string_view::npos;
}

std::string last_component(std::string_view path) {
  const auto parts = components(path);
  return parts.empty() ? std::string() : std::string(parts.back());
}

// Whether root/relative, symlinks resolved, is root or below it.
bool stays_below(const fs::path& root, std::string_view relative) {
  std::error_code ec;
  const fs::path r = fs::weakly_canonical(fs::absolute(root, ec), ec);
  if (ec) return false;
  const fs::path p = fs::weakly_canonical(fs::absolute(root / std::string(relative), ec), ec);
  if (ec) return false;
  auto ri = r.begin();
  for (auto pi = p.begin(); ri != r.end() && pi != p.end(); ++ri, ++pi) {
    if (*ri != *pi) return false;
  }
  return ri == r.end() || (std::next(ri) == r.end() && ri->empty());
}

GpuWindowParse malformed(std::string_view code) {
  return {std::nullopt, {code}};
}

// parse_gpu_window, with the check that the result path resolves below the result root at
// the point the contract makes it (after the lexical check, before the status table).
GpuWindowParse parse_window(std::string_view text, std::string_view window_stem,
                            const std::function<bool(std::string_view)>& below_root) {
  const ParsedJson doc = ParsedJson::parse(text, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) return malformed(reason::kWindowMalformed);
  const ParsedJson& schema = member(doc, "schema_version");
  const ParsedJson& clock = member(doc, "clock_source");
  const ParsedJson& status_name = member(doc, "status");
  const ParsedJson& type = member(doc, "benchmark_type");
  const ParsedJson& concurrency = member(doc, "concurrency");
  const ParsedJson& start = member(doc, "benchmark_start_time_unix");
  const auto status = status_name.is_string()
                          ? parse_gpu_window_status(status_name.get<std::string>())
                          : std::nullopt;
  if (!strict_int(schema) || schema.get<long long>() != kGpuContractSchemaVersion ||
      !clock.is_string() || clock.get<std::string>() != kGpuClockSource || !status ||
      !type.is_string() || !strict_int(concurrency) || !finite_number(start)) {
    return malformed(reason::kWindowMalformed);
  }
  const ParsedJson& result_path = member(doc, "result_path");
  if (!result_path.is_string()) return malformed(reason::kWindowResultPathInvalid);
  const auto path = result_path.get<std::string>();
  if (!is_safe_relative_subpath(path) || (below_root && !below_root(path)) ||
      python_path_stem(path) != window_stem) {
    return malformed(reason::kWindowResultPathInvalid);
  }
  const ParsedJson& why = member(doc, "reason");
  if (!why.is_null() && !why.is_string()) return malformed(reason::kWindowMalformed);
  GpuWindowFile w;
  w.benchmark_type = type.get<std::string>();
  w.result_path = path;
  w.concurrency = concurrency.get<long long>();
  w.benchmark_start_time_unix = start.get<double>();
  w.benchmark_end_time_unix = optional_number(member(doc, "benchmark_end_time_unix"));
  w.duration_s = optional_number(member(doc, "duration"));
  w.status = *status;
  if (why.is_string()) w.reason = why.get<std::string>();
  if (!gpu_window_invariants_hold(w)) return malformed(reason::kWindowMalformed);
  GpuWindowParse out;
  out.window = std::move(w);
  return out;
}

std::optional<double> result_time(const ParsedJson& doc, const char* key) {
  const ParsedJson& v = member(doc, key);
  if (!finite_number(v)) return std::nullopt;
  return v.get<double>();
}

bool sample_loss_exceeded(const std::vector<double>& seq, const std::optional<double>& interval_s) {
  if (!interval_s || !std::isfinite(*interval_s) || *interval_s <= 0) return true;
  const double expected = std::floor((seq.back() - seq.front()) / *interval_s);
  if (!(expected > 0)) return false;
  std::vector<double> unique_times(seq);  // sorted, so equal times are adjacent
  unique_times.erase(std::unique(unique_times.begin(), unique_times.end()), unique_times.end());
  const double observed = static_cast<double>(unique_times.size()) - 1;
  const double missing = std::max(0.0, expected - observed);
  return missing / expected > kGpuMaxMissingSampleFraction;
}

const GpuObservedDevice* find_device(std::span<const GpuObservedDevice> devices,
                                     const GpuDeviceKey& key) {
  const auto it = std::find_if(devices.begin(), devices.end(),
                               [&](const GpuObservedDevice& d) { return d.key() == key; });
  return it == devices.end() ? nullptr : &*it;
}

GpuArtifactError artifact_error(std::string path, std::string_view code) {
  return {std::move(path), {code}};
}

}  // namespace

// ---- the window file ------------------------------------------------------------------

constexpr common::EnumName<GpuWindowStatus> kWindowStatusNames[] = {
    {GpuWindowStatus::running, "running"},
    {GpuWindowStatus::interrupted, "interrupted"},
    {GpuWindowStatus::completed, "completed"},
    {GpuWindowStatus::failed, "failed"}};

std::string_view gpu_window_status_name(GpuWindowStatus status) {
  return common::name_of(kWindowStatusNames, status, "running");
}

std::optional<GpuWindowStatus> parse_gpu_window_status(std::string_view name) {
  return common::parse(kWindowStatusNames, name);
}

std::string gpu_window_json(const GpuWindowFile& w) {
  const OrderedJson doc{
      {"schema_version", w.schema_version},
      {"benchmark_type", w.benchmark_type},
      {"result_path", w.result_path},
      {"concurrency", w.concurrency},
      {"benchmark_start_time_unix", number_or_null(w.benchmark_start_time_unix)},
      {"benchmark_end_time_unix", number_or_null(w.benchmark_end_time_unix)},
      {"duration", number_or_null(w.duration_s)},
      {"clock_source", w.clock_source},
      {"status", gpu_window_status_name(w.status)},
      {"reason", w.reason ? OrderedJson(*w.reason) : OrderedJson(nullptr)},
  };
  return doc.dump(2, ' ', false, OrderedJson::error_handler_t::replace) + "\n";
}

Status write_gpu_window(const std::string& path, const GpuWindowFile& window) {
  return common::write_file_atomic(path, gpu_window_json(window), true);
}

std::string derived_window_result_json(const DerivedWindowResult& r) {
  const OrderedJson doc{
      {"benchmark_type", r.benchmark_type},
      {"concurrency", r.concurrency},
      {"benchmark_start_time_unix", r.start_unix},
      {"benchmark_end_time_unix", r.end_unix},
      {"duration", r.duration_s},
      {"derived_from", r.derived_from},
      {"derivation", r.derivation},
  };
  return doc.dump(2, ' ', false, OrderedJson::error_handler_t::replace) + "\n";
}

Status write_derived_window_result(const std::string& path, const DerivedWindowResult& result) {
  std::error_code ec;
  fs::create_directories(fs::path(path).parent_path(), ec);
  return common::write_file_atomic(path, derived_window_result_json(result), true);
}

bool gpu_window_invariants_hold(const GpuWindowFile& w) {
  const bool open = !w.benchmark_end_time_unix && !w.duration_s;
  switch (w.status) {
    case GpuWindowStatus::running:
      return open && !w.reason;
    case GpuWindowStatus::interrupted:
      return open && non_empty(w.reason);
    case GpuWindowStatus::completed:
    case GpuWindowStatus::failed:
      break;
  }
  if (!finite(w.benchmark_end_time_unix) || !finite(w.duration_s) || *w.duration_s <= 0) {
    return false;
  }
  return w.status == GpuWindowStatus::completed ? !w.reason : non_empty(w.reason);
}

bool is_safe_relative_subpath(std::string_view path) {
  if (path.empty() || path.front() == '/' || path.front() == '~') return false;
  if (path.find('\0') != std::string_view::npos) return false;
  const auto parts = components(path);
  return !parts.empty() && std::find(parts.begin(), parts.end(), "..") == parts.end();
}

std::string python_path_stem(std::string_view path) {
  const std::string name = last_component(path);
  const auto dot = suffix_dot(name);
  return dot == std::string_view::npos ? name : name.substr(0, dot);
}

std::string python_path_suffix(std::string_view path) {
  const std::string name = last_component(path);
  const auto dot = suffix_dot(name);
  return dot == std::string_view::npos ? std::string() : name.substr(dot);
}

GpuWindowParse parse_gpu_window(std::string_view json_text, std::string_view window_stem) {
  return parse_window(json_text, window_stem, {});
}

// ---- the result file ------------------------------------------------------------------

GpuWindowResult read_gpu_window_result(const std::string& path) {
  GpuWindowResult out;
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return out;
  const auto text = common::read_small_file(path, SIZE_MAX);
  if (!text) return out;
  const ParsedJson doc = ParsedJson::parse(*text, nullptr, false);
  if (doc.is_discarded()) return out;
  out.found = true;
  out.is_object = doc.is_object();
  if (!out.is_object) return out;
  out.start_time_unix = result_time(doc, "benchmark_start_time_unix");
  out.end_time_unix = result_time(doc, "benchmark_end_time_unix");
  out.duration_s = result_time(doc, "duration");
  return out;
}

GpuReasons gpu_window_result_reasons(const GpuWindowFile& w, const GpuWindowResult& r) {
  if (!r.found) return {reason::kWindowResultMissing};
  if (!r.is_object) return {reason::kWindowResultMismatch};
  if (!finite(w.benchmark_end_time_unix) || !finite(w.duration_s))
    return {reason::kWindowMalformed};
  if (r.start_time_unix != w.benchmark_start_time_unix ||
      r.end_time_unix != w.benchmark_end_time_unix || r.duration_s != w.duration_s) {
    return {reason::kWindowResultMismatch};
  }
  const double wall_s = *w.benchmark_end_time_unix - w.benchmark_start_time_unix;
  if (wall_s <= 0) return {reason::kWindowClockMismatch};
  const double tolerance_s =
      std::max(kGpuWindowClockToleranceS, kGpuWindowClockToleranceFraction * *w.duration_s);
  if (std::abs(wall_s - *w.duration_s) > tolerance_s) return {reason::kWindowClockMismatch};
  return {};
}

// ---- coverage and validation ----------------------------------------------------------

std::optional<std::vector<double>> bracketing_samples(std::span<const double> times, double start,
                                                      double end) {
  const auto after_start = std::upper_bound(times.begin(), times.end(), start);
  const auto at_end = std::lower_bound(times.begin(), times.end(), end);
  if (after_start == times.begin() || at_end == times.end()) return std::nullopt;
  std::vector<double> seq{*std::prev(after_start)};
  if (after_start < at_end) seq.insert(seq.end(), after_start, at_end);
  seq.push_back(*at_end);
  return seq;
}

double largest_sample_gap_s(std::span<const double> seq) {
  double largest = 0.0;
  for (std::size_t i = 1; i < seq.size(); ++i) largest = std::max(largest, seq[i] - seq[i - 1]);
  return largest;
}

GpuWindowCoverage gpu_window_coverage(double start_unix, double end_unix,
                                      const GpuCoverageInputs& in) {
  GpuWindowCoverage out;
  std::set<GpuDeviceKey> keys;
  for (const auto& d : in.expected_devices) keys.insert(d.key());
  for (const auto& key : keys) {
    const GpuObservedDevice* device = find_device(in.observed_devices, key);
    if (!device) {
      out.reason_codes.add(reason::kWindowNotBracketed);
      continue;
    }
    if (device->gpu_uuids.size() != 1) {
      out.reason_codes.add(reason::kGpuUuidChanged);
      continue;
    }
    std::vector<double> times = device->sample_times_unix;
    if (!std::is_sorted(times.begin(), times.end())) std::sort(times.begin(), times.end());
    const auto seq = bracketing_samples(times, start_unix, end_unix);
    if (!seq) {
      out.reason_codes.add(reason::kWindowNotBracketed);
      continue;
    }
    const double gap_s = largest_sample_gap_s(*seq);
    out.per_device_max_sample_gap_seconds.emplace_back(
        device->hostname + "/" + device->gpu_uuids.front(), gap_s);
    if (gap_s > common::kMaxSampleGapS) out.reason_codes.add(reason::kSampleGapExceeded);
    if (sample_loss_exceeded(*seq, in.sample_interval_s)) {
      out.reason_codes.add(reason::kSampleLossExceeded);
    }
  }
  return out;
}

GpuWindowValidation validate_gpu_window(const GpuWindowKey& expected, const GpuScannedWindow* found,
                                        bool duplicated, const GpuWindowResult& result,
                                        const GpuCoverageInputs& coverage) {
  GpuWindowValidation v;
  v.benchmark_type = expected.benchmark_type;
  v.concurrency = expected.concurrency;
  if (!found) {
    v.reason_codes.add(duplicated ? reason::kWindowDuplicate : reason::kWindowMissing);
    return v;
  }
  v.window_file = found->relative_path;
  const GpuWindowFile& w = found->window;
  if (w.status != GpuWindowStatus::completed) {
    v.reason_codes.add(reason::kWindowIncomplete);
  } else {
    v.reason_codes.add_all(gpu_window_result_reasons(w, result));
  }
  if (v.reason_codes.empty()) {
    if (!finite(w.benchmark_end_time_unix)) {
      v.reason_codes.add(reason::kWindowMalformed);
    } else {
      auto c =
          gpu_window_coverage(w.benchmark_start_time_unix, *w.benchmark_end_time_unix, coverage);
      v.reason_codes.add_all(c.reason_codes);
      v.per_device_max_sample_gap_seconds = std::move(c.per_device_max_sample_gap_seconds);
    }
  }
  v.power_coverage_valid = v.reason_codes.empty();
  return v;
}

// ---- the windows directory ------------------------------------------------------------

GpuWindowScan scan_gpu_windows(const std::string& power_dir, const std::string& result_root) {
  GpuWindowScan out;
  const fs::path dir = fs::path(power_dir) / kGpuWindowsDirname;
  const std::string dir_name(kGpuWindowsDirname);
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return out;
  // Rejecting symlinked entries alone would still let windows/ itself be a symlink.
  const bool inside = stays_below(power_dir, kGpuWindowsDirname);
  std::vector<std::string> names;
  for (fs::directory_iterator it(dir, ec), end; inside && !ec && it != end; it.increment(ec)) {
    names.push_back(it->path().filename().string());
  }
  if (!inside || ec) {
    out.artifact_errors.push_back(artifact_error(dir_name, reason::kWindowArtifactPathInvalid));
    return out;
  }
  std::sort(names.begin(), names.end());
  const auto below_root = [&](std::string_view p) { return stays_below(result_root, p); };
  for (const auto& name : names) {
    const std::string relative = dir_name + "/" + name;
    const fs::path path = dir / name;
    if (fs::is_symlink(fs::symlink_status(path, ec)) || !fs::is_regular_file(path, ec) ||
        python_path_suffix(name) != ".json") {
      out.artifact_errors.push_back(artifact_error(relative, reason::kWindowArtifactPathInvalid));
      continue;
    }
    const auto text = common::read_small_file(path.string(), kGpuWindowMaxBytes);
    auto parsed = text ? parse_window(*text, python_path_stem(name), below_root)
                       : malformed(reason::kWindowMalformed);
    if (!parsed.window) {
      out.artifact_errors.push_back({relative, parsed.reason_codes});
      continue;
    }
    const GpuWindowKey key = parsed.window->key();
    if (out.duplicates.contains(key)) {
      out.artifact_errors.push_back(artifact_error(relative, reason::kWindowDuplicate));
      continue;
    }
    if (const auto previous = out.windows.find(key); previous != out.windows.end()) {
      out.duplicates.insert(key);
      out.artifact_errors.push_back(
          artifact_error(previous->second.relative_path, reason::kWindowDuplicate));
      out.artifact_errors.push_back(artifact_error(relative, reason::kWindowDuplicate));
      out.windows.erase(previous);
      continue;
    }
    out.windows.emplace(key, GpuScannedWindow{relative, std::move(*parsed.window)});
  }
  return out;
}

std::vector<GpuWindowValidation> validate_gpu_windows(
    const std::string& power_dir, const std::string& result_root,
    std::span<const GpuWindowKey> expected_windows, const GpuCoverageInputs& coverage,
    std::vector<GpuArtifactError>& artifact_errors) {
  GpuWindowScan scan = scan_gpu_windows(power_dir, result_root);
  artifact_errors.insert(artifact_errors.end(), scan.artifact_errors.begin(),
                         scan.artifact_errors.end());
  const std::set<GpuWindowKey> expected(expected_windows.begin(), expected_windows.end());
  for (const auto& [key, found] : scan.windows) {
    if (!expected.contains(key)) {
      artifact_errors.push_back(artifact_error(found.relative_path, reason::kWindowUnexpected));
    }
  }
  std::vector<GpuWindowValidation> out;
  for (const auto& key : expected_windows) {
    const auto it = scan.windows.find(key);
    const GpuScannedWindow* found = it == scan.windows.end() ? nullptr : &it->second;
    GpuWindowResult result;
    if (found && found->window.status == GpuWindowStatus::completed) {
      result = read_gpu_window_result((fs::path(result_root) / found->window.result_path).string());
    }
    out.push_back(validate_gpu_window(key, found, scan.duplicates.contains(key), result, coverage));
  }
  return out;
}

}  // namespace cpupower::artifacts
