// The exporter's TLS front (exporter/http_server on libmicrohttpd's GnuTLS) on raw bytes sent
// before and during a handshake. The server runs in-process, once, on an ephemeral loopback
// port, with a self-signed certificate made at start. The first byte of an input says when
// the rest is sent on a fresh connection:
//   'h': after a genuine ClientHello (GnuTLS's, made at start), in place of the rest of the
//        client's handshake;
//   'c': after a completed handshake (TLS 1.2 when the second byte is odd, else TLS 1.3),
//        raw, where TLS records belong;
//   anything else ('p' in the corpus): first, before any handshake: a ClientHello, part of
//        one, plain HTTP, junk.
// Then the write side is shut and the reply read until the server closes or falls silent.
// The server must survive every input, and complete a handshake and answer GET /health on
// the connection after it.

#include <arpa/inet.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <string>

#include "../unit/self_signed_tls.hpp"
#include "common/log.hpp"
#include "exporter/http_server.hpp"
#include "exporter/web_config.hpp"
#include "fuzz_util.hpp"

namespace {

using namespace std::chrono_literals;
namespace ex = cpupower::exporter;

ex::HttpTls make_tls() {
  auto tls = cpupower::testing::self_signed_tls(9);
  FUZZ_CHECK(tls.has_value());
  return *tls;
}

int connect_to(std::uint16_t port) {
  const int fd = cpupower::fuzz::connect_loopback(port);
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  const timeval tv{5, 0};  // a handshake the server never answers fails, it does not hang
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  return fd;
}

using cpupower::fuzz::reset_close;
using cpupower::fuzz::send_all;

// A GnuTLS client session on `fd` (or on no socket), not checking the server's certificate.
struct Client {
  gnutls_certificate_credentials_t cred = nullptr;
  gnutls_session_t session = nullptr;
  Client(int fd, const char* priorities) {
    gnutls_certificate_allocate_credentials(&cred);
    gnutls_init(&session, GNUTLS_CLIENT);
    gnutls_priority_set_direct(session, priorities, nullptr);
    gnutls_credentials_set(session, GNUTLS_CRD_CERTIFICATE, cred);
    if (fd >= 0) gnutls_transport_set_int(session, fd);
  }
  ~Client() {
    gnutls_deinit(session);
    gnutls_certificate_free_credentials(cred);
  }
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;
  int handshake() {
    int rc;
    do {
      rc = gnutls_handshake(session);
    } while (rc < 0 && gnutls_error_is_fatal(rc) == 0 && rc != GNUTLS_E_AGAIN);
    return rc;
  }
};

constexpr const char* kAnyVersion = "NORMAL:-VERS-ALL:+VERS-TLS1.2:+VERS-TLS1.3";

// The first flight of a GnuTLS client: its ClientHello, captured without a socket.
std::string genuine_client_hello() {
  Client c(-1, kAnyVersion);
  std::string out;
  gnutls_transport_set_ptr(c.session, &out);
  gnutls_transport_set_push_function(
      c.session, [](gnutls_transport_ptr_t p, const void* data, size_t size) -> ssize_t {
        static_cast<std::string*>(p)->append(static_cast<const char*>(data), size);
        return static_cast<ssize_t>(size);
      });
  gnutls_transport_set_pull_function(c.session,
                                     [](gnutls_transport_ptr_t, void*, size_t) -> ssize_t {
                                       errno = EAGAIN;
                                       return -1;
                                     });
  gnutls_transport_set_errno_function(c.session, [](gnutls_transport_ptr_t) { return EAGAIN; });
  FUZZ_CHECK(c.handshake() == GNUTLS_E_AGAIN, "no ClientHello");
  FUZZ_CHECK(!out.empty() && out[0] == 0x16, "no ClientHello");
  return out;
}

struct Server {
  ex::HttpServer http;
  std::string client_hello;

  Server() {
    cpupower::common::init_logging(spdlog::level::off);
    ex::HttpLimits limits;
    limits.connection_timeout_s = 2;
    ex::HttpSecurity security;
    security.tls = make_tls();
    const cpupower::Status started = http.start(
        "127.0.0.1", 0,
        [](std::string_view, std::string_view path) {
          return path == "/health" ? ex::HttpResponse{200, "text/plain", "ok\n", {}}
                                   : ex::HttpResponse{404, "text/plain", "no\n", {}};
        },
        limits, std::move(security));
    FUZZ_CHECK(started, "%s", started.error().c_str());
    client_hello = genuine_client_hello();
  }
  void stop() { http.stop(); }
};

// Whatever the server sends until it closes or is quiet: 100 ms for the first byte, then 10.
std::size_t drain(int fd) {
  std::size_t got = 0;
  char buf[4096];
  while (cpupower::fuzz::readable_within(fd, got == 0 ? 100ms : 10ms)) {
    const ssize_t n = cpupower::fuzz::receive(fd, buf, sizeof buf);
    if (n <= 0) break;
    got += static_cast<std::size_t>(n);
  }
  return got;
}

// A full handshake and GET /health: the server still serves.
void check_serving(std::uint16_t port) {
  const int fd = connect_to(port);
  std::string reply;
  {
    Client c(fd, kAnyVersion);
    const int rc = c.handshake();
    FUZZ_CHECK(rc == 0, "handshake after the input: %s", gnutls_strerror(rc));
    const std::string req = "GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    ssize_t sent;
    do {
      sent = gnutls_record_send(c.session, req.data(), req.size());
    } while (sent == GNUTLS_E_INTERRUPTED || sent == GNUTLS_E_AGAIN);
    FUZZ_CHECK(sent == static_cast<ssize_t>(req.size()), "GET /health not sent: %s",
               sent < 0 ? gnutls_strerror(static_cast<int>(sent)) : "short");
    char buf[4096];
    for (;;) {
      const ssize_t n = gnutls_record_recv(c.session, buf, sizeof buf);
      if (n == GNUTLS_E_INTERRUPTED || n == GNUTLS_E_AGAIN) continue;
      if (n <= 0) break;
      reply.append(buf, static_cast<std::size_t>(n));
    }
  }
  reset_close(fd);
  FUZZ_CHECK(reply.rfind("HTTP/1.1 200 ", 0) == 0, "GET /health after the input: %.40s",
             reply.c_str());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Server* const server = &cpupower::fuzz::server_instance<Server>();
  const std::string_view input = cpupower::fuzz::as_text(data, size);
  const char mode = input.empty() ? 'p' : input[0];
  std::string_view rest = input.empty() ? input : input.substr(1);
  const int fd = connect_to(server->http.port());
  if (mode == 'h') {
    send_all(fd, server->client_hello);
    send_all(fd, rest);
  } else if (mode == 'c') {
    const bool tls12 = !rest.empty() && (static_cast<unsigned char>(rest[0]) & 1);
    if (!rest.empty()) rest.remove_prefix(1);
    Client c(fd, tls12 ? "NORMAL:-VERS-ALL:+VERS-TLS1.2" : "NORMAL:-VERS-ALL:+VERS-TLS1.3");
    const int rc = c.handshake();
    FUZZ_CHECK(rc == 0, "handshake: %s", gnutls_strerror(rc));
    send_all(fd, rest);
  } else {
    send_all(fd, rest);
  }
  ::shutdown(fd, SHUT_WR);
  const std::size_t got = drain(fd);
  reset_close(fd);
  if (cpupower::fuzz::verbose()) {
    std::fprintf(stderr, "mode %c: %zu bytes sent, %zu received\n", mode, rest.size(), got);
  }
  check_serving(server->http.port());
  return 0;
}
