#include "scrape/readings.hpp"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

namespace cpupower::scrape {
namespace {

// Bodies in the shapes the reference collector's parser is tested with, and bodies the
// reference exporter and ours serve.
std::string dcgm_body() {
  return "cpu_power_dcgm_watts{socket=\"0\",source=\"dcgm\"} 43.878000\n"
         "cpu_power_dcgm_watts{socket=\"1\",source=\"dcgm\"} 52.350000\n";
}

std::string acpi_body(bool with_total = true) {
  std::string body =
      "cpu_power_acpi_watts{sensor=\"a/0\",type=\"cpu_rail\",socket=\"0\","
      "oem_info=\"CPU Power Socket 0\"} 48.1\n"
      "cpu_power_acpi_watts{sensor=\"a/1\",type=\"soc\",socket=\"0\","
      "oem_info=\"SysIO Power Socket 0\"} 5.2\n";
  if (with_total) {
    body +=
        "cpu_power_acpi_watts{sensor=\"a/2\",type=\"total\",socket=\"0\","
        "oem_info=\"Grace Power Socket 0\"} 93.4\n";
  }
  body +=
      "cpu_power_acpi_watts{sensor=\"a/3\",type=\"other\",socket=\"\","
      "oem_info=\"Module Socket A\"} 1.0\n";
  return body;
}

std::string nvml_body() {
  return "cpu_power_nvml_watts{type=\"module\",socket=\"0\",gpus=\"0,1\",source=\"nvml\"} "
         "498.720000\n"
         "cpu_power_nvml_watts{type=\"module\",socket=\"1\",gpus=\"2,3\",source=\"nvml\"} "
         "470.500000\n";
}

std::vector<std::uint32_t> sockets_of(const Readings& r) {
  std::vector<std::uint32_t> out;
  for (const auto& row : r.rows) out.push_back(row.socket_id);
  return out;
}

std::optional<double> none() {
  return std::nullopt;
}

// ---- the reference parser's cases -----------------------------------------------------

TEST(ScrapeReadings, DcgmModeSumsAllSocketsIntoTheTotal) {
  const auto r = readings_from_body(dcgm_body());
  EXPECT_EQ(r.mode, Mode::dcgm);
  EXPECT_EQ(mode_name(r.mode), "dcgm");
  EXPECT_EQ(sockets_of(r), (std::vector<std::uint32_t>{0, 1}));
  EXPECT_EQ(r.rows[0].sensor, "CPU0:cpuPowerUsageW");
  EXPECT_EQ(r.rows[1].sensor, "CPU1:cpuPowerUsageW");
  EXPECT_EQ(r.rows[0].source, "dcgm");
  EXPECT_DOUBLE_EQ(r.rows[0].total_power_w, 43.878 + 52.35);
  EXPECT_DOUBLE_EQ(r.rows[1].total_power_w, 43.878 + 52.35);
}

TEST(ScrapeReadings, AcpiModeTotalsOnlyTotalChannels) {
  const auto r = readings_from_body(acpi_body());
  EXPECT_EQ(r.mode, Mode::acpi);
  ASSERT_EQ(r.rows.size(), 1u);
  EXPECT_DOUBLE_EQ(r.rows[0].total_power_w, 93.4);
}

TEST(ScrapeReadings, AcpiModePivotsOneSocketRowWithComponentRails) {
  const auto r = readings_from_body(acpi_body());
  ASSERT_EQ(r.rows.size(), 1u);
  SocketRow want;
  want.socket_id = 0;
  want.source = "acpi";
  want.sensor = "CPU0:cpuSidePowerUsageW";
  want.power_w = 93.4;
  want.cpu_rail_w = 48.1;
  want.soc_w = 5.2;
  want.total_power_w = 93.4;
  EXPECT_EQ(r.rows[0], want);
}

TEST(ScrapeReadings, EnergyCountersBesideEveryFamilyChangeNoReading) {
  std::string with = acpi_body() + dcgm_body() + nvml_body();
  for (const char* source : {"acpi", "dcgm", "nvml"}) {
    for (const char* counter : {"joules", "covered_seconds", "bridged_seconds"}) {
      with += std::string("# TYPE cpu_power_") + source + "_" + counter + "_total counter\n";
      with += std::string("cpu_power_") + source + "_" + counter +
              "_total{sensor=\"a/2\",type=\"total\",socket=\"0\",oem_info=\"Grace Power Socket "
              "0\",field_id=\"1130\",gpus=\"0,1\",source=\"" +
              source + "\"} 123456.789000\n";
    }
  }
  const auto plain = readings_from_body(acpi_body() + dcgm_body() + nvml_body());
  const auto r = readings_from_body(with);
  EXPECT_EQ(r.mode, plain.mode);
  ASSERT_EQ(r.rows.size(), plain.rows.size());
  for (std::size_t i = 0; i < r.rows.size(); ++i) EXPECT_EQ(r.rows[i], plain.rows[i]);
}

TEST(ScrapeReadings, AcpiModeNormalizesSensorNamesFromOemLabels) {
  // No type, no socket: everything comes from the OEM label; the sensor name is canonical.
  const auto r = readings_from_body(
      "cpu_power_acpi_watts{oem_info=\"Grace Power Socket 1\"} 97.5\n"
      "cpu_power_acpi_watts{oem_info=\"CPU Power Socket 1\"} 50.0\n");
  ASSERT_EQ(r.rows.size(), 1u);
  EXPECT_EQ(r.rows[0].socket_id, 1u);
  EXPECT_EQ(r.rows[0].sensor, "CPU1:cpuSidePowerUsageW");
  EXPECT_EQ(r.rows[0].cpu_rail_w, std::optional(50.0));
}

TEST(ScrapeReadings, AcpiModeAcceptsLegacyExporterTypeAliases) {
  const auto r = readings_from_body(
      "cpu_power_acpi_watts{type=\"grace\",socket=\"0\",oem_info=\"Grace Power Socket 0\","
      "source=\"acpi\"} 90.0\n"
      "cpu_power_acpi_watts{type=\"cpu\",socket=\"0\",oem_info=\"CPU Power Socket 0\","
      "source=\"acpi\"} 40.0\n"
      "cpu_power_acpi_watts{type=\"sysio\",socket=\"0\",oem_info=\"SysIO Power Socket 0\","
      "source=\"acpi\"} 6.0\n");
  EXPECT_EQ(r.mode, Mode::acpi);
  ASSERT_EQ(r.rows.size(), 1u);
  EXPECT_EQ(r.rows[0].power_w, 90.0);
  EXPECT_EQ(r.rows[0].cpu_rail_w, std::optional(40.0));
  EXPECT_EQ(r.rows[0].soc_w, std::optional(6.0));
  EXPECT_EQ(r.rows[0].dram_w, none());
}

TEST(ScrapeReadings, LegacyDcgmBodyPivotsOneSocketRowWithTheCpuRailFilled) {
  const auto r = readings_from_body(dcgm_body());
  ASSERT_EQ(r.rows.size(), 2u);
  EXPECT_EQ(r.rows[0].power_w, 43.878);
  EXPECT_EQ(r.rows[0].cpu_rail_w, std::optional(43.878));
  EXPECT_EQ(r.rows[0].soc_w, none());
  EXPECT_EQ(r.rows[0].dram_w, none());
  EXPECT_EQ(r.rows[0].module_w, none());
  EXPECT_EQ(r.rows[1].cpu_rail_w, std::optional(52.35));
}

TEST(ScrapeReadings, AcpiModeLeavesTotalBlankWithoutATotalChannel) {
  const auto r = readings_from_body(acpi_body(/*with_total=*/false));
  EXPECT_EQ(r.mode, Mode::acpi);
  EXPECT_TRUE(r.rows.empty());
  EXPECT_FALSE(r.error.has_value());
}

TEST(ScrapeReadings, AcpiModeTotalsAGenericTotalPowerLabelToo) {
  const auto r = readings_from_body(
      "cpu_power_acpi_watts{type=\"other\",socket=\"\",oem_info=\"Total Power in uW socket 0\"} "
      "88.0\n");
  ASSERT_EQ(r.rows.size(), 1u);
  EXPECT_EQ(r.rows[0].power_w, 88.0);
  EXPECT_EQ(r.rows[0].total_power_w, 88.0);
}

TEST(ScrapeReadings, AcpiModeRecoversInputPowerLabelsFromOlderExporterOutput) {
  const auto r = readings_from_body(
      "cpu_power_acpi_watts{type=\"other\",socket=\"\",oem_info=\"Total Input Power Socket 0\"} "
      "88.0\n"
      "cpu_power_acpi_watts{type=\"other\",socket=\"\","
      "oem_info=\"CPU Rail Input Power Socket 0\"} 40.0\n"
      "cpu_power_acpi_watts{type=\"other\",socket=\"\","
      "oem_info=\"SoC Rail Input Power Socket 0\"} 6.0\n"
      "cpu_power_acpi_watts{type=\"other\",socket=\"\",oem_info=\"DRAM Input Power Socket 0\"} "
      "3.0\n"
      "cpu_power_acpi_watts{type=\"other\",socket=\"\","
      "oem_info=\"CPU Rail Output Power Socket 0\"} 39.0\n");
  ASSERT_EQ(r.rows.size(), 1u);
  EXPECT_EQ(r.rows[0].power_w, 88.0);
  EXPECT_EQ(r.rows[0].cpu_rail_w, std::optional(40.0));  // not the Output rail's 39
  EXPECT_EQ(r.rows[0].soc_w, std::optional(6.0));
  EXPECT_EQ(r.rows[0].dram_w, std::optional(3.0));
  EXPECT_EQ(r.rows[0].total_power_w, 88.0);
}

TEST(ScrapeReadings, AcpiModeDropsUnclassifiedRails) {
  const auto r = readings_from_body(
      acpi_body() +
      "cpu_power_acpi_watts{type=\"other\",socket=\"\","
      "oem_info=\"Chipthrot DDR Throttle Socket 0\"} 7.0\n"
      "cpu_power_acpi_watts{type=\"other\",socket=\"0\",oem_info=\"NVSwitch 3\"} 12.0\n");
  ASSERT_EQ(r.rows.size(), 1u);
  EXPECT_EQ(r.rows[0].power_w, 93.4);
  EXPECT_EQ(r.rows[0].cpu_rail_w, std::optional(48.1));
  EXPECT_EQ(r.rows[0].soc_w, std::optional(5.2));
  EXPECT_EQ(r.rows[0].dram_w, none());
  EXPECT_EQ(r.rows[0].module_w, none());
}

TEST(ScrapeReadings, AcpiWinsWhenBothFamiliesArePresent) {
  for (const auto& body : {acpi_body() + dcgm_body(), dcgm_body() + acpi_body()}) {
    const auto r = readings_from_body(body);
    EXPECT_EQ(r.mode, Mode::acpi);
    ASSERT_EQ(r.rows.size(), 1u);
    EXPECT_EQ(r.rows[0].source, "acpi");
    EXPECT_EQ(r.rows[0].power_w, 93.4);
    EXPECT_EQ(r.rows[0].total_power_w, 93.4);
  }
}

TEST(ScrapeReadings, AcpiComponentsAloneStillWinOverDcgm) {
  // The tie-break is "any ACPI reading", so DCGM is not a fallback for a missing total.
  const auto r = readings_from_body(acpi_body(false) + dcgm_body());
  EXPECT_EQ(r.mode, Mode::acpi);
  EXPECT_TRUE(r.rows.empty());
}

TEST(ScrapeReadings, MalformedBodyYieldsNoReadings) {
  const auto r = readings_from_body("malformed");
  EXPECT_EQ(r.mode, Mode::unknown);
  EXPECT_EQ(mode_name(r.mode), "unknown");
  EXPECT_TRUE(r.rows.empty());
  ASSERT_TRUE(r.error.has_value());
  EXPECT_EQ(*r.error, "line 1, column 10: missing sample value");
}

TEST(ScrapeReadings, GarbageAfterGoodLinesRejectsTheWholeBody) {
  const auto r = readings_from_body(acpi_body() + "<html><body>502</body></html>\n");
  EXPECT_EQ(r.mode, Mode::unknown);
  EXPECT_TRUE(r.rows.empty());
  ASSERT_TRUE(r.error.has_value());
  EXPECT_NE(r.error->find("line 5"), std::string::npos) << *r.error;
}

TEST(ScrapeReadings, EmptyBodyYieldsNoReadings) {
  const auto r = readings_from_body("");
  EXPECT_EQ(r.mode, Mode::unknown);
  EXPECT_TRUE(r.rows.empty());
  EXPECT_FALSE(r.error.has_value());
}

TEST(ScrapeReadings, NvmlModuleMergesIntoAnAcpiScrape) {
  const auto r = readings_from_body(acpi_body() + nvml_body());
  ASSERT_EQ(r.rows.size(), 1u);  // NVML socket 1 has no CPU row to ride on
  EXPECT_EQ(r.rows[0].module_w, std::optional(498.72));
  EXPECT_EQ(r.rows[0].cpu_rail_w, std::optional(48.1));
  EXPECT_EQ(r.rows[0].total_power_w, 93.4);
}

TEST(ScrapeReadings, NvmlModuleMergesIntoADcgmScrape) {
  const auto r = readings_from_body(nvml_body() + dcgm_body());
  EXPECT_EQ(r.mode, Mode::dcgm);
  ASSERT_EQ(r.rows.size(), 2u);
  EXPECT_EQ(r.rows[0].module_w, std::optional(498.72));
  EXPECT_EQ(r.rows[1].module_w, std::optional(470.5));
  EXPECT_DOUBLE_EQ(r.rows[0].total_power_w, 43.878 + 52.35);
}

TEST(ScrapeReadings, NvmlOnlyBodyYieldsAnEmptyScrape) {
  const auto r = readings_from_body(nvml_body());
  EXPECT_EQ(r.mode, Mode::unknown);
  EXPECT_TRUE(r.rows.empty());
  EXPECT_FALSE(r.error.has_value());
}

TEST(ScrapeReadings, NvmlFamilyIgnoresNonModuleTypesAndInvalidSamples) {
  const auto r = readings_from_body(dcgm_body() +
                                    "cpu_power_nvml_watts{type=\"gpu\",socket=\"0\"} 300.0\n"
                                    "cpu_power_nvml_watts{type=\"total\",socket=\"0\"} 301.0\n"
                                    "cpu_power_nvml_watts{socket=\"0\"} 302.0\n"
                                    "cpu_power_nvml_watts{type=\"module\",socket=\"\"} 303.0\n"
                                    "cpu_power_nvml_watts{type=\"module\",socket=\"-1\"} 304.0\n"
                                    "cpu_power_nvml_watts{type=\"module\",socket=\"0\"} -1\n"
                                    "cpu_power_nvml_watts{type=\"module\",socket=\"1\"} 0\n"
                                    "cpu_power_nvml_watts{type=\"module\",socket=\"1\"} NaN\n");
  ASSERT_EQ(r.rows.size(), 2u);
  EXPECT_EQ(r.rows[0].module_w, none());
  EXPECT_EQ(r.rows[1].module_w, none());
}

// NVML is the only source of module_w: an ACPI module meter, whether an exporter labelled it
// type="module" or left it unclassified, never fills it, with or without NVML beside it.
TEST(ScrapeReadings, AcpiModuleMeterNeverBecomesModuleW) {
  const std::string acpi_module =
      "cpu_power_acpi_watts{sensor=\"a/4\",type=\"module\",socket=\"0\","
      "oem_info=\"Module Power Socket 0\"} 505.0\n";
  const auto with_nvml = readings_from_body(acpi_body() + acpi_module + nvml_body());
  ASSERT_EQ(with_nvml.rows.size(), 1u);
  EXPECT_EQ(with_nvml.rows[0].module_w, std::optional(498.72));
  EXPECT_EQ(with_nvml.rows[0].total_power_w, 93.4);
  const auto without = readings_from_body(acpi_body() + acpi_module);
  ASSERT_EQ(without.rows.size(), 1u);
  EXPECT_EQ(without.rows[0].module_w, none());
  EXPECT_EQ(without.fingerprint, readings_from_body(acpi_body()).fingerprint);
}

TEST(ScrapeReadings, AcpiModuleAloneIsNoAcpiReading) {
  // A module meter does not make a scrape ACPI: the DCGM family is still read.
  const auto r = readings_from_body(
      "cpu_power_acpi_watts{type=\"module\",socket=\"0\",oem_info=\"Module Power Socket 0\"} "
      "505\n" +
      dcgm_body());
  EXPECT_EQ(r.mode, Mode::dcgm);
  ASSERT_EQ(r.rows.size(), 2u);
  EXPECT_EQ(r.rows[0].module_w, none());
}

TEST(ScrapeReadings, UnclassifiedModuleMeterLeavesNvmlModuleW) {
  const auto r = readings_from_body(
      "cpu_power_acpi_watts{type=\"total\",socket=\"0\"} 100\n"
      "cpu_power_acpi_watts{type=\"total\",socket=\"1\"} 110\n"
      "cpu_power_acpi_watts{type=\"other\",socket=\"\",oem_info=\"Module Power Socket 1\"} 520\n" +
      nvml_body());
  ASSERT_EQ(r.rows.size(), 2u);
  EXPECT_EQ(r.rows[0].module_w, std::optional(498.72));
  EXPECT_EQ(r.rows[1].module_w, std::optional(470.5));
  EXPECT_EQ(r.rows[0].total_power_w, 210.0);
}

TEST(ScrapeReadings, FirstNvmlModuleValuePerSocketWins) {
  const auto r = readings_from_body(dcgm_body() +
                                    "cpu_power_nvml_watts{type=\"module\",socket=\"0\"} 400\n"
                                    "cpu_power_nvml_watts{type=\"module\",socket=\"0\"} 401\n");
  EXPECT_EQ(r.rows[0].module_w, std::optional(400.0));
}

// ---- DCGM bodies with field_id labels (1130 CPU rail, 1132 SysIO) ---------------------

TEST(ScrapeReadings, DcgmFieldLabelledBodyFillsCpuRailAndSoc) {
  const auto r = readings_from_body(
      "cpu_power_dcgm_watts{socket=\"0\",field_id=\"1130\",source=\"dcgm\"} 50.149000\n"
      "cpu_power_dcgm_watts{socket=\"0\",field_id=\"1132\",source=\"dcgm\"} 6.100000\n"
      "cpu_power_dcgm_watts{socket=\"0\",field_id=\"1133\",source=\"dcgm\"} 480.000000\n"
      "cpu_power_dcgm_watts{socket=\"1\",field_id=\"1130\",source=\"dcgm\"} 48.000000\n"
      "cpu_power_dcgm_watts{socket=\"1\",field_id=\"1131\",source=\"dcgm\"} 250.000000\n");
  EXPECT_EQ(r.mode, Mode::dcgm);
  ASSERT_EQ(r.rows.size(), 2u);
  EXPECT_EQ(r.rows[0].power_w, 50.149);
  EXPECT_EQ(r.rows[0].cpu_rail_w, std::optional(50.149));
  EXPECT_EQ(r.rows[0].soc_w, std::optional(6.1));
  EXPECT_EQ(r.rows[0].module_w, none());  // 1133 is excluded on purpose
  EXPECT_EQ(r.rows[1].soc_w, none());
  EXPECT_DOUBLE_EQ(r.rows[1].total_power_w, 50.149 + 48.0);
}

TEST(ScrapeReadings, DcgmBodyWithout1130PublishesNoSocket) {
  const auto r = readings_from_body(
      "cpu_power_dcgm_watts{socket=\"0\",field_id=\"1132\",source=\"dcgm\"} 6.1\n");
  EXPECT_EQ(r.mode, Mode::dcgm);
  EXPECT_TRUE(r.rows.empty());
}

TEST(ScrapeReadings, DcgmGarbageFieldIdIsIgnored) {
  const auto r = readings_from_body(
      "cpu_power_dcgm_watts{socket=\"0\",field_id=\"abc\"} 99.0\n"
      "cpu_power_dcgm_watts{socket=\"0\",field_id=\"-1130\"} 98.0\n"
      "cpu_power_dcgm_watts{socket=\"0\",field_id=\"1130x\"} 97.0\n"
      "cpu_power_dcgm_watts{socket=\"0\",field_id=\"66666\"} 96.0\n"
      "cpu_power_dcgm_watts{socket=\"0\",field_id=\"1130\"} 45.0\n");
  ASSERT_EQ(r.rows.size(), 1u);
  EXPECT_EQ(r.rows[0].power_w, 45.0);
}

TEST(ScrapeReadings, DcgmOnlyGarbageFieldsGiveAnEmptyScrape) {
  const auto r = readings_from_body("cpu_power_dcgm_watts{socket=\"0\",field_id=\"abc\"} 99.0\n");
  EXPECT_EQ(r.mode, Mode::unknown);
  EXPECT_TRUE(r.rows.empty());
}

TEST(ScrapeReadings, DcgmEmptyFieldIdMeans1130) {
  const auto r = readings_from_body("cpu_power_dcgm_watts{socket=\"0\",field_id=\"\"} 44.0\n");
  ASSERT_EQ(r.rows.size(), 1u);
  EXPECT_EQ(r.rows[0].power_w, 44.0);
  EXPECT_EQ(r.rows[0].cpu_rail_w, std::optional(44.0));
}

TEST(ScrapeReadings, DcgmFirstValuePerSocketAndFieldWinsWhateverTheOrder) {
  const auto r = readings_from_body(
      "cpu_power_dcgm_watts{socket=\"0\",field_id=\"1132\"} 6.0\n"
      "cpu_power_dcgm_watts{socket=\"0\"} 40.0\n"
      "cpu_power_dcgm_watts{socket=\"0\",field_id=\"1130\"} 41.0\n"
      "cpu_power_dcgm_watts{socket=\"0\",field_id=\"1132\"} 7.0\n");
  ASSERT_EQ(r.rows.size(), 1u);
  EXPECT_EQ(r.rows[0].power_w, 40.0);  // the unlabelled sample is 1130 and came first
  EXPECT_EQ(r.rows[0].soc_w, std::optional(6.0));
}

TEST(ScrapeReadings, AcpiModeTreatsAZeroTotalAsMissing) {
  const auto r = readings_from_body(
      "cpu_power_acpi_watts{type=\"total\",socket=\"0\"} 0\n"
      "cpu_power_acpi_watts{type=\"cpu_rail\",socket=\"0\"} 40.0\n"
      "cpu_power_acpi_watts{type=\"total\",socket=\"1\"} 95.0\n"
      "cpu_power_acpi_watts{type=\"soc\",socket=\"1\"} 0.000000\n");
  EXPECT_EQ(r.mode, Mode::acpi);
  ASSERT_EQ(r.rows.size(), 1u);
  EXPECT_EQ(r.rows[0].socket_id, 1u);
  EXPECT_EQ(r.rows[0].soc_w, none());
  EXPECT_EQ(r.rows[0].total_power_w, 95.0);
}

TEST(ScrapeReadings, AllZeroAcpiFallsThroughToDcgm) {
  // Zero is missing, so an ACPI family of zeros yields no ACPI reading at all.
  const auto r =
      readings_from_body("cpu_power_acpi_watts{type=\"total\",socket=\"0\"} 0\n" + dcgm_body());
  EXPECT_EQ(r.mode, Mode::dcgm);
  EXPECT_EQ(r.rows.size(), 2u);
}

TEST(ScrapeReadings, DcgmModeTreatsAZeroFieldValueAsMissing) {
  const auto r = readings_from_body(
      "cpu_power_dcgm_watts{socket=\"0\",field_id=\"1130\"} 0.000000\n"
      "cpu_power_dcgm_watts{socket=\"0\",field_id=\"1132\"} 6.0\n"
      "cpu_power_dcgm_watts{socket=\"1\",field_id=\"1130\"} 47.0\n"
      "cpu_power_dcgm_watts{socket=\"1\",field_id=\"1132\"} 0\n");
  ASSERT_EQ(r.rows.size(), 1u);
  EXPECT_EQ(r.rows[0].socket_id, 1u);
  EXPECT_EQ(r.rows[0].soc_w, none());
  EXPECT_EQ(r.rows[0].total_power_w, 47.0);
}

// ---- values, sockets and pivot --------------------------------------------------------

TEST(ScrapeReadings, NegativeAndNonFiniteValuesAreMissing) {
  const auto r = readings_from_body(
      "cpu_power_acpi_watts{type=\"total\",socket=\"0\"} NaN\n"
      "cpu_power_acpi_watts{type=\"total\",socket=\"1\"} +Inf\n"
      "cpu_power_acpi_watts{type=\"total\",socket=\"2\"} -5\n"
      "cpu_power_acpi_watts{type=\"total\",socket=\"3\"} -Inf\n"
      "cpu_power_acpi_watts{type=\"total\",socket=\"4\"} 90\n"
      "cpu_power_acpi_watts{type=\"dram\",socket=\"4\"} +Inf\n");
  EXPECT_EQ(sockets_of(r), std::vector<std::uint32_t>{4});
  EXPECT_EQ(r.rows[0].dram_w, none());
}

// Above the physical bound (10 kW a socket, the report's bound too) a reading is refused:
// two sockets at 1e308 W once made a row with an empty (infinite) node total.
TEST(ScrapeReadings, ReadingsAboveThePhysicalBoundAreRefused) {
  const auto r = readings_from_body(
      "cpu_power_acpi_watts{type=\"total\",socket=\"0\"} 1e308\n"
      "cpu_power_acpi_watts{type=\"total\",socket=\"1\"} 1e308\n"
      "cpu_power_acpi_watts{type=\"total\",socket=\"2\"} 10000.5\n"
      "cpu_power_acpi_watts{type=\"total\",socket=\"3\"} 10000\n"
      "cpu_power_acpi_watts{type=\"total\",socket=\"4\"} 90\n"
      "cpu_power_acpi_watts{type=\"module\",socket=\"4\"} 2e4\n");
  EXPECT_EQ(sockets_of(r), (std::vector<std::uint32_t>{3, 4}));
  ASSERT_EQ(r.rows.size(), 2u);
  EXPECT_EQ(r.rows[0].total_power_w, 10090.0);
  EXPECT_EQ(r.rows[1].module_w, none());
}

TEST(ScrapeReadings, UnusableSocketLabelFallsBackToTheOemLabel) {
  const auto r = readings_from_body(
      "cpu_power_acpi_watts{type=\"total\",socket=\"-1\",oem_info=\"Grace Power Socket 1\"} 91\n"
      "cpu_power_acpi_watts{type=\"total\",socket=\"x\",oem_info=\"Grace Power Socket 2\"} 92\n"
      "cpu_power_acpi_watts{type=\"total\",socket=\"1.5\",oem_info=\"Grace Power Socket 3\"} 93\n"
      "cpu_power_acpi_watts{type=\"total\",socket=\"+4\",oem_info=\"no socket here\"} 94\n"
      "cpu_power_acpi_watts{type=\"total\",socket=\" 5\"} 95\n");
  EXPECT_EQ(sockets_of(r), (std::vector<std::uint32_t>{1, 2, 3}));
}

TEST(ScrapeReadings, UnusableTypeFallsBackToTheOemLabelForBoth) {
  // type unknown: kind AND socket come from the label, even though socket was valid.
  const auto r = readings_from_body(
      "cpu_power_acpi_watts{type=\"weird\",socket=\"0\",oem_info=\"Grace Power Socket 1\"} 91\n");
  EXPECT_EQ(sockets_of(r), std::vector<std::uint32_t>{1});
}

TEST(ScrapeReadings, DcgmNeedsANumericSocket) {
  const auto r = readings_from_body(
      "cpu_power_dcgm_watts{socket=\"\"} 40\n"
      "cpu_power_dcgm_watts{} 41\n"
      "cpu_power_dcgm_watts{socket=\"-1\"} 42\n"
      "cpu_power_dcgm_watts{socket=\"3\"} 43\n");
  EXPECT_EQ(sockets_of(r), std::vector<std::uint32_t>{3});
}

TEST(ScrapeReadings, FirstReadingPerKindWinsAndSocketsComeOutAscending) {
  const auto r = readings_from_body(
      "cpu_power_acpi_watts{type=\"total\",socket=\"10\"} 100\n"
      "cpu_power_acpi_watts{type=\"total\",socket=\"2\"} 102\n"
      "cpu_power_acpi_watts{type=\"total\",socket=\"2\"} 999\n"
      "cpu_power_acpi_watts{type=\"cpu_rail\",socket=\"2\"} 50\n"
      "cpu_power_acpi_watts{type=\"cpu_rail\",socket=\"2\"} 51\n"
      "cpu_power_acpi_watts{type=\"total\",socket=\"0\"} 98\n");
  EXPECT_EQ(sockets_of(r), (std::vector<std::uint32_t>{0, 2, 10}));
  EXPECT_EQ(r.rows[1].power_w, 102.0);
  EXPECT_EQ(r.rows[1].cpu_rail_w, std::optional(50.0));
  for (const auto& row : r.rows) EXPECT_EQ(row.total_power_w, 300.0);
}

TEST(ScrapeReadings, TotalIsThePartialSumOfTheSocketsPresentAndNeverAddsRails) {
  const auto r = readings_from_body(
      "cpu_power_acpi_watts{type=\"total\",socket=\"0\"} 100\n"
      "cpu_power_acpi_watts{type=\"cpu_rail\",socket=\"0\"} 55\n"
      "cpu_power_acpi_watts{type=\"module\",socket=\"0\"} 600\n"
      "cpu_power_acpi_watts{type=\"cpu_rail\",socket=\"1\"} 50\n"
      "cpu_power_acpi_watts{type=\"module\",socket=\"1\"} 550\n");
  EXPECT_EQ(sockets_of(r), std::vector<std::uint32_t>{0});
  EXPECT_EQ(r.rows[0].total_power_w, 100.0);
  EXPECT_EQ(r.rows[0].module_w, none());  // an ACPI module meter is never module_w
}

TEST(ScrapeReadings, SocketUpNamesTheSocketsTheBodyLacks) {
  const std::string totals =
      "cpu_power_acpi_watts{sensor=\"hwmon11/power1\",type=\"total\",socket=\"1\"} 90\n";
  // Listed at 0 (withheld), or at 1 with no row (a racing or broken exporter): missing.
  auto r = readings_from_body(totals +
                              "cpu_power_exporter_socket_up{socket=\"0\"} 0\n"
                              "cpu_power_exporter_socket_up{socket=\"1\"} 1\n"
                              "cpu_power_exporter_socket_up{socket=\"2\"} 1\n");
  ASSERT_EQ(r.socket_up.size(), 3u);
  EXPECT_EQ(r.socket_up[0], (Readings::SocketUp{0, false}));
  EXPECT_EQ(r.socket_up[1], (Readings::SocketUp{1, true}));
  EXPECT_EQ(r.sockets_missing, (std::vector<std::uint32_t>{0, 2}));
  EXPECT_EQ(sockets_of(r), std::vector<std::uint32_t>{1});
  // Whole: nothing missing. The first sample per socket wins; values other than 0 and 1, and
  // unusable socket labels, say nothing.
  r = readings_from_body(totals +
                         "cpu_power_exporter_socket_up{socket=\"1\"} 1\n"
                         "cpu_power_exporter_socket_up{socket=\"1\"} 0\n"
                         "cpu_power_exporter_socket_up{socket=\"3\"} NaN\n"
                         "cpu_power_exporter_socket_up{socket=\"x\"} 0\n");
  EXPECT_EQ(r.socket_up, (std::vector<Readings::SocketUp>{{1, true}}));
  EXPECT_TRUE(r.sockets_missing.empty());
  // Older exporters serve no socket_up: nothing is known missing from the body alone.
  r = readings_from_body(totals);
  EXPECT_TRUE(r.socket_up.empty());
  EXPECT_TRUE(r.sockets_missing.empty());
  // A body with no socket power at all: every listed socket is missing.
  r = readings_from_body("cpu_power_exporter_socket_up{socket=\"0\"} 0\n");
  EXPECT_EQ(r.mode, Mode::unknown);
  EXPECT_EQ(r.sockets_missing, std::vector<std::uint32_t>{0});
}

TEST(ScrapeReadings, FingerprintFollowsSocketUp) {
  const std::string totals = "cpu_power_acpi_watts{type=\"total\",socket=\"1\"} 90\n";
  EXPECT_NE(
      readings_from_body(totals + "cpu_power_exporter_socket_up{socket=\"0\"} 0\n").fingerprint,
      readings_from_body(totals + "cpu_power_exporter_socket_up{socket=\"0\"} 1\n").fingerprint);
  EXPECT_EQ(readings_from_body(totals).fingerprint, readings_from_body(totals).fingerprint);
}

TEST(ScrapeReadings, EscapedOemLabelsStillClassify) {
  const auto r = readings_from_body(
      "cpu_power_acpi_watts{type=\"other\",socket=\"\",oem_info=\"\\\"Grace Power Socket 0\\\"\"} "
      "90\n");
  EXPECT_EQ(sockets_of(r), std::vector<std::uint32_t>{0});
}

// ---- whole exporter bodies ------------------------------------------------------------

TEST(ScrapeReadings, RustAcpiExporterBodyWithEveryKind) {
  const std::string body =
      "# HELP cpu_power_acpi_watts Grace CPU power from ACPI power_meter hwmon sensors.\n"
      "# TYPE cpu_power_acpi_watts gauge\n"
      "cpu_power_acpi_watts{sensor=\"hwmon3/power1\",type=\"total\",socket=\"0\","
      "oem_info=\"Grace Power Socket 0\",source=\"acpi\"} 98.029000\n"
      "cpu_power_acpi_watts{sensor=\"hwmon3/power2\",type=\"cpu_rail\",socket=\"0\","
      "oem_info=\"CPU Power Socket 0\",source=\"acpi\"} 49.023000\n"
      "cpu_power_acpi_watts{sensor=\"hwmon3/power3\",type=\"soc\",socket=\"0\","
      "oem_info=\"SysIO Power Socket 0\",source=\"acpi\"} 5.100000\n"
      "cpu_power_acpi_watts{sensor=\"hwmon3/power4\",type=\"dram\",socket=\"0\","
      "oem_info=\"DRAM Power Socket 0\",source=\"acpi\"} 3.200000\n"
      "cpu_power_acpi_watts{sensor=\"hwmon3/power5\",type=\"module\",socket=\"0\","
      "oem_info=\"Module Power Socket 0\",source=\"acpi\"} 512.000000\n"
      "cpu_power_acpi_watts{sensor=\"hwmon3/power6\",type=\"other\",socket=\"\","
      "oem_info=\"Chipthrot DDR Throttle\",source=\"acpi\"} 1.000000\n"
      "cpu_power_acpi_watts{sensor=\"hwmon4/power1\",type=\"total\",socket=\"1\","
      "oem_info=\"Grace Power Socket 1\",source=\"acpi\"} 90.973000\n";
  const auto r = readings_from_body(body);
  EXPECT_EQ(r.mode, Mode::acpi);
  ASSERT_EQ(r.rows.size(), 2u);
  EXPECT_EQ(r.rows[0].dram_w, std::optional(3.2));
  EXPECT_EQ(r.rows[0].module_w, none());  // the ACPI module meter is not module_w
  EXPECT_EQ(r.rows[1].sensor, "CPU1:cpuSidePowerUsageW");
  EXPECT_DOUBLE_EQ(r.rows[0].total_power_w, 98.029 + 90.973);
}

TEST(ScrapeReadings, PythonFallbackExporterBody) {
  const auto r = readings_from_body(
      "# HELP cpu_power_acpi_watts CPU power\n# TYPE cpu_power_acpi_watts gauge\n"
      "cpu_power_acpi_watts{type=\"grace\",socket=\"0\",oem_info=\"Grace Power Socket 0\","
      "source=\"acpi\"} 98.029000\n"
      "cpu_power_acpi_watts{type=\"other\",socket=\"\",oem_info=\"Total CPU Energy In uJ\","
      "source=\"acpi\"} 5.0\n");
  ASSERT_EQ(r.rows.size(), 1u);
  EXPECT_EQ(r.rows[0].power_w, 98.029);
  EXPECT_FALSE(r.total_age_s.has_value());  // the fallback has no sensor label, no age
}

TEST(ScrapeReadings, TimestampsAndEofAreAccepted) {
  const auto r = readings_from_body(
      "cpu_power_dcgm_watts{socket=\"0\",field_id=\"1130\",source=\"dcgm\"} 50.1 1788310143461\n"
      "# EOF\n");
  ASSERT_EQ(r.rows.size(), 1u);
  EXPECT_EQ(r.rows[0].power_w, 50.1);
}

// ---- sample age and fingerprint -------------------------------------------------------

const char* kAcpiWithAges =
    "cpu_power_acpi_watts{sensor=\"hwmon3/power1\",type=\"total\",socket=\"0\"} 98\n"
    "cpu_power_acpi_watts{sensor=\"hwmon3/power2\",type=\"cpu_rail\",socket=\"0\"} 49\n"
    "cpu_power_acpi_watts{sensor=\"hwmon4/power1\",type=\"total\",socket=\"1\"} 91\n"
    "cpu_power_exporter_sample_age_seconds{sensor=\"hwmon3/power2\"} 9.0\n"
    "cpu_power_exporter_sample_age_seconds{sensor=\"hwmon3/power1\"} 0.05\n"
    "cpu_power_exporter_sample_age_seconds{sensor=\"hwmon4/power1\"} 0.15\n"
    "cpu_power_exporter_sample_age_seconds{sensor=\"hwmon4/power1\"} 7.0\n";

TEST(ScrapeReadings, AcpiAgeIsTheMeanOverTheTotalSensors) {
  const auto r = readings_from_body(kAcpiWithAges);
  ASSERT_TRUE(r.total_age_s.has_value());
  EXPECT_DOUBLE_EQ(*r.total_age_s, 0.1);
}

TEST(ScrapeReadings, AcpiAgeUsesTheSensorsItHasAndIgnoresBadAges) {
  const auto r = readings_from_body(
      "cpu_power_acpi_watts{sensor=\"s0\",type=\"total\",socket=\"0\"} 98\n"
      "cpu_power_acpi_watts{sensor=\"s1\",type=\"total\",socket=\"1\"} 91\n"
      "cpu_power_exporter_sample_age_seconds{sensor=\"s0\"} NaN\n"
      "cpu_power_exporter_sample_age_seconds{sensor=\"s0\"} -1\n"
      "cpu_power_exporter_sample_age_seconds{sensor=\"s1\"} 0\n");
  ASSERT_TRUE(r.total_age_s.has_value());
  EXPECT_EQ(*r.total_age_s, 0.0);
}

TEST(ScrapeReadings, NoAgeWhenTheExporterReportsNone) {
  EXPECT_FALSE(readings_from_body(acpi_body()).total_age_s.has_value());
  EXPECT_FALSE(readings_from_body(dcgm_body()).total_age_s.has_value());
  EXPECT_FALSE(readings_from_body(acpi_body(false)).total_age_s.has_value());
}

TEST(ScrapeReadings, DcgmAgeMatchesBySocket) {
  const auto r = readings_from_body(
      "cpu_power_dcgm_watts{socket=\"0\",field_id=\"1130\",source=\"dcgm\"} 50\n"
      "cpu_power_dcgm_watts{socket=\"1\",field_id=\"1130\",source=\"dcgm\"} 48\n"
      "cpu_power_exporter_sample_age_seconds{socket=\"0\",field_id=\"1132\",source=\"dcgm\"} 5\n"
      "cpu_power_exporter_sample_age_seconds{socket=\"0\",field_id=\"1130\",source=\"dcgm\"} 0.2\n"
      "cpu_power_exporter_sample_age_seconds{socket=\"1\",source=\"acpi\"} 6\n"
      "cpu_power_exporter_sample_age_seconds{socket=\"1\"} 0.4\n"
      "cpu_power_exporter_sample_age_seconds{socket=\"2\"} 8\n");
  ASSERT_TRUE(r.total_age_s.has_value());
  EXPECT_DOUBLE_EQ(*r.total_age_s, 0.3);
}

TEST(ScrapeReadings, FingerprintFollowsTheReadingsNotTheAges) {
  const auto a = readings_from_body(kAcpiWithAges);
  std::string older = kAcpiWithAges;
  older.replace(older.find("0.05"), 4, "1.05");
  const auto b = readings_from_body(older);
  EXPECT_EQ(a.fingerprint, b.fingerprint);
  EXPECT_NE(a.total_age_s, b.total_age_s);

  std::string changed = kAcpiWithAges;
  changed.replace(changed.find("} 49"), 4, "} 48");
  EXPECT_NE(readings_from_body(changed).fingerprint, a.fingerprint);

  EXPECT_EQ(readings_from_body(dcgm_body()).fingerprint,
            readings_from_body(dcgm_body()).fingerprint);
  EXPECT_NE(readings_from_body(dcgm_body()).fingerprint,
            readings_from_body(dcgm_body() + nvml_body()).fingerprint);
  EXPECT_NE(readings_from_body(acpi_body()).fingerprint,
            readings_from_body(dcgm_body()).fingerprint);
}

TEST(ScrapeReadings, ReadingsFromSamplesMatchesReadingsFromBody) {
  const std::string body = acpi_body() + nvml_body();
  const auto parsed = expo::parse(body);
  ASSERT_TRUE(parsed.ok());
  const auto a = readings_from_samples(parsed.samples);
  const auto b = readings_from_body(body);
  EXPECT_EQ(a.rows, b.rows);
  EXPECT_EQ(a.fingerprint, b.fingerprint);
}

}  // namespace
}  // namespace cpupower::scrape
