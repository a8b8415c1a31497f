// One dcgm-exporter body -> GPU readings (scrape/gpu_readings.hpp): bodies from the simulated
// exporter and a body in the exact format a real dcgm-exporter serves, every rejection.

#include "scrape/gpu_readings.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "artifacts/gpu_reasons.hpp"
#include "artifacts/gpu_samples_out.hpp"
#include "scrape/collector.hpp"
#include "scrape/gpu_leg.hpp"
#include "sim/gpu_exposition.hpp"
#include "sim/gpu_faults.hpp"
#include "sim/gpu_power.hpp"

namespace cpupower::scrape {
namespace {

namespace reason = artifacts::gpu_reason;
using Reasons = std::vector<std::string>;

// A dcgm-exporter 3.x body as served on a Kubernetes node (-k) with its default counters:
// every label real output carries, in its order, HELP/TYPE from etc/default-counters.csv,
// integers as %d, doubles as %f, an XID family with its extra labels, a profiling family.
// GPU 1 runs a pod; GPU 0 is idle.
constexpr std::string_view kRealBody =
    R"(# HELP DCGM_FI_DEV_SM_CLOCK SM clock frequency (in MHz).
# TYPE DCGM_FI_DEV_SM_CLOCK gauge
DCGM_FI_DEV_SM_CLOCK{gpu="0",UUID="GPU-604ac76c-d9cf-fef3-62e9-d92044ab6e52",pci_bus_id="00000000:07:00.0",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",Hostname="dgx-h100-01",DCGM_FI_DRIVER_VERSION="535.129.03"} 345
DCGM_FI_DEV_SM_CLOCK{gpu="1",UUID="GPU-6bf47ca9-ad3e-15db-beed-1079a7d74116",pci_bus_id="00000000:0F:00.0",device="nvidia1",modelName="NVIDIA H100 80GB HBM3",Hostname="dgx-h100-01",DCGM_FI_DRIVER_VERSION="535.129.03",container="vllm",namespace="inference",pod="vllm-7d9f8b6c5-x2k4p"} 1980
# HELP DCGM_FI_DEV_GPU_TEMP GPU temperature (in C).
# TYPE DCGM_FI_DEV_GPU_TEMP gauge
DCGM_FI_DEV_GPU_TEMP{gpu="0",UUID="GPU-604ac76c-d9cf-fef3-62e9-d92044ab6e52",pci_bus_id="00000000:07:00.0",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",Hostname="dgx-h100-01",DCGM_FI_DRIVER_VERSION="535.129.03"} 31
DCGM_FI_DEV_GPU_TEMP{gpu="1",UUID="GPU-6bf47ca9-ad3e-15db-beed-1079a7d74116",pci_bus_id="00000000:0F:00.0",device="nvidia1",modelName="NVIDIA H100 80GB HBM3",Hostname="dgx-h100-01",DCGM_FI_DRIVER_VERSION="535.129.03",container="vllm",namespace="inference",pod="vllm-7d9f8b6c5-x2k4p"} 55
# HELP DCGM_FI_DEV_POWER_USAGE Power draw (in W).
# TYPE DCGM_FI_DEV_POWER_USAGE gauge
DCGM_FI_DEV_POWER_USAGE{gpu="0",UUID="GPU-604ac76c-d9cf-fef3-62e9-d92044ab6e52",pci_bus_id="00000000:07:00.0",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",Hostname="dgx-h100-01",DCGM_FI_DRIVER_VERSION="535.129.03"} 71.482000
DCGM_FI_DEV_POWER_USAGE{gpu="1",UUID="GPU-6bf47ca9-ad3e-15db-beed-1079a7d74116",pci_bus_id="00000000:0F:00.0",device="nvidia1",modelName="NVIDIA H100 80GB HBM3",Hostname="dgx-h100-01",DCGM_FI_DRIVER_VERSION="535.129.03",container="vllm",namespace="inference",pod="vllm-7d9f8b6c5-x2k4p"} 302.206000
# HELP DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION Total energy consumption since boot (in mJ).
# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter
DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu="0",UUID="GPU-604ac76c-d9cf-fef3-62e9-d92044ab6e52",pci_bus_id="00000000:07:00.0",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",Hostname="dgx-h100-01",DCGM_FI_DRIVER_VERSION="535.129.03"} 2205716423
DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu="1",UUID="GPU-6bf47ca9-ad3e-15db-beed-1079a7d74116",pci_bus_id="00000000:0F:00.0",device="nvidia1",modelName="NVIDIA H100 80GB HBM3",Hostname="dgx-h100-01",DCGM_FI_DRIVER_VERSION="535.129.03",container="vllm",namespace="inference",pod="vllm-7d9f8b6c5-x2k4p"} 4335301032
# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).
# TYPE DCGM_FI_DEV_GPU_UTIL gauge
DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-604ac76c-d9cf-fef3-62e9-d92044ab6e52",pci_bus_id="00000000:07:00.0",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",Hostname="dgx-h100-01",DCGM_FI_DRIVER_VERSION="535.129.03"} 0
DCGM_FI_DEV_GPU_UTIL{gpu="1",UUID="GPU-6bf47ca9-ad3e-15db-beed-1079a7d74116",pci_bus_id="00000000:0F:00.0",device="nvidia1",modelName="NVIDIA H100 80GB HBM3",Hostname="dgx-h100-01",DCGM_FI_DRIVER_VERSION="535.129.03",container="vllm",namespace="inference",pod="vllm-7d9f8b6c5-x2k4p"} 44
# HELP DCGM_FI_DEV_XID_ERRORS Value of the last XID error encountered.
# TYPE DCGM_FI_DEV_XID_ERRORS gauge
DCGM_FI_DEV_XID_ERRORS{gpu="0",UUID="GPU-604ac76c-d9cf-fef3-62e9-d92044ab6e52",pci_bus_id="00000000:07:00.0",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",Hostname="dgx-h100-01",DCGM_FI_DRIVER_VERSION="535.129.03",err_code="0",err_msg="No Error"} 0
# HELP DCGM_FI_DEV_FB_USED Framebuffer memory used (in MiB).
# TYPE DCGM_FI_DEV_FB_USED gauge
DCGM_FI_DEV_FB_USED{gpu="0",UUID="GPU-604ac76c-d9cf-fef3-62e9-d92044ab6e52",pci_bus_id="00000000:07:00.0",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",Hostname="dgx-h100-01",DCGM_FI_DRIVER_VERSION="535.129.03"} 0
# HELP DCGM_FI_PROF_GR_ENGINE_ACTIVE Ratio of time the graphics engine is active.
# TYPE DCGM_FI_PROF_GR_ENGINE_ACTIVE gauge
DCGM_FI_PROF_GR_ENGINE_ACTIVE{gpu="1",UUID="GPU-6bf47ca9-ad3e-15db-beed-1079a7d74116",pci_bus_id="00000000:0F:00.0",device="nvidia1",modelName="NVIDIA H100 80GB HBM3",Hostname="dgx-h100-01",DCGM_FI_DRIVER_VERSION="535.129.03",container="vllm",namespace="inference",pod="vllm-7d9f8b6c5-x2k4p"} 0.437012
# HELP DCGM_FI_PROF_SM_ACTIVE The ratio of cycles an SM has at least 1 warp assigned.
# TYPE DCGM_FI_PROF_SM_ACTIVE gauge
DCGM_FI_PROF_SM_ACTIVE{gpu="0",UUID="GPU-604ac76c-d9cf-fef3-62e9-d92044ab6e52",pci_bus_id="00000000:07:00.0",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",Hostname="dgx-h100-01",DCGM_FI_DRIVER_VERSION="535.129.03"} 0.000000
DCGM_FI_PROF_SM_ACTIVE{gpu="1",UUID="GPU-6bf47ca9-ad3e-15db-beed-1079a7d74116",pci_bus_id="00000000:0F:00.0",device="nvidia1",modelName="NVIDIA H100 80GB HBM3",Hostname="dgx-h100-01",DCGM_FI_DRIVER_VERSION="535.129.03",container="vllm",namespace="inference",pod="vllm-7d9f8b6c5-x2k4p"} 0.412334
)";

constexpr const char* kUuid0 = "GPU-604ac76c-d9cf-fef3-62e9-d92044ab6e52";
constexpr const char* kUuid1 = "GPU-6bf47ca9-ad3e-15db-beed-1079a7d74116";

// A power line with the given label text (between the braces) and value.
std::string power(std::string_view labels, std::string_view value) {
  return "DCGM_FI_DEV_POWER_USAGE{" + std::string(labels) + "} " + std::string(value) + "\n";
}

std::string labels(int gpu, std::string_view uuid) {
  return "gpu=\"" + std::to_string(gpu) + "\",UUID=\"" + std::string(uuid) + "\",device=\"nvidia" +
         std::to_string(gpu) + "\",Hostname=\"h\"";
}

std::vector<long long> indices(const GpuScrape& s) {
  std::vector<long long> out;
  for (const auto& g : s.gpus) out.push_back(g.gpu_index);
  return out;
}

std::string sim_body(std::uint32_t gpus, const std::vector<std::uint32_t>& mig = {},
                     bool profiling = true) {
  std::vector<sim::GpuSeries> series;
  for (std::uint32_t g = 0; g < gpus; ++g) {
    sim::GpuSeries s;
    s.index = g;
    s.uuid = sim::simulated_gpu_uuid("node7", g);
    s.pci_bus_id = sim::simulated_pci_bus_id(g);
    s.model_name = "NVIDIA GH200 480GB";
    s.values = sim::derive_gpu_readout(90.0 + 100.0 * g, sim::kGpuIdleWatts, sim::kGpuMaxWatts);
    for (const auto m : mig) {
      if (m == g) s.mig = {{1, "3g.48gb"}, {2, "4g.48gb"}};
    }
    series.push_back(std::move(s));
  }
  sim::ExpositionOptions o;
  o.hostname = "node7";
  o.driver_version = "570.133.20";
  o.profiling = profiling;
  return sim::render_dcgm_exposition(series, o);
}

// ---- well-formed bodies --------------------------------------------------------------------

TEST(GpuReadings, RealDcgmExporterBodyWithEveryLabel) {
  const auto s = gpu_readings_from_body(kRealBody);
  EXPECT_FALSE(s.error);
  EXPECT_TRUE(s.reasons.empty()) << s.reasons.front();
  ASSERT_EQ(indices(s), (std::vector<long long>{0, 1}));
  EXPECT_EQ(s.gpus[0].uuid, kUuid0);
  EXPECT_DOUBLE_EQ(s.gpus[0].power_w, 71.482);
  EXPECT_EQ(s.gpus[0].gpu_util_pct, 0.0);
  EXPECT_EQ(s.gpus[0].sm_active, 0.0);
  EXPECT_EQ(s.gpus[0].temperature_c, 31.0);
  EXPECT_EQ(s.gpus[1].uuid, kUuid1);
  EXPECT_DOUBLE_EQ(s.gpus[1].power_w, 302.206);
  EXPECT_EQ(s.gpus[1].gpu_util_pct, 44.0);
  EXPECT_EQ(s.gpus[1].sm_active, 0.412334);
  EXPECT_EQ(s.gpus[1].temperature_c, 55.0);
}

TEST(GpuReadings, SimulatedBodies) {
  const auto s = gpu_readings_from_body(sim_body(4));
  EXPECT_TRUE(s.reasons.empty());
  ASSERT_EQ(indices(s), (std::vector<long long>{0, 1, 2, 3}));
  for (std::uint32_t g = 0; g < 4; ++g) {
    const auto want = sim::derive_gpu_readout(90.0 + 100.0 * g, 90, 700);
    EXPECT_EQ(s.gpus[g].uuid, sim::simulated_gpu_uuid("node7", g));
    EXPECT_DOUBLE_EQ(s.gpus[g].power_w, 90.0 + 100.0 * g);
    EXPECT_EQ(s.gpus[g].gpu_util_pct, static_cast<double>(want.gpu_util_pct));
    // %f keeps six decimals.
    EXPECT_NEAR(*s.gpus[g].sm_active, want.sm_active, 1e-6);
    EXPECT_EQ(s.gpus[g].temperature_c, static_cast<double>(want.gpu_temp_c));
  }
  // Without the profiling fields SM activity is missing, nothing else changes.
  const auto plain = gpu_readings_from_body(sim_body(4, {}, false));
  EXPECT_TRUE(plain.reasons.empty());
  ASSERT_EQ(plain.gpus.size(), 4u);
  EXPECT_FALSE(plain.gpus[2].sm_active);
  EXPECT_TRUE(plain.gpus[2].gpu_util_pct);
}

TEST(GpuReadings, SimulatedFaultsAsTheCollectorSeesThem) {
  // A vanished GPU is simply absent (the expected-device check reports it); garbage does not
  // parse.
  std::vector<sim::GpuSeries> three;
  for (std::uint32_t g : {0u, 2u}) {
    sim::GpuSeries s;
    s.index = g;
    s.uuid = sim::simulated_gpu_uuid("n", g, g == 2 ? 1 : 0);
    s.values.power_w = 100;
    three.push_back(s);
  }
  const auto s = gpu_readings_from_body(sim::render_dcgm_exposition(three, {}));
  EXPECT_TRUE(s.reasons.empty());
  EXPECT_EQ(indices(s), (std::vector<long long>{0, 2}));
  EXPECT_EQ(s.gpus[1].uuid, sim::simulated_gpu_uuid("n", 2, 1));

  const auto g = gpu_readings_from_body(sim::garbage_body());
  ASSERT_TRUE(g.error);
  EXPECT_EQ(g.reasons, (Reasons{std::string(reason::kEndpointParseError)}));
  EXPECT_TRUE(g.gpus.empty());
}

TEST(GpuReadings, HostnameAndOtherLabelsAreIgnored) {
  const std::string a = power(labels(0, "GPU-a"), "100.000000");
  const std::string b =
      "DCGM_FI_DEV_POWER_USAGE{Hostname=\"other\",gpu=\"0\",pod=\"x\",UUID=\"GPU-a\"} 100\n";
  const auto sa = gpu_readings_from_body(a);
  const auto sb = gpu_readings_from_body(b);
  ASSERT_EQ(sa.gpus.size(), 1u);
  EXPECT_EQ(sa.gpus, sb.gpus);
  EXPECT_EQ(sa.fingerprint, sb.fingerprint);
}

// ---- what the body lacked or what was rejected ---------------------------------------------

TEST(GpuReadings, NoPowerSampleAtAll) {
  for (const char* body : {"",
                           "# HELP DCGM_FI_DEV_POWER_USAGE Power draw (in W).\n"
                           "# TYPE DCGM_FI_DEV_POWER_USAGE gauge\n",
                           "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",UUID=\"GPU-a\"} 5\n"}) {
    const auto s = gpu_readings_from_body(body);
    EXPECT_FALSE(s.error);
    EXPECT_TRUE(s.gpus.empty());
    EXPECT_EQ(s.reasons, (Reasons{std::string(reason::kPowerMetricMissing)})) << body;
  }
}

TEST(GpuReadings, MigInstancesAreRejected) {
  // Every GPU in MIG mode: only instances, no reading, and the metric is not "missing".
  auto s = gpu_readings_from_body(sim_body(2, {0, 1}));
  EXPECT_TRUE(s.gpus.empty());
  EXPECT_EQ(s.reasons, (Reasons{std::string(reason::kMigInstanceUnsupported)}));
  // One GPU in MIG mode: the others still read.
  s = gpu_readings_from_body(sim_body(3, {1}));
  EXPECT_EQ(indices(s), (std::vector<long long>{0, 2}));
  EXPECT_EQ(s.reasons, (Reasons{std::string(reason::kMigInstanceUnsupported)}));
  // Either label alone marks an instance.
  s = gpu_readings_from_body(power("gpu=\"0\",UUID=\"GPU-a\",GPU_I_ID=\"1\"", "50"));
  EXPECT_EQ(s.reasons, (Reasons{std::string(reason::kMigInstanceUnsupported)}));
  s = gpu_readings_from_body(power("gpu=\"0\",UUID=\"GPU-a\",GPU_I_PROFILE=\"1g.10gb\"", "50"));
  EXPECT_EQ(s.reasons, (Reasons{std::string(reason::kMigInstanceUnsupported)}));
}

TEST(GpuReadings, DuplicateIndexKeepsNoneOfThatGpu) {
  const std::string body = power(labels(0, "GPU-a"), "100") + power(labels(1, "GPU-b"), "200") +
                           power(labels(1, "GPU-c"), "210") +
                           "DCGM_FI_DEV_GPU_UTIL{gpu=\"1\",UUID=\"GPU-b\"} 50\n";
  const auto s = gpu_readings_from_body(body);
  EXPECT_EQ(indices(s), (std::vector<long long>{0}));
  EXPECT_EQ(s.reasons, (Reasons{std::string(reason::kDuplicatePowerMetric)}));
  // The same line twice is a duplicate too.
  const auto t =
      gpu_readings_from_body(power(labels(0, "GPU-a"), "100") + power(labels(0, "GPU-a"), "100"));
  EXPECT_TRUE(t.gpus.empty());
  EXPECT_EQ(t.reasons, (Reasons{std::string(reason::kDuplicatePowerMetric)}));
}

TEST(GpuReadings, MissingOrInvalidGpuIndex) {
  for (const char* l :
       {"UUID=\"GPU-a\"", "gpu=\"\",UUID=\"GPU-a\"", "gpu=\"-1\",UUID=\"GPU-a\"",
        "gpu=\"x\",UUID=\"GPU-a\"", "gpu=\"1.0\",UUID=\"GPU-a\"", "gpu=\" 1\",UUID=\"GPU-a\"",
        "gpu=\"+1\",UUID=\"GPU-a\"", "gpu=\"99999999999999999999\",UUID=\"GPU-a\""}) {
    const auto s = gpu_readings_from_body(power(l, "100") + power(labels(3, "GPU-d"), "10"));
    EXPECT_EQ(indices(s), (std::vector<long long>{3})) << l;
    EXPECT_EQ(s.reasons, (Reasons{std::string(reason::kGpuIndexMissing)})) << l;
  }
  const auto big = gpu_readings_from_body(power("gpu=\"9223372036854775807\",UUID=\"GPU-a\"", "1"));
  ASSERT_EQ(big.gpus.size(), 1u);
  EXPECT_EQ(big.gpus[0].gpu_index, 9223372036854775807LL);
}

TEST(GpuReadings, MissingOrEmptyUuid) {
  for (const char* l : {"gpu=\"0\"", "gpu=\"0\",UUID=\"\"", "gpu=\"0\",uuid=\"GPU-a\""}) {
    const auto s = gpu_readings_from_body(power(l, "100"));
    EXPECT_TRUE(s.gpus.empty()) << l;
    EXPECT_EQ(s.reasons, (Reasons{std::string(reason::kGpuUuidMissing)})) << l;
  }
}

TEST(GpuReadings, InvalidPowerValues) {
  for (const char* v : {"NaN", "+Inf", "-Inf", "-0.5", "10000.5", "1e300"}) {
    const auto s =
        gpu_readings_from_body(power(labels(0, "GPU-a"), v) + power(labels(1, "GPU-b"), "250.5"));
    EXPECT_EQ(indices(s), (std::vector<long long>{1})) << v;
    EXPECT_EQ(s.reasons, (Reasons{std::string(reason::kInvalidPowerValue)})) << v;
  }
  // Zero and the bound itself are readings.
  const auto s =
      gpu_readings_from_body(power(labels(0, "GPU-a"), "0") + power(labels(1, "GPU-b"), "10000"));
  EXPECT_EQ(indices(s), (std::vector<long long>{0, 1}));
  EXPECT_TRUE(s.reasons.empty());
}

TEST(GpuReadings, ReasonsAreSortedAndEachOnce) {
  const std::string body =
      power("gpu=\"0\",UUID=\"GPU-a\",GPU_I_ID=\"1\",GPU_I_PROFILE=\"3g\"", "1") +
      power("gpu=\"0\",UUID=\"GPU-a\",GPU_I_ID=\"2\",GPU_I_PROFILE=\"4g\"", "1") +
      power("UUID=\"GPU-x\"", "1") + power("UUID=\"GPU-y\"", "1") + power("gpu=\"4\"", "1") +
      power(labels(5, "GPU-e"), "NaN") + power(labels(6, "GPU-f"), "1") +
      power(labels(6, "GPU-g"), "1") + power(labels(7, "GPU-h"), "77");
  const auto s = gpu_readings_from_body(body);
  EXPECT_EQ(indices(s), (std::vector<long long>{7}));
  EXPECT_EQ(s.reasons, (Reasons{"duplicate_power_metric", "gpu_index_missing", "gpu_uuid_missing",
                                "invalid_power_value", "mig_instance_unsupported"}));
  EXPECT_TRUE(std::is_sorted(s.reasons.begin(), s.reasons.end()));
}

// ---- the optional values -------------------------------------------------------------------

TEST(GpuReadings, OptionalValuesOutOfRangeAreMissingNotReasons) {
  auto body_with = [](std::string_view util, std::string_view sm, std::string_view temp) {
    return power(labels(0, "GPU-a"), "100") + "DCGM_FI_DEV_GPU_UTIL{" + labels(0, "GPU-a") + "} " +
           std::string(util) + "\nDCGM_FI_PROF_SM_ACTIVE{" + labels(0, "GPU-a") + "} " +
           std::string(sm) + "\nDCGM_FI_DEV_GPU_TEMP{" + labels(0, "GPU-a") + "} " +
           std::string(temp) + "\n";
  };
  auto s = gpu_readings_from_body(body_with("100", "1", "200"));
  ASSERT_EQ(s.gpus.size(), 1u);
  EXPECT_EQ(s.gpus[0].gpu_util_pct, 100.0);
  EXPECT_EQ(s.gpus[0].sm_active, 1.0);
  EXPECT_EQ(s.gpus[0].temperature_c, 200.0);
  s = gpu_readings_from_body(body_with("0", "0", "-273.15"));
  EXPECT_EQ(s.gpus[0].gpu_util_pct, 0.0);
  EXPECT_EQ(s.gpus[0].temperature_c, -273.15);
  for (const auto& [u, m, t] :
       {std::tuple{"101", "1.01", "200.5"}, std::tuple{"-1", "-0.1", "-274"},
        std::tuple{"NaN", "NaN", "NaN"}, std::tuple{"+Inf", "+Inf", "-Inf"},
        // A DCGM blank that slipped through: far outside every range.
        std::tuple{"9223372036854775794", "140737488355328", "9223372036854775794"}}) {
    s = gpu_readings_from_body(body_with(u, m, t));
    ASSERT_EQ(s.gpus.size(), 1u) << u;
    EXPECT_TRUE(s.reasons.empty()) << u;
    EXPECT_FALSE(s.gpus[0].gpu_util_pct) << u;
    EXPECT_FALSE(s.gpus[0].sm_active) << m;
    EXPECT_FALSE(s.gpus[0].temperature_c) << t;
    EXPECT_DOUBLE_EQ(s.gpus[0].power_w, 100.0);
  }
}

TEST(GpuReadings, OptionalValuesJoinByIndexAndUuid) {
  const std::string body = power(labels(0, "GPU-a"), "100") + power(labels(1, "GPU-b"), "100") +
                           power(labels(2, "GPU-c"), "100") +
                           // GPU 0: a util sample naming another UUID is not GPU 0's.
                           "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",UUID=\"GPU-zzz\"} 40\n"
                           // GPU 1: no UUID label on the util sample: joined by index.
                           "DCGM_FI_DEV_GPU_UTIL{gpu=\"1\"} 41\n"
                           // GPU 2: two util samples: ambiguous, missing.
                           "DCGM_FI_DEV_GPU_UTIL{gpu=\"2\",UUID=\"GPU-c\"} 42\n"
                           "DCGM_FI_DEV_GPU_UTIL{gpu=\"2\",UUID=\"GPU-c\"} 43\n"
                           // MIG-instance and index-less optional samples are ignored.
                           "DCGM_FI_PROF_SM_ACTIVE{gpu=\"0\",UUID=\"GPU-a\",GPU_I_ID=\"1\"} 0.5\n"
                           "DCGM_FI_PROF_SM_ACTIVE{UUID=\"GPU-a\"} 0.6\n"
                           "DCGM_FI_PROF_SM_ACTIVE{gpu=\"0\",UUID=\"GPU-a\"} 0.7\n";
  const auto s = gpu_readings_from_body(body);
  ASSERT_EQ(s.gpus.size(), 3u);
  EXPECT_TRUE(s.reasons.empty());
  EXPECT_FALSE(s.gpus[0].gpu_util_pct);
  EXPECT_EQ(s.gpus[0].sm_active, 0.7);
  EXPECT_EQ(s.gpus[1].gpu_util_pct, 41.0);
  EXPECT_FALSE(s.gpus[2].gpu_util_pct);
}

// ---- parse errors and the fingerprint ------------------------------------------------------

TEST(GpuReadings, UnparsableBody) {
  const auto s = gpu_readings_from_body(power(labels(0, "GPU-a"), "100") +
                                        "DCGM_FI_DEV_POWER_USAGE{gpu=\"1\" 5\n");
  ASSERT_TRUE(s.error);
  EXPECT_NE(s.error->find("line 2"), std::string::npos) << *s.error;
  EXPECT_TRUE(s.gpus.empty()) << "one bad line fails the whole body";
  EXPECT_EQ(s.reasons, (Reasons{"endpoint_parse_error"}));
}

TEST(GpuReadings, FingerprintTellsARepeatedBody) {
  const std::string body = power(labels(0, "GPU-a"), "100") + power(labels(1, "GPU-b"), "200");
  const auto a = gpu_readings_from_body(body);
  EXPECT_EQ(a.fingerprint, gpu_readings_from_body(body).fingerprint);
  // Line order does not matter: readings are ordered by index.
  EXPECT_EQ(a.fingerprint, gpu_readings_from_body(power(labels(1, "GPU-b"), "200") +
                                                  power(labels(0, "GPU-a"), "100"))
                               .fingerprint);
  // Every value counts: power, UUID, an optional value.
  EXPECT_NE(a.fingerprint, gpu_readings_from_body(power(labels(0, "GPU-a"), "100") +
                                                  power(labels(1, "GPU-b"), "200.000001"))
                               .fingerprint);
  EXPECT_NE(a.fingerprint, gpu_readings_from_body(power(labels(0, "GPU-a"), "100") +
                                                  power(labels(1, "GPU-B"), "200"))
                               .fingerprint);
  EXPECT_NE(a.fingerprint,
            gpu_readings_from_body(body + "DCGM_FI_DEV_GPU_TEMP{gpu=\"0\"} 40\n").fingerprint);
  EXPECT_NE(a.fingerprint, gpu_readings_from_body("").fingerprint);
}

// The GPU leg: rows with the slot's scrape_seq and one time per scrape, and the contract
// codes its failures become - none before an endpoint's first rows (it is coming up).
TEST(GpuLeg, RowsAndTheReasonsOfFailures) {
  auto summary = std::make_shared<GpuLegSummary>();
  GpuLeg leg(1, summary);
  EXPECT_EQ(leg.samples_header(), *artifacts::gpu_samples_header(3));
  leg.on_failure(0, kReasonConnect);  // refused while the exporter starts
  std::string lines;
  BodyInput in;
  in.hostname = "n1";
  in.body = kRealBody;
  in.midpoint_unix = 1700000000.5;
  in.scrape_seq = 7;
  const auto out = leg.on_body(in, lines);
  EXPECT_TRUE(out.reason.empty());
  EXPECT_EQ(out.rows, 2u);
  EXPECT_EQ(
      lines,
      "3,1700000000.5,7,n1,0,GPU-604ac76c-d9cf-fef3-62e9-d92044ab6e52,71.482,0,0,31\r\n"
      "3,1700000000.5,7,n1,1,GPU-6bf47ca9-ad3e-15db-beed-1079a7d74116,302.206,44,0.412334,55\r\n");
  leg.on_failure(0, kReasonConnect);
  leg.on_failure(0, kReasonTimeout);
  leg.on_failure(0, kReasonMalformed);
  std::string none;
  in.body = "DCGM_FI_DEV_GPU_TEMP{gpu=\"0\"} 40\n";
  const auto empty = leg.on_body(in, none);
  EXPECT_EQ(empty.reason, kReasonNoGpus);
  EXPECT_TRUE(none.empty());
  leg.on_failure(0, kReasonNoGpus);  // noted by on_body already
  ASSERT_TRUE(leg.finalize({}, std::nullopt, 0, ""));
  EXPECT_EQ(summary->reason_counts,
            (std::map<std::string, std::uint64_t>{{std::string(reason::kEndpointHttpError), 1},
                                                  {std::string(reason::kEndpointTimeout), 1},
                                                  {std::string(reason::kEndpointParseError), 1},
                                                  {std::string(reason::kPowerMetricMissing), 1}}));
  EXPECT_EQ(summary->first_devices.at("n1"), (std::vector<long long>{0, 1}));
  EXPECT_EQ(summary->rows, 2u);
}

// ---- another exporter's names (kind: custom) -----------------------------------------------

// rocm/device-metrics-exporter's names, as the reference's AMD example gives them.
GpuExporterProfile amd_profile() {
  GpuExporterProfile p;
  p.power_metric = "gpu_power_usage";
  p.power_scope = "amd_device_metrics_exporter_gpu_power_usage";
  p.index_label = "gpu_id";
  p.identity_label = "serial_number";
  p.util_metric = "gpu_gfx_activity";
  p.temperature_metric = "gpu_junction_temperature";
  return p;
}

// An AMD device-metrics-exporter body in its own shape: lower-case families, gpu_id and
// serial_number among its always-set labels, float values.
constexpr std::string_view kAmdBody =
    R"(# HELP gpu_power_usage power usage in Watts
# TYPE gpu_power_usage gauge
gpu_power_usage{card_model="0x74a1",gpu_id="0",gpu_partition_id="0",hostname="mi300-01",serial_number="692251001124"} 141
gpu_power_usage{card_model="0x74a1",gpu_id="1",gpu_partition_id="0",hostname="mi300-01",serial_number="692251001125"} 512.5
# HELP gpu_gfx_activity graphics engine usage in percentage
# TYPE gpu_gfx_activity gauge
gpu_gfx_activity{card_model="0x74a1",gpu_id="0",gpu_partition_id="0",hostname="mi300-01",serial_number="692251001124"} 0
gpu_gfx_activity{card_model="0x74a1",gpu_id="1",gpu_partition_id="0",hostname="mi300-01",serial_number="692251001125"} 87
# HELP gpu_junction_temperature junction temperature value in celsius
# TYPE gpu_junction_temperature gauge
gpu_junction_temperature{card_model="0x74a1",gpu_id="0",gpu_partition_id="0",hostname="mi300-01",serial_number="692251001124"} 38
gpu_junction_temperature{card_model="0x74a1",gpu_id="1",gpu_partition_id="0",hostname="mi300-01",serial_number="692251001125"} 71.25
# HELP gpu_package_power package power in Watts
# TYPE gpu_package_power gauge
gpu_package_power{card_model="0x74a1",gpu_id="0",gpu_partition_id="0",hostname="mi300-01",serial_number="692251001124"} 600
)";

TEST(GpuReadings, TheDcgmProfileIsTheDefault) {
  const auto& d = GpuExporterProfile::dcgm();
  EXPECT_EQ(d.power_metric, "DCGM_FI_DEV_POWER_USAGE");
  EXPECT_EQ(d.index_label, "gpu");
  EXPECT_EQ(d.identity_label, "UUID");
  EXPECT_EQ(d.instance_labels, (std::vector<std::string>{"GPU_I_ID", "GPU_I_PROFILE"}));
  GpuReadOptions explicit_dcgm;
  explicit_dcgm.profile = d;
  const auto a = gpu_readings_from_body(kRealBody);
  const auto b = gpu_readings_from_body(kRealBody, explicit_dcgm);
  EXPECT_EQ(a.gpus, b.gpus);
  EXPECT_EQ(a.fingerprint, b.fingerprint);
}

TEST(GpuReadings, ACustomExporterIsReadByItsNames) {
  GpuReadOptions amd;
  amd.profile = amd_profile();
  const auto s = gpu_readings_from_body(kAmdBody, amd);
  ASSERT_FALSE(s.error.has_value());
  EXPECT_TRUE(s.reasons.empty());
  ASSERT_EQ(s.gpus.size(), 2u);
  EXPECT_EQ(s.gpus[0], (GpuReading{0, "692251001124", 141.0, 0.0, std::nullopt, 38.0}));
  EXPECT_EQ(s.gpus[1], (GpuReading{1, "692251001125", 512.5, 87.0, std::nullopt, 71.25}));
  // The DCGM profile finds no power in it, and the AMD profile none in a DCGM body.
  EXPECT_EQ(gpu_readings_from_body(kAmdBody).reasons, Reasons{"power_metric_missing"});
  EXPECT_EQ(gpu_readings_from_body(kRealBody, amd).reasons, Reasons{"power_metric_missing"});
}

TEST(GpuReadings, ACustomProfileKeepsTheRules) {
  GpuReadOptions o;
  o.profile = amd_profile();
  o.profile.instance_labels = {"compute_partition"};
  const auto line = [](std::string_view labels, std::string_view value) {
    return "gpu_power_usage{" + std::string(labels) + "} " + std::string(value) + "\n";
  };
  // A missing index, a missing identity, a duplicate, an instance and a bad value, by the
  // profile's labels.
  const std::string body = line("serial_number=\"s9\"", "10") + line("gpu_id=\"1\"", "10") +
                           line("gpu_id=\"2\",serial_number=\"a\"", "10") +
                           line("gpu_id=\"2\",serial_number=\"b\"", "11") +
                           line("gpu_id=\"3\",serial_number=\"c\",compute_partition=\"1\"", "5") +
                           line("gpu_id=\"4\",serial_number=\"d\"", "-1") +
                           line("gpu_id=\"5\",serial_number=\"e\"", "99");
  const auto s = gpu_readings_from_body(body, o);
  EXPECT_EQ(indices(s), (std::vector<long long>{5}));
  EXPECT_EQ(s.reasons, (Reasons{"duplicate_power_metric", "gpu_index_missing", "gpu_uuid_missing",
                                "invalid_power_value", "mig_instance_unsupported"}));
  // An optional family the profile leaves out is not read, even when served.
  o.profile.temperature_metric.reset();
  EXPECT_FALSE(gpu_readings_from_body(kAmdBody, o).gpus[0].temperature_c.has_value());
}

TEST(GpuReadings, OnlyTheSelectedIndicesAreRead) {
  GpuReadOptions o;
  o.only_indices = std::vector<long long>{1, 3};
  const auto s = gpu_readings_from_body(sim_body(4), o);
  EXPECT_EQ(indices(s), (std::vector<long long>{1, 3}));
  EXPECT_TRUE(s.reasons.empty());
  // A duplicate on an unselected GPU is not this run's to report.
  o.only_indices = std::vector<long long>{0};
  const auto dup =
      gpu_readings_from_body(power(labels(0, kUuid0), "10") + power(labels(1, kUuid1), "10") +
                                 power(labels(1, kUuid1), "11"),
                             o);
  EXPECT_EQ(indices(dup), (std::vector<long long>{0}));
  EXPECT_TRUE(dup.reasons.empty());
}

TEST(GpuReadings, TheSimulatorsAmdFlavourReadsBackExactly) {
  std::vector<sim::GpuSeries> series;
  for (std::uint32_t g = 0; g < 3; ++g) {
    sim::GpuSeries s;
    s.index = g;
    s.uuid = sim::simulated_gpu_uuid("node7", g);
    s.values = sim::derive_gpu_readout(100.0 + 50.0 * g, sim::kGpuIdleWatts, sim::kGpuMaxWatts);
    series.push_back(std::move(s));
  }
  sim::ExpositionOptions eo;
  eo.names = sim::ExporterNames::amd();
  GpuReadOptions amd;
  amd.profile = amd_profile();
  const auto s = gpu_readings_from_body(sim::render_dcgm_exposition(series, eo), amd);
  ASSERT_EQ(s.gpus.size(), 3u);
  for (std::uint32_t g = 0; g < 3; ++g) {
    EXPECT_EQ(s.gpus[g].uuid, series[g].uuid);
    EXPECT_DOUBLE_EQ(s.gpus[g].power_w, std::stod(sim::format_go_float(series[g].values.power_w)));
    EXPECT_EQ(s.gpus[g].gpu_util_pct, static_cast<double>(series[g].values.gpu_util_pct));
    EXPECT_EQ(s.gpus[g].temperature_c, static_cast<double>(series[g].values.gpu_temp_c));
    EXPECT_FALSE(s.gpus[g].sm_active.has_value());
  }
}

// The leg reads with the options it was given: another exporter's names, rows as before.
TEST(GpuLeg, ReadsACustomExportersBody) {
  auto summary = std::make_shared<GpuLegSummary>();
  GpuReadOptions amd;
  amd.profile = amd_profile();
  GpuLeg leg(1, summary, amd);
  std::string lines;
  BodyInput in;
  in.hostname = "n1";
  in.body = kAmdBody;
  in.midpoint_unix = 1700000000.5;
  in.scrape_seq = 3;
  const auto out = leg.on_body(in, lines);
  EXPECT_TRUE(out.reason.empty());
  EXPECT_EQ(lines,
            "3,1700000000.5,3,n1,0,692251001124,141,0,,38\r\n"
            "3,1700000000.5,3,n1,1,692251001125,512.5,87,,71.25\r\n");
}

// --gpu-samples-schema: the same rows in the v1 and v2 layouts, with their headers; an unknown
// version is v3.
TEST(GpuLeg, WritesTheSchemaItWasGiven) {
  BodyInput in;
  in.hostname = "n1";
  in.body = kRealBody;
  in.midpoint_unix = 1700000000.5;
  in.scrape_seq = 7;
  const std::pair<int, std::string> cases[] = {
      {1,
       "1,1700000000.5,7,n1,0,GPU-604ac76c-d9cf-fef3-62e9-d92044ab6e52,71.482\r\n"
       "1,1700000000.5,7,n1,1,GPU-6bf47ca9-ad3e-15db-beed-1079a7d74116,302.206\r\n"},
      {2,
       "2,1700000000.5,7,n1,0,GPU-604ac76c-d9cf-fef3-62e9-d92044ab6e52,71.482,0,0\r\n"
       "2,1700000000.5,7,n1,1,GPU-6bf47ca9-ad3e-15db-beed-1079a7d74116,302.206,44,0.412334\r\n"}};
  for (const auto& [schema, want] : cases) {
    GpuLeg leg(1, std::make_shared<GpuLegSummary>(), {}, schema);
    EXPECT_EQ(leg.samples_header(), *artifacts::gpu_samples_header(schema));
    std::string lines;
    EXPECT_EQ(leg.on_body(in, lines).rows, 2u);
    EXPECT_EQ(lines, want) << schema;
  }
  EXPECT_EQ(GpuLeg(1, std::make_shared<GpuLegSummary>(), {}, 7).samples_header(),
            *artifacts::gpu_samples_header(3));
}

}  // namespace
}  // namespace cpupower::scrape
