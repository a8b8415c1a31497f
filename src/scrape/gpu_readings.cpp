#include "scrape/gpu_readings.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <climits>
#include <cmath>
#include <iterator>
#include <utility>

#include "artifacts/gpu_reasons.hpp"
#include "artifacts/limits.hpp"
#include "common/text.hpp"

namespace cpupower::scrape {
namespace {

namespace reason = artifacts::gpu_reason;

constexpr std::string_view kPowerFamily = "DCGM_FI_DEV_POWER_USAGE";
constexpr std::string_view kUtilFamily = "DCGM_FI_DEV_GPU_UTIL";
constexpr std::string_view kSmActiveFamily = "DCGM_FI_PROF_SM_ACTIVE";
constexpr std::string_view kTempFamily = "DCGM_FI_DEV_GPU_TEMP";

bool is_mig_instance(const expo::Sample& s) {
  return s.label("GPU_I_ID").has_value() || s.label("GPU_I_PROFILE").has_value();
}

// The `gpu` label as a non-negative integer that fits a long long.
std::optional<long long> gpu_index(const expo::Sample& s) {
  const auto text = s.label("gpu");
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

  void add(const expo::Sample& s, double lo, double hi) {
    if (is_mig_instance(s)) return;
    const auto index = gpu_index(s);
    if (!index) return;
    Entry e;
    e.index = *index;
    e.uuid = s.label("UUID");
    if (std::isfinite(s.value) && s.value >= lo && s.value <= hi) e.value = s.value;
    entries.push_back(e);
  }

  void sort() {
    std::stable_sort(entries.begin(), entries.end(),
                     [](const Entry& a, const Entry& b) { return a.index < b.index; });
  }

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

// FNV-1a, 64-bit, as the CPU leg's fingerprint (scrape/readings.cpp).
class Fingerprint {
 public:
  void add(std::uint64_t v) {
    for (int i = 0; i < 8; ++i) {
      hash_ ^= (v >> (8 * i)) & 0xff;
      hash_ *= 0x100000001b3ULL;
    }
  }
  void add(std::string_view s) {
    add(s.size());
    for (const unsigned char c : s) {
      hash_ ^= c;
      hash_ *= 0x100000001b3ULL;
    }
  }
  void add(const std::optional<double>& v) {
    add(std::uint64_t{v.has_value() ? 1u : 0u});
    if (v) add(std::bit_cast<std::uint64_t>(*v));
  }
  std::uint64_t value() const { return hash_; }

 private:
  std::uint64_t hash_ = 0xcbf29ce484222325ULL;
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

}  // namespace

GpuScrape gpu_readings_from_samples(const std::vector<expo::Sample>& samples) {
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
    if (s.name == kPowerFamily) {
      any_power = true;
      if (is_mig_instance(s)) {
        note(reason::kMigInstanceUnsupported);
        continue;
      }
      const auto index = gpu_index(s);
      if (!index) {
        note(reason::kGpuIndexMissing);
        continue;
      }
      power.emplace_back(*index, &s);
    } else if (s.name == kUtilFamily) {
      util.add(s, 0.0, 100.0);
    } else if (s.name == kSmActiveFamily) {
      sm_active.add(s, 0.0, 1.0);
    } else if (s.name == kTempFamily) {
      temp.add(s, -273.15, 200.0);
    }
  }
  if (!any_power) note(reason::kPowerMetricMissing);
  std::stable_sort(power.begin(), power.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
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
    if (count > 1) {
      note(reason::kDuplicatePowerMetric);
      continue;
    }
    const auto uuid = s.label("UUID");
    if (!uuid || uuid->empty()) {
      note(reason::kGpuUuidMissing);
      continue;
    }
    if (!valid_power(s.value)) {
      note(reason::kInvalidPowerValue);
      continue;
    }
    GpuReading r;
    r.gpu_index = index;
    r.uuid = std::string(*uuid);
    r.power_w = s.value;
    r.gpu_util_pct = util.join(index, *uuid);
    r.sm_active = sm_active.join(index, *uuid);
    r.temperature_c = temp.join(index, *uuid);
    out.gpus.push_back(std::move(r));
  }
  std::sort(reasons.begin(), reasons.end());
  for (const auto r : reasons) out.reasons.emplace_back(r);  // sorted, each once
  out.fingerprint = fingerprint_of(out.gpus);
  return out;
}

GpuScrape gpu_readings_from_body(std::string_view body, expo::ParseResult& scratch) {
  // The families read above; every other line is still checked (expo::ParseOptions).
  static constexpr std::array<std::string_view, 4> kFamilies = {kPowerFamily, kUtilFamily,
                                                                kSmActiveFamily, kTempFamily};
  expo::ParseOptions options;
  options.only_names = kFamilies;
  expo::parse_into(body, scratch, options);
  if (!scratch.ok()) {
    GpuScrape out;
    out.error = expo::describe(*scratch.error);
    out.reasons.emplace_back(reason::kEndpointParseError);
    out.fingerprint = fingerprint_of(out.gpus);
    return out;
  }
  return gpu_readings_from_samples(scratch.samples);
}

GpuScrape gpu_readings_from_body(std::string_view body) {
  expo::ParseResult scratch;
  return gpu_readings_from_body(body, scratch);
}

}  // namespace cpupower::scrape
