#include <arpa/inet.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <ctime>
#include <filesystem>
#include <future>
#include <mutex>
#include <set>
#include <thread>

#include "exporter/auth_queue.hpp"
#include "exporter/connection_guard.hpp"
#include "exporter/http_server.hpp"
#include "exporter/render.hpp"
#include "exporter/service.hpp"
#include "self_signed_tls.hpp"
#include "sources/acpi_reader.hpp"
#include "sources/ladder.hpp"
#include "test_tree.hpp"

namespace cpupower::exporter {
namespace {

using cpupower::testing::TestTree;
using namespace std::chrono_literals;

std::vector<std::unique_ptr<sources::Source>> acpi_source(const TestTree& t) {
  sources::LadderOptions o;
  o.hwmon_root = t.root();
  o.read_interval = 10ms;
  o.max_age = 1000ms;
  std::vector<std::unique_ptr<sources::Source>> out;
  out.push_back(sources::resolve_source(o).source);
  return out;
}

// A snapshot of discovered channels with the given readings, as the ACPI reader gives it.
sources::Snapshot acpi_snapshot(const std::vector<sources::AcpiChannel>& channels,
                                std::vector<sources::ChannelReading> readings) {
  sources::AcpiReader reader(channels, 1000ms, 1000ms);  // never started: no reads
  auto snap = reader.snapshot();
  snap.readings = std::move(readings);
  return snap;
}

TEST(ExporterRender, AcpiFamilyExactlyAsTheReference) {
  TestTree t;
  t.meter("hwmon0", "CPU Power Socket 0", "150000000", "power1");
  t.meter("hwmon0", "Odd \"rail\"", "1000000", "power2");
  t.meter("hwmon1", "Grace Power Socket 0", "0");
  const auto d = sources::discover_acpi(t.root());
  std::vector<sources::ChannelReading> readings(3);
  readings[0].watts = 150.0;
  readings[1].watts = 1.0;
  std::string out;
  render_family(out, expo::kAcpiWatts, acpi_snapshot(d.channels, readings));
  EXPECT_EQ(out,
            "# HELP cpu_power_acpi_watts Grace CPU power rail reading from ACPI hwmon (W).\n"
            "# TYPE cpu_power_acpi_watts gauge\n"
            "cpu_power_acpi_watts{sensor=\"hwmon0/power1\",type=\"cpu_rail\",socket=\"0\","
            "oem_info=\"CPU Power Socket 0\",source=\"acpi\"} 150.000000\n"
            "cpu_power_acpi_watts{sensor=\"hwmon0/power2\",type=\"other\",socket=\"\","
            "oem_info=\"Odd \\\"rail\\\"\",source=\"acpi\"} 1.000000\n");
}

TEST(ExporterRender, CountersCarryTheWattsLabelsAndStayWhileTheValueIsWithheld) {
  TestTree t;
  t.meter("hwmon0", "Grace Power Socket 0", "150000000", "power1");
  const auto d = sources::discover_acpi(t.root());
  std::vector<sources::ChannelReading> readings(1);
  readings[0].energy_j = 1234.5;  // stale: no watts, the counters still served
  readings[0].covered_s = 10.0;
  readings[0].bridged_s = 0.25;
  std::string out;
  const auto snap = acpi_snapshot(d.channels, readings);
  render_family(out, expo::kAcpiWatts, snap);
  render_counter_families(out, expo::kAcpiCounters, snap);
  const std::string labels =
      "{sensor=\"hwmon0/power1\",type=\"total\",socket=\"0\",oem_info=\"Grace Power Socket "
      "0\",source=\"acpi\"} ";
  EXPECT_EQ(out.find("cpu_power_acpi_watts{"), std::string::npos) << out;
  for (const auto& [name, value] : {std::pair{"cpu_power_acpi_joules_total", "1234.500000"},
                                    {"cpu_power_acpi_covered_seconds_total", "10.000000"},
                                    {"cpu_power_acpi_bridged_seconds_total", "0.250000"}}) {
    EXPECT_NE(out.find(std::string("# TYPE ") + name + " counter\n"), std::string::npos) << out;
    EXPECT_NE(out.find(name + labels + value + "\n"), std::string::npos) << name << "\n" << out;
  }
}

TEST(ExporterRender, HeaderOnlyWithoutReadings) {
  std::string out;
  render_family(out, expo::kAcpiWatts, acpi_snapshot({}, {}));
  EXPECT_EQ(out,
            "# HELP cpu_power_acpi_watts Grace CPU power rail reading from ACPI hwmon (W).\n"
            "# TYPE cpu_power_acpi_watts gauge\n");
}

// Module sockets withheld, by reason: both reasons for every socket NVML has read, so an alert
// can tell disagreeing GPUs from a stalled NVML; no family at all without NVML module sockets.
TEST(ExporterRender, ModuleWithheldByReasonForEverySocket) {
  std::string out;
  SelfStats stats{"1", "acpi", 1, {{0, false, false}, {1, false, true}, {2, true, false}}};
  render_self_metrics(out, {}, stats);
  const std::string family = "cpu_power_exporter_module_withheld";
  EXPECT_NE(
      out.find("# TYPE " + family + " gauge\n" + family + "{socket=\"0\",reason=\"stale\"} 0\n" +
               family + "{socket=\"0\",reason=\"disagree\"} 0\n" + family +
               "{socket=\"1\",reason=\"stale\"} 0\n" + family +
               "{socket=\"1\",reason=\"disagree\"} 1\n" + family +
               "{socket=\"2\",reason=\"stale\"} 1\n" + family +
               "{socket=\"2\",reason=\"disagree\"} 0\n"),
      std::string::npos)
      << out;
  std::string without;
  render_self_metrics(without, {}, {"1", "acpi", 1, {}});
  EXPECT_EQ(without.find(family), std::string::npos) << without;
}

TEST(ExporterRender, SampleAgeCountsFromTheCentreOfTheAveragedInterval) {
  sources::ChannelReading acpi;
  acpi.watts = 98.0;
  acpi.age_s = 0.1;
  acpi.average_interval_s = 1.0;
  acpi.centre_offset_s = 0.5;       // the value read under a 1000 ms interval
  sources::ChannelReading unknown;  // no interval known (DCGM): age from the read
  unknown.watts = 50.0;
  unknown.age_s = 0.2;
  sources::ChannelReading module;  // NVML: no self metrics, but its window is published
  module.watts = 500.0;
  module.age_s = 0.3;
  module.average_interval_s = 1.0;
  module.centre_offset_s = 0.5;
  std::string out;
  render_self_metrics(out,
                      {{"sensor=\"hwmon2/power1\"", acpi},
                       {"sensor=\"dcgm/cpu0/1130\"", unknown},
                       {"sensor=\"nvml/socket0\"", module, true}},
                      {"1", "acpi", 1, {}});
  EXPECT_NE(out.find("cpu_power_exporter_sample_age_seconds{sensor=\"hwmon2/power1\"} 0.600000\n"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("cpu_power_exporter_sample_age_seconds{sensor=\"dcgm/cpu0/1130\"} 0.200000\n"),
            std::string::npos);
  EXPECT_EQ(out.find("sample_age_seconds{sensor=\"nvml/socket0\"}"), std::string::npos);
  EXPECT_EQ(out.find("read_errors_total{sensor=\"nvml/socket0\"}"), std::string::npos);
  EXPECT_NE(out.find("# HELP cpu_power_exporter_average_interval_seconds "), std::string::npos);
  EXPECT_NE(out.find("# TYPE cpu_power_exporter_average_interval_seconds gauge\n"),
            std::string::npos);
  EXPECT_NE(
      out.find("cpu_power_exporter_average_interval_seconds{sensor=\"hwmon2/power1\"} 1.000000\n"),
      std::string::npos);
  EXPECT_NE(
      out.find("cpu_power_exporter_average_interval_seconds{sensor=\"nvml/socket0\"} 1.000000\n"),
      std::string::npos);
  EXPECT_EQ(out.find("average_interval_seconds{sensor=\"dcgm"), std::string::npos);
}

TEST(ExporterService, PublishesEachChannelsAveragingInterval) {
  TestTree t;
  t.meter("hwmon2", "Grace Power Socket 0", "98029000");
  t.write("hwmon2/power1_average_interval", "1000\n");
  t.meter("hwmon3", "CPU Power Socket 0", "50000000");
  t.write("hwmon3/power1_average_interval", "50\n");
  t.meter("hwmon4", "SysIO Power Socket 0", "6000000");  // no interval file
  Service s(acpi_source(t), "1");
  const auto body = s.render_metrics();
  EXPECT_NE(
      body.find("cpu_power_exporter_average_interval_seconds{sensor=\"hwmon2/power1\"} 1.000000\n"),
      std::string::npos)
      << body;
  EXPECT_NE(
      body.find("cpu_power_exporter_average_interval_seconds{sensor=\"hwmon3/power1\"} 0.050000\n"),
      std::string::npos);
  EXPECT_EQ(body.find("average_interval_seconds{sensor=\"hwmon4/power1\"}"), std::string::npos);
}

TEST(ExporterService, RoutesLikeTheReference) {
  TestTree t;
  t.meter("hwmon2", "Grace Power Socket 0", "98029000");
  Service s(acpi_source(t), "9.9.9");
  auto r = s.handle("GET", "/health");
  EXPECT_EQ(r.status, 200u);
  EXPECT_EQ(r.body, "ok\n");
  r = s.handle("GET", "/metrics?collect%5B%5D=x");
  EXPECT_EQ(r.status, 200u);
  EXPECT_EQ(r.content_type, "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_NE(r.body.find("cpu_power_acpi_watts{sensor=\"hwmon2/power1\",type=\"total\",socket=\"0\","
                        "oem_info=\"Grace Power Socket 0\",source=\"acpi\"} 98.029000\n"),
            std::string::npos)
      << r.body;
  EXPECT_NE(r.body.find("cpu_power_exporter_info{version=\"9.9.9\",source=\"acpi\"} 1\n"),
            std::string::npos);
  EXPECT_NE(r.body.find("cpu_power_exporter_sample_age_seconds{sensor=\"hwmon2/power1\"} "),
            std::string::npos);
  EXPECT_NE(r.body.find("cpu_power_exporter_scrapes_total 1\n"), std::string::npos);
  r = s.handle("HEAD", "/metrics");
  EXPECT_EQ(r.status, 200u);
  r = s.handle("GET", "/nope");
  EXPECT_EQ(r.status, 404u);
  EXPECT_EQ(r.body, "Not Found\n");
  r = s.handle("POST", "/metrics");
  EXPECT_EQ(r.status, 405u);
  EXPECT_EQ(r.allow, "GET, HEAD");
  EXPECT_EQ(r.body, "Method Not Allowed\n");
  r = s.handle("get", "/metrics");
  EXPECT_EQ(r.status, 405u);  // methods are case-sensitive
}

TEST(ExporterService, BaseFamilyComesBeforeTheSelfMetrics) {
  TestTree t;
  t.meter("hwmon2", "Grace Power Socket 0", "98029000");
  Service s(acpi_source(t), "1");
  const auto body = s.render_metrics();
  EXPECT_EQ(body.rfind("# HELP cpu_power_acpi_watts ", 0), 0u);
  EXPECT_LT(body.find("cpu_power_acpi_watts{"), body.find("cpu_power_exporter_"));
}

// --- slow clients -------------------------------------------------------------------------

struct GuardProbe {
  std::vector<int> closed_fds;
  std::set<int> unread_fds;  // sockets holding bytes the server has not read yet
  ConnectionGuard guard;
  GuardProbe(std::size_t cap, ConnectionGuard::Clock::duration timeout)
      : guard(cap, timeout,
              {[this](int fd) { closed_fds.push_back(fd); },
               [this](int fd) { return unread_fds.count(fd) > 0; }}) {}
};

TEST(ConnectionGuard, AtTheCapTheLongestWaitingConnectionOfThatThreadMakesRoom) {
  GuardProbe p(2, 5s);
  const ConnectionGuard::Clock::time_point t0{};
  auto* a = p.guard.opened(10, 1, t0);
  auto* b = p.guard.opened(11, 1, t0 + 1ms);
  auto* other = p.guard.opened(20, 2, t0 + 2ms);  // another polling thread: its own share
  p.guard.request_complete(a);                    // being answered: never evicted
  auto* c = p.guard.opened(12, 1, t0 + 3ms);
  EXPECT_TRUE(p.closed_fds.empty());
  auto* d = p.guard.opened(13, 1, t0 + 4ms);
  EXPECT_EQ(p.closed_fds, std::vector<int>{11});
  EXPECT_EQ(p.guard.counts().evicted, 1u);
  EXPECT_EQ(p.guard.counts().waiting, 3u);  // c, d and other; b is closing
  EXPECT_EQ(p.guard.counts().open, 5u);     // b stays open until libmicrohttpd lets go
  p.guard.request_complete(b);              // too late: a closing connection stays closing
  p.guard.closed(b);
  EXPECT_EQ(p.guard.counts().open, 4u);
  for (auto* e : {a, c, d, other}) p.guard.closed(e);
  EXPECT_EQ(p.guard.counts().open, 0u);
  EXPECT_EQ(p.guard.counts().waiting, 0u);
}

TEST(ConnectionGuard, DeadlineCountsFromAcceptOrPreviousResponseNotFromTheLastByte) {
  GuardProbe p(100, 5s);
  const ConnectionGuard::Clock::time_point t0{};
  auto* trickle = p.guard.opened(10, 1, t0);
  auto* keepalive = p.guard.opened(11, 1, t0 + 1s);
  auto* busy = p.guard.opened(12, 1, t0 + 1s);
  EXPECT_EQ(p.guard.sweep(t0 + 2s), t0 + 5s);  // next due: the trickle's deadline
  p.guard.request_complete(keepalive);
  EXPECT_FALSE(p.guard.response_done(keepalive, t0 + 3s));  // waits for its next request from 3 s
  p.guard.request_complete(busy);                           // being answered: no deadline
  EXPECT_EQ(p.guard.sweep(t0 + 5s), t0 + 8s);
  EXPECT_EQ(p.closed_fds, std::vector<int>{10});
  EXPECT_EQ(p.guard.sweep(t0 + 8s), t0 + 13s);  // nothing waits: one timeout ahead
  EXPECT_EQ(p.closed_fds, (std::vector<int>{10, 11}));
  EXPECT_EQ(p.guard.counts().expired, 2u);
  EXPECT_EQ(p.guard.sweep(t0 + 60s), t0 + 65s);  // an answered request is not timed here
  EXPECT_EQ(p.closed_fds.size(), 2u);
  for (auto* e : {trickle, keepalive, busy}) p.guard.closed(e);
}

TEST(ConnectionGuard, HalfClosedConnectionsCloseOnceTheServerHasReadAllTheirBytes) {
  GuardProbe p(100, 5s);
  const auto grace = ConnectionGuard::kHalfCloseGrace;
  const ConnectionGuard::Clock::time_point t0{};
  auto* partial = p.guard.opened(10, 1, t0);
  auto* unread = p.guard.opened(11, 1, t0);
  auto* answered = p.guard.opened(12, 1, t0);
  p.unread_fds.insert(11);
  p.guard.request_complete(answered);
  const auto partial_key = p.guard.key(partial);
  for (auto* e : {partial, unread, answered}) p.guard.peer_closed(p.guard.key(e), t0);
  p.guard.peer_closed(partial_key, t0 + 1ms);  // epoll may say it twice: no new grace
  EXPECT_EQ(p.guard.sweep(t0 + grace / 2), t0 + grace);
  EXPECT_TRUE(p.closed_fds.empty());
  EXPECT_EQ(p.guard.sweep(t0 + grace), t0 + 2 * grace);
  EXPECT_EQ(p.closed_fds, std::vector<int>{10});  // the unread one waits for the server
  p.unread_fds.clear();
  EXPECT_TRUE(
      p.guard.response_done(answered, t0 + grace));  // answered first; then no more requests
  p.guard.sweep(t0 + 2 * grace);
  EXPECT_EQ(p.closed_fds, (std::vector<int>{10, 11, 12}));
  EXPECT_EQ(p.guard.counts().half_closed, 3u);
  p.guard.closed(partial);
  p.guard.peer_closed(partial_key, t0 + 3 * grace);  // after libmicrohttpd let go: ignored
  for (auto* e : {unread, answered}) p.guard.closed(e);
  EXPECT_EQ(p.guard.counts().open, 0u);
}

TEST(ConnectionGuard, WaitingShareLeavesRoomForAnsweredRequests) {
  EXPECT_EQ(waiting_cap(512), 448u);
  EXPECT_EQ(waiting_cap(32), 28u);
  EXPECT_EQ(waiting_cap(8), 4u);
  EXPECT_EQ(waiting_cap(1), 1u);
  EXPECT_EQ(waiting_cap(0), 1u);
}

// Each runs in a child process: the limits it sets must not outlive the test.
[[noreturn]] void fit_under_hard_limit() {
  const rlimit low{200, 200};
  if (::setrlimit(RLIMIT_NOFILE, &low) != 0) std::_Exit(3);
  const auto f = fit_connection_limit(1024);
  std::_Exit(f.reduced && f.connections == 72 && f.fd_limit == 200 ? 0 : 1);
}

[[noreturn]] void fit_by_raising_soft_limit(rlim_t hard) {
  const rlimit soft{256, hard};
  if (::setrlimit(RLIMIT_NOFILE, &soft) != 0) std::_Exit(3);
  const auto f = fit_connection_limit(1024);
  rlimit after{};
  ::getrlimit(RLIMIT_NOFILE, &after);
  std::_Exit(!f.reduced && f.connections == 1024 && after.rlim_cur >= 1024 + 128 ? 0 : 1);
}

TEST(HttpServerLimits, ConnectionLimitFitsTheHardFileDescriptorLimit) {
  EXPECT_EXIT(fit_under_hard_limit(), ::testing::ExitedWithCode(0), "");
  rlimit now{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &now), 0);
  if (now.rlim_max != RLIM_INFINITY && now.rlim_max < 1024 + 128) {
    GTEST_SKIP() << "hard RLIMIT_NOFILE " << now.rlim_max << " is below what 1024 connections need";
  }
  EXPECT_EXIT(fit_by_raising_soft_limit(now.rlim_max), ::testing::ExitedWithCode(0), "");
}

// A connection to 127.0.0.1:port, from `from_ip` (any 127.0.0.0/8 address) when given.
int connect_loopback(std::uint16_t port, const char* from_ip = nullptr) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in from{};
  from.sin_family = AF_INET;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if ((from_ip && (::inet_pton(AF_INET, from_ip, &from.sin_addr) != 1 ||
                   ::bind(fd, reinterpret_cast<sockaddr*>(&from), sizeof from) != 0)) ||
      ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Sends `request`, then returns everything the server sends until it closes or is quiet for
// `quiet_ms`; closes `fd`.
std::string exchange(int fd, const std::string& request, bool half_close, int quiet_ms) {
  if (::send(fd, request.data(), request.size(), MSG_NOSIGNAL) !=
      static_cast<ssize_t>(request.size())) {
    ::close(fd);
    return "send failed";
  }
  if (half_close) ::shutdown(fd, SHUT_WR);
  std::string out;
  char buf[4096];
  pollfd p{fd, POLLIN, 0};
  while (::poll(&p, 1, quiet_ms) > 0) {
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return out;
}

// Milliseconds until the server ends the connection (EOF or reset), or -1 after `limit`.
long ms_until_closed(int fd, std::chrono::milliseconds limit) {
  const auto t0 = std::chrono::steady_clock::now();
  char buf[4096];
  for (;;) {
    const auto left = limit - std::chrono::duration_cast<std::chrono::milliseconds>(
                                  std::chrono::steady_clock::now() - t0);
    if (left <= 0ms) return -1;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
    if (::recv(fd, buf, sizeof buf, 0) <= 0) break;
  }
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                               t0)
      .count();
}

// GET `path` on a fresh connection; `half_close` shuts the write side after the request.
std::string get_path(std::uint16_t port, const std::string& path, bool half_close = false) {
  const int fd = connect_loopback(port);
  if (fd < 0) return "connect failed";
  return exchange(fd, "GET " + path + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
                  half_close, 2000);
}

TEST(HttpServerSlowClients, IdleAndTricklingConnectionsNeitherLockOutNorOutstayTheDeadline) {
  HttpServer server;
  HttpLimits limits;
  limits.connection_limit = 32;     // 16 a polling thread, 12 of them for waiting connections
  limits.request_timeout = 2000ms;  // margins below for a busy or emulated machine
  const Status started = server.start(
      "127.0.0.1", 0,
      [](std::string_view, std::string_view) {
        return HttpResponse{200, "text/plain", "ok\n", {}};
      },
      limits);
  ASSERT_TRUE(started) << started.error();
  // Twice the connection limit of clients that send nothing: without room-making the
  // server would sit at its limit until the deadline.
  std::vector<int> idle;
  for (int i = 0; i < 64; ++i) idle.push_back(connect_loopback(server.port()));
  const int trickle = connect_loopback(server.port());
  ASSERT_GE(trickle, 0);
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_NE(get_path(server.port(), "/health").find("\r\n\r\nok\n"), std::string::npos);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 1000ms) << "a complete request waited";
  EXPECT_GT(server.evicted_connections(), 0u);
  // One byte every 100 ms: each resets the idle timeout, none extends the deadline.
  const std::string drip = "GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: aaaaaaaaaaaaaaaaaaaa";
  long lived_ms = -1;
  for (std::size_t i = 0; i < drip.size(); ++i) {
    if (::send(trickle, &drip[i], 1, MSG_NOSIGNAL) != 1) break;
    pollfd p{trickle, POLLIN, 0};
    if (::poll(&p, 1, 100) > 0) {
      lived_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                     std::chrono::steady_clock::now() - t0)
                     .count();
      break;
    }
  }
  EXPECT_GE(lived_ms, 0) << "a trickling request outlived " << drip.size() * 100 << " ms";
  EXPECT_LT(lived_ms, 3500);  // the 2 s deadline, not the drip's length
  for (int fd : idle) ::close(fd);
  ::close(trickle);
  server.stop();
}

// Sends part of a request and shuts the write side: the bytes and the end of stream reach
// the server together when it is not reading at that moment.
int half_closed_partial_request(std::uint16_t port) {
  const int fd = connect_loopback(port);
  const std::string partial = "GET /health HTTP/1.1\r\nHost: x\r\nX-Part";
  if (fd < 0 || ::send(fd, partial.data(), partial.size(), MSG_NOSIGNAL) !=
                    static_cast<ssize_t>(partial.size())) {
    return -1;
  }
  ::shutdown(fd, SHUT_WR);
  return fd;
}

TEST(HttpServerSlowClients, HalfClosedPartialRequestIsLetGoAtOnce) {
  // One polling thread, held in a handler while the half-closed request arrives: when it
  // comes back, the partial request and the end of stream are read in one go, which
  // libmicrohttpd alone notices only at a timeout.
  std::promise<void> entered;
  std::promise<void> release;
  auto released = release.get_future().share();
  HttpServer server;
  HttpLimits limits;
  limits.threads = 1;
  limits.request_timeout = 3s;
  limits.connection_timeout_s = 3;
  const Status started = server.start(
      "127.0.0.1", 0,
      [&](std::string_view, std::string_view path) {
        if (path == "/hold") {
          entered.set_value();
          released.wait();
        }
        return HttpResponse{200, "text/plain", "ok\n", {}};
      },
      limits);
  ASSERT_TRUE(started) << started.error();
  std::thread holder([&] { get_path(server.port(), "/hold"); });
  entered.get_future().wait();
  std::vector<int> halves;
  for (int i = 0; i < 8; ++i) halves.push_back(half_closed_partial_request(server.port()));
  release.set_value();
  for (int fd : halves) {
    ASSERT_GE(fd, 0);
    const long ms = ms_until_closed(fd, 2500ms);
    EXPECT_GE(ms, 0) << "a half-closed partial request held its connection";
    EXPECT_LT(ms, 1500);  // well short of the 3 s timeout that would close it otherwise
    ::close(fd);
  }
  holder.join();
  // One after the other: libmicrohttpd alone keeps a few in a hundred until its timeout.
  for (int i = 0; i < 100; ++i) {
    const int fd = half_closed_partial_request(server.port());
    ASSERT_GE(fd, 0);
    const long ms = ms_until_closed(fd, 2500ms);
    ::close(fd);
    ASSERT_GE(ms, 0) << "half-closed partial request " << i << " held its connection";
    EXPECT_LT(ms, 1500);  // well short of the 3 s timeout that would close it otherwise
  }
  // A complete request whose client half-closes right after it is still answered.
  for (int i = 0; i < 20; ++i) {
    EXPECT_NE(get_path(server.port(), "/health", true).find("\r\n\r\nok\n"), std::string::npos);
  }
  server.stop();
}

// GET / with an Authorization header (empty: none), from `from_ip` (any 127.0.0.0/8 address),
// and everything the server sends until it closes or is quiet for 10 s.
std::string get_with_auth(std::uint16_t port, const std::string& authorization,
                          const char* from_ip = "127.0.0.1") {
  const int fd = connect_loopback(port, from_ip);
  if (fd < 0) return "connect failed";
  std::string req = "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n";
  if (!authorization.empty()) req += "Authorization: " + authorization + "\r\n";
  return exchange(fd, req + "\r\n", false, 10000);
}

// A password check the test holds: "Basic slow" blocks on the authentication thread until
// released, "Basic good" is remembered (answered on the polling thread), anything else is
// refused. `entered` counts the slow checks begun.
struct HeldAuth {
  std::mutex mu;
  std::condition_variable cv;
  int entered = 0;
  bool released = false;
  std::vector<std::string> events;

  HttpSecurity security() {
    HttpSecurity s;
    s.authorize = [this](const char* h) {
      if (h && std::string_view(h) == "Basic slow") {
        std::unique_lock lock(mu);
        ++entered;
        cv.notify_all();
        cv.wait(lock, [this] { return released; });
        return AuthResult::ok;
      }
      return AuthResult::wrong_password;
    };
    s.authorize_cached = [](const char* h) -> std::optional<AuthResult> {
      if (!h) return AuthResult::missing;
      if (std::string_view(h) == "Basic good") return AuthResult::ok;
      return std::nullopt;
    };
    s.on_event = [this](const SecurityEvent& ev) {
      std::lock_guard lock(mu);
      events.push_back(std::string(ev.kind) + " " + ev.peer);
    };
    return s;
  }
  bool wait_entered(int n) {
    std::unique_lock lock(mu);
    return cv.wait_for(lock, 30s, [&] { return entered >= n; });
  }
  void release() {
    std::lock_guard lock(mu);
    released = true;
    cv.notify_all();
  }
};

// Waits (up to 30 s) until `n` requests are queued or running on the authentication thread.
bool wait_pending(const HttpServer& server, std::size_t n) {
  for (int i = 0; i < 3000; ++i) {
    if (server.auth_checks_pending() >= n) return true;
    std::this_thread::sleep_for(10ms);
  }
  return false;
}

HttpResponse hello(std::string_view, std::string_view) {
  return HttpResponse{200, "text/plain", "hello\n", {}};
}

bool status_is(const std::string& response, const char* status) {
  return response.rfind(std::string("HTTP/1.1 ") + status, 0) == 0;
}

constexpr auto Queued = AuthQueue::Submit::queued;
constexpr auto Full = AuthQueue::Submit::full;
constexpr auto Stopped = AuthQueue::Submit::stopped;

TEST(AuthQueue, RunsJobsInOrderBoundsPeersAndCancelsTheRestOnStop) {
  std::mutex mu;
  std::condition_variable cv;
  bool go = false;
  std::vector<std::string> log;
  AuthQueue q(3, 2);
  auto job = [&](std::string name) {
    return [&, name](bool cancelled) {
      std::unique_lock lock(mu);
      cv.wait(lock, [&] { return go || cancelled; });
      log.push_back((cancelled ? "cancelled " : "ran ") + name);
    };
  };
  EXPECT_EQ(q.submit("a", job("a1")), Queued);
  EXPECT_EQ(q.submit("a", job("a2")), Queued);
  EXPECT_EQ(q.submit("a", job("a3")), Full);  // two of a's, counting the one running
  EXPECT_EQ(q.submit("b", job("b1")), Queued);
  EXPECT_EQ(q.submit("c", job("c1")), Full);  // three in all
  {
    std::lock_guard lock(mu);
    go = true;
  }
  cv.notify_all();
  for (int i = 0; i < 3000; ++i) {  // until all three ran
    {
      std::lock_guard lock(mu);
      if (log.size() == 3) break;
    }
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_EQ(log, (std::vector<std::string>{"ran a1", "ran a2", "ran b1"}));
  EXPECT_EQ(q.submit("c", job("c2")), Queued);  // room again
  q.stop();
  EXPECT_EQ(q.counts().refused, 2u);
  EXPECT_EQ(q.submit("d", job("d1")), Stopped);  // not counted as refused
}

// An address whose last check failed queues only below half the capacity, so addresses
// without a failure always find the other half; an accepted check clears the mark, and the
// marks are forgotten at once when more than kMaxFailingPeers addresses carry one.
TEST(AuthQueue, FailingAddressesQueueOnlyInTheLowerHalf) {
  std::mutex mu;
  std::condition_variable cv;
  bool go = false;
  AuthQueue q(4, 4);
  auto held = [&](bool cancelled) {
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return go || cancelled; });
  };
  q.note_result("bad", false);
  EXPECT_EQ(q.submit("bad", held), Queued);
  EXPECT_EQ(q.submit("bad", held), Queued);
  EXPECT_EQ(q.submit("bad", held), Full);  // two of four: the half a failing address may use
  EXPECT_EQ(q.submit("new", held), Queued);
  q.note_result("bad", true);  // its password was right after all
  EXPECT_EQ(q.submit("bad", held), Queued);
  EXPECT_EQ(q.submit("new", held), Full);  // four in all
  EXPECT_EQ(q.counts().refused, 2u);
  {
    std::lock_guard lock(mu);
    go = true;
  }
  cv.notify_all();
  q.stop();

  {
    std::lock_guard lock(mu);
    go = false;
  }
  AuthQueue r(2, 2);
  for (std::size_t i = 0; i < AuthQueue::kMaxFailingPeers; ++i) {
    r.note_result("10.0." + std::to_string(i), false);
  }
  EXPECT_EQ(r.submit("10.0.0", [](bool) {}), Queued);
  while (r.pending() > 0) std::this_thread::sleep_for(1ms);
  EXPECT_EQ(r.submit("10.0.0", held), Queued);
  EXPECT_EQ(r.submit("10.0.1", held), Full);  // still marked: under half of 2 is none left
  r.note_result("one.more", false);           // one over the bound: every mark forgotten
  EXPECT_EQ(r.submit("10.0.1", held), Queued);
  {
    std::lock_guard lock(mu);
    go = true;
  }
  cv.notify_all();
  r.stop();
}

TEST(AuthQueue, StopLetsTheRunningJobFinishAndCancelsTheQueued) {
  std::mutex mu;
  std::condition_variable cv;
  bool hold = true;
  bool started = false;
  std::vector<std::string> log;
  AuthQueue q(1000000, 1000000);
  EXPECT_EQ(q.submit("a",
                     [&](bool cancelled) {
                       std::unique_lock lock(mu);
                       started = true;
                       cv.notify_all();
                       cv.wait(lock, [&] { return !hold; });
                       log.push_back(cancelled ? "cancelled held" : "ran held");
                     }),
            Queued);
  {
    std::unique_lock lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, 30s, [&] { return started; }));
  }
  auto record = [&](std::string name) {
    return [&, name](bool cancelled) {
      std::lock_guard lock(mu);
      log.push_back((cancelled ? "cancelled " : "ran ") + name);
    };
  };
  EXPECT_EQ(q.submit("b", record("queued")), Queued);
  std::thread stopper([&] { q.stop(); });
  // Once stop() has taken the queue, submits are refused; until then each probe queues
  // behind the held job (which keeps the thread busy), and is cancelled with the rest.
  int probes = 0;
  AuthQueue::Submit probe;
  while ((probe = q.submit("p", record("probe"))) == Queued) {
    ++probes;
    std::this_thread::sleep_for(1ms);
  }
  {
    std::lock_guard lock(mu);
    hold = false;
  }
  cv.notify_all();
  stopper.join();
  EXPECT_EQ(probe, AuthQueue::Submit::stopped);
  std::vector<std::string> want = {"ran held", "cancelled queued"};
  for (int i = 0; i < probes; ++i) want.push_back("cancelled probe");
  EXPECT_EQ(log, want);
}

TEST(HttpServerAuthentication, ASlowPasswordCheckDoesNotHoldUpOtherRequests) {
  // One polling thread: before checks moved to their own thread, the good request below
  // waited behind the slow check for as long as the check took (here: until released).
  HeldAuth held;
  HttpServer server;
  HttpLimits limits;
  limits.threads = 1;
  const Status started = server.start("127.0.0.1", 0, hello, limits, held.security());
  ASSERT_TRUE(started) << started.error();
  std::string slow;
  std::thread slow_client([&] { slow = get_with_auth(server.port(), "Basic slow"); });
  ASSERT_TRUE(held.wait_entered(1));
  // While the slow check is held: remembered credentials, none and wrong ones are answered.
  for (int i = 0; i < 5; ++i) {
    EXPECT_PRED2(status_is, get_with_auth(server.port(), "Basic good"), "200");
  }
  EXPECT_PRED2(status_is, get_with_auth(server.port(), ""), "401");
  held.release();
  slow_client.join();
  EXPECT_PRED2(status_is, slow, "200");
  EXPECT_NE(slow.find("hello"), std::string::npos);
  // Not remembered by the test's check: a wrong password goes through the thread, and fails.
  EXPECT_PRED2(status_is, get_with_auth(server.port(), "Basic wrong"), "401");
  server.stop();
}

TEST(HttpServerAuthentication, QueuedChecksAreBoundedPerAddressAndInAll) {
  HeldAuth held;
  HttpServer server;
  HttpLimits limits;
  limits.auth_queue = 3;
  limits.auth_queue_per_peer = 2;
  const Status started = server.start("127.0.0.1", 0, hello, limits, held.security());
  ASSERT_TRUE(started) << started.error();
  std::vector<std::string> answers(3);
  std::vector<std::thread> clients;
  clients.emplace_back([&] { answers[0] = get_with_auth(server.port(), "Basic slow"); });
  ASSERT_TRUE(held.wait_entered(1));  // running: holds one of 127.0.0.1's two places
  clients.emplace_back([&] { answers[1] = get_with_auth(server.port(), "Basic slow"); });
  clients.emplace_back(
      [&] { answers[2] = get_with_auth(server.port(), "Basic slow", "127.0.0.2"); });
  ASSERT_TRUE(wait_pending(server, 3));
  // 127.0.0.1 holds its two places (one running, one queued).
  const std::string third = get_with_auth(server.port(), "Basic x", "127.0.0.1");
  EXPECT_PRED2(status_is, third, "429");
  EXPECT_NE(third.find("Retry-After: 1"), std::string::npos) << third;
  // 127.0.0.3 holds nothing, but the queue is full (3 of 3).
  const std::string other = get_with_auth(server.port(), "Basic x", "127.0.0.3");
  EXPECT_PRED2(status_is, other, "429");
  // Remembered credentials never wait for the queue.
  EXPECT_PRED2(status_is, get_with_auth(server.port(), "Basic good", "127.0.0.3"), "200");
  held.release();
  for (auto& c : clients) c.join();
  for (const auto& a : answers) EXPECT_PRED2(status_is, a, "200");
  server.stop();
  std::lock_guard lock(held.mu);
  EXPECT_NE(std::find(held.events.begin(), held.events.end(), "authentication_busy 127.0.0.1"),
            held.events.end());
  EXPECT_NE(std::find(held.events.begin(), held.events.end(), "authentication_busy 127.0.0.3"),
            held.events.end());
}

TEST(HttpServerAuthentication, StoppingWithChecksQueuedAnswersThemAndReturns) {
  // libmicrohttpd aborts the process when stopped with a suspended connection: every queued
  // check must be resumed first.
  HeldAuth held;
  HttpServer server;
  HttpLimits limits;
  const Status started = server.start("127.0.0.1", 0, hello, limits, held.security());
  ASSERT_TRUE(started) << started.error();
  std::string running, queued;
  std::thread a([&] { running = get_with_auth(server.port(), "Basic slow"); });
  ASSERT_TRUE(held.wait_entered(1));
  std::thread b([&] { queued = get_with_auth(server.port(), "Basic slow", "127.0.0.2"); });
  ASSERT_TRUE(wait_pending(server, 2));
  std::thread stopper([&] { server.stop(); });
  std::this_thread::sleep_for(100ms);
  held.release();  // the running check ends; stop() cancels the queued one
  stopper.join();
  a.join();
  b.join();
  // Each request was answered (200 for the finished check, 503 for the cancelled one) or cut
  // off by the stop; none hangs and the process lives.
  for (const auto* r : {&running, &queued}) {
    EXPECT_TRUE(r->empty() || status_is(*r, "200") || status_is(*r, "503")) << *r;
  }
  std::lock_guard lock(held.mu);
  EXPECT_LE(held.entered, 2);
}

// --- TLS -------------------------------------------------------------------------------------

// The server's key pair: a self-signed ECDSA certificate made with GnuTLS at test time.
HttpTls test_tls() {
  auto tls = cpupower::testing::self_signed_tls(7);
  EXPECT_TRUE(tls.has_value()) << "GnuTLS could not sign the test certificate";
  return tls.value_or(HttpTls{});
}

constexpr const char* kTls12 = "NORMAL:-VERS-ALL:+VERS-TLS1.2";
constexpr const char* kTls13 = "NORMAL:-VERS-ALL:+VERS-TLS1.3";

// A GnuTLS client on a blocking loopback socket (10 s receive timeout). It does not check the
// server's certificate: the test made it.
class TlsClient {
 public:
  TlsClient(std::uint16_t port, const char* priorities) : fd_(connect_loopback(port)) {
    const timeval tv{10, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    gnutls_certificate_allocate_credentials(&cred_);
    gnutls_init(&session_, GNUTLS_CLIENT);
    gnutls_priority_set_direct(session_, priorities, nullptr);
    gnutls_credentials_set(session_, GNUTLS_CRD_CERTIFICATE, cred_);
    gnutls_transport_set_int(session_, fd_);
  }
  ~TlsClient() {
    gnutls_deinit(session_);
    gnutls_certificate_free_credentials(cred_);
    if (fd_ >= 0) ::close(fd_);
  }
  TlsClient(const TlsClient&) = delete;
  TlsClient& operator=(const TlsClient&) = delete;

  int fd() const { return fd_; }
  // 0 once the handshake is done, else the GnuTLS error.
  int handshake() {
    if (fd_ < 0) return GNUTLS_E_PUSH_ERROR;
    int rc;
    do {
      rc = gnutls_handshake(session_);
    } while (rc < 0 && gnutls_error_is_fatal(rc) == 0);
    return rc;
  }
  gnutls_protocol_t version() { return gnutls_protocol_get_version(session_); }
  void close_notify() { gnutls_bye(session_, GNUTLS_SHUT_WR); }
  // Closes the socket without a word (after the handshake, that is no close_notify).
  void drop() {
    ::close(fd_);
    fd_ = -1;
  }
  // GET `path` (Connection: close) and everything the server sends until it closes.
  std::string get(const std::string& path) {
    if (handshake() != 0) return "handshake failed";
    const std::string req = "GET " + path + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    if (gnutls_record_send(session_, req.data(), req.size()) != static_cast<ssize_t>(req.size())) {
      return "send failed";
    }
    std::string out;
    char buf[4096];
    for (;;) {
      const ssize_t n = gnutls_record_recv(session_, buf, sizeof buf);
      if (n == GNUTLS_E_AGAIN || n == GNUTLS_E_INTERRUPTED) continue;
      if (n <= 0) break;
      out.append(buf, static_cast<std::size_t>(n));
    }
    return out;
  }

 private:
  int fd_ = -1;
  gnutls_certificate_credentials_t cred_ = nullptr;
  gnutls_session_t session_ = nullptr;
};

// A server on TLS that answers "hello" and records each refusal's kind.
struct TlsServer {
  HttpServer server;
  std::mutex mu;
  std::vector<std::string> events;

  Status start(HttpLimits limits) {
    HttpSecurity s;
    s.tls = test_tls();
    s.on_event = [this](const SecurityEvent& ev) {
      std::lock_guard lock(mu);
      events.emplace_back(ev.kind);
    };
    return server.start("127.0.0.1", 0, hello, limits, std::move(s));
  }
};

TEST(HttpServerTls, HandshakesWithoutARequestLeaveTheServerServing) {
  // libmicrohttpd 0.9.75 releases a connection's TLS session before it reports the connection
  // closed: whatever tells why a connection without a request ended must be known by then.
  TlsServer tls;
  const Status started = tls.start(HttpLimits{});
  ASSERT_TRUE(started) << started.error();
  const std::uint16_t port = tls.server.port();
  for (const char* priorities : {kTls12, kTls13}) {
    for (const bool close_notify : {true, false}) {
      for (int i = 0; i < 8; ++i) {
        TlsClient client(port, priorities);
        ASSERT_EQ(client.handshake(), 0) << priorities;
        EXPECT_EQ(client.version(), priorities == kTls12 ? GNUTLS_TLS1_2 : GNUTLS_TLS1_3);
        if (close_notify) {
          client.close_notify();
          // The server answers the client's close_notify by closing the connection.
          EXPECT_GE(ms_until_closed(client.fd(), 10000ms), 0);
        }
      }
      TlsClient after(port, priorities);
      EXPECT_PRED2(status_is, after.get("/"), "200") << priorities << " " << close_notify;
    }
  }
  // Refusals are still told apart: plain HTTP, and a handshake record that is not one.
  get_path(port, "/");
  const int junk = connect_loopback(port);
  ASSERT_GE(junk, 0);
  exchange(junk, std::string("\x16\x03\x01\x00\x04junk", 9), true, 2000);
  TlsClient last(port, kTls13);
  EXPECT_PRED2(status_is, last.get("/"), "200");
  tls.server.stop();  // every connection has been reported closed when it returns
  std::lock_guard lock(tls.mu);
  std::sort(tls.events.begin(), tls.events.end());
  EXPECT_EQ(tls.events, (std::vector<std::string>{std::string(kSecurityPlainHttp),
                                                  std::string(kSecurityHandshake)}));
}

// CPU time this process has used, all threads, in seconds.
double process_cpu_s() {
  rusage ru{};
  ::getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

std::size_t open_fds() {
  std::size_t n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) ++n;
  return n;
}

TEST(HttpServerTls, IdleAndStalledHandshakesCloseAtTheDeadlineWithoutSpinning) {
  // libmicrohttpd's idle timeout falls due before the request deadline here, as it may on a
  // busy machine when both are 5 s: neither may leave a handshake behind.
  TlsServer tls;
  HttpLimits limits;
  limits.request_timeout = 1500ms;
  limits.connection_timeout_s = 1;
  const Status started = tls.start(limits);
  ASSERT_TRUE(started) << started.error();
  const std::uint16_t port = tls.server.port();
  const std::size_t fds_before = open_fds();
  std::vector<int> held;
  for (int i = 0; i < 10; ++i) held.push_back(connect_loopback(port));  // send nothing
  // The start of a ClientHello that announces 512 bytes: the handshake waits for the rest.
  const std::string hello_start("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\x01\x02\x03", 14);
  for (int i = 0; i < 5; ++i) {
    const int fd = connect_loopback(port);
    ASSERT_EQ(::send(fd, hello_start.data(), hello_start.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(hello_start.size()));
    held.push_back(fd);
  }
  for (int fd : held) ASSERT_GE(fd, 0);
  // While they are held, the polling threads wait: a spinning one burns a second a second.
  const double c0 = process_cpu_s();
  std::this_thread::sleep_for(1s);
  EXPECT_LT(process_cpu_s() - c0, 0.3) << "CPU time while 15 handshakes were held";
  for (int fd : held) {
    EXPECT_GE(ms_until_closed(fd, 10000ms), 0) << "a held handshake outlived the deadline";
  }
  // Closed by the server, and let go: no thread spins on them, their descriptors are free.
  const double c1 = process_cpu_s();
  std::this_thread::sleep_for(1s);
  EXPECT_LT(process_cpu_s() - c1, 0.3) << "CPU time after the held handshakes were closed";
  for (int fd : held) ::close(fd);
  for (int i = 0; i < 500 && open_fds() > fds_before; ++i) std::this_thread::sleep_for(10ms);
  EXPECT_LE(open_fds(), fds_before) << "the server still holds the closed connections";
  EXPECT_GE(tls.server.expired_connections(), held.size());
  TlsClient after(port, kTls13);
  EXPECT_PRED2(status_is, after.get("/"), "200");
  tls.server.stop();
}

// --- Request framing (RFC 9112) ------------------------------------------------------------

// A server whose handler records every path it is asked for: 200 for /metrics, else 404.
struct RecordingServer {
  HttpServer server;
  std::mutex mu;
  std::vector<std::string> paths;

  Status start() {
    return server.start(
        "127.0.0.1", 0,
        [this](std::string_view, std::string_view path) {
          std::lock_guard lock(mu);
          paths.emplace_back(path);
          return path == "/metrics" ? HttpResponse{200, "text/plain", "m\n", {}}
                                    : HttpResponse{404, "text/plain", "not found\n", {}};
        },
        HttpLimits{});
  }
  std::vector<std::string> seen() {
    std::lock_guard lock(mu);
    return paths;
  }
};

// Sends `request` on a fresh connection (then shuts the write side when `half_close`), and
// returns what the server sent and how long after the request it closed the connection
// (-1: still open after `limit`).
struct Exchange {
  std::string reply;
  long closed_ms = -1;
};
Exchange send_until_closed(std::uint16_t port, const std::string& request, bool half_close,
                           std::chrono::milliseconds limit) {
  Exchange out;
  const int fd = connect_loopback(port);
  if (fd < 0) return out;
  const timeval tv{static_cast<time_t>(limit.count() / 1000),
                   static_cast<suseconds_t>(limit.count() % 1000 * 1000)};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  const auto t0 = std::chrono::steady_clock::now();
  if (::send(fd, request.data(), request.size(), MSG_NOSIGNAL) ==
      static_cast<ssize_t>(request.size())) {
    if (half_close) ::shutdown(fd, SHUT_WR);
    char buf[4096];
    for (;;) {
      const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n > 0) {
        out.reply.append(buf, static_cast<std::size_t>(n));
        continue;
      }
      if (n == 0 || errno == ECONNRESET) {
        out.closed_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                            std::chrono::steady_clock::now() - t0)
                            .count();
      }
      break;  // closed, or the receive timed out
    }
  }
  ::close(fd);
  return out;
}

std::size_t count_of(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(HttpServerFraming, ContentLengthWithTransferEncodingIsAnsweredOnceAndClosed) {
  RecordingServer s;
  const Status started = s.start();
  ASSERT_TRUE(started) << started.error();
  // A front that frames by Content-Length sends all of it as one request; one that frames by
  // Transfer-Encoding sees a second request in the body.
  const std::string smuggled = "GET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n";
  const std::string body = "0\r\n\r\n" + smuggled;
  const auto e = send_until_closed(
      s.server.port(),
      "POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: " + std::to_string(body.size()) +
          "\r\nTransfer-Encoding: chunked\r\n\r\n" + body,
      false, 3000ms);
  EXPECT_PRED2(status_is, e.reply, "400");
  EXPECT_EQ(count_of(e.reply, "HTTP/1.1 "), 1u) << e.reply;
  EXPECT_GE(e.closed_ms, 0) << "the connection stayed open after the response";
  s.server.stop();
  for (const auto& p : s.seen()) EXPECT_NE(p, "/smuggled");
}

TEST(HttpServerFraming, DifferingContentLengthsAreRefusedAndClosed) {
  RecordingServer s;
  const Status started = s.start();
  ASSERT_TRUE(started) << started.error();
  const std::string smuggled = "GET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n";
  for (const auto& lengths : {std::make_pair(std::size_t{0}, smuggled.size()),
                              std::make_pair(smuggled.size(), std::size_t{0})}) {
    const auto e = send_until_closed(
        s.server.port(),
        "GET /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: " + std::to_string(lengths.first) +
            "\r\nContent-Length: " + std::to_string(lengths.second) + "\r\n\r\n" + smuggled,
        false, 3000ms);
    EXPECT_PRED2(status_is, e.reply, "400");
    EXPECT_EQ(count_of(e.reply, "HTTP/1.1 "), 1u) << e.reply;
    EXPECT_GE(e.closed_ms, 0) << "the connection stayed open after the response";
  }
  // The same length twice is one length (RFC 9110, 8.6).
  const auto same = send_until_closed(
      s.server.port(),
      "GET /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nContent-Length: 0\r\n"
      "Connection: close\r\n\r\n",
      false, 3000ms);
  EXPECT_PRED2(status_is, same.reply, "200");
  s.server.stop();
  for (const auto& p : s.seen()) EXPECT_NE(p, "/smuggled");
}

TEST(HttpServerFraming, HalfClosedHeadIsClosedAfterItsResponseAsAGetIs) {
  RecordingServer s;
  const Status started = s.start();
  ASSERT_TRUE(started) << started.error();  // the 5 s idle timeout and request deadline
  for (const char* method : {"GET", "HEAD"}) {
    for (int i = 0; i < 20; ++i) {
      const auto e = send_until_closed(
          s.server.port(), std::string(method) + " /metrics HTTP/1.1\r\nHost: x\r\n\r\n", true,
          4000ms);
      EXPECT_PRED2(status_is, e.reply, "200");
      EXPECT_GE(e.closed_ms, 0) << method << ": the half-closed connection was held";
      EXPECT_LT(e.closed_ms, 2000) << method;  // the half-close, not a 5 s timeout
    }
  }
  s.server.stop();
}

TEST(HttpServerFraming, EncodedBytesNeverTurnAPathIntoARoute) {
  RecordingServer s;
  const Status started = s.start();
  ASSERT_TRUE(started) << started.error();
  for (const char* path : {"/metrics%00.txt", "/metrics%00", "/metrics%2500", "/metrics%2f",
                           "/metrics%00/../metrics"}) {
    const auto e = send_until_closed(
        s.server.port(),
        std::string("GET ") + path + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", false,
        3000ms);
    EXPECT_PRED2(status_is, e.reply, "404") << path;
  }
  EXPECT_PRED2(status_is, get_path(s.server.port(), "/metrics"), "200");
  s.server.stop();
  for (const auto& p : s.seen()) EXPECT_TRUE(p == "/metrics" || p.size() > 8) << p;
}
}  // namespace
}  // namespace cpupower::exporter
