// The GPU leg's reading of one dcgm-exporter body (scrape/gpu_readings), the collector's input
// from every GPU node. Beyond not crashing: whatever the body, the result keeps the contract's
// shape: an unparsable body has exactly endpoint_parse_error and no readings; reasons are known
// codes, each once, sorted; readings come one per GPU, ascending, with a UUID, a power within
// the physical bound and optional values within their ranges; the fingerprint is repeatable.

#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <string_view>

#include "artifacts/gpu_reasons.hpp"
#include "artifacts/limits.hpp"
#include "fuzz_util.hpp"
#include "scrape/gpu_readings.hpp"

namespace {

namespace reason = cpupower::artifacts::gpu_reason;

bool within(const std::optional<double>& v, double lo, double hi) {
  return !v || (std::isfinite(*v) && *v >= lo && *v <= hi);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view body = cpupower::fuzz::as_text(data, size);
  const auto r = cpupower::scrape::gpu_readings_from_body(body);
  if (r.error) {
    FUZZ_CHECK(r.gpus.empty());
    FUZZ_CHECK(r.reasons.size() == 1 && r.reasons[0] == reason::kEndpointParseError);
  }
  static const std::set<std::string_view> known = {
      reason::kEndpointParseError,     reason::kPowerMetricMissing, reason::kDuplicatePowerMetric,
      reason::kGpuIndexMissing,        reason::kGpuUuidMissing,     reason::kInvalidPowerValue,
      reason::kMigInstanceUnsupported,
  };
  for (const auto& code : r.reasons) {
    FUZZ_CHECK(known.count(code) == 1, "unknown reason code '%s'", code.c_str());
  }
  FUZZ_CHECK(
      std::adjacent_find(r.reasons.begin(), r.reasons.end(),
                         [](const auto& a, const auto& b) { return !(a < b); }) == r.reasons.end(),
      "reasons not sorted or not unique");
  for (std::size_t i = 0; i < r.gpus.size(); ++i) {
    const auto& g = r.gpus[i];
    FUZZ_CHECK(g.gpu_index >= 0);
    FUZZ_CHECK(i == 0 || r.gpus[i - 1].gpu_index < g.gpu_index, "readings not ascending");
    FUZZ_CHECK(!g.uuid.empty());
    FUZZ_CHECK(std::isfinite(g.power_w) && g.power_w >= 0 &&
               g.power_w <= cpupower::artifacts::kMaxSocketWatts);
    FUZZ_CHECK(within(g.gpu_util_pct, 0, 100));
    FUZZ_CHECK(within(g.sm_active, 0, 1));
    FUZZ_CHECK(within(g.temperature_c, -273.15, 200));
  }
  const auto again = cpupower::scrape::gpu_readings_from_body(body);
  FUZZ_CHECK(again.fingerprint == r.fingerprint && again.gpus == r.gpus &&
             again.reasons == r.reasons);
  return 0;
}
