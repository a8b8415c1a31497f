#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <thread>

#include "sources/dcgm.hpp"
#include "sources/nvidia_abi.hpp"
#include "sources/nvml.hpp"
#include "test_tree.hpp"

namespace cpupower::sources {
namespace {

using namespace nvidia;

TEST(DcgmValues, BlanksStatusesAndNonPositiveAreMissing) {
  EXPECT_EQ(interpret_dcgm_value(0, DCGM_FT_DOUBLE, 50.149, 0).watts, 50.149);
  EXPECT_EQ(interpret_dcgm_value(0, DCGM_FT_INT64, 0, 53).watts, 53.0);
  EXPECT_FALSE(interpret_dcgm_value(-6, DCGM_FT_DOUBLE, 50.0, 0).watts);
  EXPECT_EQ(interpret_dcgm_value(-6, DCGM_FT_DOUBLE, 50.0, 0).problem, "status -6");
  EXPECT_FALSE(interpret_dcgm_value(0, DCGM_FT_DOUBLE, DCGM_FP64_BLANK, 0).watts);
  EXPECT_FALSE(interpret_dcgm_value(0, DCGM_FT_DOUBLE, DCGM_FP64_BLANK + 3, 0).watts);
  EXPECT_FALSE(interpret_dcgm_value(0, DCGM_FT_INT64, 0, DCGM_INT64_BLANK + 1).watts);
  EXPECT_FALSE(interpret_dcgm_value(0, DCGM_FT_DOUBLE, 0.0, 0).watts);
  EXPECT_FALSE(interpret_dcgm_value(0, DCGM_FT_DOUBLE, -1.0, 0).watts);
  EXPECT_FALSE(interpret_dcgm_value(0, DCGM_FT_DOUBLE, std::nan(""), 0).watts);
  // Utilization may be 0 (an idle socket), never negative, blank or non-finite.
  EXPECT_EQ(interpret_dcgm_value(0, DCGM_FT_DOUBLE, 0.0, 0, true).watts, 0.0);
  EXPECT_EQ(interpret_dcgm_value(0, DCGM_FT_DOUBLE, 0.25, 0, true).watts, 0.25);
  EXPECT_FALSE(interpret_dcgm_value(0, DCGM_FT_DOUBLE, -0.1, 0, true).watts);
  EXPECT_FALSE(interpret_dcgm_value(0, DCGM_FT_DOUBLE, DCGM_FP64_BLANK, 0, true).watts);
  EXPECT_FALSE(interpret_dcgm_value(0, DCGM_FT_DOUBLE, std::nan(""), 0, true).watts);
}

TEST(DcgmValues, PowerAboveThePhysicalBoundIsAnError) {
  // Under DCGM's blank threshold (2^47) and still no socket's power: the collectors' bound.
  EXPECT_EQ(interpret_dcgm_value(0, DCGM_FT_DOUBLE, 10000.0, 0).watts, 10000.0);
  for (const double w : {10000.5, 1e6, 1.4e14}) {
    const auto v = interpret_dcgm_value(0, DCGM_FT_DOUBLE, w, 0);
    EXPECT_FALSE(v.watts) << w;
    EXPECT_NE(v.problem.find("physical bound"), std::string::npos) << v.problem;
  }
  EXPECT_FALSE(interpret_dcgm_value(0, DCGM_FT_INT64, 0, 18000000).watts);
}

TEST(NvidiaAbi, VersionWordsAndSizes) {
  EXPECT_EQ(dcgmFieldValue_version2, 0x02001020u);
  EXPECT_EQ(dcgmConnectV2Params_version2, 0x02000010u);
  EXPECT_EQ(sizeof(nvmlFieldValue_t), 40u);
  EXPECT_EQ(sizeof(nvmlPciInfo_t), 68u);
}

TEST(Nvml, SocketOfBusIdReadsThePciNumaNode) {
  cpupower::testing::TestTree t;
  t.write("0008:01:00.0/numa_node", "0\n");
  t.write("0000:1b:00.0/numa_node", "1\n");
  t.write("0009:01:00.0/numa_node", "-1\n");
  t.write("0018:01:00.0/numa_node", "socket0\n");
  EXPECT_EQ(socket_of_bus_id(t.root(), "0008:01:00.0"), 0u);
  EXPECT_EQ(socket_of_bus_id(t.root(), "0000:1B:00.0"), 1u);
  EXPECT_EQ(socket_of_bus_id(t.root(), "0009:01:00.0"), std::nullopt);
  EXPECT_EQ(socket_of_bus_id(t.root(), "0018:01:00.0"), std::nullopt);
  EXPECT_EQ(socket_of_bus_id(t.root(), "0019:01:00.0"), std::nullopt);
}

TEST(Nvml, AReaderThatGaveUpLeavesNoThreadBehind) {
  // No NVML library: the reader gives up for good, and its health watch, with nothing left
  // to watch, ends with the poller instead of waking four times a second for the process's
  // lifetime.
  NvmlOptions o;
  o.library = "/nonexistent/libnvidia-ml.so.1";
  NvmlModuleReader reader(o);
  reader.start();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while ((reader.threads() > 0 || reader.snapshot().available) &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_FALSE(reader.snapshot().available);
  EXPECT_EQ(reader.threads(), 0);
  reader.stop();
}

TEST(Nvml, MeanOfAgreeingGpusAndWithholdingBeyondFivePercent) {
  EXPECT_EQ(agreeing_mean({500.0, 498.0}, 0.05), 499.0);
  EXPECT_EQ(agreeing_mean({600.0, 620.0}, 0.05), 610.0);
  // 4 % apart: kept; 6 % apart: withheld.
  EXPECT_TRUE(agreeing_mean({500.0, 520.0}, 0.05));
  EXPECT_FALSE(agreeing_mean({500.0, 530.0}, 0.05));
  EXPECT_EQ(agreeing_mean({498.72}, 0.05), 498.72);
  EXPECT_FALSE(agreeing_mean({}, 0.05));
}

TEST(Dcgm, MissingLibraryIsAReasonNotACrash) {
  DcgmOptions o;
  o.library = "/nonexistent/libdcgm.so.4";
  const auto r = try_dcgm(o);
  EXPECT_FALSE(r.reader);
  EXPECT_EQ(r.reason.rfind("DCGM unavailable: libdcgm not found: ", 0), 0u) << r.reason;
}

}  // namespace
}  // namespace cpupower::sources
