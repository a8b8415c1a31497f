#include "rails/rails.hpp"

#include <gtest/gtest.h>

namespace cpupower::rails {
namespace {

struct Case {
  const char* oem;
  Kind kind;
  const char* socket;
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << c.oem;
}

class ClassifyOem : public ::testing::TestWithParam<Case> {};

TEST_P(ClassifyOem, MatchesTheWorkedExamples) {
  const auto c = classify_oem(GetParam().oem);
  EXPECT_EQ(kind_name(c.kind), kind_name(GetParam().kind));
  EXPECT_EQ(c.socket, GetParam().socket);
}

INSTANTIATE_TEST_SUITE_P(
    ReferenceNotes, ClassifyOem,
    ::testing::Values(Case{"Grace Power Socket 1", Kind::total, "1"},
                      Case{"CPU Power Socket 0", Kind::cpu_rail, "0"},
                      Case{"SysIO Power Socket 1", Kind::soc, "1"},
                      Case{"Total Power socket 0", Kind::total, "0"},
                      Case{"Total Power in uW socket 0", Kind::total, "0"},
                      Case{"Total Input Power in uW socket 0", Kind::total, "0"},
                      Case{"Total Input Power socket 3", Kind::total, "3"},
                      Case{"CPU Rail Power in uW socket 1", Kind::cpu_rail, "1"},
                      Case{"CPU Rail Input Power in uW socket 1", Kind::cpu_rail, "1"},
                      Case{"CPU Rail Power socket 1", Kind::cpu_rail, "1"},
                      Case{"CPU Input Power Socket 1", Kind::cpu_rail, "1"},
                      Case{"CPU Input Power in uW Socket 2", Kind::cpu_rail, "2"},
                      Case{"CPU Power in uW Socket 0", Kind::cpu_rail, "0"},
                      Case{"SoC Rail Power in uW socket 1", Kind::soc, "1"},
                      Case{"SoC Rail Input Power in uW socket 1", Kind::soc, "1"},
                      Case{"SOC Rail Power in uW socket 1", Kind::soc, "1"},
                      Case{"DRAM Power socket 0", Kind::dram, "0"},
                      Case{"DRAM Power in uW socket 0", Kind::dram, "0"},
                      Case{"DRAM Input Power in uW socket 0", Kind::dram, "0"},
                      // The seed: a firmware module meter stays unclassified (NVML alone
                      // gives module power).
                      Case{"Module Power Socket 1", Kind::other, ""},
                      Case{"Module Power Socket 0", Kind::other, ""},
                      Case{"Grace Power Socket 1 CPU Power", Kind::total, "1"},
                      Case{"grace power socket 12", Kind::total, "12"},
                      Case{"Grace Power Socket 01", Kind::total, "01"},
                      Case{"CPU Power Socket \"x", Kind::other, ""},
                      Case{"Module Socket A", Kind::other, ""},
                      Case{"CPU Rail Output Power in uW socket 0", Kind::other, ""},
                      Case{"Total CPU Energy In uJ socket 0", Kind::other, ""},
                      Case{"Chipthrot DDR Throttle (samples x1000) socket 0", Kind::other, ""},
                      Case{"power1", Kind::other, ""}, Case{"", Kind::other, ""}));

TEST(Rails, LegacyTypeAliasesMapToTheCurrentKinds) {
  EXPECT_EQ(parse_kind("grace"), Kind::total);
  EXPECT_EQ(parse_kind("cpu"), Kind::cpu_rail);
  EXPECT_EQ(parse_kind("sysio"), Kind::soc);
  EXPECT_EQ(parse_kind("total"), Kind::total);
  EXPECT_EQ(parse_kind("dram"), Kind::dram);
  EXPECT_EQ(parse_kind("module"), Kind::module);
  EXPECT_EQ(parse_kind("other"), std::nullopt);
  EXPECT_EQ(parse_kind("Total"), std::nullopt);
}

TEST(Rails, CanonicalSensorNames) {
  EXPECT_EQ(acpi_sensor_name(Kind::total, 0), "CPU0:cpuSidePowerUsageW");
  EXPECT_EQ(acpi_sensor_name(Kind::cpu_rail, 1), "CPU1:cpuRailPowerUsageW");
  EXPECT_EQ(acpi_sensor_name(Kind::soc, 1), "CPU1:socPowerUsageW");
  EXPECT_EQ(acpi_sensor_name(Kind::dram, 0), "CPU0:dramPowerUsageW");
  EXPECT_EQ(acpi_sensor_name(Kind::module, 0), "CPU0:modulePowerUsageW");
  EXPECT_EQ(dcgm_sensor_name(3), "CPU3:cpuPowerUsageW");
}

TEST(Rails, SocketIndexAcceptsDigitsOnly) {
  EXPECT_EQ(socket_index("0"), 0u);
  EXPECT_EQ(socket_index("01"), 1u);
  EXPECT_EQ(socket_index(""), std::nullopt);
  EXPECT_EQ(socket_index("-1"), std::nullopt);
  EXPECT_EQ(socket_index("1a"), std::nullopt);
}

TEST(Rails, DcgmFieldsMapToTheirRails) {
  EXPECT_EQ(dcgm_field_kind(1130), Kind::cpu_rail);
  EXPECT_EQ(dcgm_field_kind(1132), Kind::soc);
  EXPECT_EQ(dcgm_field_kind(1131), std::nullopt);
  EXPECT_EQ(dcgm_field_kind(1133), std::nullopt);
}

}  // namespace
}  // namespace cpupower::rails
