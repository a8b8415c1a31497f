// The exporter's HTTP front (exporter/http_server on libmicrohttpd, exporter/service routes)
// on raw request bytes. The server runs in-process, once, on an ephemeral loopback port, over
// a fixed stand-in source; each input is written to a fresh connection, the write side is
// shut, and the reply is read (round_trip says how long). The server must survive every input,
// and whatever it answers starts with an HTTP/1.x status line.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "common/log.hpp"
#include "expo/parser.hpp"
#include "exporter/http_server.hpp"
#include "exporter/service.hpp"
#include "fuzz_util.hpp"

namespace {

namespace sources = cpupower::sources;
using namespace std::chrono_literals;

// One socket total with a fresh reading: the exporter's families and self metrics, no sensor.
class StandInSource : public sources::Source {
 public:
  StandInSource() {
    sources::Sensor s;
    s.name = "hwmon2/power1";
    s.kind = cpupower::rails::Kind::total;
    s.socket = 0;
    s.primary = true;
    s.label_text =
        "sensor=\"hwmon2/power1\",type=\"total\",socket=\"0\",oem_info=\"Grace Power Socket "
        "0\",source=\"acpi\"";
    s.self_label_text = "sensor=\"hwmon2/power1\"";
    sensors_ = std::make_shared<const std::vector<sources::Sensor>>(
        std::vector<sources::Sensor>{std::move(s)});
  }
  std::string_view mode() const override { return "acpi"; }
  const cpupower::expo::Family& family() const override { return cpupower::expo::kAcpiWatts; }
  cpupower::expo::CounterFamilies counters() const override {
    return cpupower::expo::kAcpiCounters;
  }
  void start() override {}
  void stop(std::chrono::milliseconds) override {}
  sources::Snapshot snapshot(sources::SteadyTime) const override {
    sources::ChannelReading r;
    r.watts = 98.029;
    r.age_s = 0.05;
    r.read_duration_s = 0.001;
    r.read_at_unix = 1.7e9;
    r.reads_total = 10;
    return {sensors_, {r}, true, {}};
  }

 private:
  std::shared_ptr<const std::vector<sources::Sensor>> sensors_;
};

struct Server {
  cpupower::exporter::Service service;
  cpupower::exporter::HttpServer http;
  Server() : service(make_sources(), "fuzz") {
    cpupower::common::init_logging(spdlog::level::off);
    // What the stand-in serves is itself readable exposition.
    const std::string body = service.render_metrics();
    FUZZ_CHECK(cpupower::expo::parse(body).ok(), "the exporter's own /metrics does not parse");
    cpupower::exporter::HttpLimits limits;
    limits.connection_timeout_s = 2;
    const cpupower::Status started = http.start(
        "127.0.0.1", 0,
        [this](std::string_view m, std::string_view p) { return service.handle(m, p); }, limits);
    FUZZ_CHECK(started, "%s", started.error().c_str());
  }

  // At exit (server_instance): the socket watch too, which logs on its own thread (the stand-in's
  // reading never says how long it stays fresh, so it looks every 250 ms).
  void stop() {
    http.stop();
    service.stop(std::chrono::milliseconds(100));
  }

  static std::vector<std::unique_ptr<sources::Source>> make_sources() {
    std::vector<std::unique_ptr<sources::Source>> out;
    out.push_back(std::make_unique<StandInSource>());
    return out;
  }
};

// The reply to `request` on a new connection: everything the server sends until it closes or
// falls silent. Whether the server closes on the client's half-close is its own business (it
// may keep an HTTP/1.1 connection after the reply, or wait out an incomplete request), so the
// wait ends 10 ms after the last byte received, and for the first byte after 250 ms when the
// request holds a blank line (the end of a header) and after 20 ms when it does not (no reply
// is due to an incomplete request, unless it is refused at once).
std::string round_trip(std::uint16_t port, std::string_view request) {
  namespace fz = cpupower::fuzz;
  const int fd = fz::connect_loopback(port);
  fz::send_all(fd, request);
  ::shutdown(fd, SHUT_WR);
  const bool header_ends = request.find("\n\n") != std::string_view::npos ||
                           request.find("\n\r\n") != std::string_view::npos;
  std::string reply;
  const auto first = header_ends ? 250ms : 20ms;
  char buf[4096];
  while (fz::readable_within(fd, reply.empty() ? first : 10ms)) {
    const ssize_t n = fz::receive(fd, buf, sizeof buf);
    if (n <= 0) break;
    reply.append(buf, static_cast<std::size_t>(n));
  }
  fz::reset_close(fd);
  return reply;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Server* const server = &cpupower::fuzz::server_instance<Server>();
  const std::string reply = round_trip(server->http.port(), cpupower::fuzz::as_text(data, size));
  if (cpupower::fuzz::verbose()) {
    std::fprintf(stderr, "reply: %.*s\n", static_cast<int>(reply.find('\r')), reply.c_str());
  }
  if (!reply.empty()) {
    FUZZ_CHECK(reply.rfind("HTTP/1.", 0) == 0, "a reply that is not HTTP: %.40s", reply.c_str());
  }
  return 0;
}
