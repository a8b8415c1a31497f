// The collector in-process against stand-in HTTP servers on loopback: rows and manifest,
// row time, the unchanged-readings rule, every failure kind, the schedule (missed slots not
// replayed, a stalled endpoint does not delay the others), keep-alive, the final cycle,
// write failures and recovery (a real file size limit: EFBIG part-way through a row, as on
// a full disk), samples.csv deleted or replaced mid-run, and a SIGKILL that leaves a
// loadable samples.csv.
//
// Nothing here asserts how fast the machine is: the tests wait for states (with generous
// limits) instead of sleeping fixed times, and check the schedule by its order and
// accounting (each slot scraped or counted missed, never both, never replayed), so they
// hold on a machine whose cores are busy with other work.

#include "scrape/collector.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "../support/cpu_samples_writer.hpp"
#include "artifacts/cpu_samples.hpp"
#include "v3_rows.hpp"

namespace cpupower::scrape {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
namespace fs = std::filesystem;

double now_unix() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// ---- a stand-in exporter ---------------------------------------------------------------

struct Reply {
  int status = 200;
  std::string body;
  bool content_length = true;  // false: no length, the body ends when the connection closes
  milliseconds delay{0};
  bool never = false;  // read the request, then never answer
};

struct Request {
  std::size_t number = 0;  // 0-based, over the server's life
  double received_unix = 0;
  double replied_unix = 0;  // when the answer was sent (0 until then)
};

// A small threaded HTTP/1.1 server: one thread per connection, keep-alive honoured.
class StandIn {
 public:
  using Handler = std::function<Reply(const Request&)>;

  explicit StandIn(Handler handler, const std::string& bind = "127.0.0.1")
      : handler_(std::move(handler)) {
    const bool v6 = bind.find(':') != std::string::npos;
    listen_fd_ = ::socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (v6) {
      sockaddr_in6 a{};
      a.sin6_family = AF_INET6;
      ::inet_pton(AF_INET6, bind.c_str(), &a.sin6_addr);
      ok_ = ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    } else {
      sockaddr_in a{};
      a.sin_family = AF_INET;
      ::inet_pton(AF_INET, bind.c_str(), &a.sin_addr);
      ok_ = ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    }
    ok_ = ok_ && ::listen(listen_fd_, 64) == 0;
    sockaddr_storage got{};
    socklen_t len = sizeof got;
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&got), &len);
    port_ = ntohs(v6 ? reinterpret_cast<sockaddr_in6*>(&got)->sin6_port
                     : reinterpret_cast<sockaddr_in*>(&got)->sin_port);
    acceptor_ = std::thread([this] { accept_loop(); });
  }

  ~StandIn() {
    stop_ = true;
    acceptor_.join();
    {
      std::lock_guard lock(mutex_);
      for (int fd : open_fds_) ::shutdown(fd, SHUT_RDWR);
    }
    for (auto& t : workers_) t.join();
    ::close(listen_fd_);
  }

  bool ok() const { return ok_; }
  std::uint16_t port() const { return port_; }
  std::size_t connections() const { return connections_.load(); }
  std::size_t requests() const { return requests_.load(); }
  std::vector<Request> log() const {
    std::lock_guard lock(mutex_);
    return log_;
  }

 private:
  void accept_loop() {
    while (!stop_) {
      pollfd p{listen_fd_, POLLIN, 0};
      if (::poll(&p, 1, 20) <= 0) continue;
      const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) continue;
      ++connections_;
      std::lock_guard lock(mutex_);
      open_fds_.insert(fd);
      workers_.emplace_back([this, fd] { serve(fd); });
    }
  }

  // Sleeps up to `d` unless the server stops first.
  void nap(milliseconds d) {
    const auto until = Clock::now() + d;
    while (!stop_ && Clock::now() < until) std::this_thread::sleep_for(milliseconds(5));
  }

  bool send_all(int fd, std::string_view bytes) {
    while (!bytes.empty()) {
      const ssize_t n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (n <= 0) return false;
      bytes.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
  }

  void serve(int fd) {
    std::string in;
    char buf[4096];
    while (!stop_) {
      const auto end = in.find("\r\n\r\n");
      if (end == std::string::npos) {
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, 20) <= 0) continue;
        const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
        if (n <= 0) break;
        in.append(buf, static_cast<std::size_t>(n));
        continue;
      }
      in.erase(0, end + 4);
      Request request{requests_++, now_unix()};
      {
        std::lock_guard lock(mutex_);
        log_.push_back(request);
      }
      const Reply reply = handler_(request);
      if (reply.never) {
        nap(milliseconds(60000));
        break;
      }
      nap(reply.delay);
      {
        std::lock_guard lock(mutex_);
        for (auto& r : log_) {
          if (r.number == request.number) r.replied_unix = now_unix();
        }
      }
      std::string head = "HTTP/1.1 " + std::to_string(reply.status) + " X\r\n" +
                         "Content-Type: text/plain; version=0.0.4\r\n";
      head += reply.content_length
                  ? "Content-Length: " + std::to_string(reply.body.size()) + "\r\n\r\n"
                  : std::string("Connection: close\r\n\r\n");
      // One send: a head and a body in two small writes meet Nagle and delayed ACKs (40 ms).
      if (!send_all(fd, head + reply.body) || !reply.content_length) break;
    }
    std::lock_guard lock(mutex_);
    open_fds_.erase(fd);
    ::close(fd);
  }

  Handler handler_;
  int listen_fd_ = -1;
  bool ok_ = false;
  std::uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread acceptor_;
  mutable std::mutex mutex_;
  std::vector<std::thread> workers_;
  std::set<int> open_fds_;
  std::vector<Request> log_;
  std::atomic<std::size_t> connections_{0};
  std::atomic<std::size_t> requests_{0};
};

// ---- bodies ----------------------------------------------------------------------------

// The reference collector test's DCGM body (no field_id: an older exporter).
std::string dcgm_body() {
  return "cpu_power_dcgm_watts{socket=\"0\",source=\"dcgm\"} 43.878000\n"
         "cpu_power_dcgm_watts{socket=\"1\",source=\"dcgm\"} 52.350000\n";
}

// Two ACPI sockets with a component rail each, optionally with the exporter's sample ages.
std::string acpi_body(double total0_w, double total1_w, std::optional<double> age_s = {}) {
  std::string body =
      "cpu_power_acpi_watts{sensor=\"hwmon2/power1\",type=\"total\",socket=\"0\","
      "oem_info=\"Grace Power Socket 0\",source=\"acpi\"} " +
      std::to_string(total0_w) +
      "\n"
      "cpu_power_acpi_watts{sensor=\"hwmon3/power1\",type=\"cpu_rail\",socket=\"0\","
      "oem_info=\"CPU Power Socket 0\",source=\"acpi\"} 50.5\n"
      "cpu_power_acpi_watts{sensor=\"hwmon11/power1\",type=\"total\",socket=\"1\","
      "oem_info=\"Grace Power Socket 1\",source=\"acpi\"} " +
      std::to_string(total1_w) + "\n";
  if (age_s) {
    body += "cpu_power_exporter_sample_age_seconds{sensor=\"hwmon2/power1\"} " +
            std::to_string(*age_s) +
            "\n"
            "cpu_power_exporter_sample_age_seconds{sensor=\"hwmon11/power1\"} " +
            std::to_string(*age_s) + "\n";
  }
  return body;
}

Reply ok_reply(std::string body) {
  Reply r;
  r.body = std::move(body);
  return r;
}

// Readings that change with every request, as a live sensor's do.
StandIn::Handler changing_acpi() {
  return [](const Request& r) {
    return ok_reply(acpi_body(90.0 + static_cast<double>(r.number % 1000) * 0.01, 100.0));
  };
}

// ---- helpers ---------------------------------------------------------------------------

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/collector-test.XXXXXX";
    path_ = ::mkdtemp(tmpl);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

Endpoint local(const std::string& host, std::uint16_t port) {
  return Endpoint{host, "127.0.0.1", port};
}

// The default request timeout is far above a loopback round trip even on a starved machine:
// a test that means a timeout sets one.
CollectorOptions options_for(const TempDir& dir, milliseconds interval,
                             milliseconds timeout = milliseconds(5000)) {
  CollectorOptions o;
  o.out_dir = dir.path();
  o.collect_interval = interval;
  o.request_timeout = timeout;
  return o;
}

// Scrape events, collected from the loop thread.
class Events {
 public:
  std::function<void(const ScrapeEvent&)> sink() {
    return [this](const ScrapeEvent& e) {
      std::lock_guard lock(mutex_);
      events_.push_back(e);
    };
  }
  // The endpoint's scheduled requests (the final cycle's left out), in completion order.
  std::vector<ScrapeEvent> of(std::size_t endpoint) const { return select(endpoint, false); }
  // All of them, the final cycle's included.
  std::vector<ScrapeEvent> all(std::size_t endpoint) const { return select(endpoint, true); }

 private:
  std::vector<ScrapeEvent> select(std::size_t endpoint, bool with_final) const {
    std::lock_guard lock(mutex_);
    std::vector<ScrapeEvent> out;
    for (const auto& e : events_) {
      if (e.endpoint_index == endpoint && (with_final || !e.final_cycle)) out.push_back(e);
    }
    return out;
  }

 public:
 private:
  mutable std::mutex mutex_;
  std::vector<ScrapeEvent> events_;
};

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in, nullptr, false);
}

std::vector<artifacts::CpuSampleRow> rows_of(const testing::V3File& f, const std::string& host) {
  std::vector<artifacts::CpuSampleRow> out;
  for (const auto& r : f.rows) {
    if (r.hostname == host) out.push_back(r);
  }
  return out;
}

// Polls `done` until it holds or `limit` passes; whether it held. The limit is far beyond
// what any state here needs on a quiet machine: it only bounds a test that is broken.
bool wait_until(const std::function<bool()>& done, milliseconds limit = milliseconds(30000)) {
  const auto until = Clock::now() + limit;
  while (!done()) {
    if (Clock::now() >= until) return false;
    std::this_thread::sleep_for(milliseconds(5));
  }
  return true;
}

// Starts the collector, waits until `done` holds for its stats, and finalizes it.
void run_until(Collector& c, const std::function<bool(const CollectorStats&)>& done) {
  ASSERT_EQ(c.start().error(), "");
  const bool reached = wait_until([&] { return done(c.stats()); });
  ASSERT_TRUE(c.stop_and_finalize().ok());
  ASSERT_TRUE(reached) << "the collector never reached the state the test waits for";
}

double seconds_of(Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

// The schedule's promises for one endpoint, as order and accounting rather than timings, so
// that they hold however late a busy machine runs the loop: the slots are one grid, each
// used once and in order; a request starts at or after its slot and after the previous one
// finished; a slot that came while a request was in flight is counted missed and never
// started later (so no request's slot is a whole interval older than the previous end);
// every grid slot between two requests was counted missed, and no more were counted than
// the slots that passed before the collector stopped. `ev` is Events::of, `node` the
// stats after stop_and_finalize, `stopped` a time after stop_and_finalize returned.
void expect_slot_accounting(const std::vector<ScrapeEvent>& ev, const NodeStats& node,
                            milliseconds interval, Clock::time_point stopped) {
  SCOPED_TRACE(node.hostname);
  ASSERT_FALSE(ev.empty());
  std::uint64_t skipped = 0;
  for (std::size_t i = 0; i < ev.size(); ++i) {
    EXPECT_GE(ev[i].started, ev[i].slot) << "request " << i << " started before its slot";
    if (i == 0) continue;
    const auto step = ev[i].slot - ev[i - 1].slot;
    ASSERT_GT(step, Clock::duration::zero()) << "request " << i << ": a slot used twice";
    EXPECT_EQ(step % interval, Clock::duration::zero()) << "request " << i << " off the grid";
    skipped += static_cast<std::uint64_t>(step / interval) - 1;
    EXPECT_GE(ev[i].started, ev[i - 1].finished) << "request " << i << " overlapped";
    EXPECT_GT(ev[i].slot, ev[i - 1].finished - interval)
        << "request " << i << " replayed a slot that came while request " << i - 1
        << " was in flight";
  }
  EXPECT_GE(node.missed_slots, skipped) << "slots between requests not counted missed";
  const auto trailing = static_cast<std::uint64_t>((stopped - ev.back().slot) / interval);
  EXPECT_LE(node.missed_slots, skipped + trailing) << "more slots missed than passed";
}

// ---- a collector in a child process ------------------------------------------------------

// What a forked child printed (its stdout and stderr, the collector's log included) and how
// it ended.
struct ChildRun {
  int status = -1;  // waitpid status
  std::string output;
  bool exited_ok() const { return WIFEXITED(status) && WEXITSTATUS(status) == 0; }
};

// Runs `body` in a forked child with stdout and stderr on a pipe, so that its log can be
// read and its process limits (RLIMIT_FSIZE) touch nothing of the test's. The child exits
// with body's return value; after `limit` it is killed. Call it while the test has no thread
// running, and start servers and collectors in `body`: a thread started in a child forked
// from a threaded process is undefined in general, and ThreadSanitizer refuses it.
ChildRun run_in_child(const std::function<int()>& body, milliseconds limit = milliseconds(90000)) {
  ChildRun run;
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return run;
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t child = ::fork();
  if (child < 0) return run;
  if (child == 0) {
    ::dup2(fds[1], STDOUT_FILENO);
    ::dup2(fds[1], STDERR_FILENO);
    ::close(fds[0]);
    ::close(fds[1]);
    const int rc = body();
    std::fflush(stdout);
    ::_exit(rc);
  }
  ::close(fds[1]);
  const auto until = Clock::now() + limit;
  char buf[4096];
  while (true) {
    const auto left = std::chrono::ceil<milliseconds>(until - Clock::now()).count();
    if (left <= 0) {
      ::kill(child, SIGKILL);
      run.output += "\n[killed: the child ran past its limit]\n";
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(std::min<long>(left, 1000))) <= 0) continue;
    const ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n <= 0) break;
    run.output.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fds[0]);
  ::waitpid(child, &run.status, 0);
  return run;
}

// In the child: a line the parent finds in the output, to place the log lines around it.
void mark(const std::string& what) {
  std::printf("MARK %s\n", what.c_str());
  std::fflush(stdout);
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// Indexes of the lines that contain `needle`.
std::vector<std::size_t> find_lines(const std::vector<std::string>& lines,
                                    const std::string& needle) {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].find(needle) != std::string::npos) out.push_back(i);
  }
  return out;
}

// The unsigned number after `key=` in `line`; nullopt when absent.
std::optional<std::uint64_t> field(const std::string& line, const std::string& key) {
  const std::string token = key + "=";
  for (auto at = line.find(token); at != std::string::npos; at = line.find(token, at + 1)) {
    if (at > 0 && line[at - 1] != ' ') continue;
    const auto begin = at + token.size();
    const auto end = line.find_first_not_of("0123456789", begin);
    if (end == begin) continue;
    return std::stoull(line.substr(begin, end - begin));
  }
  return std::nullopt;
}

// ---- endpoints -------------------------------------------------------------------------

TEST(Endpoint, ParsesHostAddressAndPort) {
  auto e = parse_endpoint("node-a=10.0.0.7:9405");
  ASSERT_TRUE(e) << e.error();
  EXPECT_EQ(*e, (Endpoint{"node-a", "10.0.0.7", 9405}));
  EXPECT_EQ(endpoint_url(*e), "http://10.0.0.7:9405/metrics");

  e = parse_endpoint("node-b=[fd00::7]:9405");
  ASSERT_TRUE(e) << e.error();
  EXPECT_EQ(e->address, "fd00::7");
  EXPECT_EQ(endpoint_url(*e), "http://[fd00::7]:9405/metrics");
  EXPECT_EQ(endpoint_url(Endpoint{"h", "fe80::1%eth0", 1}), "http://[fe80::1%25eth0]:1/metrics");

  e = parse_endpoint("node-c=gpu-node-03.cluster:80");
  ASSERT_TRUE(e) << e.error();
  EXPECT_EQ(e->address, "gpu-node-03.cluster");
}

TEST(Endpoint, RefusesMalformedSpecsWithTheText) {
  const std::map<std::string, std::string> bad = {
      {"node-a", "expected HOST=ADDR:PORT"},
      {"=1.2.3.4:5", "empty or blank hostname"},
      {"a=1.2.3.4", "no port"},
      {"a=1.2.3.4:0", "port must be 1-65535, got '0'"},
      {"a=1.2.3.4:70000", "port must be 1-65535"},
      {"a=1.2.3.4:x", "port must be 1-65535, got 'x'"},
      {"a=fd00::7:9405", "IPv6 address needs brackets"},
      {"a=[fd00::7:9405", "unterminated '['"},
      {"a=[fd00::7]9405", "expected ':PORT' after ']'"},
      {"a=:9405", "empty or blank address"},
  };
  for (const auto& [spec, want] : bad) {
    const auto parsed = parse_endpoint(spec);
    EXPECT_FALSE(parsed) << spec;
    const std::string& error = parsed.error();
    EXPECT_NE(error.find(want), std::string::npos) << spec << " -> " << error;
    EXPECT_NE(error.find(spec), std::string::npos) << "error does not quote the spec: " << error;
  }
}

TEST(Endpoint, ReadsAnEndpointsFileWithComments) {
  auto list = parse_endpoints_text(
      "# cluster A\n\nnode-a=10.0.0.1:9405\r\n  node-b=[fd00::2]:9405  # v6\n");
  ASSERT_TRUE(list) << list.error();
  ASSERT_EQ(list->size(), 2u);
  EXPECT_EQ((*list)[1], (Endpoint{"node-b", "fd00::2", 9405}));

  const auto bad = parse_endpoints_text("node-a=10.0.0.1:9405\nnode-b\n");
  EXPECT_FALSE(bad);
  EXPECT_EQ(bad.error().rfind("line 2: ", 0), 0u) << bad.error();
}

// ---- rows and manifest -----------------------------------------------------------------

TEST(Collector, WritesRowsAndManifestFromAReachableNode) {
  StandIn server([](const Request&) { return ok_reply(dcgm_body()); });
  ASSERT_TRUE(server.ok());
  TempDir dir;
  Collector c({local("node-a", server.port())}, options_for(dir, milliseconds(50)));
  run_until(c, [](const CollectorStats& s) { return s.nodes[0].scrape_count >= 4; });

  const auto file = testing::read_v3(dir.path() + "/samples.csv");
  EXPECT_EQ(file.bad + file.torn, 0u);
  EXPECT_EQ(file.schema_version, 3);
  // The body never changes, so its readings are written once, whatever the scrape count.
  ASSERT_EQ(file.rows.size(), 2u);
  const double total = 43.878 + 52.35;
  for (const auto& row : file.rows) {
    EXPECT_EQ(row.hostname, "node-a");
    EXPECT_EQ(row.source, "dcgm");
    EXPECT_EQ(row.cpu_rail_w, row.power_w);
    EXPECT_EQ(row.total_power_w, total);
    EXPECT_EQ(row.timestamp_unix, file.rows.front().timestamp_unix);
  }
  EXPECT_EQ(file.rows[0].socket_id, 0u);
  EXPECT_EQ(file.rows[0].power_w, 43.878);
  EXPECT_EQ(file.rows[0].sensor, "CPU0:cpuPowerUsageW");
  EXPECT_EQ(file.rows[1].power_w, 52.35);

  const auto stats = c.stats();
  EXPECT_GE(stats.nodes[0].scrape_count, 4u);
  EXPECT_EQ(stats.nodes[0].unchanged_count, stats.nodes[0].scrape_count - 1);

  const auto m = read_json(dir.path() + "/cpu_manifest.json");
  ASSERT_FALSE(m.is_discarded());
  EXPECT_EQ(m["schema_version"], 1);
  EXPECT_TRUE(m["started_at_unix"].is_number());
  EXPECT_GE(m["stopped_at_unix"].get<double>(), m["started_at_unix"].get<double>());
  const auto& node = m["nodes"]["node-a"];
  EXPECT_EQ(node["resolved_mode"], "dcgm");
  EXPECT_EQ(node["scrape_count"], stats.nodes[0].scrape_count);
  EXPECT_EQ(node["error_count"], 0);
  EXPECT_EQ(node["missed_slots"], stats.nodes[0].missed_slots);
  EXPECT_EQ(m["rows_written"], 2);
  EXPECT_EQ(m["rows_dropped"], 0);
  EXPECT_EQ(m["write_errors"], nlohmann::json::array());
  EXPECT_EQ(m["samples_file_changes"], nlohmann::json::array());
  EXPECT_TRUE(node["last_error"].is_null());
  EXPECT_EQ(node["endpoint_url"], "http://127.0.0.1:" + std::to_string(server.port()) + "/metrics");
  EXPECT_EQ(node["first_sample_unix"].get<double>(), file.rows.front().timestamp_unix);
  EXPECT_EQ(node["last_sample_unix"].get<double>(), file.rows.back().timestamp_unix);
}

TEST(Collector, WritesEveryScrapeWhoseReadingsChanged) {
  // Values change on every second request: each distinct reading is written exactly once.
  StandIn server([](const Request& r) {
    return ok_reply(acpi_body(90.0 + static_cast<double>(r.number / 2), 100.0));
  });
  TempDir dir;
  Collector c({local("node-a", server.port())}, options_for(dir, milliseconds(40)));
  run_until(c, [](const CollectorStats& s) { return s.nodes[0].scrape_count >= 12; });

  const auto rows = testing::read_v3(dir.path() + "/samples.csv").rows;
  const auto stats = c.stats().nodes[0];
  const auto distinct = (server.requests() + 1) / 2;
  ASSERT_EQ(rows.size(), 2 * distinct);
  EXPECT_EQ(stats.unchanged_count, server.requests() - distinct);
  for (std::size_t i = 2; i < rows.size(); i += 2) {
    EXPECT_EQ(rows[i].power_w, rows[i - 2].power_w + 1.0);
    EXPECT_GT(rows[i].timestamp_unix, rows[i - 2].timestamp_unix);
    EXPECT_EQ(rows[i].total_power_w, rows[i].power_w + rows[i + 1].power_w);
  }
}

TEST(Collector, AgesTellANewReadOfASteadySensorFromTheSameRead) {
  // "fresh": the exporter read its steady sensors just before each scrape. "same": one read
  // at server start, served again and again with a growing age.
  const double read_at_unix = now_unix();
  StandIn fresh([](const Request&) { return ok_reply(acpi_body(95.0, 96.0, 0.002)); });
  StandIn same([read_at_unix](const Request& r) {
    return ok_reply(acpi_body(95.0, 96.0, r.received_unix - read_at_unix));
  });
  TempDir dir;
  Events events;
  const milliseconds interval(60);
  auto o = options_for(dir, interval);
  o.on_scrape = events.sink();
  Collector c({local("fresh", fresh.port()), local("same", same.port())}, o);
  run_until(c, [](const CollectorStats& s) { return s.nodes[0].scrape_count >= 7; });

  const auto file = testing::read_v3(dir.path() + "/samples.csv");
  const auto stats = c.stats();
  // The rule, scrape by scrape, from the events' own round trips: equal values are a new
  // read when the read times are further apart than a quarter interval plus the mean round
  // trip, and the same read when they are closer (1 ms either side left undecided).
  const auto fresh_events = events.all(0);
  ASSERT_EQ(fresh_events.size(), stats.nodes[0].scrape_count);
  std::optional<ScrapeEvent> last_written;
  std::size_t new_reads = 0;
  for (const auto& e : fresh_events) {
    ASSERT_NE(e.outcome, ScrapeOutcome::failed);
    if (!last_written) {
      EXPECT_EQ(e.outcome, ScrapeOutcome::written) << "the first scrape is always new";
    } else {
      const double apart = std::abs(e.timestamp_unix - last_written->timestamp_unix);
      const double tolerance =
          seconds_of(interval) / 4 + (seconds_of(e.finished - e.started) +
                                      seconds_of(last_written->finished - last_written->started)) /
                                         2;
      if (apart > tolerance + 0.001) {
        EXPECT_EQ(e.outcome, ScrapeOutcome::written) << apart << " s after the last written";
        ++new_reads;
      } else if (apart < tolerance - 0.001) {
        EXPECT_EQ(e.outcome, ScrapeOutcome::unchanged) << apart << " s after the last written";
      }
    }
    if (e.outcome == ScrapeOutcome::written) last_written = e;
  }
  EXPECT_GE(new_reads, 3u) << "the fresh sensor's reads were never told apart";
  EXPECT_EQ(rows_of(file, "fresh").size(),
            2 * (stats.nodes[0].scrape_count - stats.nodes[0].unchanged_count));
  // One read, scraped again and again: written once, at the time it was read, give or take
  // the estimate's half round trip.
  const auto same_rows = rows_of(file, "same");
  ASSERT_EQ(same_rows.size(), 2u);
  EXPECT_EQ(stats.nodes[1].unchanged_count, stats.nodes[1].scrape_count - 1);
  const auto first_same = events.all(1).front();
  EXPECT_NEAR(same_rows[0].timestamp_unix, read_at_unix,
              seconds_of(first_same.finished - first_same.started) / 2 + 0.002);
}

TEST(Collector, RowTimeIsTheRequestMidpointMinusTheReportedAge) {
  auto handler = [](std::optional<double> age_s) {
    return [age_s](const Request& r) {
      Reply reply = ok_reply(acpi_body(90.0 + static_cast<double>(r.number), 100.0, age_s));
      reply.delay = milliseconds(600);
      return reply;
    };
  };
  StandIn aged(handler(0.5));
  StandIn plain(handler(std::nullopt));
  TempDir dir;
  Events events;
  auto o = options_for(dir, milliseconds(10000), milliseconds(5000));
  o.on_scrape = events.sink();
  Collector c({local("aged", aged.port()), local("plain", plain.port())}, o);
  // Stopped while the first slots' requests are in flight: the final cycle waits for them
  // instead of scraping again, so one scrape each.
  run_until(c, [&](const CollectorStats&) { return !aged.log().empty() && !plain.log().empty(); });

  const auto file = testing::read_v3(dir.path() + "/samples.csv");
  std::size_t index = 0;
  for (const auto& [host, server, age_s] :
       {std::tuple{"aged", &aged, 0.5}, std::tuple{"plain", &plain, 0.0}}) {
    SCOPED_TRACE(host);
    const auto rows = rows_of(file, host);
    ASSERT_EQ(rows.size(), 2u);
    EXPECT_EQ(rows[0].timestamp_unix, rows[1].timestamp_unix) << "one time per node scrape";
    // row time = wall(start) + round trip / 2 - age. The wall clock at the start it implies
    // must lie before the server received the request, and the start plus the round trip
    // after the server sent its answer, however long either took on a busy machine.
    const auto ev = events.all(index++);
    ASSERT_EQ(ev.size(), 1u);
    EXPECT_EQ(ev[0].timestamp_unix, rows[0].timestamp_unix);
    const double round_trip = seconds_of(ev[0].finished - ev[0].started);
    const double start_wall = rows[0].timestamp_unix + age_s - round_trip / 2;
    const auto request = server->log().front();
    EXPECT_LE(start_wall, request.received_unix + 0.002) << "the request came before its start";
    EXPECT_GE(start_wall + round_trip, request.replied_unix - 0.002)
        << "the answer came before it was sent";
    EXPECT_GE(round_trip, 0.6) << "the server held the answer 600 ms";
  }
}

// ---- failures --------------------------------------------------------------------------

TEST(Collector, CountsEveryKindOfFailureAndKeepsGoing) {
  StandIn healthy(changing_acpi());
  StandIn status([](const Request&) {
    Reply r = ok_reply("oops\n");
    r.status = 500;
    return r;
  });
  StandIn garbage([](const Request&) { return ok_reply("<html>not metrics</html>\n{{{\n"); });
  StandIn no_sockets([](const Request&) {
    return ok_reply("cpu_power_nvml_watts{type=\"module\",socket=\"0\"} 498.7\n");
  });
  const std::string huge = acpi_body(90, 91) + std::string(10 << 20, '#');
  StandIn big_length([&huge](const Request&) { return ok_reply(huge); });
  StandIn big_stream([&huge](const Request&) {
    Reply r = ok_reply(huge);
    r.content_length = false;
    return r;
  });
  // A port nobody listens on: bind, note the port, close.
  std::uint16_t closed_port = 0;
  {
    closed_port = StandIn([](const Request&) { return Reply{}; }).port();
  }

  TempDir dir;
  Events events;
  const milliseconds interval(100);
  auto o = options_for(dir, interval);
  o.on_scrape = events.sink();
  Collector c(
      {
          local("healthy", healthy.port()),
          local("refused", closed_port),
          Endpoint{"unresolvable", "no-such-host.invalid", 9405},
          local("status", status.port()),
          local("garbage", garbage.port()),
          local("no-sockets", no_sockets.port()),
          local("big-length", big_length.port()),
          local("big-stream", big_stream.port()),
      },
      o);
  run_until(c, [](const CollectorStats& s) {
    return std::all_of(s.nodes.begin(), s.nodes.end(), [](const NodeStats& n) {
      const bool quick = n.hostname == "healthy" || n.hostname == "refused" ||
                         n.hostname == "status" || n.hostname == "garbage";
      return n.scrape_count >= (quick ? 7u : 1u);
    });
  });
  const auto stopped = Clock::now();

  const auto stats = c.stats();
  const std::map<std::string, std::vector<std::string>> want = {
      {"refused", {"connect: "}},
      {"unresolvable", {"resolve: ", "timeout: "}},  // a resolver with no DNS may only time out
      {"status", {"http_status: HTTP 500"}},
      {"garbage", {"malformed: line 1"}},
      {"no-sockets", {"no_sockets: "}},
      {"big-length", {"body_too_large: "}},
      {"big-stream", {"body_too_large: "}},
  };
  for (std::size_t i = 0; i < stats.nodes.size(); ++i) {
    const auto& node = stats.nodes[i];
    SCOPED_TRACE(node.hostname);
    expect_slot_accounting(events.of(i), node, interval, stopped);
    if (node.hostname == "healthy") {
      EXPECT_EQ(node.error_count, 0u);
      EXPECT_EQ(node.rows_appended, 2 * node.scrape_count);  // every reading new
      EXPECT_EQ(node.last_ok, true);
      continue;
    }
    EXPECT_GE(node.scrape_count, 1u);
    EXPECT_EQ(node.error_count, node.scrape_count);
    if (node.hostname == "refused" || node.hostname == "status" || node.hostname == "garbage") {
      // Failures that take no time take no slots. libcurl 7.88 could sit on a refused
      // connection for its 200 ms happy-eyeballs delay, every attempt; a machine busy
      // enough to delay one attempt that long does not delay all of them.
      Clock::duration fastest = Clock::duration::max();
      for (const auto& e : events.of(i)) fastest = std::min(fastest, e.finished - e.started);
      EXPECT_LT(fastest, milliseconds(200)) << "every failing request took 200 ms or more";
    }
    EXPECT_EQ(node.rows_appended, 0u);
    EXPECT_EQ(node.last_ok, false);
    ASSERT_TRUE(node.last_error);
    const auto& prefixes = want.at(node.hostname);
    EXPECT_TRUE(std::any_of(prefixes.begin(), prefixes.end(), [&](const auto& p) {
      return node.last_error->rfind(p, 0) == 0;
    })) << *node.last_error;
  }
  const auto file = testing::read_v3(dir.path() + "/samples.csv");
  EXPECT_EQ(file.bad + file.torn, 0u);
  EXPECT_EQ(file.rows.size(), rows_of(file, "healthy").size());
  const auto m = read_json(dir.path() + "/cpu_manifest.json");
  EXPECT_EQ(m["nodes"].size(), 8u);
  EXPECT_EQ(m["nodes"]["garbage"]["resolved_mode"], "unknown");
  EXPECT_EQ(m["nodes"]["no-sockets"]["error_count"], stats.nodes[5].error_count);
}

TEST(Collector, WriteFailuresAreCountedAndCollectionRecovers) {
  StandIn server(changing_acpi());
  TempDir dir;
  const std::string samples = dir.path() + "/samples.csv";
  fs::create_symlink("/dev/full", samples);  // every write: ENOSPC, as on a full disk
  Collector c({local("node-a", server.port())}, options_for(dir, milliseconds(50)));
  ASSERT_EQ(c.start().error(), "");
  ASSERT_TRUE(wait_until([&] {
    const auto s = c.stats();
    return s.rows_dropped >= 4 && s.nodes[0].scrape_count >= 4;  // scraping goes on
  }));
  const auto during = c.stats();
  EXPECT_EQ(during.rows_written, 0u);
  ASSERT_TRUE(during.samples_failing);
  EXPECT_EQ(*during.samples_failing, "No space left on device");

  fs::remove(samples);  // space again
  ASSERT_TRUE(wait_until([&] { return c.stats().rows_written >= 10; }));
  ASSERT_TRUE(c.stop_and_finalize().ok());
  const auto after = c.stats();
  EXPECT_FALSE(after.samples_failing);
  const auto file = testing::read_v3(samples);
  EXPECT_EQ(file.bad + file.torn, 0u);
  EXPECT_EQ(file.rows.size(), after.rows_written);
  const auto m = read_json(dir.path() + "/cpu_manifest.json");
  EXPECT_EQ(m["rows_dropped"], after.rows_dropped);
  ASSERT_EQ(m["write_errors"].size(), 1u);
  EXPECT_NE(m["write_errors"][0]["error"].get<std::string>().find("No space left on device"),
            std::string::npos);
  EXPECT_GE(m["write_errors"][0]["count"], 1);
}

// The full disk, with a real file size limit in a child process: writes stop
// part-way through a row (EFBIG, as ENOSPC on a full tmpfs) while scraping goes on, then the
// limit is lifted. Readings change on every second request, so half the flushes have
// nothing to write; such a flush is no sign that writes work again.
TEST(Collector, DiskFullIsSaidOnceEachWayAndLeavesNoPartialLine) {
  TempDir dir;
  const std::string samples = dir.path() + "/samples.csv";
  const auto run = run_in_child([&] {
    StandIn server([](const Request& r) {
      return ok_reply(acpi_body(90.0 + static_cast<double>(r.number / 2) * 0.01, 100.0));
    });
    ::signal(SIGXFSZ, SIG_IGN);  // EFBIG instead of the signal
    Collector c({local("node-a", server.port())}, options_for(dir, milliseconds(20)));
    if (!c.start()) return 3;
    if (!wait_until([&] { return c.stats().rows_written >= 6; })) return 4;
    rlimit saved{};
    ::getrlimit(RLIMIT_FSIZE, &saved);
    rlimit low = saved;
    low.rlim_cur = static_cast<rlim_t>(fs::file_size(samples)) + 200;  // two rows and a part
    mark("limited");
    if (::setrlimit(RLIMIT_FSIZE, &low) != 0) return 5;
    if (!wait_until([&] { return c.stats().rows_dropped >= 40; })) return 6;
    mark("raised");
    if (::setrlimit(RLIMIT_FSIZE, &saved) != 0) return 7;
    const auto before = c.stats().rows_written;
    if (!wait_until([&] { return c.stats().rows_written >= before + 10; })) return 8;
    return c.stop_and_finalize() ? 0 : 9;
  });
  ASSERT_TRUE(run.exited_ok()) << "status " << run.status << "\n" << run.output;

  // No partial line anywhere: every line a whole row, as many as were reported written.
  const auto m = read_json(dir.path() + "/cpu_manifest.json");
  ASSERT_FALSE(m.is_discarded());
  const auto file = testing::read_v3(samples);
  EXPECT_EQ(file.bad + file.torn, 0u) << "a cut row was left in samples.csv";
  EXPECT_EQ(file.rows.size(), m.value("rows_written", 0u));
  for (const auto& row : file.rows) {
    EXPECT_GE(row.power_w, 90.0) << "a value cut short";
  }

  const auto lines = lines_of(run.output);
  const auto limited = find_lines(lines, "MARK limited");
  const auto raised = find_lines(lines, "MARK raised");
  ASSERT_EQ(limited.size(), 1u);
  ASSERT_EQ(raised.size(), 1u);
  // Entering the failure: one ERROR, after the limit came.
  const auto failed = find_lines(lines, "samples.csv write failed");
  ASSERT_EQ(failed.size(), 1u) << run.output;
  EXPECT_GT(failed[0], limited[0]);
  EXPECT_LT(failed[0], raised[0]);
  EXPECT_NE(lines[failed[0]].find("ERROR"), std::string::npos) << lines[failed[0]];
  EXPECT_NE(lines[failed[0]].find("File too large"), std::string::npos) << lines[failed[0]];
  // Recovery: one line, only once writes work again, with the rows dropped meanwhile.
  const auto recovered = find_lines(lines, "samples.csv writes recovered");
  ASSERT_EQ(recovered.size(), 1u) << run.output;
  EXPECT_GT(recovered[0], raised[0]) << "recovery announced while writes still failed:\n"
                                     << run.output;
  const auto meanwhile = field(lines[recovered[0]], "rows_dropped_meanwhile");
  EXPECT_TRUE(meanwhile) << "no count of the rows dropped: " << lines[recovered[0]];
  EXPECT_GE(meanwhile.value_or(0), 40u);

  // The manifest tells the same story as the log.
  EXPECT_EQ(m.value("rows_dropped", 0u), meanwhile.value_or(0));
  ASSERT_TRUE(m.contains("write_errors")) << m.dump();
  ASSERT_EQ(m["write_errors"].size(), 1u) << m["write_errors"].dump();
  const auto& e = m["write_errors"][0];
  EXPECT_NE(e["error"].get<std::string>().find("write "), std::string::npos) << e.dump();
  EXPECT_NE(e["error"].get<std::string>().find("File too large"), std::string::npos) << e.dump();
  EXPECT_EQ(e["count"], field(lines[recovered[0]], "failed_attempts").value_or(0)) << e.dump();
}

TEST(Collector, DeletedSamplesCsvIsSaidOnceAndStartedAnew) {
  TempDir dir;
  const std::string samples = dir.path() + "/samples.csv";
  const auto run = run_in_child([&] {
    StandIn server(changing_acpi());
    Collector c({local("node-a", server.port())}, options_for(dir, milliseconds(20)));
    if (!c.start()) return 3;
    if (!wait_until([&] { return c.stats().rows_written >= 10; })) return 4;
    mark("deleting");
    fs::remove(samples);
    const auto before = c.stats().rows_written;
    if (!wait_until([&] { return c.stats().rows_written >= before + 10; })) return 5;
    return c.stop_and_finalize() ? 0 : 6;
  });
  ASSERT_TRUE(run.exited_ok()) << "status " << run.status << "\n" << run.output;
  const auto lines = lines_of(run.output);
  const auto deleting = find_lines(lines, "MARK deleting");
  const auto said = find_lines(lines, "samples.csv was deleted");
  ASSERT_EQ(deleting.size(), 1u);
  ASSERT_EQ(said.size(), 1u) << run.output;
  EXPECT_GT(said[0], deleting[0]);
  EXPECT_NE(lines[said[0]].find("ERROR"), std::string::npos) << lines[said[0]];

  const auto m = read_json(dir.path() + "/cpu_manifest.json");
  ASSERT_FALSE(m.is_discarded());
  ASSERT_TRUE(m.contains("samples_file_changes")) << m.dump();
  ASSERT_EQ(m["samples_file_changes"].size(), 1u);
  const auto& change = m["samples_file_changes"][0];
  EXPECT_EQ(change["change"], "deleted");
  const auto lost = change.value("rows_in_old_file", 0u);
  EXPECT_GE(lost, 10u);
  EXPECT_NE(lines[said[0]].find(" " + std::to_string(lost) + " rows"), std::string::npos)
      << lines[said[0]];
  // A new samples.csv at the path, with its header, holding the rows written after.
  ASSERT_TRUE(fs::exists(samples)) << "rows went on into the deleted file";
  const auto file = testing::read_v3(samples);
  EXPECT_EQ(file.schema_version, 3);
  EXPECT_EQ(file.bad + file.torn, 0u);
  EXPECT_EQ(file.rows.size(), m["rows_written"].get<std::uint64_t>() - lost);
  EXPECT_GE(file.rows.size(), 10u);
}

TEST(Collector, ReplacedOrMovedSamplesCsvIsSaidOnceEach) {
  TempDir dir;
  const std::string samples = dir.path() + "/samples.csv";
  artifacts::CpuSampleRow kept;
  kept.timestamp_unix = 1788310143.5;
  kept.hostname = "put-there";
  kept.source = "acpi";
  kept.sensor = "CPU0:cpuSidePowerUsageW";
  kept.power_w = 10;
  kept.total_power_w = 10;
  const auto run = run_in_child([&] {
    StandIn server(changing_acpi());
    Collector c({local("node-a", server.port())}, options_for(dir, milliseconds(20)));
    if (!c.start()) return 3;
    const auto written_past = [&](std::uint64_t n) {
      return wait_until([&] { return c.stats().rows_written >= n; });
    };
    if (!written_past(10)) return 4;
    // Replaced: another v3 samples.csv renamed over it, which the collector continues.
    {
      std::ofstream other(dir.path() + "/other.csv", std::ios::binary);
      other << artifacts::kCpuHeaderV3 << "\r\n" << artifacts::format_v3_row(kept);
    }
    mark("replacing");
    fs::rename(dir.path() + "/other.csv", samples);
    if (!written_past(c.stats().rows_written + 10)) return 5;
    // Moved: renamed away; its rows live on under the new name.
    mark("moving");
    fs::rename(samples, dir.path() + "/moved.csv");
    if (!written_past(c.stats().rows_written + 10)) return 6;
    return c.stop_and_finalize() ? 0 : 7;
  });
  ASSERT_TRUE(run.exited_ok()) << "status " << run.status << "\n" << run.output;
  const auto lines = lines_of(run.output);
  const auto replaced = find_lines(lines, "samples.csv was replaced");
  const auto moved_line = find_lines(lines, "samples.csv was moved");
  ASSERT_EQ(replaced.size(), 1u) << run.output;
  ASSERT_EQ(moved_line.size(), 1u) << run.output;
  EXPECT_GT(replaced[0], find_lines(lines, "MARK replacing").at(0));
  EXPECT_GT(moved_line[0], find_lines(lines, "MARK moving").at(0));

  const auto m = read_json(dir.path() + "/cpu_manifest.json");
  ASSERT_EQ(m["samples_file_changes"].size(), 2u) << m.dump();
  EXPECT_EQ(m["samples_file_changes"][0]["change"], "replaced");
  EXPECT_EQ(m["samples_file_changes"][1]["change"], "moved");
  const auto lost = m["samples_file_changes"][0]["rows_in_old_file"].get<std::uint64_t>();
  const auto in_moved = m["samples_file_changes"][1]["rows_in_old_file"].get<std::uint64_t>();
  // The file put there was continued: its own row first, then ours; all of them moved away.
  const auto moved = testing::read_v3(dir.path() + "/moved.csv");
  EXPECT_EQ(moved.bad + moved.torn, 0u);
  ASSERT_EQ(moved.rows.size(), in_moved + 1);
  EXPECT_EQ(moved.rows[0], kept);
  // And a new one at the path for the rest.
  const auto now = testing::read_v3(samples);
  EXPECT_EQ(now.schema_version, 3);
  EXPECT_EQ(now.bad + now.torn, 0u);
  EXPECT_EQ(lost + in_moved + now.rows.size(), m["rows_written"].get<std::uint64_t>());
}

TEST(SamplesHealthText, SaysWhatIsWrongWithSamplesCsv) {
  CollectorStats s;
  EXPECT_EQ(samples_health_text(s), "");
  s.rows_dropped = 2391;
  s.samples_failing = "No space left on device";
  EXPECT_EQ(samples_health_text(s),
            "samples.csv FAILING (No space left on device), rows dropped 2391");
  s.samples_failing.reset();
  EXPECT_EQ(samples_health_text(s), "rows dropped 2391");
  s.samples_file_changes.push_back({1.0, "deleted", 42});
  EXPECT_EQ(samples_health_text(s),
            "rows dropped 2391, samples.csv deleted mid-run (42 rows lost with it; writing a new "
            "one)");
  s.rows_dropped = 0;
  s.samples_file_changes.push_back({2.0, "moved", 7});
  EXPECT_EQ(s.rows_lost(), 42u);
  EXPECT_EQ(samples_health_text(s),
            "samples.csv moved (2 times) mid-run (42 rows lost with it; writing a new one)");
}

// ---- schedule --------------------------------------------------------------------------

TEST(Collector, MissedSlotsAreSkippedNeverReplayed) {
  // Each answer takes at least 250 ms against a 100 ms interval: the slots that come while a
  // request is in flight are counted missed, and no burst follows. Checked as order and
  // accounting, which a busy machine cannot move.
  StandIn slow([](const Request& r) {
    Reply reply = ok_reply(acpi_body(90.0 + static_cast<double>(r.number), 100.0));
    reply.delay = milliseconds(250);
    return reply;
  });
  TempDir dir;
  Events events;
  const milliseconds interval(100);
  auto o = options_for(dir, interval);
  o.on_scrape = events.sink();
  Collector c({local("slow", slow.port())}, o);
  run_until(c, [&](const CollectorStats&) { return events.of(0).size() >= 4; });
  const auto stopped = Clock::now();

  const auto node = c.stats().nodes[0];
  const auto ev = events.of(0);
  expect_slot_accounting(ev, node, interval, stopped);
  for (std::size_t i = 1; i < ev.size(); ++i) {
    // The next slot came while the previous request (250 ms or more) was in flight.
    EXPECT_GE(ev[i].slot - ev[i - 1].slot, 2 * interval) << "request " << i << " replayed a slot";
  }
  EXPECT_GE(node.missed_slots, ev.size() - 1);
  EXPECT_EQ(node.scrape_count, events.all(0).size());
  EXPECT_EQ(node.error_count, 0u);
}

TEST(Collector, AStalledEndpointDoesNotDelayTheOthers) {
  StandIn healthy(changing_acpi());
  StandIn stalled([](const Request&) {
    Reply r;
    r.never = true;
    return r;
  });
  TempDir dir;
  Events events;
  const milliseconds interval(50);
  const milliseconds timeout(1000);
  auto o = options_for(dir, interval, timeout);
  o.on_scrape = events.sink();
  Collector c({local("stalled", stalled.port()), local("healthy", healthy.port())}, o);
  // Until the stalled endpoint's first request has timed out.
  run_until(c, [&](const CollectorStats&) { return !events.of(0).empty(); });
  const auto stopped = Clock::now();
  const auto stats = c.stats();

  const auto stall = events.of(0).front();
  EXPECT_EQ(stall.outcome, ScrapeOutcome::failed);
  EXPECT_EQ(stall.reason, kReasonTimeout);
  const auto& s = stats.nodes[0];
  EXPECT_EQ(s.error_count, s.scrape_count);
  ASSERT_TRUE(s.last_error);
  EXPECT_EQ(s.last_error->rfind("timeout: ", 0), 0u) << *s.last_error;
  expect_slot_accounting(events.of(0), s, interval, stopped);
  EXPECT_GE(s.missed_slots, 1u);

  // While the stalled request hung, the healthy endpoint's requests went on beside it: a
  // collector that waited for it would have none in that second. A busy machine may slow
  // them, not stop them, so a quarter of the slots is plenty; and none of them started
  // anywhere near as late as the stalled request's timeout.
  const auto& h = stats.nodes[1];
  const auto healthy_events = events.of(1);
  expect_slot_accounting(healthy_events, h, interval, stopped);
  EXPECT_EQ(h.error_count, 0u);
  std::size_t beside = 0;
  Clock::duration worst{};
  for (const auto& e : healthy_events) {
    if (e.started > stall.started && e.finished < stall.finished) ++beside;
    worst = std::max(worst, e.started - e.slot);
  }
  const auto slots_in_stall = static_cast<std::size_t>((stall.finished - stall.started) / interval);
  EXPECT_GE(beside, slots_in_stall / 4) << "healthy requests held up by the stalled one";
  EXPECT_LT(worst, timeout / 2) << "a healthy request started as late as a timeout";
}

TEST(Collector, ReusesTheKeepAliveConnection) {
  StandIn server(changing_acpi());
  TempDir dir;
  Collector c({local("node-a", server.port())}, options_for(dir, milliseconds(30)));
  run_until(c, [&](const CollectorStats&) { return server.requests() >= 10; });
  EXPECT_GE(server.requests(), 10u);
  EXPECT_EQ(server.connections(), 1u);
}

TEST(Collector, ScrapesIPv6Endpoints) {
  StandIn server(changing_acpi(), "::1");
  if (!server.ok()) GTEST_SKIP() << "no IPv6 loopback here";
  TempDir dir;
  Collector c({Endpoint{"node-6", "::1", server.port()}}, options_for(dir, milliseconds(50)));
  run_until(c, [](const CollectorStats& s) { return s.nodes[0].rows_appended >= 6; });
  EXPECT_EQ(c.stats().nodes[0].error_count, 0u);
  EXPECT_GE(rows_of(testing::read_v3(c.samples_path()), "node-6").size(), 6u);
}

TEST(Collector, StopRunsOneFinalCycle) {
  StandIn server(changing_acpi());
  TempDir dir;
  Collector c({local("node-a", server.port())}, options_for(dir, milliseconds(10000)));
  // After the first slot's scrape; the next slot is 10 s away.
  run_until(c, [](const CollectorStats& s) { return s.nodes[0].scrape_count >= 1; });
  EXPECT_EQ(server.requests(), 2u);  // the first slot, then the final scrape
  EXPECT_EQ(c.stats().nodes[0].scrape_count, 2u);
  EXPECT_EQ(testing::read_v3(c.samples_path()).rows.size(), 4u);
}

// The rows of each instant (one scrape) of a host, in file order.
std::vector<std::vector<artifacts::CpuSampleRow>> row_sets(
    const std::vector<artifacts::CpuSampleRow>& rows) {
  std::vector<std::vector<artifacts::CpuSampleRow>> out;
  for (const auto& r : rows) {
    if (out.empty() || out.back().front().timestamp_unix != r.timestamp_unix) out.emplace_back();
    out.back().push_back(r);
  }
  return out;
}

std::string socket_up_body(bool up0, bool up1) {
  return std::string("cpu_power_exporter_socket_up{socket=\"0\"} ") + (up0 ? "1" : "0") +
         "\ncpu_power_exporter_socket_up{socket=\"1\"} " + (up1 ? "1" : "0") + "\n";
}

// Socket 1's total alone, as an exporter serves it when socket 0's is withheld.
std::string socket1_only(double total1_w) {
  return "cpu_power_acpi_watts{sensor=\"hwmon11/power1\",type=\"total\",socket=\"1\","
         "oem_info=\"Grace Power Socket 1\",source=\"acpi\"} " +
         std::to_string(total1_w) + "\n";
}

// What the manifest, the rows and the stats say of node-a after `server` served both sockets,
// then socket 1 alone: rows sets without socket 0 carry no total, and are counted.
void expect_degraded_without_socket0(const TempDir& dir, const Collector& c) {
  const auto rows = testing::read_v3(dir.path() + "/samples.csv").rows;
  const auto sets = row_sets(rows);
  std::uint64_t without = 0;
  std::optional<double> first, last;
  bool whole_seen = false;
  for (const auto& set : sets) {
    const bool has0 =
        std::any_of(set.begin(), set.end(), [](const auto& r) { return r.socket_id == 0; });
    double sum = 0;
    for (const auto& r : set) sum += r.power_w;
    for (const auto& r : set) {
      if (has0) {
        EXPECT_EQ(r.total_power_w, std::optional(sum));
      } else {
        EXPECT_EQ(r.total_power_w, std::nullopt) << "a one-socket sum passed for the node total";
        EXPECT_EQ(r.socket_id, 1u);
      }
    }
    if (has0) {
      whole_seen = true;
      EXPECT_EQ(without, 0u) << "whole row sets come first here";
    } else {
      without += set.size();
      if (!first) first = set.front().timestamp_unix;
      last = set.front().timestamp_unix;
    }
  }
  EXPECT_TRUE(whole_seen);
  ASSERT_GT(without, 0u);
  const auto m = read_json(dir.path() + "/cpu_manifest.json");
  const auto& node = m["nodes"]["node-a"];
  EXPECT_EQ(node["sockets_expected"], nlohmann::json::array({0, 1}));
  EXPECT_EQ(node["status"], "degraded");
  ASSERT_EQ(node["sockets_missing"].size(), 1u) << node.dump();
  const auto& gap = node["sockets_missing"]["0"];
  EXPECT_EQ(gap["rows"], without);
  EXPECT_EQ(gap["first_unix"].get<double>(), *first);
  EXPECT_EQ(gap["last_unix"].get<double>(), *last);
  const auto stats = c.stats();
  EXPECT_EQ(stats.nodes[0].sockets_missing, std::vector<std::uint32_t>{0});
  EXPECT_EQ(stats.nodes_degraded(), 1u);
  EXPECT_EQ(stats.nodes_ok(), 0u);
  EXPECT_GE(stats.nodes[0].degraded_scrapes, 1u);
}

TEST(Collector, ANodeWhoseExporterSaysASocketIsDownIsDegraded) {
  // Both sockets for three requests, then socket_up says socket 0 is down and its total goes.
  StandIn server([](const Request& r) {
    const double v = 90.0 + static_cast<double>(r.number) * 0.01;
    if (r.number < 3) return ok_reply(acpi_body(v, 100.0 + v) + socket_up_body(true, true));
    return ok_reply(socket1_only(100.0 + v) + socket_up_body(false, true));
  });
  TempDir dir;
  Collector c({local("node-a", server.port())}, options_for(dir, milliseconds(30)));
  run_until(c, [](const CollectorStats& s) { return s.nodes[0].degraded_scrapes >= 4; });
  expect_degraded_without_socket0(dir, c);
}

TEST(Collector, ASocketDeadFromTheStartIsMissingWhenTheExporterSaysSo) {
  // The node never served socket 0: only socket_up knows it has one.
  StandIn server([](const Request& r) {
    return ok_reply(socket1_only(100.0 + static_cast<double>(r.number) * 0.01) +
                    socket_up_body(false, true));
  });
  TempDir dir;
  Collector c({local("node-a", server.port())}, options_for(dir, milliseconds(30)));
  run_until(c, [](const CollectorStats& s) { return s.nodes[0].degraded_scrapes >= 3; });
  const auto rows = testing::read_v3(dir.path() + "/samples.csv").rows;
  ASSERT_FALSE(rows.empty());
  for (const auto& r : rows) EXPECT_EQ(r.total_power_w, std::nullopt);
  const auto node = read_json(dir.path() + "/cpu_manifest.json")["nodes"]["node-a"];
  EXPECT_EQ(node["sockets_expected"], nlohmann::json::array({0, 1}));
  EXPECT_EQ(node["sockets_missing"]["0"]["rows"], rows.size());
  EXPECT_EQ(node["status"], "degraded");
}

TEST(Collector, ASocketServingNaNInfNegativeOrAbsurdValuesIsMissing) {
  // An exporter without socket_up: the node's sockets are those it served. After two whole
  // scrapes, socket 0's total turns into every kind of non-reading in turn.
  StandIn server([](const Request& r) {
    const double v = 90.0 + static_cast<double>(r.number) * 0.01;
    static const double bad[] = {std::nan(""), HUGE_VAL, -HUGE_VAL, -5.0, 1e9, 10000.5};
    const double total0 = r.number < 2 ? v : bad[r.number % 6];
    return ok_reply(acpi_body(total0, 100.0 + v));
  });
  TempDir dir;
  Collector c({local("node-a", server.port())}, options_for(dir, milliseconds(30)));
  run_until(c, [](const CollectorStats& s) { return s.nodes[0].degraded_scrapes >= 8; });
  expect_degraded_without_socket0(dir, c);
}

TEST(Collector, AWholeNodeIsOkWithEveryKeyInPlace) {
  StandIn server([](const Request& r) {
    const double v = 90.0 + static_cast<double>(r.number) * 0.01;
    return ok_reply(acpi_body(v, 100.0 + v) + socket_up_body(true, true));
  });
  TempDir dir;
  Collector c({local("node-a", server.port())}, options_for(dir, milliseconds(30)));
  run_until(c, [](const CollectorStats& s) { return s.nodes[0].scrape_count >= 3; });
  const auto node = read_json(dir.path() + "/cpu_manifest.json")["nodes"]["node-a"];
  EXPECT_EQ(node["sockets_expected"], nlohmann::json::array({0, 1}));
  EXPECT_EQ(node["sockets_missing"], nlohmann::json::object());
  EXPECT_EQ(node["status"], "ok");
  EXPECT_EQ(c.stats().nodes_ok(), 1u);
  EXPECT_EQ(c.stats().nodes_degraded(), 0u);
  for (const auto& r : testing::read_v3(c.samples_path()).rows) EXPECT_TRUE(r.total_power_w);
}

TEST(Collector, ARepeatedSeriesIsCountedAndNamedAndTheFirstSampleUsed) {
  // Socket 0's total twice in one body, with different values: the first is written, and
  // every repeat is counted per node, in the stats and the manifest.
  StandIn server([](const Request& r) {
    const double v = 90.0 + static_cast<double>(r.number) * 0.01;
    return ok_reply(acpi_body(v, 100.0) +
                    "cpu_power_acpi_watts{sensor=\"hwmon2/power1\",type=\"total\",socket=\"0\","
                    "oem_info=\"Grace Power Socket 0\",source=\"acpi\"} 5000\n");
  });
  TempDir dir;
  Collector c({local("node-a", server.port())}, options_for(dir, milliseconds(30)));
  run_until(c, [](const CollectorStats& s) { return s.nodes[0].scrape_count >= 3; });
  const auto stats = c.stats().nodes[0];
  EXPECT_EQ(stats.duplicate_series, stats.scrape_count);
  EXPECT_EQ(stats.last_duplicate,
            "cpu_power_acpi_watts{sensor=\"hwmon2/power1\",type=\"total\",socket=\"0\","
            "oem_info=\"Grace Power Socket 0\",source=\"acpi\"}");
  for (const auto& r : testing::read_v3(c.samples_path()).rows) {
    if (r.socket_id == 0) {
      EXPECT_LT(r.power_w, 100.0);
    }
  }
  const auto node = read_json(dir.path() + "/cpu_manifest.json")["nodes"]["node-a"];
  EXPECT_EQ(node["duplicate_series"], stats.duplicate_series);
  EXPECT_EQ(node["status"], "ok");
}

// A signal's stop (SIGTERM from a batch system, SIGKILL after its wait) does not wait out a
// request in flight: with a 30 s timeout and an endpoint that never answers, the healthy
// node's final scrape is still taken and the manifest written, well before the timeout.
TEST(Collector, InterruptedStopDoesNotWaitOutARequestInFlight) {
  StandIn healthy(changing_acpi());
  StandIn silent([](const Request&) {
    Reply r;
    r.never = true;
    return r;
  });
  TempDir dir;
  const milliseconds timeout(30000);
  Collector c({local("silent", silent.port()), local("healthy", healthy.port())},
              options_for(dir, milliseconds(10000), timeout));
  ASSERT_EQ(c.start().error(), "");
  // The silent endpoint's first request is in flight; the healthy one has its first row.
  ASSERT_TRUE(
      wait_until([&] { return silent.requests() >= 1 && c.stats().nodes[1].scrape_count >= 1; }));
  const auto stopping = Clock::now();
  const auto finalized = c.stop_and_finalize_interrupted();
  EXPECT_TRUE(finalized.ok()) << finalized.problems;
  const auto took = Clock::now() - stopping;
  EXPECT_LT(took, timeout / 3) << "the stop waited out the request timeout";
  const auto stats = c.stats();
  EXPECT_EQ(stats.nodes[0].scrape_count, 0u) << "the cut-off request is not a scrape";
  EXPECT_EQ(stats.nodes[1].scrape_count, 2u) << "the first slot, then the final scrape";
  EXPECT_TRUE(c.manifest_written());
  EXPECT_TRUE(std::filesystem::exists(c.manifest_path()));
}

// A signal that comes while an ordinary stop waits on a hung request (the command ended, then
// the batch system's SIGTERM) shortens that wait too: interrupt() from another thread, before
// or during the drain, ends the stop well before the request timeout.
TEST(Collector, InterruptShortensAStopAlreadyDraining) {
  StandIn silent([](const Request&) {
    Reply r;
    r.never = true;
    return r;
  });
  TempDir dir;
  const milliseconds timeout(30000);
  Collector c({local("silent", silent.port())}, options_for(dir, milliseconds(10000), timeout));
  ASSERT_EQ(c.start().error(), "");
  ASSERT_TRUE(wait_until([&] { return silent.requests() >= 1; }));
  const auto stopping = Clock::now();
  cpupower::scrape::Finalized finalized;
  std::thread stopper([&] { finalized = c.stop_and_finalize(); });
  c.interrupt();
  stopper.join();
  EXPECT_TRUE(finalized.ok()) << finalized.problems;
  EXPECT_FALSE(finalized.loop_left_behind);
  EXPECT_LT(Clock::now() - stopping, timeout / 3) << "the stop waited out the request timeout";
  EXPECT_TRUE(c.manifest_written());
}

// A loop that does not stop within the join timeout (a request still in flight, the
// stop not interrupted) is left behind, and the stop says so as a fact the GPU leg's
// collector_join_timeout reason is taken from, not only as text.
TEST(Collector, ALoopNotStoppedInTheJoinTimeoutIsLeftBehindAndSaidSo) {
  StandIn silent([](const Request&) {
    Reply r;
    r.never = true;
    return r;
  });
  TempDir dir;
  auto options = options_for(dir, milliseconds(10000), milliseconds(30000));
  options.join_timeout = milliseconds(100);
  Collector c({local("silent", silent.port())}, options);
  ASSERT_EQ(c.start().error(), "");
  ASSERT_TRUE(wait_until([&] { return silent.requests() >= 1; }));
  const auto finalized = c.stop_and_finalize();
  EXPECT_FALSE(finalized.ok());
  EXPECT_TRUE(finalized.loop_left_behind);
  EXPECT_NE(finalized.problems.find("did not stop"), std::string::npos) << finalized.problems;
  EXPECT_TRUE(c.manifest_written()) << "the manifest is written all the same";
  // The stand-in's end closes the request, and the loop left behind ends with it.
}

TEST(Collector, RefusesDuplicateHostnames) {
  TempDir dir;
  Collector c({local("a", 1), local("a", 2)}, options_for(dir, milliseconds(100)));
  const Status started = c.start();
  EXPECT_FALSE(started);
  EXPECT_NE(started.error().find("duplicate hostname 'a'"), std::string::npos) << started.error();
}

TEST(Collector, RefusesASamplesSchemaItDoesNotWrite) {
  TempDir dir;
  for (const int schema : {1, 4}) {
    auto options = options_for(dir, milliseconds(100));
    options.cpu_samples_schema = schema;
    Collector c({local("a", 1)}, options);
    const Status started = c.start();
    EXPECT_FALSE(started) << schema;
    EXPECT_NE(started.error().find("no samples.csv layout"), std::string::npos) << started.error();
  }
  EXPECT_FALSE(fs::exists(dir.path() + "/samples.csv"));
}

TEST(Collector, SigkillLeavesACsvTheReaderLoads) {
  TempDir dir;
  const std::string samples = dir.path() + "/samples.csv";
  const pid_t child = ::fork();  // before any thread: see run_in_child
  ASSERT_GE(child, 0);
  if (child == 0) {
    // The child scrapes its own server as fast as it can until it is killed.
    StandIn server(changing_acpi());
    Collector c({local("node-a", server.port())}, options_for(dir, milliseconds(2)));
    if (!c.start()) ::_exit(3);
    while (true) ::pause();
  }
  std::size_t lines = 0;
  for (int i = 0; i < 3000 && lines < 200; ++i) {
    std::this_thread::sleep_for(milliseconds(10));
    std::ifstream in(samples);
    lines = static_cast<std::size_t>(
        std::count(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>(), '\n'));
  }
  ::kill(child, SIGKILL);
  int status = 0;
  ::waitpid(child, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status)) << "child exited by itself: " << status;
  ASSERT_GE(lines, 200u) << "the child wrote too little before the kill";

  const auto file = testing::read_v3(samples);
  EXPECT_EQ(file.schema_version, 3);
  EXPECT_GE(file.rows.size(), 198u);
  EXPECT_EQ(file.bad, 0u);  // a torn last line is the only damage a kill may do
  EXPECT_LE(file.torn, 1u);
}

}  // namespace
}  // namespace cpupower::scrape
