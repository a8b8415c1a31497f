#include "scrape/gpu_readings.hpp"

#include <algorithm>
#include <bit>
#include <climits>
#include <cmath>
#include <map>
#include <set>

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
// one whole-GPU sample in range names it; `uuid` kept to check the join.
struct Optional {
  struct Entry {
    std::optional<std::string_view> uuid;
    std::optional<double> value;  // nullopt: out of range, or seen twice
    int count = 0;
  };
  std::map<long long, Entry> by_index;

  void add(const expo::Sample& s, double lo, double hi) {
    if (is_mig_instance(s)) return;
    const auto index = gpu_index(s);
    if (!index) return;
    auto& e = by_index[*index];
    if (++e.count > 1) {
      e.value.reset();
      return;
    }
    e.uuid = s.label("UUID");
    if (std::isfinite(s.value) && s.value >= lo && s.value <= hi) e.value = s.value;
  }

  std::optional<double> join(long long index, std::string_view uuid) const {
    const auto it = by_index.find(index);
    if (it == by_index.end() || it->second.count != 1) return std::nullopt;
    const auto& e = it->second;
    if (e.uuid && !e.uuid->empty() && *e.uuid != uuid) return std::nullopt;
    return e.value;
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
  std::set<std::string_view> reasons;
  std::map<long long, std::vector<const expo::Sample*>> power_by_index;
  Optional util, sm_active, temp;
  bool any_power = false;
  for (const auto& s : samples) {
    if (s.name == kPowerFamily) {
      any_power = true;
      if (is_mig_instance(s)) {
        reasons.insert(reason::kMigInstanceUnsupported);
        continue;
      }
      const auto index = gpu_index(s);
      if (!index) {
        reasons.insert(reason::kGpuIndexMissing);
        continue;
      }
      power_by_index[*index].push_back(&s);
    } else if (s.name == kUtilFamily) {
      util.add(s, 0.0, 100.0);
    } else if (s.name == kSmActiveFamily) {
      sm_active.add(s, 0.0, 1.0);
    } else if (s.name == kTempFamily) {
      temp.add(s, -273.15, 200.0);
    }
  }
  if (!any_power) reasons.insert(reason::kPowerMetricMissing);

  GpuScrape out;
  for (const auto& [index, list] : power_by_index) {  // std::map: ascending index
    if (list.size() > 1) {
      reasons.insert(reason::kDuplicatePowerMetric);
      continue;
    }
    const auto& s = *list.front();
    const auto uuid = s.label("UUID");
    if (!uuid || uuid->empty()) {
      reasons.insert(reason::kGpuUuidMissing);
      continue;
    }
    if (!valid_power(s.value)) {
      reasons.insert(reason::kInvalidPowerValue);
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
  for (const auto r : reasons) out.reasons.emplace_back(r);  // std::set: sorted, each once
  out.fingerprint = fingerprint_of(out.gpus);
  return out;
}

GpuScrape gpu_readings_from_body(std::string_view body) {
  const auto parsed = expo::parse(body);
  if (!parsed.ok()) {
    GpuScrape out;
    out.error = expo::describe(*parsed.error);
    out.reasons.emplace_back(reason::kEndpointParseError);
    out.fingerprint = fingerprint_of(out.gpus);
    return out;
  }
  return gpu_readings_from_samples(parsed.samples);
}

}  // namespace cpupower::scrape
