// The collector at scale: N endpoints (default 1,000) scraped at 10 Hz for a fixed time,
// served by a light epoll server in a child process on N loopback ports, each answering the
// body a two-socket Grace exporter serves (about 3.9 KB, values changing on every request).
// Run twice: all endpoints healthy, then with endpoint 0 stalled (it accepts and reads the
// request but never answers). Prints a Markdown table:
//   * slots filled: written scrapes / slots on each endpoint's grid before stop (healthy
//     endpoints only; target >= 99.9 %, and 100 % beside a stalled one);
//   * start lateness: request start - slot time (the scheduler's precision);
//   * row-time jitter: |gap between consecutive row times - interval| over consecutive slots
//     (what a consumer of samples.csv sees; target p99 < 20 ms);
//   * collector CPU in cores (process CPU time / wall time; target < 0.5), server CPU beside.
//
// Usage: collector_scale_bench [--endpoints N] [--interval-ms MS] [--duration-s S]
//                              [--stalled K] [--only healthy|stalled]

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/log.hpp"
#include "scrape/collector.hpp"

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

struct Args {
  std::size_t endpoints = 1000;
  long interval_ms = 100;
  double duration_s = 20;
  std::size_t stalled = 1;  // endpoints stalled in the second scenario
  std::string only;         // "", "healthy" or "stalled"
};

// ---- the test server (child process) ---------------------------------------------------

// What cpu-power-exporter serves for a simulated GB200 node, with the six rail values moving
// on every request so that the collector's unchanged-readings rule never drops a scrape.
std::string exporter_body(std::uint64_t n) {
  static const char* sensors[] = {"hwmon2/power1",  "hwmon3/power1",  "hwmon10/power1",
                                  "hwmon11/power1", "hwmon12/power1", "hwmon13/power1"};
  static const char* types[] = {"total", "cpu_rail", "soc", "total", "cpu_rail", "soc"};
  static const char* labels[] = {"Grace Power Socket 0", "CPU Power Socket 0",
                                 "SysIO Power Socket 0", "Grace Power Socket 1",
                                 "CPU Power Socket 1",   "SysIO Power Socket 1"};
  static const double base_w[] = {98.0, 49.0, 5.1, 97.0, 48.0, 5.0};
  std::string b;
  b.reserve(4096);
  char line[256];
  b += "# HELP cpu_power_acpi_watts Grace CPU power rail reading from ACPI hwmon (W).\n"
       "# TYPE cpu_power_acpi_watts gauge\n";
  for (int i = 0; i < 6; ++i) {
    std::snprintf(
        line, sizeof line,
        "cpu_power_acpi_watts{sensor=\"%s\",type=\"%s\",socket=\"%d\",oem_info=\"%s\","
        "source=\"acpi\"} %.6f\n",
        sensors[i], types[i], i / 3, labels[i],
        base_w[i] + static_cast<double>((n * 7 + static_cast<unsigned>(i)) % 1000) * 1e-3);
    b += line;
  }
  b += "# HELP cpu_power_exporter_info Exporter version and the CPU power source resolved at "
       "startup.\n# TYPE cpu_power_exporter_info gauge\n"
       "cpu_power_exporter_info{version=\"0.1.0\",source=\"acpi\"} 1\n";
  struct Family {
    const char* name;
    const char* help;
    const char* type;
  };
  static const Family families[] = {
      {"cpu_power_exporter_sample_age_seconds",
       "Age of each sensor's last good reading when this scrape was served (s).", "gauge"},
      {"cpu_power_exporter_read_duration_seconds",
       "Duration of each sensor's last completed read (s).", "gauge"},
      {"cpu_power_exporter_stale",
       "1 when a sensor's reading is withheld because it is older than --max-age-s or never "
       "arrived, else 0.",
       "gauge"},
      {"cpu_power_exporter_reads_total", "Sensor reads completed.", "counter"},
      {"cpu_power_exporter_read_errors_total",
       "Sensor reads that gave no value (failed, empty, invalid, zero or negative).", "counter"},
  };
  for (const auto& f : families) {
    b +=
        std::string("# HELP ") + f.name + " " + f.help + "\n# TYPE " + f.name + " " + f.type + "\n";
    for (const char* sensor : sensors) {
      const std::string name = f.name;
      if (name.ends_with("age_seconds")) {
        std::snprintf(line, sizeof line, "%s{sensor=\"%s\"} 0.%06u\n", f.name, sensor,
                      static_cast<unsigned>(20000 + n % 50000));
      } else if (name.ends_with("duration_seconds")) {
        std::snprintf(line, sizeof line, "%s{sensor=\"%s\"} 0.000041\n", f.name, sensor);
      } else if (name.ends_with("reads_total")) {
        std::snprintf(line, sizeof line, "%s{sensor=\"%s\"} %llu\n", f.name, sensor,
                      static_cast<unsigned long long>(n * 10));
      } else {
        std::snprintf(line, sizeof line, "%s{sensor=\"%s\"} 0\n", f.name, sensor);
      }
      b += line;
    }
  }
  std::snprintf(line, sizeof line,
                "# HELP cpu_power_exporter_scrapes_total Requests for /metrics served, this one "
                "included.\n# TYPE cpu_power_exporter_scrapes_total counter\n"
                "cpu_power_exporter_scrapes_total %llu\n",
                static_cast<unsigned long long>(n + 1));
  b += line;
  return b;
}

struct Conn {
  std::string in;
  std::string out;
  bool stalled = false;
  std::uint64_t served = 0;
};

void set_nodelay(int fd) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

void flush_out(int ep, int fd, Conn& c) {
  while (!c.out.empty()) {
    const ssize_t n = ::send(fd, c.out.data(), c.out.size(), MSG_NOSIGNAL);
    if (n <= 0) break;
    c.out.erase(0, static_cast<std::size_t>(n));
  }
  epoll_event ev{};
  ev.events = EPOLLIN | (c.out.empty() ? 0u : static_cast<unsigned>(EPOLLOUT));
  ev.data.fd = fd;
  ::epoll_ctl(ep, EPOLL_CTL_MOD, fd, &ev);
}

// One thread, one epoll set: listeners are told apart from connections by a table.
[[noreturn]] void serve(std::size_t n_ports, std::size_t n_stalled, int report_fd) {
  const int ep = ::epoll_create1(EPOLL_CLOEXEC);
  std::vector<int> listener_stalled(1 << 16, -1);  // by fd: -1 not a listener, else 0/1
  std::vector<Conn> conns(1 << 16);
  std::vector<std::uint16_t> ports;
  for (std::size_t i = 0; i < n_ports; ++i) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
        ::listen(fd, 128) != 0) {
      std::perror("server: listen");
      ::_exit(2);
    }
    socklen_t len = sizeof a;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    ports.push_back(ntohs(a.sin_port));
    listener_stalled[static_cast<std::size_t>(fd)] = i < n_stalled ? 1 : 0;
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    ::epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
  }
  if (::write(report_fd, ports.data(), ports.size() * sizeof ports[0]) < 0) ::_exit(2);
  ::close(report_fd);

  std::vector<epoll_event> events(1024);
  char buf[16384];
  while (true) {
    const int n = ::epoll_wait(ep, events.data(), static_cast<int>(events.size()), -1);
    for (int k = 0; k < n; ++k) {
      const int fd = events[static_cast<std::size_t>(k)].data.fd;
      if (listener_stalled[static_cast<std::size_t>(fd)] >= 0) {
        int c;
        while ((c = ::accept4(fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
          set_nodelay(c);
          conns[static_cast<std::size_t>(c)] = Conn{};
          conns[static_cast<std::size_t>(c)].stalled =
              listener_stalled[static_cast<std::size_t>(fd)] == 1;
          epoll_event ev{};
          ev.events = EPOLLIN;
          ev.data.fd = c;
          ::epoll_ctl(ep, EPOLL_CTL_ADD, c, &ev);
        }
        continue;
      }
      Conn& c = conns[static_cast<std::size_t>(fd)];
      bool closed = false;
      while (true) {
        const ssize_t r = ::recv(fd, buf, sizeof buf, 0);
        if (r > 0) {
          c.in.append(buf, static_cast<std::size_t>(r));
          continue;
        }
        closed = r == 0 || (errno != EAGAIN && errno != EWOULDBLOCK);
        break;
      }
      if (closed) {
        ::close(fd);
        continue;
      }
      std::size_t end;
      while ((end = c.in.find("\r\n\r\n")) != std::string::npos) {
        c.in.erase(0, end + 4);
        if (c.stalled) continue;
        const std::string body = exporter_body(c.served++);
        c.out +=
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n"
            "Content-Length: " +
            std::to_string(body.size()) + "\r\n\r\n" + body;
      }
      flush_out(ep, fd, c);
    }
  }
}

struct Server {
  pid_t pid = -1;
  std::vector<std::uint16_t> ports;
};

Server start_server(std::size_t n_ports, std::size_t n_stalled) {
  int fds[2];
  if (::pipe(fds) != 0) std::exit(1);
  Server s;
  s.pid = ::fork();
  if (s.pid == 0) {
    ::close(fds[0]);
    serve(n_ports, n_stalled, fds[1]);
  }
  ::close(fds[1]);
  s.ports.resize(n_ports);
  auto* p = reinterpret_cast<char*>(s.ports.data());
  std::size_t want = n_ports * sizeof(std::uint16_t), got = 0;
  while (got < want) {
    const ssize_t r = ::read(fds[0], p + got, want - got);
    if (r <= 0) {
      std::fprintf(stderr, "server did not start\n");
      std::exit(1);
    }
    got += static_cast<std::size_t>(r);
  }
  ::close(fds[0]);
  return s;
}

// ---- measuring -------------------------------------------------------------------------

double cpu_seconds(const rusage& r) {
  return static_cast<double>(r.ru_utime.tv_sec + r.ru_stime.tv_sec) +
         static_cast<double>(r.ru_utime.tv_usec + r.ru_stime.tv_usec) / 1e6;
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  const auto i = static_cast<std::size_t>(std::ceil(p / 100.0 * static_cast<double>(v.size())));
  return v[std::min(v.size() - 1, i == 0 ? 0 : i - 1)];
}

struct Result {
  std::string name;
  std::size_t endpoints = 0, stalled = 0;
  std::uint64_t expected = 0, filled = 0, missed = 0, errors = 0;
  std::uint64_t stalled_errors = 0, stalled_missed = 0;
  std::vector<double> lateness_ms, jitter_ms;
  double collector_cores = 0, server_cores = 0, wall_s = 0;
  std::uint64_t rows_written = 0;
};

Result run(const Args& a, std::size_t n_stalled, const std::string& name) {
  using namespace cpupower;
  Result res;
  res.name = name;
  res.endpoints = a.endpoints;
  res.stalled = n_stalled;
  Server server = start_server(a.endpoints, n_stalled);

  std::vector<scrape::Endpoint> endpoints;
  for (std::size_t i = 0; i < a.endpoints; ++i) {
    char host[32];
    std::snprintf(host, sizeof host, "node-%04zu", i);
    endpoints.push_back({host, "127.0.0.1", server.ports[i]});
  }
  const auto dir = std::filesystem::temp_directory_path() /
                   ("collector-scale-" + name + "-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);

  std::mutex mutex;
  std::vector<scrape::ScrapeEvent> events;
  events.reserve(a.endpoints * static_cast<std::size_t>(
                                   a.duration_s * 1000.0 / static_cast<double>(a.interval_ms) + 4));
  scrape::CollectorOptions o;
  o.out_dir = dir.string();
  o.collect_interval = milliseconds(a.interval_ms);
  o.on_scrape = [&](const scrape::ScrapeEvent& e) {
    std::lock_guard lock(mutex);
    events.push_back(e);
  };
  scrape::Collector collector(endpoints, o);

  rusage before{}, after{};
  ::getrusage(RUSAGE_SELF, &before);
  const auto t0 = Clock::now();
  std::string error;
  if (!collector.start(&error)) {
    std::fprintf(stderr, "collector: %s\n", error.c_str());
    std::exit(1);
  }
  std::this_thread::sleep_for(
      std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(a.duration_s)));
  const auto t_stop = Clock::now();
  collector.stop_and_finalize(&error);
  const auto t1 = Clock::now();
  ::getrusage(RUSAGE_SELF, &after);
  res.wall_s = std::chrono::duration<double>(t1 - t0).count();
  res.collector_cores = (cpu_seconds(after) - cpu_seconds(before)) / res.wall_s;

  ::kill(server.pid, SIGTERM);
  int status = 0;
  rusage child{};
  ::wait4(server.pid, &status, 0, &child);
  res.server_cores = cpu_seconds(child) / res.wall_s;

  // Each endpoint's grid starts at its first slot (never missed: nothing is in flight yet)
  // and repeats every interval; the slots due before stop are the ones it should fill.
  const auto step = std::chrono::duration_cast<Clock::duration>(milliseconds(a.interval_ms));
  std::vector<std::vector<const scrape::ScrapeEvent*>> per(a.endpoints);
  std::vector<bool> final_written(a.endpoints, false);
  for (const auto& e : events) {
    if (!e.final_cycle) per[e.endpoint_index].push_back(&e);
    if (e.final_cycle && e.outcome == scrape::ScrapeOutcome::written) {
      final_written[e.endpoint_index] = true;
    }
  }
  const auto stats = collector.stats();
  res.rows_written = stats.rows_written;
  for (std::size_t i = 0; i < a.endpoints; ++i) {
    const auto& node = stats.nodes[i];
    if (i < n_stalled) {
      res.stalled_errors += node.error_count;
      res.stalled_missed += node.missed_slots;
      continue;
    }
    auto& ev = per[i];
    std::sort(ev.begin(), ev.end(), [](auto* x, auto* y) { return x->slot < y->slot; });
    const auto first = ev.empty() ? t0 : ev.front()->slot;
    const auto slots = static_cast<std::uint64_t>((t_stop - first - Clock::duration(1)) / step) + 1;
    res.expected += slots;
    // A slot due just before stop that the loop had not fired yet is served by the final
    // scrape instead.
    const auto last_slot = first + step * static_cast<long>(slots - 1);
    if (final_written[i] && (ev.empty() || ev.back()->slot < last_slot)) ++res.filled;
    res.missed += node.missed_slots;
    res.errors += node.error_count;
    for (std::size_t k = 0; k < ev.size(); ++k) {
      const auto& e = *ev[k];
      res.lateness_ms.push_back(
          std::chrono::duration<double, std::milli>(e.started - e.slot).count());
      if (e.outcome == scrape::ScrapeOutcome::written && e.slot < t_stop) ++res.filled;
      if (k == 0) continue;
      const auto& p = *ev[k - 1];
      if (e.slot - p.slot != step || e.outcome != scrape::ScrapeOutcome::written ||
          p.outcome != scrape::ScrapeOutcome::written) {
        continue;
      }
      const double gap_ms = (e.timestamp_unix - p.timestamp_unix) * 1000.0;
      res.jitter_ms.push_back(std::abs(gap_ms - static_cast<double>(a.interval_ms)));
    }
  }
  std::filesystem::remove_all(dir);
  return res;
}

void print(const Result& r) {
  const double fill =
      r.expected ? 100.0 * static_cast<double>(r.filled) / static_cast<double>(r.expected) : 0;
  std::printf(
      "| %s | %zu | %llu / %llu = %.3f %% | %llu / %llu | %.2f / %.2f / %.1f ms | %.2f / %.2f / "
      "%.1f ms | %.3f | %.3f | %llu |",
      r.name.c_str(), r.endpoints - r.stalled, static_cast<unsigned long long>(r.filled),
      static_cast<unsigned long long>(r.expected), fill, static_cast<unsigned long long>(r.missed),
      static_cast<unsigned long long>(r.errors), percentile(r.lateness_ms, 50),
      percentile(r.lateness_ms, 99), percentile(r.lateness_ms, 100), percentile(r.jitter_ms, 50),
      percentile(r.jitter_ms, 99), percentile(r.jitter_ms, 100), r.collector_cores, r.server_cores,
      static_cast<unsigned long long>(r.rows_written));
  if (r.stalled) {
    std::printf(" stalled endpoint: %llu timeouts, %llu missed slots |",
                static_cast<unsigned long long>(r.stalled_errors),
                static_cast<unsigned long long>(r.stalled_missed));
  } else {
    std::printf(" - |");
  }
  std::printf("\n");
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--endpoints")
      a.endpoints = std::stoul(v);
    else if (k == "--interval-ms")
      a.interval_ms = std::stol(v);
    else if (k == "--duration-s")
      a.duration_s = std::stod(v);
    else if (k == "--stalled")
      a.stalled = std::stoul(v);
    else if (k == "--only")
      a.only = v;
    else {
      std::fprintf(stderr, "unknown option %s\n", k.c_str());
      return 2;
    }
  }
  // Two descriptors per endpoint in the server and one in the collector.
  rlimit nofile{};
  ::getrlimit(RLIMIT_NOFILE, &nofile);
  nofile.rlim_cur = nofile.rlim_max;
  ::setrlimit(RLIMIT_NOFILE, &nofile);
  cpupower::common::init_logging(spdlog::level::warn);

  std::printf("%zu endpoints at %ld ms for %.0f s, request timeout 2 s, one collector thread\n\n",
              a.endpoints, a.interval_ms, a.duration_s);
  std::printf(
      "| scenario | healthy endpoints | slots filled | missed / errors (healthy) | start "
      "lateness p50 / p99 / max | row-time jitter p50 / p99 / max | collector cores | server "
      "cores | rows written | notes |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|\n");
  std::fflush(stdout);
  if (a.only != "stalled") print(run(a, 0, "all healthy"));
  if (a.only != "healthy") print(run(a, a.stalled, std::to_string(a.stalled) + " stalled"));
  return 0;
}
