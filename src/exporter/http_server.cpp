#include "exporter/http_server.hpp"

#include <arpa/inet.h>
#include <gnutls/gnutls.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <poll.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <optional>
#include <string_view>
#include <vector>

#include "common/text.hpp"
#include "exporter/auth_queue.hpp"
#include "exporter/connection_guard.hpp"

namespace cpupower::exporter {

namespace {

// File descriptors kept for everything but connections: the listening socket, epoll and
// wake-up descriptors of the polling threads, hwmon files, NVIDIA device files, logs.
constexpr unsigned kSpareFds = 128;
constexpr unsigned kMinConnections = 16;
// The sweeper's epoll tags the wake-up eventfd with this key; connection keys start at 1.
constexpr std::uint64_t kWakeKey = 0;

// What the server keeps per connection (libmicrohttpd's socket context): the guard's entry
// and, on a TLS port, what the TLS layer saw, to tell why a connection that never brought a
// request was closed. libmicrohttpd 0.9.75 deinitialises the TLS session before it reports
// the connection closed, so all of it is noted while the session is alive (by the pull
// function, the handshake hook and the certificate check) and the close reads only this.
struct ConnState {
  ConnectionGuard::Entry* entry = nullptr;
  int fd = -1;
  gnutls_session_t session = nullptr;  // TLS only; valid only inside GnuTLS callbacks
  std::size_t received = 0;            // bytes read from the socket (TLS only)
  unsigned char first_byte = 0;        // the first of them: 0x16 starts a TLS handshake
  bool answered = false;               // a request reached the handler (or was refused)
  bool empty_client_cert = false;      // the client's Certificate message held none
  bool idle_timeout_set = false;       // TLS: libmicrohttpd's idle timeout applies from now
  bool finished_in = false;            // the client's Finished message was received
  bool finished_out = false;           // the server's Finished message was sent
  // The client certificate's verification status (gnutls_certificate_status_t), once
  // checked: 0 verified; unset: not checked.
  std::optional<unsigned> verify_status;
};

// A request's state (libmicrohttpd's request context): kAnnounced once its headers are in,
// then, while its password is checked on the authentication thread, a PendingAuth. The
// authentication thread writes the outcome before it resumes the connection, and the polling
// thread reads it on the call that follows the resume.
int kAnnounced;
struct PendingAuth {
  enum Outcome { waiting, checked, busy, cancelled };
  std::string authorization;
  bool has_authorization = false;
  AuthResult result = AuthResult::missing;
  std::atomic<Outcome> outcome{waiting};
};

ConnState* state_of(MHD_Connection* connection) {
  const MHD_ConnectionInfo* info =
      MHD_get_connection_info(connection, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
  return info ? static_cast<ConnState*>(info->socket_context) : nullptr;
}

ConnectionGuard::Entry* entry_of(MHD_Connection* connection) {
  ConnState* state = state_of(connection);
  return state ? state->entry : nullptr;
}

// The client's IP address, without the port: the security log is per address.
std::string peer_of(MHD_Connection* connection) {
  const MHD_ConnectionInfo* info =
      MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
  if (!info || !info->client_addr) return "?";
  char buf[INET6_ADDRSTRLEN] = {};
  const sockaddr* sa = info->client_addr;
  if (sa->sa_family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(sa)->sin_addr, buf, sizeof buf);
  } else if (sa->sa_family == AF_INET6) {
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(sa)->sin6_addr, buf, sizeof buf);
  } else {
    return "?";
  }
  return buf;
}

// GnuTLS reads the socket through these (instead of its own recv on the fd libmicrohttpd
// gave it) so that the server knows what a client sent before its handshake failed. The
// write side keeps libmicrohttpd's fd and push function.
ssize_t tls_pull(gnutls_transport_ptr_t ptr, void* buf, size_t len) {
  auto* state = static_cast<ConnState*>(ptr);
  const ssize_t n = ::recv(state->fd, buf, len, 0);
  if (n > 0) {
    if (state->received == 0) state->first_byte = *static_cast<unsigned char*>(buf);
    state->received += static_cast<std::size_t>(n);
  } else if (n < 0) {
    gnutls_transport_set_errno(state->session, errno);
  }
  return n;
}

int tls_pull_timeout(gnutls_transport_ptr_t ptr, unsigned int ms) {
  auto* state = static_cast<ConnState*>(ptr);
  pollfd p{state->fd, POLLIN, 0};
  const int timeout = ms == GNUTLS_INDEFINITE_TIMEOUT ? -1 : static_cast<int>(ms);
  const int rc = ::poll(&p, 1, timeout);
  if (rc < 0) gnutls_transport_set_errno(state->session, errno);
  return rc;
}

ConnState* state_of(gnutls_session_t session) {
  gnutls_transport_ptr_t recv_ptr = nullptr, send_ptr = nullptr;
  gnutls_transport_get_ptr2(session, &recv_ptr, &send_ptr);
  return static_cast<ConnState*>(recv_ptr);
}

// Called for every handshake message, before and after GnuTLS processes it. The handshake
// is complete once the client's Finished has been received and the server's sent (in either
// order: TLS 1.3 and resumption send the server's first). Before GnuTLS processes the
// client's Certificate message: an empty one (a client without a certificate answers a
// request with one) is noted, since a required certificate's absence then fails the
// handshake before anything else records it.
int tls_handshake_hook(gnutls_session_t session, unsigned int htype, unsigned when,
                       unsigned int incoming, const gnutls_datum_t* msg) {
  ConnState* state = state_of(session);
  if (!state) return 0;
  if (htype == GNUTLS_HANDSHAKE_FINISHED && when == GNUTLS_HOOK_POST) {
    (incoming ? state->finished_in : state->finished_out) = true;
    return 0;
  }
  if (htype != GNUTLS_HANDSHAKE_CERTIFICATE_PKT || when != GNUTLS_HOOK_PRE || !incoming || !msg) {
    return 0;
  }
  // TLS 1.3: a context length byte and a 3-byte list length; TLS 1.2: the list length alone.
  const bool tls13 = gnutls_protocol_get_version(session) == GNUTLS_TLS1_3;
  const unsigned header = tls13 && msg->size > 0 ? 1u + msg->data[0] : 0u;
  bool empty = msg->size < header + 3;
  if (!empty) {
    const unsigned char* p = msg->data + header;
    empty = (static_cast<unsigned>(p[0]) << 16 | static_cast<unsigned>(p[1]) << 8 | p[2]) == 0;
  }
  state->empty_client_cert = empty;
  return 0;
}

// The client certificate check during the handshake, as gnutls_session_set_verify_cert
// makes it (against the client CA, no host name), with its outcome noted for the close.
int tls_verify_client(gnutls_session_t session) {
  unsigned status = 0;
  if (gnutls_certificate_verify_peers2(session, &status) < 0) return GNUTLS_E_CERTIFICATE_ERROR;
  if (ConnState* state = state_of(session)) state->verify_status = status;
  return status != 0 ? GNUTLS_E_CERTIFICATE_VERIFICATION_ERROR : 0;
}

// Decodes a request path (and query arguments) as libmicrohttpd would, except that a string
// holding "%00" is left as it came: the NUL it decodes to would end the path libmicrohttpd
// hands on, and "/metrics%00.txt" would reach the handler as "/metrics".
size_t unescape_path(void*, MHD_Connection*, char* s) {
  for (const char* p = std::strchr(s, '%'); p; p = std::strchr(p + 1, '%')) {
    if (p[1] == '0' && p[2] == '0') return std::strlen(s);
  }
  return MHD_http_unescape(s);
}

// How a request says its body is framed (RFC 9112, 6): its Content-Length values and whether
// it has a Transfer-Encoding.
struct Framing {
  std::optional<std::string> length;  // the first Content-Length value
  bool lengths_differ = false;
  bool transfer_encoding = false;
};

MHD_Result note_framing(void* cls, MHD_ValueKind, const char* key, const char* value) {
  auto* f = static_cast<Framing*>(cls);
  if (!key) return MHD_YES;
  if (::strcasecmp(key, MHD_HTTP_HEADER_TRANSFER_ENCODING) == 0) {
    f->transfer_encoding = true;
  } else if (::strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH) == 0) {
    // A field may also list values ("5, 5"): each must be the same.
    std::string_view rest = value ? value : "";
    for (;;) {
      const auto comma = rest.find(',');
      std::string_view item = rest.substr(0, comma);
      while (!item.empty() && (item.front() == ' ' || item.front() == '\t')) item.remove_prefix(1);
      while (!item.empty() && (item.back() == ' ' || item.back() == '\t')) item.remove_suffix(1);
      if (!f->length) {
        f->length = std::string(item);
      } else if (*f->length != item) {
        f->lengths_differ = true;
      }
      if (comma == std::string_view::npos) break;
      rest.remove_prefix(comma + 1);
    }
  }
  return MHD_YES;
}

bool requires_cert(ClientAuth a) {
  return a == ClientAuth::require_any || a == ClientAuth::require_and_verify;
}

bool verifies_cert(ClientAuth a) {
  return a == ClientAuth::verify_if_given || a == ClientAuth::require_and_verify;
}

// Applies the client certificate policy to a new connection's TLS session, before its
// handshake: libmicrohttpd itself only ever requests a certificate (when given a trust list)
// and never verifies one. GnuTLS then verifies it against the client CA during the handshake,
// so an unverified or missing certificate fails the handshake itself.
void prepare_tls_session(gnutls_session_t session, ConnState* state, ClientAuth policy) {
  state->session = session;
  gnutls_transport_set_ptr2(
      session, state,
      reinterpret_cast<gnutls_transport_ptr_t>(static_cast<std::intptr_t>(state->fd)));
  gnutls_transport_set_pull_function(session, tls_pull);
  gnutls_transport_set_pull_timeout_function(session, tls_pull_timeout);
  gnutls_certificate_request_t request = GNUTLS_CERT_IGNORE;
  if (policy == ClientAuth::request || policy == ClientAuth::verify_if_given) {
    request = GNUTLS_CERT_REQUEST;
  } else if (requires_cert(policy)) {
    request = GNUTLS_CERT_REQUIRE;
  }
  gnutls_certificate_server_set_request(session, request);
  gnutls_handshake_set_hook_function(session, GNUTLS_HANDSHAKE_ANY, GNUTLS_HOOK_BOTH,
                                     tls_handshake_hook);
  if (verifies_cert(policy)) gnutls_session_set_verify_function(session, tls_verify_client);
}

// Why a TLS connection that never brought a request ended, if it was refused: plain HTTP,
// a client certificate that is missing or not verified, or another handshake failure. Empty
// kind: nothing to report (the client sent nothing, or closed after a good handshake).
// Reads only what was noted while the session was alive: it is gone by now.
SecurityEvent classify_tls_close(const ConnState& state, ClientAuth policy) {
  SecurityEvent ev;
  if (state.answered || state.received == 0 || !state.session) return ev;
  if (state.first_byte != 0x16) {  // not a TLS handshake record
    ev.kind = kSecurityPlainHttp;
    const bool text = state.first_byte >= 'A' && state.first_byte <= 'Z';
    ev.detail = text ? "a plain HTTP request on the TLS port (use https://)"
                     : "bytes that are not TLS on the TLS port";
    return ev;
  }
  if (state.finished_in && state.finished_out) return ev;  // the handshake completed
  if (state.verify_status && *state.verify_status != 0) {
    const unsigned status = *state.verify_status;
    ev.kind = kSecurityClientCertUnverified;
    gnutls_datum_t out{};
    if (gnutls_certificate_verification_status_print(status, GNUTLS_CRT_X509, &out, 0) == 0) {
      ev.detail = "client certificate not verified: " +
                  std::string(reinterpret_cast<const char*>(out.data), out.size);
      gnutls_free(out.data);
      while (!ev.detail.empty() && ev.detail.back() == ' ') ev.detail.pop_back();
    } else {
      ev.detail = "client certificate not verified";
    }
    return ev;
  }
  if (requires_cert(policy) && state.empty_client_cert) {
    ev.kind = kSecurityClientCertMissing;
    ev.detail =
        "no client certificate (client_auth_type " + std::string(client_auth_name(policy)) + ")";
    return ev;
  }
  ev.kind = kSecurityHandshake;
  ev.detail =
      "TLS handshake not completed (e.g. the client does not trust the server's certificate, "
      "or they share no TLS version or cipher)";
  return ev;
}

// Queues a response with `body`, its Content-Type, then the other headers given, in order; a
// null value leaves its header out.
MHD_Result respond(MHD_Connection* connection, unsigned status, std::string_view body,
                   std::initializer_list<std::pair<const char*, const char*>> headers = {},
                   const char* content_type = "text/plain") {
  MHD_Response* resp = MHD_create_response_from_buffer(body.size(), const_cast<char*>(body.data()),
                                                       MHD_RESPMEM_MUST_COPY);
  if (!resp) return MHD_NO;
  MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
  for (const auto& [name, value] : headers) {
    if (value) MHD_add_response_header(resp, name, value);
  }
  const MHD_Result ret = MHD_queue_response(connection, status, resp);
  MHD_destroy_response(resp);
  return ret;
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
      auto* state = new ConnState;
      state->fd = fd;
      auto* entry = self->guard_->opened(fd, worker, ConnectionGuard::Clock::now());
      state->entry = entry;
      *socket_context = state;
      if (self->security_.tls) {
        const MHD_ConnectionInfo* tls =
            MHD_get_connection_info(connection, MHD_CONNECTION_INFO_GNUTLS_SESSION);
        if (tls && tls->tls_session) {
          prepare_tls_session(static_cast<gnutls_session_t>(tls->tls_session), state,
                              self->security_.tls->client_auth);
        }
      }
      // Edge-triggered on the peer's half-close alone: data arriving does not wake the
      // sweeper. A half-close that came before this is reported at once.
      epoll_event ev{};
      ev.events = EPOLLRDHUP | EPOLLET;
      ev.data.u64 = self->guard_->key(entry);
      ::epoll_ctl(self->watch_fd_, EPOLL_CTL_ADD, fd, &ev);
    } else if (code == MHD_CONNECTION_NOTIFY_CLOSED && *socket_context) {
      auto* state = static_cast<ConnState*>(*socket_context);
      const MHD_ConnectionInfo* info =
          MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
      if (info) ::epoll_ctl(self->watch_fd_, EPOLL_CTL_DEL, info->connect_fd, nullptr);
      // libmicrohttpd 0.9.75 has deinitialised the TLS session by now: state->session must
      // not be used.
      if (self->security_.tls && self->security_.on_event) {
        SecurityEvent ev = classify_tls_close(*state, self->security_.tls->client_auth);
        if (!ev.kind.empty()) {
          ev.peer = peer_of(connection);
          self->security_.on_event(ev);
        }
      }
      self->guard_->closed(state->entry);
      delete state;
      *socket_context = nullptr;
    }
  }

  // A response has been sent (or the request failed); a kept-alive connection waits for its
  // next request from now.
  static void request_completed(void* cls, MHD_Connection* connection, void** request_state,
                                MHD_RequestTerminationCode) {
    auto* self = static_cast<HttpServer*>(cls);
    if (auto* entry = entry_of(connection)) {
      // A client that half-closed while it was answered (HEAD or GET, then shutdown) is
      // looked at again in kHalfCloseGrace, sooner than the sweeper may be waiting for.
      if (self->guard_->response_done(entry, ConnectionGuard::Clock::now())) self->wake_sweeper();
    }
    if (request_state && *request_state && *request_state != &kAnnounced) {
      delete static_cast<PendingAuth*>(*request_state);
      *request_state = nullptr;
    }
  }

  // Hands the password check to the authentication thread: the connection is suspended
  // (libmicrohttpd stops polling it; the thread serves others) and resumed once the outcome
  // is written, which brings the next call of answer(). Suspending comes first, so the
  // resume can never precede it; a full queue resumes at once with the outcome `busy`.
  static MHD_Result defer(HttpServer* self, MHD_Connection* connection, void** request_state,
                          const char* authorization) {
    auto* pending = new PendingAuth;
    pending->has_authorization = authorization != nullptr;
    if (authorization) pending->authorization = authorization;
    *request_state = pending;
    MHD_suspend_connection(connection);
    const std::string peer = peer_of(connection);
    const auto queued =
        self->auth_queue_->submit(peer, [self, connection, pending, peer](bool stop) {
          if (stop) {
            pending->outcome.store(PendingAuth::cancelled, std::memory_order_release);
          } else {
            pending->result = self->security_.authorize(
                pending->has_authorization ? pending->authorization.c_str() : nullptr);
            self->auth_queue_->note_result(peer, pending->result == AuthResult::ok);
            pending->outcome.store(PendingAuth::checked, std::memory_order_release);
          }
          MHD_resume_connection(connection);
        });
    if (queued != AuthQueue::Submit::queued) {
      pending->outcome.store(
          queued == AuthQueue::Submit::full ? PendingAuth::busy : PendingAuth::cancelled,
          std::memory_order_release);
      MHD_resume_connection(connection);
    }
    return MHD_YES;
  }

  // 401 with a Basic challenge, whatever the path (exporter-toolkit protects every path).
  static MHD_Result refuse(HttpServer* self, MHD_Connection* connection, AuthResult result,
                           const char* authorization) {
    if (self->security_.on_event) {
      SecurityEvent ev;
      ev.peer = peer_of(connection);
      if (result == AuthResult::missing) {
        ev.kind = kSecurityNoCredentials;
        ev.detail = "no Authorization header";
      } else {
        ev.kind = kSecurityWrongCredentials;
        ev.detail = std::string(auth_result_name(result));
        if (result == AuthResult::wrong_password || result == AuthResult::unknown_user) {
          // The user name only, quoted and escaped: it comes from the client.
          if (const auto creds = parse_basic_authorization(authorization ? authorization : "")) {
            ev.detail += " for user \"" + common::escape_untrusted(creds->user) + "\"";
          }
        }
      }
      self->security_.on_event(ev);
    }
    return respond(connection, MHD_HTTP_UNAUTHORIZED, "Unauthorized\n",
                   {{MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Basic realm=\"cpu-power-exporter\""}});
  }

  static MHD_Result answer(void* cls, MHD_Connection* connection, const char* url,
                           const char* method, const char*, const char*, size_t* upload_size,
                           void** request_state) {
    // The first call only announces the headers. Answering there makes libmicrohttpd close
    // the connection afterwards (it cannot know the body was consumed), so wait for the
    // second call, and discard any request body: no route reads one. Until that second call
    // the request is incomplete, so a trickled body is held to the request deadline too.
    if (*request_state == nullptr) {
      *request_state = &kAnnounced;
      auto* self = static_cast<HttpServer*>(cls);
      ConnState* state = state_of(connection);
      if (self->security_.tls && state && !state->idle_timeout_set) {
        // Past its handshake (see start): libmicrohttpd's own idle timeout is safe from here.
        MHD_set_connection_option(connection, MHD_CONNECTION_OPTION_TIMEOUT,
                                  self->connection_timeout_s_);
        state->idle_timeout_set = true;
      }
      // A body framed two ways (Content-Length and Transfer-Encoding, or differing lengths)
      // may be read differently by a proxy in front: what one takes for the end of this
      // request, another may take for the start of the next. Refused, and the connection
      // closed, so nothing after it is read as a request (RFC 9112, 6.1 and 6.3).
      Framing framing;
      MHD_get_connection_values(connection, MHD_HEADER_KIND, note_framing, &framing);
      if (framing.lengths_differ || (framing.transfer_encoding && framing.length)) {
        if (state) {
          state->answered = true;
          self->guard_->request_complete(state->entry);
        }
        return respond(
            connection, MHD_HTTP_BAD_REQUEST,
            framing.lengths_differ
                ? "Bad Request: Content-Length values differ\n"
                : "Bad Request: both Content-Length and Transfer-Encoding frame the body\n",
            {{MHD_HTTP_HEADER_CONNECTION, "close"}});
      }
      return MHD_YES;
    }
    if (*upload_size != 0) {
      *upload_size = 0;
      return MHD_YES;
    }
    auto* self = static_cast<HttpServer*>(cls);
    auto* pending =
        *request_state == &kAnnounced ? nullptr : static_cast<PendingAuth*>(*request_state);
    ConnState* state = state_of(connection);
    if (state && !pending) {
      state->answered = true;
      self->guard_->request_complete(state->entry);
    }
    if (self->security_.authorize) {
      const char* authorization =
          MHD_lookup_connection_value(connection, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
      std::optional<AuthResult> result;
      if (pending) {  // resumed: the authentication thread has decided
        switch (pending->outcome.load(std::memory_order_acquire)) {
          case PendingAuth::checked:
            result = pending->result;
            break;
          case PendingAuth::busy:
            if (self->security_.on_event) {
              self->security_.on_event(
                  {kSecurityAuthBusy, peer_of(connection),
                   "password checks queued to the limit (all clients, or this address); "
                   "answered 429"});
            }
            return respond(connection, MHD_HTTP_TOO_MANY_REQUESTS,
                           "Too Many Requests: password checks queued, retry later\n",
                           {{MHD_HTTP_HEADER_RETRY_AFTER, "1"}});
          case PendingAuth::cancelled:
          case PendingAuth::waiting:
            return respond(connection, MHD_HTTP_SERVICE_UNAVAILABLE,
                           "Service Unavailable: shutting down\n");
        }
      } else if (self->auth_queue_) {
        result = self->security_.authorize_cached(authorization);
        if (!result) return defer(self, connection, request_state, authorization);
      } else {
        result = self->security_.authorize(authorization);
      }
      if (*result != AuthResult::ok) return refuse(self, connection, *result, authorization);
    }
    const HttpResponse r = self->handler_(method ? method : "", url ? url : "");
    return respond(connection, r.status, r.body,
                   {{MHD_HTTP_HEADER_ALLOW, r.allow.empty() ? nullptr : r.allow.c_str()}},
                   r.content_type.c_str());
  }
};

std::string format_host_port(std::string_view ip, std::uint16_t port) {
  if (ip.find(':') != std::string_view::npos) {
    return "[" + std::string(ip) + "]:" + std::to_string(port);
  }
  return std::string(ip) + ":" + std::to_string(port);
}

bool tls_supported() {
  return MHD_is_feature_supported(MHD_FEATURE_TLS) == MHD_YES;
}

HttpServer::HttpServer() = default;

HttpServer::~HttpServer() {
  stop();
}

Status HttpServer::start(const std::string& bind_ip, std::uint16_t port, HttpHandler handler,
                         const HttpLimits& limits, HttpSecurity security) {
  handler_ = std::move(handler);
  security_ = std::move(security);
  if (security_.tls && !tls_supported()) {
    return Error{
        "this libmicrohttpd was built without TLS (MHD_FEATURE_TLS); the web config's "
        "tls_server_config cannot be served"};
  }
  sockaddr_storage addr{};
  socklen_t addr_len = 0;
  const bool v6 = bind_ip.find(':') != std::string::npos;
  auto* a6 = reinterpret_cast<sockaddr_in6*>(&addr);
  auto* a4 = reinterpret_cast<sockaddr_in*>(&addr);
  if (v6) {
    a6->sin6_family = AF_INET6;
    a6->sin6_port = htons(port);
    addr_len = sizeof(sockaddr_in6);
  } else {
    a4->sin_family = AF_INET;
    a4->sin_port = htons(port);
    addr_len = sizeof(sockaddr_in);
  }
  if (inet_pton(v6 ? AF_INET6 : AF_INET, bind_ip.c_str(),
                v6 ? static_cast<void*>(&a6->sin6_addr) : &a4->sin_addr) != 1) {
    return Error{"invalid bind address " + bind_ip};
  }
  const std::string requested = format_host_port(bind_ip, port);
  listen_fd_ = ::socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) {
    return Error{"socket " + requested + ": " + std::strerror(errno)};
  }
  const int one = 1;
  ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), addr_len) != 0 ||
      ::listen(listen_fd_, 1024) != 0) {
    Error error{"bind " + requested + ": " + std::strerror(errno)};
    ::close(listen_fd_);
    listen_fd_ = -1;
    return error;
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
    Error error{"start HTTP server on " + address_ + ": " + std::strerror(errno)};
    stop();
    return error;
  }

  // The connection memory pool holds the request header block plus the response headers;
  // a request whose header does not fit gets a 431 instead of a silent drop.
  const size_t memory_limit = limits.header_limit_bytes + 512;
  // TLS: the key pair, the client CA and the protocol versions; libmicrohttpd reads the
  // texts while it starts (they stay in security_ anyway).
  std::vector<MHD_OptionItem> tls_options;
  if (security_.tls) {
    const auto& t = *security_.tls;
    tls_options.push_back({MHD_OPTION_HTTPS_MEM_KEY, 0, const_cast<char*>(t.key_pem.c_str())});
    tls_options.push_back({MHD_OPTION_HTTPS_MEM_CERT, 0, const_cast<char*>(t.cert_pem.c_str())});
    if (!t.trust_pem.empty()) {
      tls_options.push_back(
          {MHD_OPTION_HTTPS_MEM_TRUST, 0, const_cast<char*>(t.trust_pem.c_str())});
    }
    tls_options.push_back(
        {MHD_OPTION_HTTPS_PRIORITIES, 0, const_cast<char*>(t.priorities.c_str())});
  }
  tls_options.push_back({MHD_OPTION_END, 0, nullptr});
  // libmicrohttpd 0.9.75 mishandles TLS connections whose handshake is not done: with epoll
  // it never waits for their socket (it retries the handshake in a busy loop from accept
  // on), and its idle timeout closes them without ever releasing them (the polling thread
  // then spins with a zero timeout, and the descriptor stays open). So on a TLS port the
  // polling threads poll(2), and libmicrohttpd's idle timeout is off until a connection
  // brings its first request: until then the request deadline bounds it, and its shutdown
  // makes the handshake fail on the end of the stream, which libmicrohttpd releases.
  connection_timeout_s_ = limits.connection_timeout_s;
  const unsigned mhd_timeout_s = security_.tls ? 0 : limits.connection_timeout_s;
  const unsigned poll_mode = security_.tls ? MHD_USE_POLL : MHD_USE_EPOLL;
  if (security_.authorize && security_.authorize_cached) {
    auth_queue_ = std::make_unique<AuthQueue>(std::max<std::size_t>(limits.auth_queue, 1),
                                              std::max<std::size_t>(limits.auth_queue_per_peer, 1));
  }
  daemon_ = MHD_start_daemon(
      MHD_USE_INTERNAL_POLLING_THREAD | poll_mode | MHD_USE_TURBO | (v6 ? MHD_USE_IPv6 : 0) |
          (security_.tls ? MHD_USE_TLS : 0) | (auth_queue_ ? MHD_ALLOW_SUSPEND_RESUME : 0),
      0, nullptr, nullptr, &HttpServerAccess::answer, this, MHD_OPTION_ARRAY, tls_options.data(),
      MHD_OPTION_LISTEN_SOCKET, listen_fd_, MHD_OPTION_THREAD_POOL_SIZE, threads,
      MHD_OPTION_CONNECTION_LIMIT, limits.connection_limit, MHD_OPTION_CONNECTION_TIMEOUT,
      mhd_timeout_s, MHD_OPTION_CONNECTION_MEMORY_LIMIT, memory_limit, MHD_OPTION_NOTIFY_CONNECTION,
      &HttpServerAccess::notify_connection, this, MHD_OPTION_NOTIFY_COMPLETED,
      &HttpServerAccess::request_completed, this, MHD_OPTION_UNESCAPE_CALLBACK, &unescape_path,
      nullptr, MHD_OPTION_END);
  if (!daemon_) {
    Error error{"start HTTP server on " + address_ + ": libmicrohttpd refused the configuration"};
    stop();
    return error;
  }
  sweeper_ = std::thread([this] { sweep_loop(); });
  return Ok{};
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
      if (events[i].data.u64 == kWakeKey) {
        std::uint64_t count = 0;
        [[maybe_unused]] const auto r = ::read(wake_fd_, &count, sizeof count);
        if (stopping_.load(std::memory_order_acquire)) return;
        continue;  // swept again at the top of the loop
      }
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

std::size_t HttpServer::auth_checks_pending() const {
  return auth_queue_ ? auth_queue_->pending() : 0;
}

void HttpServer::wake_sweeper() {
  const std::uint64_t one = 1;
  [[maybe_unused]] const auto n = ::write(wake_fd_, &one, sizeof one);
}

void HttpServer::stop() {
  if (sweeper_.joinable()) {
    stopping_.store(true, std::memory_order_release);
    wake_sweeper();
    sweeper_.join();
  }
  stopping_.store(false, std::memory_order_relaxed);
  // Before the daemon: every suspended connection must be resumed before it stops. The
  // check in progress finishes; the queued ones are resumed as cancelled (503).
  if (auth_queue_) auth_queue_->stop();
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
