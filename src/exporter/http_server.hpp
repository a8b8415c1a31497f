#pragma once
// A small HTTP/1.1 server on libmicrohttpd: a small pool of epoll threads, bounded connections,
// per-connection timeout and a request-header size limit answered with a 4xx. Handlers
// must be fast and non-blocking: they run on the polling threads.

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

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
  unsigned threads = 2;  // epoll threads sharing the listening socket
  unsigned connection_limit = 64;
  unsigned connection_timeout_s = 5;
  std::size_t header_limit_bytes = 8192;
};

class HttpServer {
 public:
  HttpServer() = default;
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds `bind_ip` (an IPv4 or IPv6 literal) and `port` (0 = ephemeral) and starts serving.
  // On failure returns false with `error` like "bind 0.0.0.0:9405: Address already in use".
  bool start(const std::string& bind_ip, std::uint16_t port, HttpHandler handler,
             const HttpLimits& limits, std::string* error);
  void stop();

  // The bound address as ip:port ([ip]:port for IPv6), with the real port.
  const std::string& address() const { return address_; }
  std::uint16_t port() const { return port_; }

 private:
  HttpHandler handler_;
  MHD_Daemon* daemon_ = nullptr;
  int listen_fd_ = -1;
  std::string address_;
  std::uint16_t port_ = 0;

  friend struct HttpServerAccess;
};

// Formats ip:port, bracketing IPv6 literals.
std::string format_host_port(std::string_view ip, std::uint16_t port);

}  // namespace cpupower::exporter
