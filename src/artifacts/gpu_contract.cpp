#include "artifacts/gpu_contract.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "artifacts/gpu_reasons.hpp"
#include "common/enum_names.hpp"

namespace cpupower::artifacts {
namespace {

namespace reason = gpu_reason;
namespace rule = gpu_publication_rule;

bool one_of(std::span<const std::string_view> set, std::string_view code) {
  return std::find(set.begin(), set.end(), code) != set.end();
}

template <class Devices>
std::set<GpuDeviceKey> keys_of(const Devices& devices) {
  std::set<GpuDeviceKey> keys;
  for (const auto& d : devices) keys.insert(d.key());
  return keys;
}

bool any_uuid_not_single(std::span<const GpuObservedDevice> observed) {
  return std::any_of(observed.begin(), observed.end(),
                     [](const GpuObservedDevice& d) { return d.gpu_uuids.size() != 1; });
}

// A UUID named by two devices of those that have exactly one.
bool any_uuid_shared(std::span<const GpuObservedDevice> observed) {
  std::set<std::string_view> seen;
  for (const auto& d : observed) {
    if (d.gpu_uuids.size() == 1 && !seen.insert(d.gpu_uuids.front()).second) return true;
  }
  return false;
}

bool roles_conflict(std::span<const GpuExpectedDevice> expected) {
  for (const auto& d : expected) {
    std::set<std::string_view> roles;
    for (const auto& a : d.assignments) roles.insert(a.worker_role);
    if (roles.size() != 1) return true;
  }
  return false;
}

bool het_groups_conflict(std::span<const GpuExpectedDevice> expected) {
  std::map<std::string_view, std::optional<long long>> per_host;
  for (const auto& d : expected) {
    std::set<std::optional<long long>> groups;
    for (const auto& a : d.assignments) groups.insert(a.het_group);
    if (groups.size() != 1) return true;
    const auto [it, inserted] = per_host.emplace(d.hostname, *groups.begin());
    if (!inserted && it->second != *groups.begin()) return true;
  }
  return false;
}

bool windows_valid(std::span<const GpuWindowKey> expected,
                   std::span<const GpuWindowValidation> validations) {
  for (const auto& key : expected) {
    const auto it = std::find_if(validations.begin(), validations.end(),
                                 [&](const GpuWindowValidation& v) { return v.key() == key; });
    if (it == validations.end() || !it->power_coverage_valid) return false;
  }
  return true;
}

}  // namespace

// ---- reason codes ---------------------------------------------------------------------

bool ReasonSet::add(std::string_view code) {
  if (contains(code)) return false;
  codes_.emplace_back(code);
  return true;
}

bool ReasonSet::contains(std::string_view code) const {
  return std::find(codes_.begin(), codes_.end(), code) != codes_.end();
}

bool ReasonSet::contains_any(std::span<const std::string_view> codes) const {
  return std::any_of(codes.begin(), codes.end(), [&](std::string_view c) { return contains(c); });
}

bool is_gpu_fatal_lifecycle_reason(std::string_view code) {
  return one_of(reason::kFatalLifecycle, code);
}
bool is_gpu_startup_reason(std::string_view code) {
  return one_of(reason::kStartup, code);
}
bool is_gpu_operational_failure_reason(std::string_view code) {
  return one_of(reason::kOperational, code);
}

// ---- run status -----------------------------------------------------------------------

constexpr common::EnumName<GpuRunStatus> kRunStatusNames[] = {
    {GpuRunStatus::starting, "starting"},
    {GpuRunStatus::running, "running"},
    {GpuRunStatus::complete, "complete"},
    {GpuRunStatus::incomplete, "incomplete"},
    {GpuRunStatus::failed, "failed"}};

std::string_view gpu_run_status_name(GpuRunStatus status) {
  return common::name_of(kRunStatusNames, status, "starting");
}

std::optional<GpuRunStatus> parse_gpu_run_status(std::string_view name) {
  return common::parse(kRunStatusNames, name);
}

GpuRunStatus gpu_terminal_status(const ReasonSet& reasons, bool required) {
  if (reasons.contains_any(reason::kFatalLifecycle)) return GpuRunStatus::incomplete;
  if (required && reasons.contains_any(reason::kStartup)) return GpuRunStatus::failed;
  return GpuRunStatus::complete;
}

// ---- devices --------------------------------------------------------------------------

ReasonSet gpu_device_reasons(std::span<const GpuExpectedDevice> expected,
                             std::span<const GpuObservedDevice> observed) {
  ReasonSet out;
  const auto want = keys_of(expected);
  const auto have = keys_of(observed);
  const bool missing =
      want.empty() || std::any_of(want.begin(), want.end(),
                                  [&](const GpuDeviceKey& k) { return !have.contains(k); });
  if (missing) out.add(reason::kExpectedDeviceMissing);
  if (std::any_of(have.begin(), have.end(),
                  [&](const GpuDeviceKey& k) { return !want.contains(k); })) {
    out.add(reason::kUnexpectedDevice);
  }
  if (any_uuid_not_single(observed) || any_uuid_shared(observed)) out.add(reason::kGpuUuidChanged);
  if (roles_conflict(expected)) out.add(reason::kConflictingWorkerRoles);
  if (het_groups_conflict(expected)) out.add(reason::kConflictingHetGroups);
  return out;
}

// ---- publication ----------------------------------------------------------------------

GpuPublication gpu_publication_valid(const GpuPublicationInputs& in) {
  GpuPublication out;
  const auto fail = [&](std::string_view name) { out.failed_rules.push_back(name); };
  if (in.status != GpuRunStatus::complete) fail(rule::kStatusNotComplete);
  const auto want = keys_of(in.expected_devices);
  if (want.empty()) fail(rule::kExpectedDevicesEmpty);
  if (want != keys_of(in.observed_devices)) fail(rule::kDeviceKeysMismatch);
  if (any_uuid_not_single(in.observed_devices)) fail(rule::kDeviceUuidNotSingle);
  if (any_uuid_shared(in.observed_devices)) fail(rule::kDeviceUuidNotUnique);
  if (roles_conflict(in.expected_devices)) fail(rule::kConflictingWorkerRoles);
  if (het_groups_conflict(in.expected_devices)) fail(rule::kConflictingHetGroups);
  if (in.expected_windows.empty()) fail(rule::kExpectedWindowsEmpty);
  if (!windows_valid(in.expected_windows, in.window_validations)) {
    fail(rule::kWindowCoverageInvalid);
  }
  if (in.samples_reasons && !in.samples_reasons->empty()) fail(rule::kSamplesReasons);
  if (!in.artifact_errors.empty()) fail(rule::kArtifactErrors);
  out.valid = out.failed_rules.empty();
  return out;
}

bool gpu_exit_nonzero(const ReasonSet& reasons, bool required, bool publication_valid) {
  return reasons.contains_any(reason::kOperational) || (required && !publication_valid);
}

}  // namespace cpupower::artifacts
