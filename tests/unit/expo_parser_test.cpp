#include "expo/parser.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace cpupower::expo {
namespace {

using Pairs = std::vector<std::pair<std::string, std::string>>;

Pairs labels_of(const Sample& s) {
  Pairs out;
  for (const auto& l : s.labels) out.emplace_back(std::string(l.name), std::string(l.value));
  return out;
}

TEST(ExpoParser, ParsesTheReferenceAcpiLineWithHelpAndType) {
  const std::string body =
      "# HELP cpu_power_acpi_watts Grace CPU power from ACPI power_meter hwmon sensors.\n"
      "# TYPE cpu_power_acpi_watts gauge\n"
      "cpu_power_acpi_watts{sensor=\"hwmon3/power1\",type=\"total\",socket=\"0\","
      "oem_info=\"Grace Power Socket 0\",source=\"acpi\"} 98.029000\n";
  const auto r = parse(body);
  ASSERT_TRUE(r.ok()) << describe(*r.error);
  ASSERT_EQ(r.samples.size(), 1u);
  const auto& s = r.samples[0];
  EXPECT_EQ(s.name, "cpu_power_acpi_watts");
  EXPECT_EQ(labels_of(s), (Pairs{{"sensor", "hwmon3/power1"},
                                 {"type", "total"},
                                 {"socket", "0"},
                                 {"oem_info", "Grace Power Socket 0"},
                                 {"source", "acpi"}}));
  EXPECT_DOUBLE_EQ(s.value, 98.029);
  EXPECT_FALSE(s.timestamp_ms.has_value());
  EXPECT_EQ(s.label("socket"), std::optional<std::string_view>("0"));
  EXPECT_FALSE(s.label("field_id").has_value());
}

TEST(ExpoParser, SkipsCommentsAndBlankLinesAndKeepsOrder) {
  const std::string body =
      "\n"
      "# a free comment\n"
      "   \t \n"
      "a 1\n"
      "#TYPE b gauge\n"
      "b{x=\"1\"} 2\n"
      "\n";
  const auto r = parse(body);
  ASSERT_TRUE(r.ok()) << describe(*r.error);
  ASSERT_EQ(r.samples.size(), 2u);
  EXPECT_EQ(r.samples[0].name, "a");
  EXPECT_TRUE(r.samples[0].labels.empty());
  EXPECT_EQ(r.samples[1].name, "b");
  EXPECT_EQ(r.samples[1].value, 2.0);
}

TEST(ExpoParser, EmptyBodyIsValidAndEmpty) {
  const auto r = parse("");
  EXPECT_TRUE(r.ok());
  EXPECT_TRUE(r.samples.empty());
}

TEST(ExpoParser, DecodesTheThreeLabelEscapesAndKeepsUnknownOnesLiterally) {
  const std::string body =
      R"(m{a="back\\slash",b="say \"hi\"",c="two\nlines",d="tab\t",e="end\\"} 1)";
  const auto r = parse(body);
  ASSERT_TRUE(r.ok()) << describe(*r.error);
  ASSERT_EQ(r.samples.size(), 1u);
  EXPECT_EQ(labels_of(r.samples[0]), (Pairs{{"a", "back\\slash"},
                                            {"b", "say \"hi\""},
                                            {"c", "two\nlines"},
                                            {"d", "tab\\t"},
                                            {"e", "end\\"}}));
}

TEST(ExpoParser, EscapedValuesSurviveMovingTheResult) {
  std::string body;
  for (int i = 0; i < 200; ++i) {
    body += "m{v=\"x\\\"" + std::to_string(i) + "\"} " + std::to_string(i) + "\n";
  }
  auto r = parse(body);
  ASSERT_TRUE(r.ok());
  const ParseResult moved = std::move(r);
  ASSERT_EQ(moved.samples.size(), 200u);
  EXPECT_EQ(moved.samples[0].label("v"), std::optional<std::string_view>("x\"0"));
  EXPECT_EQ(moved.samples[199].label("v"), std::optional<std::string_view>("x\"199"));
}

TEST(ExpoParser, AcceptsNanAndInfinitiesInEverySpelling) {
  const auto r = parse("a NaN\nb +Inf\nc -Inf\nd Inf\ne nan\nf -0.5e-3\ng +2\n");
  ASSERT_TRUE(r.ok()) << describe(*r.error);
  ASSERT_EQ(r.samples.size(), 7u);
  EXPECT_TRUE(std::isnan(r.samples[0].value));
  EXPECT_EQ(r.samples[1].value, INFINITY);
  EXPECT_EQ(r.samples[2].value, -INFINITY);
  EXPECT_EQ(r.samples[3].value, INFINITY);
  EXPECT_TRUE(std::isnan(r.samples[4].value));
  EXPECT_DOUBLE_EQ(r.samples[5].value, -0.0005);
  EXPECT_EQ(r.samples[6].value, 2.0);
}

TEST(ExpoParser, ReadsOptionalTimestamps) {
  const auto r = parse("a 1 1788310143461\nb{x=\"y\"} 2 -5\nc 3\n");
  ASSERT_TRUE(r.ok()) << describe(*r.error);
  ASSERT_EQ(r.samples.size(), 3u);
  EXPECT_EQ(r.samples[0].timestamp_ms, std::optional<std::int64_t>(1788310143461));
  EXPECT_EQ(r.samples[1].timestamp_ms, std::optional<std::int64_t>(-5));
  EXPECT_FALSE(r.samples[2].timestamp_ms.has_value());
}

TEST(ExpoParser, StopsAtEof) {
  const auto r = parse("a 1\n# EOF\nthis is not exposition at all\n");
  ASSERT_TRUE(r.ok()) << describe(*r.error);
  ASSERT_EQ(r.samples.size(), 1u);
  EXPECT_EQ(r.samples[0].name, "a");
}

TEST(ExpoParser, ToleratesCrlfBlanksTrailingCommaAndMissingFinalNewline) {
  const auto r = parse("a{ x = \"1\" , y=\"2\", }\t3  \r\nb 4");
  ASSERT_TRUE(r.ok()) << describe(*r.error);
  ASSERT_EQ(r.samples.size(), 2u);
  EXPECT_EQ(labels_of(r.samples[0]), (Pairs{{"x", "1"}, {"y", "2"}}));
  EXPECT_EQ(r.samples[0].value, 3.0);
  EXPECT_EQ(r.samples[1].value, 4.0);
}

TEST(ExpoParser, EmptyLabelSetAndEmptyValues) {
  const auto r = parse("a{} 1\nb{socket=\"\"} 2\n");
  ASSERT_TRUE(r.ok()) << describe(*r.error);
  EXPECT_TRUE(r.samples[0].labels.empty());
  EXPECT_EQ(r.samples[1].label("socket"), std::optional<std::string_view>(""));
}

struct Garbage {
  std::string body;
  std::size_t line;
  std::string message_part;
};

class ExpoParserGarbage : public ::testing::TestWithParam<Garbage> {};

TEST_P(ExpoParserGarbage, RefusesTheWholeBodyWithLineAndReason) {
  const auto& g = GetParam();
  const auto r = parse(g.body);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.samples.empty());
  EXPECT_EQ(r.error->line, g.line) << describe(*r.error);
  EXPECT_NE(describe(*r.error).find(g.message_part), std::string::npos) << describe(*r.error);
}

// Lines of families a reader does not keep are read all the same: the verdict on a body, and
// the place and words of its error, never depend on the names asked for.
TEST_P(ExpoParserGarbage, RefusedTheSameWhenOnlyOtherNamesAreKept) {
  const auto& g = GetParam();
  const auto whole = parse(g.body);
  ASSERT_FALSE(whole.ok());
  static constexpr std::array<std::string_view, 2> kOthers = {"zzz", "a"};
  ParseOptions options;
  options.only_names = kOthers;
  ParseResult r;
  parse_into(g.body, r, options);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.samples.empty());
  EXPECT_EQ(describe(*r.error), describe(*whole.error));
}

INSTANTIATE_TEST_SUITE_P(
    Bodies, ExpoParserGarbage,
    ::testing::Values(Garbage{"malformed", 1, "missing sample value"},
                      Garbage{"ok 1\n<html>\n", 2, "expected a metric name"},
                      Garbage{"a 1\nb{x=\"1\" 2\n", 2, "expected ',' or '}'"},
                      Garbage{"a{x=\"unterminated} 1\n", 1, "unterminated value of label \"x\""},
                      Garbage{"a{x=1} 1\n", 1, "expected '\"' to open the value"},
                      Garbage{"a{x} 1\n", 1, "expected '=' after label name \"x\""},
                      Garbage{"a{9x=\"1\"} 1\n", 1, "expected a label name or '}'"},
                      Garbage{"a{x=\"1\",x=\"2\"} 1\n", 1, "duplicate label \"x\""},
                      Garbage{"a twelve\n", 1, "sample value 'twelve' is not a number"},
                      Garbage{"a 1 12.5\n", 1, "is not an integer number of milliseconds"},
                      Garbage{"a 1 2 3\n", 1, "unexpected '3' after timestamp"},
                      Garbage{"a{x=\"1\"\n", 1, "expected ',' or '}'"},
                      Garbage{"a-b 1\n", 1, "after metric name"},
                      Garbage{"a +-1\n", 1, "is not a number"},
                      Garbage{"\n\n{x=\"1\"} 1\n", 3, "expected a metric name"}));

TEST(ExpoParser, ErrorDescriptionNamesLineAndColumn) {
  const auto r = parse("good 1\nbad{x 1\n");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error->line, 2u);
  EXPECT_EQ(r.error->column, 7u);
  EXPECT_EQ(describe(*r.error), "line 2, column 7: expected '=' after label name \"x\", found '1'");
}

TEST(ExpoParser, NonPrintableBytesAreShownEscaped) {
  const auto r = parse(std::string("a\x01 1\n"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error->message.find("\\x01"), std::string::npos) << r.error->message;
}

TEST(ExpoParser, RefusesBodiesOverTheCap) {
  const std::string body(kMaxBodyBytes + 1, '\n');
  const auto r = parse(body);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error->line, 0u);
  EXPECT_EQ(describe(*r.error), "body is 1048577 bytes, over the 1048576-byte limit");
  EXPECT_TRUE(parse(std::string(kMaxBodyBytes, '\n')).ok());
  EXPECT_FALSE(parse("a 1\n", 3).ok());
}

TEST(ExpoParser, ParsesAManyThousandLineBody) {
  std::string body;
  for (int i = 0; i < 5000; ++i) {
    body += "cpu_power_acpi_watts{sensor=\"hwmon" + std::to_string(i) +
            "/power1\",type=\"total\",socket=\"" + std::to_string(i % 2) + "\"} " +
            std::to_string(i) + ".5\n";
  }
  const auto r = parse(body);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r.samples.size(), 5000u);
  EXPECT_EQ(r.samples[4999].label("sensor"), std::optional<std::string_view>("hwmon4999/power1"));
  EXPECT_EQ(r.samples[4999].value, 4999.5);
  EXPECT_EQ(r.samples[4999].labels.size(), 3u);
}

// The samples parse() gives, as text: name, labels, value, timestamp.
std::vector<std::string> texts_of(const ParseResult& r) {
  std::vector<std::string> out;
  for (const auto& s : r.samples) {
    std::string t(s.name);
    for (const auto& l : s.labels) t += " " + std::string(l.name) + "=" + std::string(l.value);
    t += " " + std::to_string(s.value);
    if (s.timestamp_ms) t += " @" + std::to_string(*s.timestamp_ms);
    out.push_back(std::move(t));
  }
  return out;
}

const std::string kRepeatingBody =
    "# HELP power Power.\n"
    "power{gpu=\"0\",UUID=\"GPU-a\",model=\"say \\\"x\\\"\"} 100\n"
    "power{gpu=\"1\",UUID=\"GPU-b\",model=\"say \\\"x\\\"\"} 200 17\n"
    "clock{gpu=\"0\",UUID=\"GPU-a\",model=\"say \\\"x\\\"\"} 1980\n"
    "clock{gpu=\"1\",UUID=\"GPU-b\",model=\"say \\\"x\\\"\"} 1981\n"
    "temp{gpu=\"0\",UUID=\"GPU-a\",model=\"say \\\"x\\\"\"}   45\n"
    "temp{gpu=\"1\",UUID=\"GPU-b\",model=\"say \\\"x\\\"\",extra=\"e\"} 46\n"
    "temp{gpu=\"1\",UUID=\"GPU-b\"} 47\n"
    "temp{} 48\n"
    "power{} 1\n"
    "power 2\n";

TEST(ExpoParser, OnlyNamesKeepsThoseSamplesInOrderAndNothingElse) {
  const auto whole = parse(kRepeatingBody);
  ASSERT_TRUE(whole.ok()) << describe(*whole.error);
  std::vector<std::string> want;
  for (const auto& t : texts_of(whole)) {
    if (t.starts_with("power") || t.starts_with("temp")) want.push_back(t);
  }
  static constexpr std::array<std::string_view, 2> kKept = {"temp", "power"};
  ParseOptions options;
  options.only_names = kKept;
  ParseResult r;
  parse_into(kRepeatingBody, r, options);
  ASSERT_TRUE(r.ok()) << describe(*r.error);
  EXPECT_EQ(texts_of(r), want);
  EXPECT_EQ(r.samples[0].label("model"), std::optional<std::string_view>("say \"x\""));
}

TEST(ExpoParser, RepeatedLabelSetsReadAsTheirFirstOccurrence) {
  const auto r = parse(kRepeatingBody);
  ASSERT_TRUE(r.ok()) << describe(*r.error);
  ASSERT_EQ(r.samples.size(), 10u);
  EXPECT_EQ(texts_of(r)[2], "clock gpu=0 UUID=GPU-a model=say \"x\" 1980.000000");
  EXPECT_EQ(texts_of(r)[5], "temp gpu=1 UUID=GPU-b model=say \"x\" extra=e 46.000000");
  EXPECT_EQ(texts_of(r)[6], "temp gpu=1 UUID=GPU-b 47.000000");
  EXPECT_EQ(texts_of(r)[8], "power 1.000000");
  EXPECT_EQ(r.samples[1].timestamp_ms, std::optional<std::int64_t>(17));
  // A line that goes on with a set already read fails where a fresh read fails, and says
  // the same.
  const auto bad = parse("a{x=\"1\"} 1\nb{x=\"1\"}} 2\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(describe(*bad.error), "line 2, column 10: sample value '}' is not a number");
  const auto unterminated = parse("a{x=\"1\"} 1\nb{x=\"1\"\n");
  ASSERT_FALSE(unterminated.ok());
  EXPECT_EQ(unterminated.error->line, 2u);
  EXPECT_NE(unterminated.error->message.find("expected ',' or '}'"), std::string::npos);
}

TEST(ExpoParser, DuplicateSeriesAreCountedAndTheFirstRepeatNamed) {
  // The same name and label set twice (labels in another order count as the same set);
  // a different name, or one label fewer, is another series.
  const std::string body =
      "a{x=\"1\",y=\"q\\\"\"} 1\n"
      "a{x=\"1\"} 2\n"
      "b{x=\"1\",y=\"q\\\"\"} 3\n"
      "a{y=\"q\\\"\",x=\"1\"} 4\n"
      "c 5\n"
      "a{x=\"1\",y=\"q\\\"\"} 6\n"
      "c 7\n";
  auto r = parse(body);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.samples.size(), 7u);  // kept: a reader may have a rule of its own for repeats
  EXPECT_EQ(r.duplicate_series, 3u);
  EXPECT_EQ(r.first_duplicate, "a{y=\"q\\\"\",x=\"1\"}");
  EXPECT_EQ(r.samples[0].value, 1.0);

  // Only the kept names are compared; a reused result forgets the last body's repeats.
  const std::array<std::string_view, 1> only_b = {"b"};
  ParseOptions options;
  options.only_names = only_b;
  parse_into(body, r, options);
  EXPECT_EQ(r.duplicate_series, 0u);
  EXPECT_EQ(r.first_duplicate, "");
  parse_into("c 1\nc 2\n", r);
  EXPECT_EQ(r.duplicate_series, 1u);
  EXPECT_EQ(r.first_duplicate, "c");
  parse_into("c 1\nd 2\n", r);
  EXPECT_EQ(r.duplicate_series, 0u);
  EXPECT_TRUE(r.first_duplicate.empty());
}

TEST(ExpoParser, AReusedResultHoldsOnlyTheLatestBody) {
  ParseResult r;
  parse_into(kRepeatingBody, r);
  ASSERT_TRUE(r.ok());
  const std::string other = "x{k=\"v\"} 1\ny 2\n";
  parse_into(other, r);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(texts_of(r), texts_of(parse(other)));
  parse_into("x{k=\"v\" 1\n", r);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.samples.empty());
  parse_into(kRepeatingBody, r);
  ASSERT_TRUE(r.ok()) << describe(*r.error);
  EXPECT_EQ(texts_of(r), texts_of(parse(kRepeatingBody)));
}

}  // namespace
}  // namespace cpupower::expo
