#include "exporter/http_server.hpp"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "exporter/connection_guard.hpp"

namespace cpupower::exporter {

namespace {

// File descriptors kept for everything but connections: the listening socket, epoll and
// wake-up descriptors of the polling threads, hwmon files, NVIDIA device files, logs.
constexpr unsigned kSpareFds = 128;
constexpr unsigned kMinConnections = 16;
// The sweeper's epoll tags the wake-up eventfd with this key; connection keys start at 1.
constexpr std::uint64_t kWakeKey = 0;

ConnectionGuard::Entry* entry_of(MHD_Connection* connection) {
  const MHD_ConnectionInfo* info =
      MHD_get_connection_info(connection, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
  return info ? static_cast<ConnectionGuard::Entry*>(info->socket_context) : nullptr;
}

}  // namespace

std::size_t waiting_cap(std::size_t per_thread) {
  const std::size_t reserve = std::min(std::max<std::size_t>(per_thread / 8, 4), per_thread / 2);
  return std::max<std::size_t>(per_thread - reserve, 1);
}

FittedLimit fit_connection_limit(unsigned wanted) {
  FittedLimit out;
  out.connections = wanted;
  rlimit rl{};
  if (::getrlimit(RLIMIT_NOFILE, &rl) != 0) return out;
  const rlim_t need = static_cast<rlim_t>(wanted) + kSpareFds;
  if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < need) {
    rlimit raised = rl;
    raised.rlim_cur = rl.rlim_max == RLIM_INFINITY ? need : std::min(rl.rlim_max, need);
    if (::setrlimit(RLIMIT_NOFILE, &raised) == 0) rl = raised;
  }
  out.fd_limit = rl.rlim_cur == RLIM_INFINITY ? UINT64_MAX : rl.rlim_cur;
  if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < need) {
    const rlim_t fits = rl.rlim_cur > kSpareFds ? rl.rlim_cur - kSpareFds : 0;
    out.connections = static_cast<unsigned>(std::max<rlim_t>(fits, kMinConnections));
    out.reduced = true;
  }
  return out;
}

struct HttpServerAccess {
  // libmicrohttpd calls this on the connection's polling thread, before the connection is
  // polled (STARTED) and before its fd is closed (CLOSED).
  static void notify_connection(void* cls, MHD_Connection* connection, void** socket_context,
                                MHD_ConnectionNotificationCode code) {
    auto* self = static_cast<HttpServer*>(cls);
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
      const MHD_ConnectionInfo* info =
          MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
      if (!info) return;
      const int fd = info->connect_fd;
      const auto worker = std::hash<std::thread::id>{}(std::this_thread::get_id());
      auto* entry = self->guard_->opened(fd, worker, ConnectionGuard::Clock::now());
      *socket_context = entry;
      // Edge-triggered on the peer's half-close alone: data arriving does not wake the
      // sweeper. A half-close that came before this is reported at once.
      epoll_event ev{};
      ev.events = EPOLLRDHUP | EPOLLET;
      ev.data.u64 = self->guard_->key(entry);
      ::epoll_ctl(self->watch_fd_, EPOLL_CTL_ADD, fd, &ev);
    } else if (code == MHD_CONNECTION_NOTIFY_CLOSED && *socket_context) {
      auto* entry = static_cast<ConnectionGuard::Entry*>(*socket_context);
      const MHD_ConnectionInfo* info =
          MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
      if (info) ::epoll_ctl(self->watch_fd_, EPOLL_CTL_DEL, info->connect_fd, nullptr);
      self->guard_->closed(entry);
      *socket_context = nullptr;
    }
  }

  // A response has been sent (or the request failed); a kept-alive connection waits for its
  // next request from now.
  static void request_completed(void* cls, MHD_Connection* connection, void**,
                                MHD_RequestTerminationCode) {
    auto* self = static_cast<HttpServer*>(cls);
    if (auto* entry = entry_of(connection)) {
      self->guard_->response_done(entry, ConnectionGuard::Clock::now());
    }
  }

  static MHD_Result answer(void* cls, MHD_Connection* connection, const char* url,
                           const char* method, const char*, const char*, size_t* upload_size,
                           void** request_state) {
    // The first call only announces the headers. Answering there makes libmicrohttpd close
    // the connection afterwards (it cannot know the body was consumed), so wait for the
    // second call, and discard any request body: no route reads one. Until that second call
    // the request is incomplete, so a trickled body is held to the request deadline too.
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
    if (auto* entry = entry_of(connection)) self->guard_->request_complete(entry);
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

HttpServer::HttpServer() = default;

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

  // libmicrohttpd splits the connection limit evenly between its polling threads, and each
  // thread accepts on its own: the cap on waiting connections is per thread too.
  const unsigned threads = std::max(limits.threads, 1u);
  guard_ = std::make_unique<ConnectionGuard>(
      waiting_cap(limits.connection_limit / threads), limits.request_timeout,
      ConnectionGuard::SocketOps{[](int fd) { ::shutdown(fd, SHUT_RDWR); },
                                 [](int fd) {
                                   int unread = 0;
                                   return ::ioctl(fd, FIONREAD, &unread) == 0 && unread > 0;
                                 }});
  watch_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  epoll_event wake{};
  wake.events = EPOLLIN;
  wake.data.u64 = kWakeKey;
  if (watch_fd_ < 0 || wake_fd_ < 0 ||
      ::epoll_ctl(watch_fd_, EPOLL_CTL_ADD, wake_fd_, &wake) != 0) {
    *error = "start HTTP server on " + address_ + ": " + std::strerror(errno);
    stop();
    return false;
  }

  // The connection memory pool holds the request header block plus the response headers;
  // a request whose header does not fit gets a 431 instead of a silent drop.
  const size_t memory_limit = limits.header_limit_bytes + 512;
  daemon_ = MHD_start_daemon(
      MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_TURBO | (v6 ? MHD_USE_IPv6 : 0), 0,
      nullptr, nullptr, &HttpServerAccess::answer, this, MHD_OPTION_LISTEN_SOCKET, listen_fd_,
      MHD_OPTION_THREAD_POOL_SIZE, threads, MHD_OPTION_CONNECTION_LIMIT, limits.connection_limit,
      MHD_OPTION_CONNECTION_TIMEOUT, limits.connection_timeout_s,
      MHD_OPTION_CONNECTION_MEMORY_LIMIT, memory_limit, MHD_OPTION_NOTIFY_CONNECTION,
      &HttpServerAccess::notify_connection, this, MHD_OPTION_NOTIFY_COMPLETED,
      &HttpServerAccess::request_completed, this, MHD_OPTION_END);
  if (!daemon_) {
    *error = "start HTTP server on " + address_ + ": libmicrohttpd refused the configuration";
    stop();
    return false;
  }
  sweeper_ = std::thread([this] { sweep_loop(); });
  return true;
}

// Closes connections past the request deadline, waking when the oldest waiting one falls due,
// and hands each half-close to the guard as soon as epoll reports it.
void HttpServer::sweep_loop() {
  using namespace std::chrono;
  epoll_event events[64];
  for (;;) {
    const auto now = ConnectionGuard::Clock::now();
    const auto next = guard_->sweep(now);
    const auto wait_ms = std::clamp<long>(ceil<milliseconds>(next - now).count(), 1, 60000);
    const int n = ::epoll_wait(watch_fd_, events, 64, static_cast<int>(wait_ms));
    for (int i = 0; i < n; ++i) {
      if (events[i].data.u64 == kWakeKey) return;
      guard_->peer_closed(events[i].data.u64, ConnectionGuard::Clock::now());
    }
  }
}

std::uint64_t HttpServer::expired_connections() const {
  return guard_ ? guard_->counts().expired : 0;
}

std::uint64_t HttpServer::evicted_connections() const {
  return guard_ ? guard_->counts().evicted : 0;
}

std::uint64_t HttpServer::half_closed_connections() const {
  return guard_ ? guard_->counts().half_closed : 0;
}

void HttpServer::stop() {
  if (sweeper_.joinable()) {
    const std::uint64_t one = 1;
    [[maybe_unused]] const auto n = ::write(wake_fd_, &one, sizeof one);
    sweeper_.join();
  }
  if (daemon_) {
    MHD_stop_daemon(daemon_);  // also closes the listening socket it was given
    daemon_ = nullptr;
    listen_fd_ = -1;
  }
  if (listen_fd_ >= 0) {
    ::close(listen_fd_);
    listen_fd_ = -1;
  }
  for (int* fd : {&watch_fd_, &wake_fd_}) {
    if (*fd >= 0) ::close(*fd);
    *fd = -1;
  }
}

}  // namespace cpupower::exporter
