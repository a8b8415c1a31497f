#pragma once
// A client of the Prometheus HTTP API (Prometheus, VictoriaMetrics and other stores that
// serve it): instant queries, `POST <base>/api/v1/query` with `query` and `time` form-encoded.
// A range selector evaluated at a time returns the raw samples of the range
// (`"resultType": "matrix"`), each at the time it was scraped: what the report's counter math
// reads. libcurl is the one scrape::curl_api() loads at run time; TLS and Basic
// authentication go through scrape::apply_client_security, a bearer token through libcurl's
// own option. Credentials are read from files, never taken on the command line.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.hpp"
#include "scrape/client_security.hpp"
#include "scrape/curl_api.hpp"
#include "store/series.hpp"

namespace cpupower::store {

// The store's base URL: http or https, a host, and an optional path prefix (VictoriaMetrics'
// `/prometheus`, a cluster's `/select/0/prometheus`). A trailing `/`, `/api/v1` or
// `/api/v1/query` is taken off. Credentials in the URL, a query string or a fragment are
// refused (credentials come from files; the URL is printed in the reports).
struct StoreUrl {
  std::string base;  // scheme://host[:port][/prefix], no trailing slash
  bool https = false;
  std::string query_endpoint() const { return base + "/api/v1/query"; }
};
Result<StoreUrl> parse_store_url(std::string_view url);

// application/x-www-form-urlencoded: unreserved bytes as they are, space as +, the rest %XX.
std::string form_encode(std::string_view s);

struct QueryResult {
  std::vector<RawSeries> series;
  std::vector<std::string> warnings;  // the store's own ("warnings" in its answer)
  std::size_t skipped_values = 0;     // samples whose value is not a finite number
};

// What a query's HTTP exchange came to, before the body is read as data.
enum class Failure {
  none,
  query,  // the store refused or failed this query (status "error", HTTP 4xx/5xx with a
          // Prometheus error body): the window it was for fails
  store,  // no Prometheus API answer at all (not JSON, HTTP 404, credentials refused,
          // TLS, unreachable): no window can be reported
};

struct QueryOutcome {
  std::optional<QueryResult> result;
  Failure failure = Failure::none;
  std::string error;  // "<endpoint>: query <expr>: <why>"
};

// One answer, read: the HTTP status and body of an instant query whose expression is a range
// selector. A success is `{"status": "success", "data": {"resultType": "matrix", "result":
// [{"metric": {...}, "values": [[<t>, "<value>"], ...]}, ...]}}`; values are strings, NaN and
// +Inf among them (left out and counted). The error says why otherwise: the store's
// `errorType` and `error`, the HTTP status, or what the body is instead (its first bytes).
QueryOutcome parse_query_response(long http_status, std::string_view body);

struct ClientOptions {
  std::string url;
  std::optional<std::string> bearer_token_file;  // first line, blanks around it trimmed
  std::optional<std::string> basic_auth_file;    // first line `user:password`
  std::optional<std::string> ca_file;
  std::optional<std::string> cert_file, key_file;  // a client certificate, both or neither
  double timeout_s = 30;                           // per request, connection included
  int retries = 2;  // after connection errors and HTTP 5xx/429, with a short backoff
};

// The bearer token in a file: its first line, blanks around it trimmed (as Prometheus'
// credentials_file). The Basic credentials in a file: its first line, `user:password`, split
// at the first ':'. Errors name the file, never its content.
Result<std::string> read_bearer_token(const std::string& path);
Result<std::pair<std::string, std::string>> read_basic_auth(const std::string& path);

class Client {
 public:
  // Checks the options, reads the credential files and loads libcurl. Call it before
  // starting threads (libcurl's global set-up).
  static Result<Client> open(const ClientOptions& options);

  // The query evaluated at `at_unix`, with the retries.
  QueryOutcome query(const std::string& expr, double at_unix) const;

  // The base URL as the reports print it (it never holds credentials).
  const std::string& url() const { return url_.base; }

 private:
  Client() = default;
  QueryOutcome attempt(const std::string& form, long* http_status, bool* transient) const;

  const scrape::CurlApi* curl_ = nullptr;
  StoreUrl url_;
  scrape::ClientSecurity security_;
  std::string bearer_;
  double timeout_s_ = 30;
  int retries_ = 2;
};

}  // namespace cpupower::store
