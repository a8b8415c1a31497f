#include "scrape/gpu_readings.hpp"

#include <algorithm>
#include <array>
#include <climits>
#include <cmath>
#include <iterator>
#include <span>
#include <utility>

#include "artifacts/gpu_reasons.hpp"
#include "artifacts/limits.hpp"
#include "common/text.hpp"
#include "scrape/readings.hpp"

namespace cpupower::scrape {
namespace {

namespace reason = artifacts::gpu_reason;

bool is_instance(const expo::Sample& s, const GpuExporterProfile& p) {
  for (const auto& label : p.instance_labels) {
    if (s.label(label).has_value()) return true;
  }
  return false;
}

// The index label as a non-negative integer that fits a long long.
std::optional<long long> gpu_index(const expo::Sample& s, const GpuExporterProfile& p) {
  const auto text = s.label(p.index_label);
  if (!text) return std::nullopt;
  const auto v = common::parse_u64(*text);
  if (!v || *v > static_cast<std::uint64_t>(LLONG_MAX)) return std::nullopt;
  return static_cast<long long>(*v);
}

bool valid_power(double w) {
  return std::isfinite(w) && w >= 0 && w <= artifacts::kMaxSocketWatts;
}

// One optional metric (util, SM activity, temperature): the value per gpu index when exactly
// one whole-GPU sample in range names it; `uuid` kept to check the join. A flat vector sorted
// once rather than a map: a body names a handful of GPUs, and a scrape should not cost a
// dozen allocations for them.
struct Optional {
  struct Entry {
    long long index = 0;
    std::optional<std::string_view> uuid;
    std::optional<double> value;  // nullopt: out of range
  };
  std::vector<Entry> entries;  // by index once sorted (stable: same-index order kept)

  void add(const expo::Sample& s, const GpuExporterProfile& p, double lo, double hi) {
    if (is_instance(s, p)) return;
    const auto index = gpu_index(s, p);
    if (!index) return;
    Entry e;
    e.index = *index;
    e.uuid = s.label(p.identity_label);
    if (std::isfinite(s.value) && s.value >= lo && s.value <= hi) e.value = s.value;
    entries.push_back(e);
  }

  void sort() { std::ranges::stable_sort(entries, {}, &Entry::index); }

  // nullopt when no sample or more than one names the index (seen twice: ambiguous).
  std::optional<double> join(long long index, std::string_view uuid) const {
    const auto by_index = [](const Entry& e, long long i) { return e.index < i; };
    const auto it = std::lower_bound(entries.begin(), entries.end(), index, by_index);
    if (it == entries.end() || it->index != index) return std::nullopt;
    if (std::next(it) != entries.end() && std::next(it)->index == index) return std::nullopt;
    if (it->uuid && !it->uuid->empty() && *it->uuid != uuid) return std::nullopt;
    return it->value;
  }
};

std::uint64_t fingerprint_of(const std::vector<GpuReading>& gpus) {
  Fingerprint f;
  f.add(std::uint64_t{gpus.size()});
  for (const auto& g : gpus) {
    f.add(static_cast<std::uint64_t>(g.gpu_index));
    f.add(g.uuid);
    f.add(std::optional(g.power_w));
    f.add(g.gpu_util_pct);
    f.add(g.sm_active);
    f.add(g.temperature_c);
  }
  return f.value();
}

GpuScrape from_samples(const std::vector<expo::Sample>& samples, const GpuReadOptions& options) {
  const GpuExporterProfile& p = options.profile;
  const auto selected = [&](long long index) {
    return !options.only_indices || std::ranges::count(*options.only_indices, index) > 0;
  };
  const auto named = [](const std::optional<std::string>& family, std::string_view name) {
    return family && *family == name;
  };
  // The codes met, each once (a handful at most: the list is searched, then sorted).
  std::vector<std::string_view> reasons;
  const auto note = [&reasons](std::string_view code) {
    if (std::find(reasons.begin(), reasons.end(), code) == reasons.end()) reasons.push_back(code);
  };
  // Whole-GPU power samples by index (sorted below; equal indices stay together).
  std::vector<std::pair<long long, const expo::Sample*>> power;
  Optional util, sm_active, temp;
  bool any_power = false;
  for (const auto& s : samples) {
    if (s.name == p.power_metric) {
      any_power = true;
      const bool instance = is_instance(s, p);
      const auto index = instance ? std::nullopt : gpu_index(s, p);
      if (!index) note(instance ? reason::kMigInstanceUnsupported : reason::kGpuIndexMissing);
      if (index && selected(*index)) power.emplace_back(*index, &s);  // else not a GPU the run uses
    } else if (named(p.util_metric, s.name)) {
      util.add(s, p, 0.0, 100.0);
    } else if (named(p.sm_active_metric, s.name)) {
      sm_active.add(s, p, 0.0, 1.0);
    } else if (named(p.temperature_metric, s.name)) {
      temp.add(s, p, -273.15, 200.0);
    }
  }
  if (!any_power) note(reason::kPowerMetricMissing);
  std::ranges::stable_sort(power, {}, [](const auto& p) { return p.first; });
  util.sort();
  sm_active.sort();
  temp.sort();

  GpuScrape out;
  out.gpus.reserve(power.size());
  for (auto it = power.begin(); it != power.end();) {  // ascending index
    const long long index = it->first;
    const auto group_end =
        std::find_if(it, power.end(), [&](const auto& p) { return p.first != index; });
    const auto count = group_end - it;
    const auto& s = *it->second;
    it = group_end;
    const auto uuid = s.label(p.identity_label).value_or("");
    const std::string_view refused = count > 1               ? reason::kDuplicatePowerMetric
                                     : uuid.empty()          ? reason::kGpuUuidMissing
                                     : !valid_power(s.value) ? reason::kInvalidPowerValue
                                                             : "";
    if (!refused.empty()) {
      note(refused);
      continue;
    }
    out.gpus.push_back({index, std::string(uuid), s.value, util.join(index, uuid),
                        sm_active.join(index, uuid), temp.join(index, uuid)});
  }
  std::sort(reasons.begin(), reasons.end());
  for (const auto r : reasons) out.reasons.emplace_back(r);  // sorted, each once
  out.fingerprint = fingerprint_of(out.gpus);
  return out;
}

}  // namespace

const GpuExporterProfile& GpuExporterProfile::dcgm() {
  static const GpuExporterProfile profile{"DCGM_FI_DEV_POWER_USAGE",
                                          "gpu_device_board_as_reported_by_dcgm",
                                          "gpu",
                                          "UUID",
                                          {"GPU_I_ID", "GPU_I_PROFILE"},
                                          "DCGM_FI_DEV_GPU_UTIL",
                                          "DCGM_FI_PROF_SM_ACTIVE",
                                          "DCGM_FI_DEV_GPU_TEMP"};
  return profile;
}

const GpuReadOptions& GpuReadOptions::dcgm() {
  static const GpuReadOptions options;
  return options;
}

GpuScrape gpu_readings_from_body(std::string_view body, expo::ParseResult& scratch,
                                 const GpuReadOptions& options) {
  // The families read above; every other line is still checked (expo::ParseOptions).
  const GpuExporterProfile& p = options.profile;
  std::array<std::string_view, 4> families;
  std::size_t n = 0;
  families[n++] = p.power_metric;
  for (const auto* family : {&p.util_metric, &p.sm_active_metric, &p.temperature_metric}) {
    if (*family) families[n++] = **family;
  }
  expo::ParseOptions parse;
  parse.only_names = std::span<const std::string_view>(families.data(), n);
  expo::parse_into(body, scratch, parse);
  if (!scratch.ok()) {
    return {{},
            {std::string(reason::kEndpointParseError)},
            expo::describe(*scratch.error),
            fingerprint_of({})};
  }
  return from_samples(scratch.samples, options);
}

GpuScrape gpu_readings_from_body(std::string_view body, const GpuReadOptions& options) {
  expo::ParseResult scratch;
  return gpu_readings_from_body(body, scratch, options);
}

}  // namespace cpupower::scrape
