// The store report's selectors: --match read and written back, node alternations, range
// selectors, and each family's query as a window asks for it.

#include <gtest/gtest.h>

#include "store/queries.hpp"
#include "store/selector.hpp"

namespace cpupower::store {
namespace {

TEST(StoreSelector, ReadsMatchers) {
  const auto m = parse_matchers(" { job=\"cpu_power\" , node=~'n1|n2', x!=`raw\\n`, y!~\"\",} ");
  ASSERT_TRUE(m) << m.error();
  EXPECT_EQ(*m, (std::vector<Matcher>{{"job", "=", "cpu_power"},
                                      {"node", "=~", "n1|n2"},
                                      {"x", "!=", "raw\\n"},
                                      {"y", "!~", ""}}));
  const auto escaped = parse_matchers(R"({a="x\"y\\z\n"})");
  ASSERT_TRUE(escaped) << escaped.error();
  EXPECT_EQ(escaped->front().value, "x\"y\\z\n");
  EXPECT_TRUE(parse_matchers("{}")->empty());
}

TEST(StoreSelector, RefusesWhatIsNotMatchers) {
  const auto why = [](std::string_view s) { return parse_matchers(s).error(); };
  EXPECT_EQ(why("job=\"x\""),
            "--match job=\"x\": expected '{' (label matchers such as {job=\"cpu_power\"}; the "
            "metric names are the report's) at offset 0");
  EXPECT_EQ(why("up{job=\"x\"}").substr(0, 29), "--match up{job=\"x\"}: expected");
  EXPECT_NE(why("{__name__=\"up\"}").find("__name__ is the report's to choose"), std::string::npos);
  EXPECT_NE(why("{a==\"x\"}").find("expected a quoted value at offset 3"), std::string::npos);
  EXPECT_NE(why("{a~\"x\"}").find("expected one of = != =~ !~ after a"), std::string::npos);
  EXPECT_NE(why("{a=\"x\"").find("expected ',' or '}'"), std::string::npos);
  EXPECT_NE(why("{a=\"x}").find("never closed"), std::string::npos);
  EXPECT_NE(why("{a=\"x\"} b").find("text after the closing '}'"), std::string::npos);
  EXPECT_NE(why("{1a=\"x\"}").find("expected a label name"), std::string::npos);
  EXPECT_NE(why("{a=\"\\q\"}").find("escape \\q"), std::string::npos);
  EXPECT_NE(why("{a=x}").find("expected a quoted value"), std::string::npos);
}

TEST(StoreSelector, WritesMatchersBack) {
  EXPECT_EQ(promql_string("a\"b\\c\nd\x01"), "\"a\\\"b\\\\c\\nd\\x01\"");
  EXPECT_EQ(render_matchers({{"job", "=", "a\"b"}, {"node", "=~", "n1|n2"}}),
            "job=\"a\\\"b\", node=~\"n1|n2\"");
  // What is written reads back the same.
  const std::vector<Matcher> m = {{"a", "!~", "x\"\\\n\t"}, {"b", "=", ""}};
  EXPECT_EQ(*parse_matchers("{" + render_matchers(m) + "}"), m);
}

TEST(StoreSelector, NodeAlternations) {
  EXPECT_EQ(alternation({"n1.cluster", "a+b", "c"}), "n1\\.cluster|a\\+b|c");
  EXPECT_EQ(names_matcher("node", {"n1", "n2"}), (Matcher{"node", "=~", "n1|n2"}));
  EXPECT_EQ(names_matcher("Hostname", {"n1"}, true), (Matcher{"Hostname", "=~", "(n1)(\\..+)?"}));
}

TEST(StoreSelector, RangeSelectorsInWholeMilliseconds) {
  EXPECT_EQ(range_selector("m", {{"a", "=", "b"}}, 1.0005), "m{a=\"b\"}[1001ms]");
  EXPECT_EQ(range_selector("m", {}, 600), "m{}[600000ms]");
  EXPECT_EQ(range_selector("", {{"__name__", "=~", "a|b"}}, 1), "{__name__=~\"a|b\"}[1000ms]");
}

// A window [S, E] asks for [S - lookback, E + lookback], evaluated at its end.
TEST(StoreSelector, WindowQueries) {
  const QuerySpan span = query_span(1000, 1060, 300);
  EXPECT_DOUBLE_EQ(span.range_s, 660);
  EXPECT_DOUBLE_EQ(span.at_unix, 1360);
  const Selectors run = selectors_for(std::nullopt, {"n1", "n2"});
  EXPECT_EQ(family_query(Family::acpi_joules, run, 660),
            "cpu_power_acpi_joules_total{type=~\"total|cpu_rail|soc|dram\", "
            "node=~\"n1|n2\"}[660000ms]");
  EXPECT_EQ(family_query(Family::dcgm_joules, run, 660),
            "cpu_power_dcgm_joules_total{field_id=\"1130\", node=~\"n1|n2\"}[660000ms]");
  EXPECT_EQ(family_query(Family::nvml_covered, run, 660),
            "cpu_power_nvml_covered_seconds_total{type=\"module\", node=~\"n1|n2\"}[660000ms]");
  EXPECT_EQ(family_query(Family::gpu_energy, run, 660),
            "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{Hostname=~\"(n1|n2)(\\\\..+)?\"}[660000ms]");
  const Selectors match = selectors_for(std::vector<Matcher>{{"job", "=", "cpu_power"}}, {});
  EXPECT_EQ(family_query(Family::exporter_self, match, 1.5),
            "{__name__=~\"cpu_power_exporter_(sample_age_seconds|average_interval_seconds|"
            "socket_up)\", job=\"cpu_power\"}[1500ms]");
  EXPECT_EQ(family_query(Family::gpu_power, match, 2),
            "DCGM_FI_DEV_POWER_USAGE{job=\"cpu_power\"}[2000ms]");
  EXPECT_EQ(family_query(Family::rapl_covered, match, 2),
            "cpu_power_rapl_covered_seconds_total{type=\"total\", job=\"cpu_power\"}[2000ms]");
}

}  // namespace
}  // namespace cpupower::store
