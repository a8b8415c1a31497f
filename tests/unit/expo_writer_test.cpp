#include "expo/writer.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <random>

namespace cpupower::expo {
namespace {

TEST(ExpoWriter, EscapesBackslashQuoteAndNewline) {
  EXPECT_EQ(escape_label_value(R"(Odd "rail")"), R"(Odd \"rail\")");
  EXPECT_EQ(escape_label_value("a\\b\nc"), "a\\\\b\\nc");
  EXPECT_EQ(escape_label_value("plain"), "plain");
}

TEST(ExpoWriter, FixedSixMatchesPrintf) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> d(0, 2000);
  for (int i = 0; i < 10000; ++i) {
    const double v = i < 5000 ? d(rng) : std::ldexp(d(rng), i % 60);
    char want[512];
    std::snprintf(want, sizeof want, "%.6f", v);
    std::string got;
    append_fixed6(got, v);
    ASSERT_EQ(got, want) << v;
  }
  std::string s;
  append_fixed6(s, 140737488355328.0);
  EXPECT_EQ(s, "140737488355328.000000");  // never an exponent
}

TEST(ExpoWriter, SampleLineAsTheReferencePrintsIt) {
  std::string out;
  append_family_header(out, kAcpiWatts);
  append_sample_prefix(
      out, kAcpiWatts.name,
      label_text(kAcpiWatts, {"hwmon0/power2", "other", "", R"(Odd "rail")", "acpi"}));
  append_fixed6(out, 1.0);
  out += '\n';
  EXPECT_EQ(out,
            "# HELP cpu_power_acpi_watts Grace CPU power rail reading from ACPI hwmon (W).\n"
            "# TYPE cpu_power_acpi_watts gauge\n"
            "cpu_power_acpi_watts{sensor=\"hwmon0/power2\",type=\"other\",socket=\"\","
            "oem_info=\"Odd \\\"rail\\\"\",source=\"acpi\"} 1.000000\n");
}

}  // namespace
}  // namespace cpupower::expo
