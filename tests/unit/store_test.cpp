// The store module (cpu-power report --prometheus): counter arithmetic, the HTTP API's
// answers, selectors and queries, and windows built from hand-made store answers. Each part
// keeps its helpers in its own namespace.

// ---- counter ----
// The store report's counter math on hand-made samples: unwrapping resets, the value at a
// time, the increase over a window with its error bound, missing edges, re-dating by the
// sample age, NVML's gpus-label series as one counter, and the GPU power gauge's trapezoid.

#include <gtest/gtest.h>

#include <cmath>

#include "store/counter.hpp"
#include "store/series.hpp"

namespace cpupower::store::counter_cases {
namespace {

Samples samples(std::vector<double> t, std::vector<double> v) {
  return {std::move(t), std::move(v)};
}

// Linear interpolation between the samples around a time, and its bound: the counter never
// decreases, so its true value lies between them, at most max(f, 1 - f) of the gain away.
TEST(StoreCounter, InterpolatesBetweenTheSamplesAroundATime) {
  const Unwrapped c = unwrap(samples({0, 10, 20}, {0, 100, 300}));
  const auto at5 = value_at(c, 5, 30, "m", Edge::start);
  ASSERT_TRUE(at5) << at5.error();
  EXPECT_DOUBLE_EQ(at5->value, 50);
  EXPECT_EQ(at5->before, 0u);
  EXPECT_EQ(at5->after, 1u);
  EXPECT_DOUBLE_EQ(at5->fraction, 0.5);
  EXPECT_DOUBLE_EQ(at5->bracket_gain, 100);
  EXPECT_DOUBLE_EQ(at5->error_bound(), 50);
  const auto at18 = value_at(c, 18, 30, "m", Edge::end);
  ASSERT_TRUE(at18);
  EXPECT_DOUBLE_EQ(at18->value, 260);
  EXPECT_DOUBLE_EQ(at18->error_bound(), 0.8 * 200);
}

// A sample on the time is the value itself, with no error.
TEST(StoreCounter, ASampleOnTheTimeIsUsedAsItIs) {
  const Unwrapped c = unwrap(samples({0, 10, 20}, {0, 100, 300}));
  const auto at = value_at(c, 10, 1, "m", Edge::start);
  ASSERT_TRUE(at);
  EXPECT_DOUBLE_EQ(at->value, 100);
  EXPECT_EQ(at->before, 1u);
  EXPECT_EQ(at->after, 1u);
  EXPECT_DOUBLE_EQ(at->error_bound(), 0);
}

TEST(StoreCounter, IncreaseAddsBothEdgesBounds) {
  const Unwrapped c = unwrap(samples({0, 10, 20}, {1000, 1100, 1300}));
  const auto inc = increase(c, 2, 18, 30, "m");
  ASSERT_TRUE(inc) << inc.error();
  EXPECT_DOUBLE_EQ(inc->gain, 260 - 20);
  EXPECT_DOUBLE_EQ(inc->error_bound, 0.8 * 100 + 0.8 * 200);
  EXPECT_EQ(inc->resets, 0u);
  EXPECT_DOUBLE_EQ(inc->lost_s, 0);
}

// A value below its predecessor: the counter restarted from 0. The new value counts (it was
// all gained after the restart); the stretch between the two samples is lost.
TEST(StoreCounter, ResetsCarryOnFromTheNewValue) {
  const Unwrapped c = unwrap(samples({0, 10, 20, 30}, {0, 100, 20, 120}));
  EXPECT_EQ(c.u, (std::vector<double>{0, 100, 120, 220}));
  EXPECT_EQ(c.resets, (std::vector<std::size_t>{2}));
  EXPECT_TRUE(c.reset_before(2));
  EXPECT_FALSE(c.reset_before(1));
  const auto inc = increase(c, 5, 25, 30, "m");
  ASSERT_TRUE(inc);
  EXPECT_DOUBLE_EQ(inc->gain, 170 - 50);
  EXPECT_EQ(inc->resets, 1u);
  EXPECT_DOUBLE_EQ(inc->lost_s, 10);
  EXPECT_DOUBLE_EQ(inc->lost_from, 10);
  EXPECT_DOUBLE_EQ(inc->lost_to, 20);
  // An edge inside the lost stretch says so; its bound is the new counter's gain there.
  const auto at = value_at(c, 15, 30, "m", Edge::start);
  ASSERT_TRUE(at);
  EXPECT_TRUE(at->across_reset);
  EXPECT_DOUBLE_EQ(at->value, 110);
  EXPECT_DOUBLE_EQ(at->error_bound(), 10);
  // A window after the reset has none.
  const auto after = increase(c, 21, 29, 30, "m");
  ASSERT_TRUE(after);
  EXPECT_EQ(after->resets, 0u);
  EXPECT_DOUBLE_EQ(after->gain, 80);
}

TEST(StoreCounter, SeveralResetsAndNonFiniteSamples) {
  const Unwrapped c = unwrap(samples({0, 1, 2, 3, 4}, {5, 7, NAN, 1, 0.5}));
  EXPECT_EQ(c.t, (std::vector<double>{0, 1, 3, 4}));
  EXPECT_EQ(c.u, (std::vector<double>{0, 2, 3, 3.5}));
  EXPECT_EQ(c.resets, (std::vector<std::size_t>{2, 3}));
}

// An edge without a sample within the lookback on one side is an error naming the series,
// the side and the edge, never a value.
TEST(StoreCounter, MissingEdgesAreErrors) {
  const Unwrapped c = unwrap(samples({100, 110}, {0, 10}));
  const std::string name = "m{a=\"b\"}";
  EXPECT_EQ(value_at(c, 50, 30, name, Edge::start).error(),
            "no sample of m{a=\"b\"} within 30 s before the window's start (50.000)");
  EXPECT_EQ(value_at(c, 200, 30, name, Edge::end).error(),
            "no sample of m{a=\"b\"} within 30 s after the window's end (200.000)");
  EXPECT_EQ(
      value_at(unwrap(samples({100, 110, 200}, {0, 10, 20})), 150, 30, name, Edge::end).error(),
      "no sample of m{a=\"b\"} within 30 s before the window's end (150.000); the nearest "
      "is 40.000 s before");
  EXPECT_EQ(value_at(c, 104, 5, name, Edge::start).error(),
            "no sample of m{a=\"b\"} within 5 s after the window's start (104.000); the nearest "
            "is 6.000 s after");
  EXPECT_EQ(value_at(unwrap({}), 1, 300, name, Edge::start).error(),
            "no sample of m{a=\"b\"} within 300 s before the window's start (1.000); the series "
            "has no sample");
  // The lookback itself is within.
  EXPECT_TRUE(value_at(c, 105, 5, name, Edge::start));
  // increase() fails on the first edge that has no value.
  EXPECT_EQ(increase(c, 90, 105, 30, name).error(),
            "no sample of m{a=\"b\"} within 30 s before the window's start (90.000)");
}

TEST(StoreCounter, IntervalRatesLeaveOutRestarts) {
  const Unwrapped c = unwrap(samples({0, 10, 20, 30}, {0, 100, 20, 120}));
  const IntervalRates r = interval_rates(c, 0, 3);
  EXPECT_EQ(r.mid, (std::vector<double>{5, 25}));
  EXPECT_EQ(r.rate, (std::vector<double>{10, 10}));
  EXPECT_EQ(r.dt, (std::vector<double>{10, 10}));
}

// Each counter sample moves back by the age served in the same scrape; a sample that would not
// come after the previous one (a stale sensor: the same reading) is dropped; one without an
// age keeps its time.
TEST(StoreCounter, RedatesBySampleAge) {
  const Redated r = redate(samples({10, 11, 12, 13, 14}, {0, 1, 2, 2, 3}),
                           samples({10, 11, 12, 13}, {0.05, 0.05, 0.05, 1.05}));
  EXPECT_EQ(r.samples.t, (std::vector<double>{9.95, 10.95, 11.95, 14}));
  EXPECT_EQ(r.samples.v, (std::vector<double>{0, 1, 2, 3}));
  EXPECT_EQ(r.without_age, 1u);
  // A negative or missing age is no age.
  const Redated n = redate(samples({1, 2}, {0, 1}), samples({1, 1.5}, {-1, 0.5}));
  EXPECT_EQ(n.samples.t, (std::vector<double>{1, 2}));
  EXPECT_EQ(n.without_age, 2u);
}

// NVML's module counter starts a new series when its gpus label changes and carries on the
// same value: the series are one counter, by time.
TEST(StoreCounter, SeriesDifferingOnlyInGpusAreOneCounter) {
  std::vector<RawSeries> in = {
      {{{"__name__", "m"}, {"socket", "0"}, {"gpus", "0,1"}}, samples({0, 1, 2}, {0, 10, 20})},
      {{{"__name__", "m"}, {"socket", "1"}, {"gpus", "2"}}, samples({0}, {5})},
      {{{"__name__", "m"}, {"socket", "0"}, {"gpus", "0"}}, samples({2, 3, 4}, {21, 30, 40})},
  };
  const auto out = merge_ignoring(std::move(in), "gpus");
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].metric, (Labels{{"__name__", "m"}, {"socket", "0"}}));
  EXPECT_EQ(out[0].samples.t, (std::vector<double>{0, 1, 2, 3, 4}));
  // At t = 2 both members have a sample: the first member's is kept.
  EXPECT_EQ(out[0].samples.v, (std::vector<double>{0, 10, 20, 30, 40}));
  EXPECT_EQ(out[1].metric, (Labels{{"__name__", "m"}, {"socket", "1"}}));
  EXPECT_EQ(out[1].samples.v, (std::vector<double>{5}));
  const auto inc = increase(unwrap(out[0].samples), 0.5, 3.5, 5, "m");
  ASSERT_TRUE(inc);
  EXPECT_DOUBLE_EQ(inc->gain, 35 - 5);
  EXPECT_EQ(inc->resets, 0u);
}

TEST(StoreCounter, GaugeTrapezoidWithInterpolatedEdges) {
  const auto g = gauge_integral(samples({0, 10, 20}, {100, 200, 100}), 5, 15, 30, "p");
  ASSERT_TRUE(g) << g.error();
  EXPECT_DOUBLE_EQ(g->joules, 5 * (150 + 200) / 2.0 + 5 * (200 + 150) / 2.0);
  EXPECT_EQ(g->first, 0u);
  EXPECT_EQ(g->last, 2u);
  // Edges on samples.
  const auto on = gauge_integral(samples({0, 10, 20}, {100, 200, 100}), 0, 20, 1, "p");
  ASSERT_TRUE(on);
  EXPECT_DOUBLE_EQ(on->joules, 3000);
  EXPECT_FALSE(gauge_integral(samples({0, 10}, {1, 1}), 0, 20, 5, "p"));
}

TEST(StoreCounter, MedianSpacing) {
  EXPECT_DOUBLE_EQ(median_spacing({0, 1, 3, 6}), 2);
  EXPECT_DOUBLE_EQ(median_spacing({0, 1, 2, 4, 8}), 1.5);
  EXPECT_DOUBLE_EQ(median_spacing({5}), 0);
}

TEST(StoreSeries, NodeAndNames) {
  EXPECT_EQ(instance_host("10.0.0.7:9405"), "10.0.0.7");
  EXPECT_EQ(instance_host("[fd00::7]:9405"), "fd00::7");
  EXPECT_EQ(instance_host("fd00::7"), "fd00::7");
  EXPECT_EQ(instance_host("n1"), "n1");
  EXPECT_EQ(node_of({{"node", "n1"}, {"instance", "10.0.0.7:9405"}}), "n1");
  EXPECT_EQ(node_of({{"instance", "n2.cluster:9405"}}), "n2.cluster");
  EXPECT_EQ(gpu_node_of({{"Hostname", "n3"}, {"instance", "x:9400"}}), "n3");
  EXPECT_EQ(gpu_node_of({{"node", "n1"}, {"Hostname", "n3"}}), "n1");
  EXPECT_EQ(series_name({{"__name__", "m"}, {"b", "2"}, {"a", "1"}}), "m{a=\"1\", b=\"2\"}");
}

}  // namespace
}  // namespace cpupower::store::counter_cases

// ---- api ----
// The store client's pure parts: reading the Prometheus HTTP API's answers (a matrix, the
// store's error body, an empty result, what is not JSON or not the API), the base URL,
// form encoding and the credential files.

#include <gtest/gtest.h>

#include <fstream>

#include "store/prom_api.hpp"
#include "temp_dir.hpp"

namespace cpupower::store::api_cases {
namespace {

QueryOutcome answer(long status, std::string_view body) {
  return parse_query_response(status, body);
}

bool contains(const std::string& text, std::string_view part) {
  return text.find(part) != std::string::npos;
}

TEST(StoreApi, ReadsAMatrixOfRawSamples) {
  const auto out = answer(200, R"({"status":"success","data":{"resultType":"matrix","result":[
      {"metric":{"__name__":"cpu_power_acpi_joules_total","node":"n1","socket":"0"},
       "values":[[1700000000,"1.5"],[1700000001.25,"2.5"],[1700000002,"NaN"],[1700000003,"+Inf"]]},
      {"metric":{"__name__":"cpu_power_acpi_joules_total","node":"n1","socket":"1"},
       "values":[[1700000001,"7"],[1700000000,"6"]]}]},
      "warnings":["some series were dropped"]})");
  ASSERT_EQ(out.failure, Failure::none) << out.error;
  ASSERT_TRUE(out.result);
  const QueryResult& r = *out.result;
  ASSERT_EQ(r.series.size(), 2u);
  EXPECT_EQ(r.series[0].metric,
            (Labels{{"__name__", "cpu_power_acpi_joules_total"}, {"node", "n1"}, {"socket", "0"}}));
  EXPECT_EQ(r.series[0].samples.t, (std::vector<double>{1700000000, 1700000001.25}));
  EXPECT_EQ(r.series[0].samples.v, (std::vector<double>{1.5, 2.5}));
  // Samples come back ascending whatever order they came in.
  EXPECT_EQ(r.series[1].samples.t, (std::vector<double>{1700000000, 1700000001}));
  EXPECT_EQ(r.series[1].samples.v, (std::vector<double>{6, 7}));
  EXPECT_EQ(r.skipped_values, 2u);  // NaN and +Inf
  EXPECT_EQ(r.warnings, (std::vector<std::string>{"some series were dropped"}));
}

TEST(StoreApi, AnEmptyResultIsNoSeries) {
  const auto out =
      answer(200, R"({"status":"success","data":{"resultType":"matrix","result":[]}})");
  ASSERT_EQ(out.failure, Failure::none) << out.error;
  EXPECT_TRUE(out.result->series.empty());
}

// The store's own refusal fails the query (its window), with the store's words.
TEST(StoreApi, TheStoresErrorBody) {
  const auto bad = answer(
      400, R"({"status":"error","errorType":"bad_data","error":"1:14: parse error: unexpected"})");
  EXPECT_EQ(bad.failure, Failure::query);
  EXPECT_EQ(bad.error, "the store refused it (HTTP 400): bad_data: 1:14: parse error: unexpected");
  const auto timeout =
      answer(503, R"({"status":"error","errorType":"timeout","error":"query timed out"})");
  EXPECT_EQ(timeout.failure, Failure::query);
  EXPECT_TRUE(contains(timeout.error, "HTTP 503")) << timeout.error;
  EXPECT_TRUE(contains(timeout.error, "timeout: query timed out")) << timeout.error;
  const auto vector =
      answer(200, R"({"status":"success","data":{"resultType":"vector","result":[]}})");
  EXPECT_EQ(vector.failure, Failure::query);
  EXPECT_TRUE(contains(vector.error, "a vector, not the raw samples")) << vector.error;
}

// What is not the API's answer at all makes the store unusable: every window would fail alike.
TEST(StoreApi, WhatIsNotAPrometheusAnswer) {
  const auto html = answer(200, "<html>hello</html>");
  EXPECT_EQ(html.failure, Failure::store);
  EXPECT_TRUE(contains(html.error, "not a Prometheus API answer")) << html.error;
  EXPECT_TRUE(contains(html.error, "the body begins '<html>hello</html>'")) << html.error;
  const auto gateway = answer(502, "<html>bad gateway</html>\n");
  EXPECT_EQ(gateway.failure, Failure::store);
  EXPECT_TRUE(contains(gateway.error, "HTTP 502, not a Prometheus API answer (<html>bad gateway"))
      << gateway.error;
  const auto missing = answer(404, "404 page not found\n");
  EXPECT_EQ(missing.failure, Failure::store);
  EXPECT_TRUE(contains(missing.error, "check the URL's path prefix")) << missing.error;
  const auto auth = answer(401, "Unauthorized\n");
  EXPECT_EQ(auth.failure, Failure::store);
  EXPECT_TRUE(contains(auth.error, "the store refused the credentials (HTTP 401: Unauthorized"))
      << auth.error;
  EXPECT_EQ(answer(200, R"({"data":{}})").failure, Failure::store);
  EXPECT_EQ(answer(200, "").failure, Failure::store);
  const auto malformed = answer(200, R"({"status":"success","data":{"resultType":"matrix",)"
                                     R"("result":[{"metric":{},"values":[[1]]}]}})");
  EXPECT_EQ(malformed.failure, Failure::store);
  EXPECT_TRUE(contains(malformed.error, "a malformed matrix")) << malformed.error;
  // A long body is cut in the message.
  const auto long_body = answer(200, std::string(1000, 'x'));
  EXPECT_LT(long_body.error.size(), 500u);
}

TEST(StoreApi, BaseUrl) {
  const auto plain = parse_store_url("http://127.0.0.1:9090");
  ASSERT_TRUE(plain) << plain.error();
  EXPECT_EQ(plain->base, "http://127.0.0.1:9090");
  EXPECT_FALSE(plain->https);
  EXPECT_EQ(plain->query_endpoint(), "http://127.0.0.1:9090/api/v1/query");
  EXPECT_EQ(parse_store_url("http://h:9090/")->base, "http://h:9090");
  const auto vm = parse_store_url("https://vm.example/select/0/prometheus/api/v1/query");
  ASSERT_TRUE(vm);
  EXPECT_EQ(vm->base, "https://vm.example/select/0/prometheus");
  EXPECT_TRUE(vm->https);
  EXPECT_EQ(parse_store_url("http://vm:8428/prometheus/api/v1")->base, "http://vm:8428/prometheus");
  EXPECT_TRUE(contains(parse_store_url("http://u:p@h:9090").error(), "credentials in the URL"));
  EXPECT_TRUE(contains(parse_store_url("ftp://h").error(), "not http:// or https://"));
  EXPECT_TRUE(contains(parse_store_url("http://h/?x=1").error(), "query string"));
  EXPECT_TRUE(contains(parse_store_url("http:///x").error(), "no host"));
  EXPECT_FALSE(parse_store_url("http://h x"));
}

TEST(StoreApi, FormEncoding) {
  EXPECT_EQ(form_encode("m{a=\"b c\"}[5ms]"), "m%7Ba%3D%22b+c%22%7D%5B5ms%5D");
  EXPECT_EQ(form_encode("a.b-c_d~e"), "a.b-c_d~e");
  EXPECT_EQ(form_encode("\xc3\xa9&"), "%C3%A9%26");
}

TEST(StoreApi, CredentialFiles) {
  testing::TempDir dir("store_api");
  const auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir.file(name), std::ios::binary) << text;
    return dir.file(name);
  };
  EXPECT_EQ(*read_bearer_token(write("token", "  s3cr3t \r\nsecond line\n")), "s3cr3t");
  EXPECT_TRUE(contains(read_bearer_token(write("empty", "\n")).error(), "holds no token"));
  EXPECT_TRUE(contains(read_bearer_token(dir.file("absent")).error(), "cannot read"));
  const auto basic = read_basic_auth(write("basic", "user:pa:ss\r\n"));
  ASSERT_TRUE(basic) << basic.error();
  EXPECT_EQ(basic->first, "user");
  EXPECT_EQ(basic->second, "pa:ss");
  EXPECT_TRUE(contains(read_basic_auth(write("nocolon", "user\n")).error(), "not user:password"));
  EXPECT_TRUE(contains(read_basic_auth(write("nouser", ":pw\n")).error(), "not user:password"));
  // The errors never hold the secret.
  EXPECT_FALSE(contains(read_basic_auth(write("secret", "s3cr3t\n")).error(), "s3cr3t"));
}

// The options are checked before anything is sent.
TEST(StoreApi, ClientOptionsAreChecked) {
  ClientOptions o;
  o.url = "http://127.0.0.1:9";
  o.ca_file = "/etc/hostname";
  EXPECT_TRUE(contains(Client::open(o).error(), "need an https:// URL"));
  o.ca_file.reset();
  o.bearer_token_file = "/a";
  o.basic_auth_file = "/b";
  EXPECT_TRUE(contains(Client::open(o).error(), "exclude each other"));
  o.basic_auth_file.reset();
  o.bearer_token_file = "/nonexistent/token";
  EXPECT_TRUE(contains(Client::open(o).error(), "--store-bearer-token-file: cannot read"));
}

}  // namespace
}  // namespace cpupower::store::api_cases

// ---- selector ----
// The store report's selectors: --match read and written back, node alternations, range
// selectors, and each family's query as a window asks for it.

#include <gtest/gtest.h>

#include "store/queries.hpp"
#include "store/selector.hpp"

namespace cpupower::store::selector_cases {
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
}  // namespace cpupower::store::selector_cases

// ---- window ----
// One window's report from hand-made store answers: socket, node and GPU rows from the
// counters' increases, coverage from the covered-seconds counters, the edge bound, re-dating
// by the sample age, NVML's gpus-label series, the GPU power gauge fallback, and the windows
// that must fail (no data at all, a missing socket, no sample near an edge).

#include <gtest/gtest.h>

#include "store/queries.hpp"
#include "store/window_builder.hpp"

namespace cpupower::store::window_cases {
namespace {

constexpr double kS = 1000, kE = 1060, kLookback = 300;

// A counter rising at `rate` per second, sampled every `step` s from `from` to `to`.
RawSeries counter(Labels labels, double from, double to, double step, double rate) {
  RawSeries s;
  s.metric = std::move(labels);
  for (int i = 0; from + i * step <= to; ++i) {
    s.samples.t.push_back(from + i * step);
    s.samples.v.push_back(rate * i * step);
  }
  return s;
}

Labels acpi(const char* name, const char* socket, const char* sensor) {
  return {{"__name__", name}, {"sensor", sensor},    {"type", "total"},
          {"socket", socket}, {"oem_info", "Grace"}, {"source", "acpi"},
          {"node", "n1"},     {"job", "cpu_power"},  {"instance", "10.0.0.1:9405"}};
}

Labels self(std::string_view name, std::string sensor) {
  return {{"__name__", std::string(name)},
          {"sensor", std::move(sensor)},
          {"node", "n1"},
          {"job", "cpu_power"},
          {"instance", "10.0.0.1:9405"}};
}

Labels socket_up(const char* socket) {
  return {{"__name__", std::string(kSocketUp)},
          {"socket", socket},
          {"node", "n1"},
          {"job", "cpu_power"},
          {"instance", "10.0.0.1:9405"}};
}

// Every family queried, each with its query text; no series yet.
WindowData empty_data() {
  WindowData d;
  const Selectors sel = selectors_for(std::nullopt, {"n1"});
  const QuerySpan span = query_span(kS, kE, kLookback);
  for (std::size_t i = 0; i < kFamilies; ++i) {
    d.families[i].expr = family_query(static_cast<Family>(i), sel, span.range_s);
    d.families[i].queried = true;
  }
  return d;
}

// Node n1: socket 0 at 100 W, socket 1 at 50 W, sampled every second half-way between whole
// seconds (each window edge half-way between two samples), covered all along; GPU 0 at 300 W.
WindowData node_data() {
  WindowData d = empty_data();
  d[Family::acpi_joules].series = {
      counter(acpi("cpu_power_acpi_joules_total", "0", "hwmon2/power1"), 900.5, 1099.5, 1, 100),
      counter(acpi("cpu_power_acpi_joules_total", "1", "hwmon10/power1"), 900.5, 1099.5, 1, 50)};
  d[Family::acpi_covered].series = {
      counter(acpi("cpu_power_acpi_covered_seconds_total", "0", "hwmon2/power1"), 900.5, 1099.5, 1,
              1),
      counter(acpi("cpu_power_acpi_covered_seconds_total", "1", "hwmon10/power1"), 900.5, 1099.5, 1,
              1)};
  d[Family::exporter_self].series = {
      counter(self(kAverageInterval, "hwmon2/power1"), 900.5, 1099.5, 1, 0),
      counter(self(kAverageInterval, "hwmon10/power1"), 900.5, 1099.5, 1, 0),
      counter(socket_up("0"), 900.5, 1099.5, 1, 0), counter(socket_up("1"), 900.5, 1099.5, 1, 0)};
  d[Family::gpu_energy].series = {counter({{"__name__", "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"},
                                           {"gpu", "0"},
                                           {"UUID", "GPU-0"},
                                           {"Hostname", "n1"},
                                           {"job", "dcgm"},
                                           {"instance", "10.0.0.1:9400"}},
                                          900.5, 1099.5, 1, 300000)};  // mJ
  return d;
}

BuildOptions options() {
  BuildOptions o;
  o.lookback_s = kLookback;
  o.store_url = "http://127.0.0.1:9090";
  return o;
}

report::Window window() {
  report::Window w("window", "--window");
  w.start_unix = kS;
  w.end_unix = kE;
  w.start_json = kS;
  w.end_json = kE;
  return w;
}

bool has_warning(const report::WindowReport& r, std::string_view part) {
  for (const auto& w : r.warnings) {
    if (w.find(part) != std::string::npos) return true;
  }
  return false;
}

TEST(StoreWindow, RowsFromTheCountersIncreases) {
  Charts charts;
  const report::WindowReport r = build_window(window(), node_data(), options(), &charts);
  ASSERT_EQ(r.error, "");
  ASSERT_EQ(r.cpu_per_socket.size(), 2u);
  EXPECT_EQ(r.cpu_per_socket[0].label, "cpu/n1/socket0");
  EXPECT_DOUBLE_EQ(r.cpu_per_socket[0].stats.joules, 6000);
  EXPECT_DOUBLE_EQ(r.cpu_per_socket[0].stats.avg_power_w, 100);
  EXPECT_DOUBLE_EQ(r.cpu_per_socket[0].stats.sample_start_unix, 999.5);
  EXPECT_DOUBLE_EQ(r.cpu_per_socket[0].stats.sample_end_unix, 1060.5);
  EXPECT_EQ(r.cpu_per_socket[0].stats.samples, 62u);
  EXPECT_DOUBLE_EQ(r.cpu_per_socket[0].stats.p50_w, 100);
  // Each edge half-way between samples: half a second's energy either way.
  EXPECT_DOUBLE_EQ(r.cpu_per_socket[0].stats.uncertainty_j, 100);
  ASSERT_TRUE(r.cpu_per_socket[0].stats.coverage);
  EXPECT_DOUBLE_EQ(*r.cpu_per_socket[0].stats.coverage, 1);
  EXPECT_EQ(r.cpu_per_socket[1].label, "cpu/n1/socket1");
  EXPECT_DOUBLE_EQ(r.cpu_per_socket[1].stats.joules, 3000);
  EXPECT_DOUBLE_EQ(r.cpu_per_socket[1].stats.uncertainty_j, 50);
  ASSERT_EQ(r.cpu_per_node.size(), 1u);
  EXPECT_EQ(r.cpu_per_node[0].label, "cpu/n1");
  EXPECT_DOUBLE_EQ(r.cpu_per_node[0].stats.joules, 9000);
  EXPECT_DOUBLE_EQ(r.cpu_per_node[0].stats.uncertainty_j, 150);
  EXPECT_DOUBLE_EQ(r.cpu_per_node[0].stats.mean_w, 150);
  EXPECT_EQ(r.cpu_per_node[0].stats.samples, 61u);  // interval midpoints 1000 .. 1060
  EXPECT_DOUBLE_EQ(r.cpu_total_joules.get<double>(), 9000);
  ASSERT_EQ(r.cpu_sensors.size(), 2u);
  EXPECT_EQ(r.cpu_sensors[0].sensor, "CPU0:cpuSidePowerUsageW");
  // dcgm-exporter's counter counts millijoules.
  ASSERT_EQ(r.gpu_per_device.size(), 1u);
  EXPECT_EQ(r.gpu_per_device[0].label, "gpu/n1/gpu0");
  EXPECT_DOUBLE_EQ(r.gpu_per_device[0].stats.joules, 18000);
  EXPECT_FALSE(r.gpu_per_device[0].stats.coverage);
  ASSERT_EQ(r.gpu_per_node.size(), 1u);
  EXPECT_EQ(r.gpu_per_node[0].label, "gpu/n1");
  EXPECT_DOUBLE_EQ(r.gpu_total_joules.get<double>(), 18000);
  EXPECT_DOUBLE_EQ(r.combined_total_joules, 27000);
  EXPECT_EQ(r.perf.num_gpus, 1);
  EXPECT_DOUBLE_EQ(*r.perf.cpu_w, 150);
  EXPECT_DOUBLE_EQ(*r.perf.gpu_w, 300);
  ASSERT_EQ(r.node_power.size(), 1u);
  EXPECT_EQ(r.node_power[0].host, "n1");
  EXPECT_EQ(r.node_power[0].socket_count, 2u);
  EXPECT_EQ(r.node_power[0].gpu_count, 1u);
  EXPECT_DOUBLE_EQ(r.cpu_total_error.uncertainty_j, 150);
  ASSERT_TRUE(r.cpu_total_error.coverage);
  EXPECT_FALSE(r.gpu_total_error.coverage);
  ASSERT_TRUE(r.energy_source);
  EXPECT_EQ(r.energy_source->kind, "prometheus");
  EXPECT_EQ(r.energy_source->url, "http://127.0.0.1:9090");
  EXPECT_TRUE(has_warning(r, "GPU power: dcgm-exporter publishes no averaging interval"));
  EXPECT_FALSE(has_warning(r, "CPU power:"));
  // The charts: per socket, node totals, GPUs.
  report::RunData data;
  charts.fill(data);
  ASSERT_TRUE(data.cpu);
  EXPECT_EQ(data.cpu->sockets.size(), 2u);
  ASSERT_EQ(data.cpu->nodes.size(), 1u);
  EXPECT_DOUBLE_EQ(data.cpu->nodes[0].total.v.front(), 150);
  ASSERT_TRUE(data.gpu);
  EXPECT_EQ(data.gpu->devices.size(), 1u);
}

// The exporter's counter at a scrape counts up to the centre of the latest reading, the sample
// age before it: the samples move back by it, and the edges fall elsewhere between them.
TEST(StoreWindow, CountersAreDatedBySampleAge) {
  WindowData d = node_data();
  d[Family::exporter_self].series.push_back(
      counter(self(kSampleAge, "hwmon2/power1"), 900.5, 1099.5, 1, 0));
  for (auto& v : d[Family::exporter_self].series.back().samples.v) v = 0.25;
  const report::WindowReport r = build_window(window(), d, options(), nullptr);
  ASSERT_EQ(r.error, "");
  EXPECT_DOUBLE_EQ(r.cpu_per_socket[0].stats.joules, 6000);
  EXPECT_DOUBLE_EQ(r.cpu_per_socket[0].stats.sample_start_unix, 999.25);
  // Each edge a quarter of a second from the sample before: 0.75 s of energy either way.
  EXPECT_DOUBLE_EQ(r.cpu_per_socket[0].stats.uncertainty_j, 150);
  EXPECT_DOUBLE_EQ(r.cpu_per_socket[1].stats.uncertainty_j, 50);  // no age: scrape times
}

TEST(StoreWindow, NoCounterDataFailsNamingTheQueries) {
  const WindowData d = empty_data();
  const report::WindowReport r = build_window(window(), d, options(), nullptr);
  EXPECT_EQ(r.error.rfind("no energy counters in the store for this window: "
                          "cpu_power_acpi_joules_total{type=~\"total|cpu_rail|soc|dram\", "
                          "node=~\"n1\"}[660000ms], ",
                          0),
            0u)
      << r.error;
  EXPECT_NE(r.error.find(d[Family::gpu_energy].expr), std::string::npos) << r.error;
  EXPECT_TRUE(r.cpu_per_socket.empty());
  ASSERT_TRUE(r.energy_source);
}

// A socket its exporter found (socket_up) without a counter while the other has one: no node
// total, never a smaller one.
TEST(StoreWindow, AMissingSocketFailsTheNodeTotal) {
  WindowData d = node_data();
  d[Family::acpi_joules].series.pop_back();
  const report::WindowReport r = build_window(window(), d, options(), nullptr);
  EXPECT_EQ(r.error.rfind("cpu/n1: no node total: cpu/n1/socket1 has no energy counter in the "
                          "store for this window (cpu_power_acpi_joules_total{",
                          0),
            0u)
      << r.error;
  // The same from the run's manifest, without socket_up.
  WindowData m = node_data();
  m[Family::acpi_joules].series.pop_back();
  m[Family::exporter_self].series.resize(2);
  BuildOptions o = options();
  o.expected = ExpectedNodes{"cpu_manifest.json", {"n1"}, {{"n1", {0, 1}}}};
  EXPECT_NE(build_window(window(), m, o, nullptr).error.find("cpu/n1/socket1 has no energy"),
            std::string::npos);
}

// A second node whose exporter found one socket where the first has two: its total is whole
// by everything its own exporter says, so only the comparison between nodes can say it.
TEST(StoreWindow, ANodeWithFewerSocketsThanAnotherIsSaid) {
  WindowData d = node_data();
  const auto on_n2 = [](RawSeries s) {
    s.metric["node"] = "n2";
    s.metric["instance"] = "10.0.0.2:9405";
    return s;
  };
  d[Family::acpi_joules].series.push_back(on_n2(d[Family::acpi_joules].series[0]));
  d[Family::acpi_covered].series.push_back(on_n2(d[Family::acpi_covered].series[0]));
  d[Family::exporter_self].series.push_back(on_n2(d[Family::exporter_self].series[0]));
  d[Family::exporter_self].series.push_back(on_n2(d[Family::exporter_self].series[2]));
  const report::WindowReport r = build_window(window(), d, options(), nullptr);
  ASSERT_EQ(r.error, "");
  ASSERT_EQ(r.cpu_per_node.size(), 2u);
  EXPECT_DOUBLE_EQ(r.cpu_per_node[1].stats.joules, 6000);  // n2's one socket: whole, as said
  EXPECT_TRUE(has_warning(r, "cpu/n2: 1 socket (0) where cpu/n1 has 2 (0, 1); a power meter"));
  EXPECT_FALSE(has_warning(r, "cpu/n1: "));
  // Alike nodes: nothing said.
  EXPECT_FALSE(has_warning(build_window(window(), node_data(), options(), nullptr), " where cpu/"));
}

TEST(StoreWindow, NoSampleNearAnEdgeFailsTheWindow) {
  WindowData d = node_data();
  d[Family::acpi_joules].series[0] =
      counter(acpi("cpu_power_acpi_joules_total", "0", "hwmon2/power1"), 1010.5, 1099.5, 1, 100);
  const report::WindowReport r = build_window(window(), d, options(), nullptr);
  EXPECT_EQ(r.error.rfind("cpu/n1/socket0: no sample of cpu_power_acpi_joules_total{", 0), 0u)
      << r.error;
  EXPECT_NE(r.error.find("within 300 s before the window's start (1000.000)"), std::string::npos)
      << r.error;
}

TEST(StoreWindow, GpuPowerGaugeWhenTheStoreHasNoGpuEnergy) {
  WindowData d = node_data();
  d[Family::gpu_energy].series.clear();
  RawSeries power;
  power.metric = {{"__name__", "DCGM_FI_DEV_POWER_USAGE"}, {"gpu", "0"}, {"Hostname", "n1"}};
  for (double t = 900; t <= 1100; t += 5) {
    power.samples.t.push_back(t);
    power.samples.v.push_back(200);
  }
  d[Family::gpu_power].series = {power};
  const report::WindowReport r = build_window(window(), d, options(), nullptr);
  ASSERT_EQ(r.error, "");
  ASSERT_EQ(r.gpu_per_device.size(), 1u);
  EXPECT_DOUBLE_EQ(r.gpu_per_device[0].stats.joules, 12000);
  EXPECT_TRUE(has_warning(r, "GPU energy from the power gauge"));
  EXPECT_TRUE(has_warning(r, "(median scrape interval 5 s)"));
}

// NVML's module counter under a new gpus label carries on the same value: one row.
TEST(StoreWindow, ModuleRowsFromNvmlSeriesMergedOverGpus) {
  WindowData d = node_data();
  const auto nvml = [](const char* gpus) {
    return Labels{{"__name__", "cpu_power_nvml_joules_total"},
                  {"type", "module"},
                  {"socket", "0"},
                  {"gpus", gpus},
                  {"source", "nvml"},
                  {"node", "n1"}};
  };
  RawSeries whole = counter(nvml("0,1"), 900.5, 1099.5, 1, 500);
  RawSeries before = whole, after = whole;
  before.samples = {};
  after.samples = {};
  after.metric = nvml("0");
  for (std::size_t i = 0; i < whole.samples.size(); ++i) {
    auto& part = whole.samples.t[i] < 1030 ? before : after;
    part.samples.t.push_back(whole.samples.t[i]);
    part.samples.v.push_back(whole.samples.v[i]);
  }
  d[Family::nvml_joules].series = {after, before};
  const report::WindowReport r = build_window(window(), d, options(), nullptr);
  ASSERT_EQ(r.error, "");
  ASSERT_EQ(r.module_per_socket.size(), 1u);
  EXPECT_EQ(r.module_per_socket[0].label, "cpu/n1/socket0/module");
  EXPECT_DOUBLE_EQ(r.module_per_socket[0].stats.joules, 30000);
  ASSERT_EQ(r.module_per_node.size(), 1u);
  EXPECT_EQ(r.module_per_node[0].label, "module/n1");
  ASSERT_TRUE(r.module_total_joules);
  EXPECT_DOUBLE_EQ(*r.module_total_joules, 30000);
  // Never added to anything.
  EXPECT_DOUBLE_EQ(r.combined_total_joules, 27000);
}

// An exporter restart inside the window: the energy after it counts from 0 and a warning
// names the lost stretch.
TEST(StoreWindow, AResetInsideTheWindowIsSaid) {
  WindowData d = node_data();
  auto& s = d[Family::acpi_joules].series[0].samples;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s.t[i] > 1030) s.v[i] = 100 * (s.t[i] - 1030.5) + 50;  // restarted at 1030
  }
  const report::WindowReport r = build_window(window(), d, options(), nullptr);
  ASSERT_EQ(r.error, "");
  EXPECT_TRUE(has_warning(r, "cpu/n1/socket0: the counter restarted"));
  // 999.5 .. 1029.5 at 100 W, the new counter's 50 J by 1030.5, 100 W after it.
  EXPECT_DOUBLE_EQ(r.cpu_per_socket[0].stats.joules, 2950 + 50 + 2950);
}

}  // namespace
}  // namespace cpupower::store::window_cases
