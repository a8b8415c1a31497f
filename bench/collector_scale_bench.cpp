// The collector at scale: N endpoints (default 1,000) scraped at 10 Hz for a fixed time,
// served by a light epoll server in a child process on N loopback ports. With --leg cpu (the
// default) each answers the body a two-socket Grace exporter serves (about 3.9 KB) and the
// collector runs the CPU leg; with --leg gpu each answers what `cpu-power sim-gpu` serves
// for 4 GPUs by default (sim/gpu_exposition.hpp: HELP/TYPE lines and every label) and the
// collector runs the GPU leg, one row per GPU per scrape. Values change on every request.
// Run twice: all endpoints healthy, then with endpoint 0 stalled (it accepts and reads the
// request but never answers). Prints a Markdown table:
//   * slots filled: written scrapes / slots on each endpoint's grid before stop (healthy
//     endpoints only; target >= 99.9 %, and 100 % beside a stalled one);
//   * start lateness: request start - slot time (the scheduler's precision);
//   * row-time jitter: |gap between consecutive row times - interval| over consecutive slots
//     (what a consumer of samples.csv sees; target p99 < 20 ms);
//   * collector CPU in cores (process CPU time / wall time; target < 0.5), server CPU beside;
//   * rows written and rows/s (rows / wall time from start to the end of finalize);
//   * GPU leg: samples.csv read back with the strict reader (artifacts::check_gpu_samples),
//     which must find no reason code and exactly the rows the collector wrote.
//
// Usage: collector_scale_bench [--leg cpu|gpu] [--gpus G] [--endpoints N] [--interval-ms MS]
//                              [--duration-s S] [--stalled K] [--only healthy|stalled]
//                              [--print-body]

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
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "artifacts/gpu_samples_check.hpp"
#include "common/log.hpp"
#include "scrape/collector.hpp"
#include "scrape/gpu_leg.hpp"
#include "sim/gpu_exposition.hpp"
#include "sim/gpu_power.hpp"
#include "sim/sim_gpu.hpp"

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

struct Args {
  std::string leg = "cpu";  // "cpu" or "gpu"
  std::uint32_t gpus = 4;   // per endpoint, GPU leg
  std::size_t endpoints = 1000;
  long interval_ms = 100;
  double duration_s = 20;
  std::size_t stalled = 1;  // endpoints stalled in the second scenario
  std::string only;         // "", "healthy" or "stalled"
  bool print_body = false;  // print endpoint 0's first body and exit
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

std::string host_name(std::size_t i) {
  char host[32];
  std::snprintf(host, sizeof host, "node-%04zu", i);
  return host;
}

// What `cpu-power sim-gpu --hostname node-NNNN` serves with its defaults (GPU count aside):
// the same identities (UUIDs, PCI bus ids, model, driver label) and the same renderer. The
// board power moves on every request (250..360 W, different per GPU), the readings that
// follow it are derived as the simulator derives them, and the energy counter climbs.
class GpuBodies {
 public:
  GpuBodies(std::size_t endpoints, std::uint32_t gpus, bool profiling = false) {
    const cpupower::sim::SimGpuOptions defaults;
    options_.resize(endpoints);
    series_.resize(endpoints);
    for (std::size_t i = 0; i < endpoints; ++i) {
      options_[i].hostname = host_name(i);
      options_[i].driver_version = defaults.driver_version;
      options_[i].profiling = profiling;
      for (std::uint32_t g = 0; g < gpus; ++g) {
        cpupower::sim::GpuSeries s;
        s.index = g;
        s.uuid = cpupower::sim::simulated_gpu_uuid(options_[i].hostname, g);
        s.pci_bus_id = cpupower::sim::simulated_pci_bus_id(g);
        s.model_name = defaults.model_name;
        series_[i].push_back(std::move(s));
      }
    }
  }

  std::string body(std::size_t endpoint, std::uint64_t n) {
    auto& series = series_[endpoint];
    for (auto& s : series) {
      const double w =
          250.0 + 10.0 * s.index + static_cast<double>((n * 37 + s.index * 11) % 1000) * 0.1;
      s.values = cpupower::sim::derive_gpu_readout(w, cpupower::sim::kGpuIdleWatts,
                                                   cpupower::sim::kGpuMaxWatts);
      s.values.energy_mj =
          static_cast<std::int64_t>(1'000'000'000 + 123'456'789 * s.index + 30'000 * n);
    }
    return cpupower::sim::render_dcgm_exposition(series, options_[endpoint]);
  }

 private:
  std::vector<cpupower::sim::ExpositionOptions> options_;
  std::vector<std::vector<cpupower::sim::GpuSeries>> series_;
};

// What each endpoint answers: the n-th body of endpoint `i`, and its Content-Type.
struct Bodies {
  std::function<std::string(std::size_t i, std::uint64_t n)> body;
  std::string content_type;
};

Bodies make_bodies(const Args& a) {
  if (a.leg == "gpu") {
    auto gpu = std::make_shared<GpuBodies>(a.endpoints, a.gpus);
    // dcgm-exporter sets no Content-Type; Go's net/http sniffs this one.
    return {[gpu](std::size_t i, std::uint64_t n) { return gpu->body(i, n); },
            "text/plain; charset=utf-8"};
  }
  return {[](std::size_t, std::uint64_t n) { return exporter_body(n); },
          "text/plain; version=0.0.4; charset=utf-8"};
}

struct Conn {
  std::string in;
  std::string out;
  bool stalled = false;
  std::size_t endpoint = 0;
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
[[noreturn]] void serve(std::size_t n_ports, std::size_t n_stalled, const Bodies& bodies,
                        int report_fd) {
  const int ep = ::epoll_create1(EPOLL_CLOEXEC);
  std::vector<long> listener_endpoint(1 << 16, -1);  // by fd: -1 not a listener, else its index
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
    listener_endpoint[static_cast<std::size_t>(fd)] = static_cast<long>(i);
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
      if (const long index = listener_endpoint[static_cast<std::size_t>(fd)]; index >= 0) {
        int c;
        while ((c = ::accept4(fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
          set_nodelay(c);
          auto& conn = conns[static_cast<std::size_t>(c)];
          conn = Conn{};
          conn.endpoint = static_cast<std::size_t>(index);
          conn.stalled = conn.endpoint < n_stalled;
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
        const std::string body = bodies.body(c.endpoint, c.served++);
        c.out += "HTTP/1.1 200 OK\r\nContent-Type: " + bodies.content_type +
                 "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
      }
      flush_out(ep, fd, c);
    }
  }
}

struct Server {
  pid_t pid = -1;
  std::vector<std::uint16_t> ports;
};

Server start_server(std::size_t n_ports, std::size_t n_stalled, const Bodies& bodies) {
  int fds[2];
  if (::pipe(fds) != 0) std::exit(1);
  Server s;
  s.pid = ::fork();
  if (s.pid == 0) {
    ::close(fds[0]);
    serve(n_ports, n_stalled, bodies, fds[1]);
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
  // GPU leg: the strict reader's verdict on samples.csv, and the leg's own reason counts.
  bool checked = false;
  std::vector<std::string> check_reasons;
  std::size_t check_rows = 0;
  std::map<std::string, std::uint64_t> leg_reasons;
};

Result run(const Args& a, const Bodies& bodies, std::size_t n_stalled, const std::string& name) {
  using namespace cpupower;
  Result res;
  res.name = name;
  res.endpoints = a.endpoints;
  res.stalled = n_stalled;
  Server server = start_server(a.endpoints, n_stalled, bodies);

  std::vector<scrape::Endpoint> endpoints;
  for (std::size_t i = 0; i < a.endpoints; ++i) {
    endpoints.push_back({host_name(i), "127.0.0.1", server.ports[i]});
  }
  const auto dir = std::filesystem::temp_directory_path() /
                   ("collector-scale-" + a.leg + "-" + (n_stalled ? "stalled" : "healthy") + "-" +
                    std::to_string(::getpid()));
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
  auto summary = std::make_shared<scrape::GpuLegSummary>();
  // As the session builds it (launch/gpu_leg.cpp); null: the CPU leg.
  std::unique_ptr<scrape::Leg> leg;
  if (a.leg == "gpu") leg = std::make_unique<scrape::GpuLeg>(endpoints.size(), summary);
  scrape::Collector collector(endpoints, o, std::move(leg));

  rusage before{}, after{};
  ::getrusage(RUSAGE_SELF, &before);
  const auto t0 = Clock::now();
  if (const auto started = collector.start(); !started) {
    std::fprintf(stderr, "collector: %s\n", started.error().c_str());
    std::exit(1);
  }
  std::this_thread::sleep_for(
      std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(a.duration_s)));
  const auto t_stop = Clock::now();
  (void)collector.stop_and_finalize();
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
  res.leg_reasons = summary->reason_counts;
  if (a.leg == "gpu") {
    const auto check = artifacts::check_gpu_samples(collector.samples_path());
    res.checked = true;
    res.check_reasons = check.reason_codes.codes();
    res.check_rows = check.row_count;
    for (const auto& p : check.problems) std::fprintf(stderr, "samples check: %s\n", p.c_str());
  }
  std::filesystem::remove_all(dir);
  return res;
}

std::string thousands(std::uint64_t v) {
  const std::string digits = std::to_string(v);
  std::string t;
  for (std::size_t k = 0; k < digits.size(); ++k) {
    if (k > 0 && (digits.size() - k) % 3 == 0) t += ',';
    t += digits[k];
  }
  return t;
}

void print(const Result& r) {
  const double fill =
      r.expected ? 100.0 * static_cast<double>(r.filled) / static_cast<double>(r.expected) : 0;
  std::printf(
      "| %s | %zu | %s / %s = %.3f %% | %llu / %llu | %.2f / %.2f / %.1f ms | %.2f / %.2f / "
      "%.1f ms | %.3f | %.3f | %s | %s |",
      r.name.c_str(), r.endpoints - r.stalled, thousands(r.filled).c_str(),
      thousands(r.expected).c_str(), fill, static_cast<unsigned long long>(r.missed),
      static_cast<unsigned long long>(r.errors), percentile(r.lateness_ms, 50),
      percentile(r.lateness_ms, 99), percentile(r.lateness_ms, 100), percentile(r.jitter_ms, 50),
      percentile(r.jitter_ms, 99), percentile(r.jitter_ms, 100), r.collector_cores, r.server_cores,
      thousands(r.rows_written).c_str(),
      thousands(
          static_cast<std::uint64_t>(std::llround(static_cast<double>(r.rows_written) / r.wall_s)))
          .c_str());
  if (r.checked) {
    std::string reasons;
    for (const auto& c : r.check_reasons) reasons += (reasons.empty() ? "" : ", ") + c;
    const bool ok = r.check_reasons.empty() && r.check_rows == r.rows_written;
    std::printf(" %s: %s rows, %s |", ok ? "ok" : "FAILED", thousands(r.check_rows).c_str(),
                reasons.empty() ? "no reason codes" : reasons.c_str());
  } else {
    std::printf(" - |");
  }
  std::string notes;
  if (r.stalled) {
    notes = "stalled endpoint: " + thousands(r.stalled_errors) + " timeouts, " +
            thousands(r.stalled_missed) + " missed slots";
  }
  for (const auto& [code, count] : r.leg_reasons) {
    notes += (notes.empty() ? "" : "; ") + std::string("GPU leg ") + code + " x" + thousands(count);
  }
  std::printf(" %s |\n", notes.empty() ? "-" : notes.c_str());
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    if (k == "--print-body") {
      a.print_body = true;
      continue;
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "%s needs a value\n", k.c_str());
      return 2;
    }
    const std::string v = argv[++i];
    if (k == "--leg")
      a.leg = v;
    else if (k == "--gpus")
      a.gpus = static_cast<std::uint32_t>(std::stoul(v));
    else if (k == "--endpoints")
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
  if (a.leg != "cpu" && a.leg != "gpu") {
    std::fprintf(stderr, "--leg takes cpu or gpu, not %s\n", a.leg.c_str());
    return 2;
  }
  // Two descriptors per endpoint in the server and one in the collector.
  rlimit nofile{};
  ::getrlimit(RLIMIT_NOFILE, &nofile);
  nofile.rlim_cur = nofile.rlim_max;
  ::setrlimit(RLIMIT_NOFILE, &nofile);
  cpupower::common::init_logging(spdlog::level::warn);

  const Bodies bodies = make_bodies(a);
  if (a.print_body) {
    std::fputs(bodies.body(0, 0).c_str(), stdout);
    return 0;
  }
  std::printf(
      "%s leg: %zu endpoints at %ld ms for %.0f s, request timeout 2 s, one collector thread\n",
      a.leg.c_str(), a.endpoints, a.interval_ms, a.duration_s);
  if (a.leg == "gpu") {
    std::printf("body: %zu bytes (%u GPUs, sim-gpu defaults; %zu with --profiling)\n\n",
                bodies.body(0, 0).size(), a.gpus,
                GpuBodies(1, a.gpus, /*profiling=*/true).body(0, 0).size());
  } else {
    std::printf("body: %zu bytes (two-socket GB200 exporter)\n\n", bodies.body(0, 0).size());
  }
  std::printf(
      "| scenario | healthy endpoints | slots filled | missed / errors (healthy) | start "
      "lateness p50 / p99 / max | row-time jitter p50 / p99 / max | collector cores | server "
      "cores | rows written | rows/s | samples.csv strict check | notes |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  std::fflush(stdout);
  int rc = 0;
  auto report = [&](const Result& r) {
    print(r);
    if (r.checked && (!r.check_reasons.empty() || r.check_rows != r.rows_written)) rc = 1;
  };
  if (a.only != "stalled") report(run(a, bodies, 0, "all healthy"));
  if (a.only != "healthy") {
    report(run(a, bodies, a.stalled, std::to_string(a.stalled) + " stalled"));
  }
  return rc;
}
