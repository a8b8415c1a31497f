#pragma once
// A small HTTP/1.1 server on libmicrohttpd: a small pool of polling threads (epoll; poll(2) on
// a TLS port), bounded connections, per-connection timeout and a request-header size limit
// answered with a 4xx. Slow clients cannot hold it (ConnectionGuard): a request must be
// complete within a deadline however it trickles, and connections still waiting for their
// request make room for new ones.
// Handlers must be fast and non-blocking: they run on the polling threads.
//
// Optionally (HttpSecurity, from the web config): TLS through libmicrohttpd's GnuTLS, with
// client certificates requested, required and verified during the handshake as the policy
// says, and HTTP Basic authentication on every path, its slow checks (bcrypt) on an
// authentication thread of their own (AuthQueue) while the polling threads serve the other
// requests. What it refuses is reported through `on_event`, one call per refused connection
// or request.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include "common/result.hpp"
#include "exporter/basic_auth.hpp"
#include "exporter/web_config.hpp"

struct MHD_Daemon;

namespace cpupower::exporter {

struct HttpResponse {
  unsigned status = 200;
  std::string content_type = "text/plain";
  std::string body;
  std::string allow;  // value of an Allow header, when non-empty
};

using HttpHandler = std::function<HttpResponse(std::string_view method, std::string_view path)>;

struct HttpLimits {
  unsigned threads = 2;               // polling threads sharing the listening socket
  unsigned connection_limit = 1024;   // open connections, all threads together
  unsigned connection_timeout_s = 5;  // idle: no byte received or sent for this long
  // A connection must deliver a complete request within this long of its accept or of its
  // previous response, however often bytes arrive.
  std::chrono::milliseconds request_timeout{5000};
  std::size_t header_limit_bytes = 8192;
  // Requests waiting for a password check on the authentication thread, in all and per
  // client address (AuthQueue); past either, 429 at once.
  std::size_t auth_queue = 16;
  std::size_t auth_queue_per_peer = 2;
};

// Connections waiting for their request may hold at most this many of a polling thread's
// `per_thread` slots: the rest stay free for requests being answered and for new arrivals.
std::size_t waiting_cap(std::size_t per_thread);

// The file descriptors a connection limit needs. Raises the soft RLIMIT_NOFILE toward the hard
// limit when it is lower than `wanted` connections need; where the hard limit is lower too,
// returns the connection limit that fits, with `reduced` set.
struct FittedLimit {
  unsigned connections = 0;
  std::uint64_t fd_limit = 0;  // the soft RLIMIT_NOFILE in force afterwards
  bool reduced = false;
};
FittedLimit fit_connection_limit(unsigned wanted);

// TLS for the server: PEM texts and the GnuTLS priority string (gnutls_priorities).
struct HttpTls {
  std::string cert_pem;
  std::string key_pem;
  std::string trust_pem;  // client CA; empty: none
  std::string priorities;
  ClientAuth client_auth = ClientAuth::none;
};

// A refused connection or request. `kind` is one of the kSecurity* names below; `peer` the
// client's IP address (no port); `detail` a short explanation (never a password).
inline constexpr std::string_view kSecurityNoCredentials = "no_credentials";
inline constexpr std::string_view kSecurityWrongCredentials = "wrong_credentials";
inline constexpr std::string_view kSecurityPlainHttp = "plain_http_on_tls_port";
inline constexpr std::string_view kSecurityHandshake = "tls_handshake_failed";
inline constexpr std::string_view kSecurityClientCertMissing = "client_certificate_missing";
inline constexpr std::string_view kSecurityClientCertUnverified = "client_certificate_unverified";
inline constexpr std::string_view kSecurityAuthBusy = "authentication_busy";
struct SecurityEvent {
  std::string_view kind;
  std::string peer;
  std::string detail;
};

struct HttpSecurity {
  std::optional<HttpTls> tls;
  // Checks an Authorization header value (nullptr: none); unset: no authentication. A
  // request that is not `ok` gets 401 with WWW-Authenticate: Basic, whatever its path.
  // With `authorize_cached` set, `authorize` runs on the server's authentication thread
  // (AuthQueue) for the requests `authorize_cached` cannot answer, and the polling threads
  // go on serving others meanwhile; without it, `authorize` runs on the polling thread.
  std::function<AuthResult(const char* authorization)> authorize;
  std::function<std::optional<AuthResult>(const char* authorization)> authorize_cached;
  std::function<void(const SecurityEvent&)> on_event;  // called on polling threads
};

// Whether this libmicrohttpd was built with TLS (MHD_FEATURE_TLS).
bool tls_supported();

class ConnectionGuard;
class AuthQueue;

class HttpServer {
 public:
  HttpServer();
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds `bind_ip` (an IPv4 or IPv6 literal) and `port` (0 = ephemeral) and starts serving.
  // The error reads like "bind 0.0.0.0:9405: Address already in use".
  Status start(const std::string& bind_ip, std::uint16_t port, HttpHandler handler,
               const HttpLimits& limits, HttpSecurity security = {});
  void stop();

  // The bound address as ip:port ([ip]:port for IPv6), with the real port.
  const std::string& address() const { return address_; }
  std::uint16_t port() const { return port_; }

  // Connections closed because they waited too long for their request (deadline), to make
  // room for new ones (evicted), or whose client shut its write side mid-request
  // (half-closed), since start.
  std::uint64_t expired_connections() const;
  std::uint64_t evicted_connections() const;
  std::uint64_t half_closed_connections() const;
  // Requests whose password check is queued or running on the authentication thread.
  std::size_t auth_checks_pending() const;

 private:
  void sweep_loop();
  void wake_sweeper();

  HttpHandler handler_;
  HttpSecurity security_;
  std::unique_ptr<ConnectionGuard> guard_;
  std::unique_ptr<AuthQueue> auth_queue_;  // with security_.authorize_cached
  std::thread sweeper_;
  int watch_fd_ = -1;  // epoll: connections whose client shut its write side, and wake_fd_
  int wake_fd_ = -1;   // eventfd that wakes the sweeper: to stop, or to sweep again
  std::atomic<bool> stopping_{false};
  MHD_Daemon* daemon_ = nullptr;
  int listen_fd_ = -1;
  unsigned connection_timeout_s_ = 0;  // HttpLimits::connection_timeout_s
  std::string address_;
  std::uint16_t port_ = 0;

  friend struct HttpServerAccess;
};

// Formats ip:port, bracketing IPv6 literals.
std::string format_host_port(std::string_view ip, std::uint16_t port);

}  // namespace cpupower::exporter
