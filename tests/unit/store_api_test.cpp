// The store client's pure parts: reading the Prometheus HTTP API's answers (a matrix, the
// store's error body, an empty result, what is not JSON or not the API), the base URL,
// form encoding and the credential files.

#include <gtest/gtest.h>

#include <fstream>

#include "store/prom_api.hpp"
#include "temp_dir.hpp"

namespace cpupower::store {
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
}  // namespace cpupower::store
