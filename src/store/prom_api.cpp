#include "store/prom_api.hpp"

#include <fmt/core.h>
#include <simdjson.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <thread>

#include "common/text.hpp"
#include "common/version.hpp"

namespace cpupower::store {
namespace {

constexpr std::size_t kMaxBodyBytes = std::size_t{1} << 30;  // 1 GiB: narrow the query instead
constexpr std::size_t kMaxCredentialFileBytes = 64 * 1024;
constexpr std::size_t kExcerptBytes = 200;
constexpr double kFirstBackoffS = 0.5;

// The first bytes of a body, on one line, for an error message.
std::string excerpt(std::string_view body) {
  const bool cut = body.size() > kExcerptBytes;
  return common::escape_controls(body.substr(0, kExcerptBytes)) + (cut ? "..." : "");
}

QueryOutcome failed(Failure kind, std::string why) {
  QueryOutcome out;
  out.failure = kind;
  out.error = std::move(why);
  return out;
}

// The store's own account of an error: `errorType` and `error` of its JSON answer.
std::string store_error(simdjson::dom::element doc) {
  std::string_view type, text;
  if (doc["errorType"].get_string().get(type)) type = "";
  if (doc["error"].get_string().get(text)) text = "";
  std::string out = type.empty() ? "" : std::string(type);
  if (!text.empty()) out += (out.empty() ? "" : ": ") + common::escape_controls(text);
  return out.empty() ? "no reason given" : out;
}

// One series of a matrix: its labels and samples, ascending.
Result<RawSeries> read_series(simdjson::dom::element item, std::size_t* skipped) {
  RawSeries out;
  simdjson::dom::object metric;
  if (item["metric"].get_object().get(metric)) return Error{"a result without a metric object"};
  for (const auto field : metric) {
    std::string_view value;
    if (field.value.get_string().get(value)) {
      return Error{fmt::format("label {} is not a string", field.key)};
    }
    out.metric.emplace(std::string(field.key), std::string(value));
  }
  simdjson::dom::array values;
  if (item["values"].get_array().get(values)) {
    return Error{"a result without a values list (a range selector's answer has one)"};
  }
  bool sorted = true;
  for (const auto pair : values) {
    simdjson::dom::array tv;
    double t = 0;
    std::string_view text;
    if (pair.get_array().get(tv) || tv.size() != 2 || tv.at(0).get_double().get(t) ||
        tv.at(1).get_string().get(text)) {
      return Error{"a sample that is not [<time>, \"<value>\"]"};
    }
    const auto v = common::parse_double(text);
    if (!v || !std::isfinite(*v) || !std::isfinite(t)) {
      ++*skipped;
      continue;
    }
    if (!out.samples.t.empty() && t < out.samples.t.back()) sorted = false;
    out.samples.t.push_back(t);
    out.samples.v.push_back(*v);
  }
  if (!sorted) {
    std::vector<std::size_t> order(out.samples.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      return out.samples.t[a] < out.samples.t[b];
    });
    Samples s;
    for (const std::size_t i : order) {
      s.t.push_back(out.samples.t[i]);
      s.v.push_back(out.samples.v[i]);
    }
    out.samples = std::move(s);
  }
  return out;
}

struct Body {
  std::string text;
  bool over = false;
};

std::size_t on_body(char* data, std::size_t size, std::size_t n, void* user) {
  auto* body = static_cast<Body*>(user);
  const std::size_t bytes = size * n;
  if (body->text.size() + bytes > kMaxBodyBytes) {
    body->over = true;
    return 0;
  }
  body->text.append(data, bytes);
  return bytes;
}

bool tls_failure(CURLcode rc) {
  switch (rc) {
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CIPHER:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_ENGINE_NOTFOUND:
    case CURLE_SSL_ENGINE_SETFAILED:
    case CURLE_SSL_ISSUER_ERROR:
    case CURLE_SSL_CRL_BADFILE:
    case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
    case CURLE_SSL_INVALIDCERTSTATUS:
    case CURLE_SSL_CLIENTCERT:
      return true;
    default:
      return false;
  }
}

// A failure worth another try: the connection, not the query.
bool connection_failure(CURLcode rc) {
  switch (rc) {
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_CONNECT:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
      return true;
    default:
      return false;
  }
}

std::string first_line(const std::string& text) {
  std::string line = text.substr(0, text.find('\n'));
  if (!line.empty() && line.back() == '\r') line.pop_back();
  return line;
}

}  // namespace

Result<StoreUrl> parse_store_url(std::string_view url) {
  StoreUrl out;
  std::string_view rest;
  if (url.starts_with("http://")) {
    rest = url.substr(7);
  } else if (url.starts_with("https://")) {
    rest = url.substr(8);
    out.https = true;
  } else {
    return Error{fmt::format("store URL {}: not http:// or https://", url)};
  }
  if (rest.find_first_of("?#") != std::string_view::npos) {
    return Error{fmt::format("store URL {}: a query string or fragment has no place in it", url)};
  }
  const std::string_view authority = rest.substr(0, rest.find('/'));
  if (authority.find('@') != std::string_view::npos) {
    return Error{
        "store URL: credentials in the URL are refused (they would show in the reports and in "
        "ps); give them with --store-basic-auth-file or --store-bearer-token-file"};
  }
  if (authority.empty()) return Error{fmt::format("store URL {}: no host", url)};
  for (const char c : url) {
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) {
      return Error{"store URL: holds a blank or a control character"};
    }
  }
  std::string base(url);
  while (base.ends_with("/")) base.pop_back();
  for (const std::string_view tail : {"/api/v1/query", "/api/v1"}) {
    if (base.ends_with(tail)) base.resize(base.size() - tail.size());
  }
  while (base.ends_with("/")) base.pop_back();
  out.base = std::move(base);
  return out;
}

std::string form_encode(std::string_view s) {
  std::string out;
  out.reserve(s.size() * 3 / 2);
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
        c == '.' || c == '_' || c == '~') {
      out += ch;
    } else if (c == ' ') {
      out += '+';
    } else {
      out += fmt::format("%{:02X}", c);
    }
  }
  return out;
}

QueryOutcome parse_query_response(long http_status, std::string_view body) {
  if (http_status == 401 || http_status == 403) {
    return failed(Failure::store,
                  fmt::format("the store refused the credentials (HTTP {}: {})", http_status,
                              body.empty() ? "no body" : excerpt(body)));
  }
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  const simdjson::padded_string padded(body);
  const auto code = parser.parse(padded).get(doc);
  std::string_view status;
  if (code || !doc.is_object() || doc["status"].get_string().get(status)) {
    if (http_status != 200) {
      return failed(Failure::store,
                    fmt::format("HTTP {}, not a Prometheus API answer ({}){}", http_status,
                                body.empty() ? "no body" : excerpt(body),
                                http_status == 404 ? "; check the URL's path prefix" : ""));
    }
    return failed(Failure::store,
                  fmt::format("not a Prometheus API answer: {} (the body begins '{}')",
                              code ? simdjson::error_message(code) : "no status", excerpt(body)));
  }
  if (status == "error") {
    return failed(Failure::query,
                  fmt::format("the store refused it (HTTP {}): {}", http_status, store_error(doc)));
  }
  if (status != "success" || http_status != 200) {
    return failed(Failure::store, fmt::format("HTTP {}, status '{}': not a Prometheus API answer",
                                              http_status, common::escape_controls(status)));
  }
  std::string_view type;
  if (doc["data"]["resultType"].get_string().get(type)) {
    return failed(Failure::store, "an answer without data.resultType");
  }
  if (type != "matrix") {
    return failed(Failure::query,
                  fmt::format("the store answered with a {}, not the raw samples of a range "
                              "selector (a matrix)",
                              common::escape_controls(type)));
  }
  simdjson::dom::array result;
  if (doc["data"]["result"].get_array().get(result)) {
    return failed(Failure::store, "an answer without a data.result list");
  }
  QueryResult out;
  for (const auto item : result) {
    auto series = read_series(item, &out.skipped_values);
    if (!series) return failed(Failure::store, "a malformed matrix: " + series.error());
    out.series.push_back(std::move(*series));
  }
  simdjson::dom::array warnings;
  if (!doc["warnings"].get_array().get(warnings)) {
    for (const auto w : warnings) {
      std::string_view text;
      if (!w.get_string().get(text)) out.warnings.push_back(common::escape_controls(text));
    }
  }
  QueryOutcome ok;
  ok.result = std::move(out);
  return ok;
}

Result<std::string> read_bearer_token(const std::string& path) {
  const auto text = common::read_small_file(path, kMaxCredentialFileBytes);
  if (!text) return Error{"cannot read " + path + ": " + text.error()};
  const std::string token(common::trim(first_line(*text)));
  if (token.empty()) return Error{path + " holds no token on its first line"};
  for (const char c : token) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      return Error{path + ": the token holds a control character"};
    }
  }
  return token;
}

Result<std::pair<std::string, std::string>> read_basic_auth(const std::string& path) {
  const auto text = common::read_small_file(path, kMaxCredentialFileBytes);
  if (!text) return Error{"cannot read " + path + ": " + text.error()};
  const std::string line = first_line(*text);
  const auto colon = line.find(':');
  if (colon == std::string::npos || colon == 0) {
    return Error{path + ": the first line is not user:password"};
  }
  if (line.find('\0') != std::string::npos) return Error{path + ": holds a NUL byte"};
  return std::pair(line.substr(0, colon), line.substr(colon + 1));
}

Result<Client> Client::open(const ClientOptions& options) {
  auto url = parse_store_url(options.url);
  if (!url) return Error{url.error()};
  if (!url->https && (options.ca_file || options.cert_file || options.key_file)) {
    return Error{"--store-ca-file, --store-cert-file and --store-key-file need an https:// URL"};
  }
  if (options.bearer_token_file && options.basic_auth_file) {
    return Error{"--store-bearer-token-file and --store-basic-auth-file exclude each other"};
  }
  if (!(options.timeout_s > 0)) return Error{"--store-timeout-s must be above 0"};
  if (options.retries < 0) return Error{"--store-retries must be 0 or more"};
  Client c;
  c.url_ = std::move(*url);
  c.timeout_s_ = options.timeout_s;
  c.retries_ = options.retries;
  if (c.url_.https) {
    scrape::ClientSecuritySpec spec;
    spec.tls = true;
    spec.ca_file = options.ca_file;
    spec.cert_file = options.cert_file;
    spec.key_file = options.key_file;
    const auto resolved = scrape::resolve_client_security(spec);
    if (!resolved.security) {
      std::string flag(resolved.refused_key);
      std::replace(flag.begin(), flag.end(), '_', '-');
      return Error{"--store-" + flag + ": " + resolved.why};
    }
    c.security_ = *resolved.security;
  }
  if (options.basic_auth_file) {
    auto basic = read_basic_auth(*options.basic_auth_file);
    if (!basic) return Error{"--store-basic-auth-file: " + basic.error()};
    c.security_.username = std::move(basic->first);
    c.security_.password = std::move(basic->second);
  }
  if (options.bearer_token_file) {
    auto token = read_bearer_token(*options.bearer_token_file);
    if (!token) return Error{"--store-bearer-token-file: " + token.error()};
    c.bearer_ = std::move(*token);
  }
  const auto curl = scrape::curl_api();
  if (!curl) return Error{curl.error()};
  c.curl_ = *curl;
  return c;
}

QueryOutcome Client::attempt(const std::string& form, long* http_status, bool* transient) const {
  *http_status = 0;
  *transient = false;
  const scrape::CurlApi& curl = *curl_;
  CURL* e = curl.easy_init();
  if (!e) return failed(Failure::store, "curl_easy_init failed");
  Body body;
  char error_buffer[CURL_ERROR_SIZE] = {};
  const std::string endpoint = url_.query_endpoint();
  const std::string agent = std::string("cpu-power/") + kVersion;
  const auto timeout_ms = static_cast<long>(timeout_s_ * 1000);
  curl.easy_setopt(e, CURLOPT_URL, endpoint.c_str());
  curl.easy_setopt(e, CURLOPT_POSTFIELDS, form.c_str());
  curl.easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(form.size()));
  curl.easy_setopt(e, CURLOPT_WRITEFUNCTION, &on_body);
  curl.easy_setopt(e, CURLOPT_WRITEDATA, &body);
  curl.easy_setopt(e, CURLOPT_ERRORBUFFER, error_buffer);
  curl.easy_setopt(e, CURLOPT_TIMEOUT_MS, timeout_ms);
  curl.easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, std::min(timeout_ms, 10000L));
  curl.easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  curl.easy_setopt(e, CURLOPT_PROTOCOLS_STR, url_.https ? "https" : "http");
  // The answers are large and compress well; Prometheus and VictoriaMetrics gzip them.
  curl.easy_setopt(e, CURLOPT_ACCEPT_ENCODING, "");
  curl.easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
  curl.easy_setopt(e, CURLOPT_PROXY, "");
  curl.easy_setopt(e, CURLOPT_USERAGENT, agent.c_str());
  scrape::apply_client_security(curl, e, security_);
  if (!bearer_.empty()) {
    curl.easy_setopt(e, CURLOPT_HTTPAUTH, static_cast<long>(CURLAUTH_BEARER));
    curl.easy_setopt(e, CURLOPT_XOAUTH2_BEARER, bearer_.c_str());
  }
  const CURLcode rc = curl.easy_perform(e);
  long status = 0;
  curl.easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
  double connect_s = 0;
  curl.easy_getinfo(e, CURLINFO_CONNECT_TIME, &connect_s);
  curl.easy_cleanup(e);
  *http_status = status;
  if (rc != CURLE_OK) {
    const std::string detail =
        error_buffer[0] ? common::escape_controls(error_buffer) : curl.easy_strerror(rc);
    if (body.over) {
      return failed(Failure::query,
                    fmt::format("the answer is over {} MiB; narrow --match or the window",
                                kMaxBodyBytes >> 20));
    }
    if (tls_failure(rc)) return failed(Failure::store, "TLS: " + detail);
    // A timeout before the connection was made is the connection's; after, the query's.
    *transient = connection_failure(rc) || (rc == CURLE_OPERATION_TIMEDOUT && connect_s == 0);
    if (rc == CURLE_OPERATION_TIMEDOUT && connect_s > 0) {
      return failed(Failure::query,
                    fmt::format("no complete answer within {:g} s (--store-timeout-s): {}",
                                timeout_s_, detail));
    }
    return failed(Failure::store, detail);
  }
  *transient = status >= 500 || status == 429;
  return parse_query_response(status, body.text);
}

QueryOutcome Client::query(const std::string& expr, double at_unix) const {
  const std::string form =
      "query=" + form_encode(expr) + "&time=" + form_encode(fmt::format("{:.3f}", at_unix));
  QueryOutcome out;
  int tries = 0;
  for (double backoff = kFirstBackoffS;; backoff *= 2) {
    long status = 0;
    bool transient = false;
    out = attempt(form, &status, &transient);
    ++tries;
    if (out.failure == Failure::none || !transient || tries > retries_) break;
    std::this_thread::sleep_for(std::chrono::duration<double>(backoff));
  }
  if (out.failure != Failure::none) {
    out.error = fmt::format("{}: query {}: {}{}", url_.query_endpoint(), expr, out.error,
                            tries > 1 ? fmt::format(" (after {} tries)", tries) : "");
  }
  return out;
}

}  // namespace cpupower::store
