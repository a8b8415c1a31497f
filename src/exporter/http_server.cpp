#include "exporter/http_server.hpp"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace cpupower::exporter {

struct HttpServerAccess {
  static MHD_Result answer(void* cls, MHD_Connection* connection, const char* url,
                           const char* method, const char*, const char*, size_t* upload_size,
                           void** request_state) {
    // The first call only announces the headers. Answering there makes libmicrohttpd close
    // the connection afterwards (it cannot know the body was consumed), so wait for the
    // second call, and discard any request body: no route reads one.
    static int announced;
    if (*request_state == nullptr) {
      *request_state = &announced;
      return MHD_YES;
    }
    if (*upload_size != 0) {
      *upload_size = 0;
      return MHD_YES;
    }
    auto* self = static_cast<HttpServer*>(cls);
    HttpResponse r = self->handler_(method ? method : "", url ? url : "");
    MHD_Response* resp =
        MHD_create_response_from_buffer(r.body.size(), r.body.data(), MHD_RESPMEM_MUST_COPY);
    if (!resp) return MHD_NO;
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, r.content_type.c_str());
    if (!r.allow.empty()) MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, r.allow.c_str());
    const MHD_Result ret = MHD_queue_response(connection, r.status, resp);
    MHD_destroy_response(resp);
    return ret;
  }
};

std::string format_host_port(std::string_view ip, std::uint16_t port) {
  if (ip.find(':') != std::string_view::npos) {
    return "[" + std::string(ip) + "]:" + std::to_string(port);
  }
  return std::string(ip) + ":" + std::to_string(port);
}

HttpServer::~HttpServer() {
  stop();
}

bool HttpServer::start(const std::string& bind_ip, std::uint16_t port, HttpHandler handler,
                       const HttpLimits& limits, std::string* error) {
  handler_ = std::move(handler);
  sockaddr_storage addr{};
  socklen_t addr_len = 0;
  const bool v6 = bind_ip.find(':') != std::string::npos;
  if (v6) {
    auto* a = reinterpret_cast<sockaddr_in6*>(&addr);
    a->sin6_family = AF_INET6;
    a->sin6_port = htons(port);
    if (inet_pton(AF_INET6, bind_ip.c_str(), &a->sin6_addr) != 1) {
      *error = "invalid bind address " + bind_ip;
      return false;
    }
    addr_len = sizeof(sockaddr_in6);
  } else {
    auto* a = reinterpret_cast<sockaddr_in*>(&addr);
    a->sin_family = AF_INET;
    a->sin_port = htons(port);
    if (inet_pton(AF_INET, bind_ip.c_str(), &a->sin_addr) != 1) {
      *error = "invalid bind address " + bind_ip;
      return false;
    }
    addr_len = sizeof(sockaddr_in);
  }
  const std::string requested = format_host_port(bind_ip, port);
  listen_fd_ = ::socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) {
    *error = "socket " + requested + ": " + std::strerror(errno);
    return false;
  }
  const int one = 1;
  ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), addr_len) != 0 ||
      ::listen(listen_fd_, 1024) != 0) {
    *error = "bind " + requested + ": " + std::strerror(errno);
    ::close(listen_fd_);
    listen_fd_ = -1;
    return false;
  }
  sockaddr_storage bound{};
  socklen_t bound_len = sizeof bound;
  ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&bound), &bound_len);
  port_ = ntohs(v6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                   : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  address_ = format_host_port(bind_ip, port_);

  // The connection memory pool holds the request header block plus the response headers;
  // a request whose header does not fit gets a 431 instead of a silent drop.
  const size_t memory_limit = limits.header_limit_bytes + 512;
  daemon_ = MHD_start_daemon(
      MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_TURBO | (v6 ? MHD_USE_IPv6 : 0), 0,
      nullptr, nullptr, &HttpServerAccess::answer, this, MHD_OPTION_LISTEN_SOCKET, listen_fd_,
      MHD_OPTION_THREAD_POOL_SIZE, limits.threads, MHD_OPTION_CONNECTION_LIMIT,
      limits.connection_limit, MHD_OPTION_CONNECTION_TIMEOUT, limits.connection_timeout_s,
      MHD_OPTION_CONNECTION_MEMORY_LIMIT, memory_limit, MHD_OPTION_END);
  if (!daemon_) {
    *error = "start HTTP server on " + address_ + ": libmicrohttpd refused the configuration";
    ::close(listen_fd_);
    listen_fd_ = -1;
    return false;
  }
  return true;
}

void HttpServer::stop() {
  if (daemon_) {
    MHD_stop_daemon(daemon_);  // also closes the listening socket it was given
    daemon_ = nullptr;
    listen_fd_ = -1;
  }
  if (listen_fd_ >= 0) {
    ::close(listen_fd_);
    listen_fd_ = -1;
  }
}

}  // namespace cpupower::exporter
