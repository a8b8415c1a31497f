#include "sim/sim_gpu.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <mutex>
#include <optional>

#include "sim/power_model.hpp"
#include "sim/ticker.hpp"

namespace cpupower::sim {
namespace {

using std::chrono::milliseconds;

// What Go's net/http sends for a body it had to sniff (dcgm-exporter sets no Content-Type).
constexpr std::string_view kGoTextPlain = "text/plain; charset=utf-8";

// Each GPU's energy counter starts where a node up for a while would be (mJ since boot),
// different per GPU like real counters.
constexpr double kEnergyBaseMj = 1.0e9;
constexpr double kEnergyStepMj = 123456789.0;

// Load-model boards are not identical: GPU n draws this much more or less than the model.
double board_offset(std::uint32_t index) {
  static constexpr double kOffsets[] = {0.0, 0.012, -0.008, 0.02, -0.015, 0.005, -0.02, 0.01};
  return kOffsets[index % (sizeof kOffsets / sizeof kOffsets[0])];
}

// This machine's host name (gethostname), "localhost" when it has none.
std::string local_hostname() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0 || buf[0] == '\0') return "localhost";
  return buf;
}

}  // namespace

struct SimGpu::Impl {
  SimGpuOptions options;
  std::string hostname;
  std::optional<GpuTrace> trace;
  std::optional<LoadTracker> load;
  std::vector<Noise> noise;

  exporter::HttpServer server;
  Ticker ticker;  // the collections; its stop also releases held requests
  Clock::time_point start{};
  bool started = false;

  mutable std::mutex mu;
  std::vector<GpuReadout> readouts;  // the latest collection
  std::vector<double> energy_mj;     // unrounded counters
  Clock::time_point last_collect{};

  explicit Impl(SimGpuOptions o) : options(std::move(o)) {}

  // The power of GPU g at `now` (load: the tracker must have sampled already).
  double power(std::uint32_t g, Clock::time_point now) {
    switch (options.power.mode) {
      case GpuPowerSpec::Mode::constant:
        return options.power.constant_w;
      case GpuPowerSpec::Mode::trace:
        return trace->watts_at(g, std::chrono::duration<double>(now - start).count());
      case GpuPowerSpec::Mode::load:
        break;
    }
    double w = gpu_load_watts(load->utilisation(0), options.idle_w, options.max_w) *
               (1.0 + board_offset(g));
    if (options.noise) w += noise[g].next(1.5);
    return std::clamp(w, 0.0, options.max_w * 1.05);
  }

  // One collection: new readings, the energy counters integrated (trapezoid) since the last.
  void collect(Clock::time_point now, bool first) {
    if (load) load->sample(now);
    std::lock_guard<std::mutex> lock(mu);
    const double dt_s = first ? 0.0 : std::chrono::duration<double>(now - last_collect).count();
    for (std::uint32_t g = 0; g < options.gpus; ++g) {
      const double watts = power(g, now);
      const double previous_w = first ? watts : readouts[g].power_w;
      energy_mj[g] += 0.5 * (previous_w + watts) * dt_s * 1000.0;
      readouts[g] = derive_gpu_readout(watts, options.idle_w, options.max_w);
      readouts[g].energy_mj = static_cast<std::int64_t>(std::floor(energy_mj[g]));
    }
    last_collect = now;
  }

  milliseconds elapsed_ms() const {
    return std::chrono::duration_cast<milliseconds>(Clock::now() - start);
  }
};

SimGpu::SimGpu(SimGpuOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {
  impl_->hostname = impl_->options.hostname.empty() ? local_hostname() : impl_->options.hostname;
}

SimGpu::~SimGpu() {
  stop();
}

Status SimGpu::start() {
  auto& d = *impl_;
  const auto& o = d.options;
  if (d.started) return Error{"already started"};
  if (o.gpus == 0) return Error{"no GPUs to simulate"};
  if (o.collect_interval.count() <= 0) return Error{"the collection interval must be positive"};
  if (!(o.max_w > o.idle_w) || o.idle_w < 0) {
    return Error{"max power must be above idle power (both >= 0)"};
  }
  for (const auto& f : o.faults) {
    if ((f.kind == GpuFault::Kind::vanish || f.kind == GpuFault::Kind::uuid_change) &&
        f.gpu >= o.gpus) {
      return Error{"fault " + std::string(gpu_fault_kind_name(f.kind)) + " names gpu " +
                   std::to_string(f.gpu) + ", but there are " + std::to_string(o.gpus) + " GPUs"};
    }
  }
  for (const auto g : o.mig_gpus) {
    if (g >= o.gpus) {
      return Error{"MIG GPU " + std::to_string(g) + " does not exist (there are " +
                   std::to_string(o.gpus) + " GPUs)"};
    }
  }
  if (o.power.mode == GpuPowerSpec::Mode::trace) {
    auto trace = GpuTrace::load(o.power.trace_path, o.gpus);
    if (!trace) return Error{trace.error()};
    d.trace = std::move(*trace);
  }
  d.start = Clock::now();
  if (o.power.mode == GpuPowerSpec::Mode::load) {
    d.load.emplace(o.proc_stat, 1);
    if (Status primed = d.load->prime(d.start); !primed) return primed;
    for (std::uint32_t g = 0; g < o.gpus; ++g) d.noise.emplace_back(o.seed * 1000003ULL + g);
  }
  d.readouts.assign(o.gpus, GpuReadout{});
  d.energy_mj.resize(o.gpus);
  for (std::uint32_t g = 0; g < o.gpus; ++g) d.energy_mj[g] = kEnergyBaseMj + kEnergyStepMj * g;
  d.collect(d.start, true);

  exporter::HttpLimits limits;
  // Slow and hang faults hold a polling thread each; a few let other clients through a slow
  // response, and a hang eventually holds them all, as a hung exporter does.
  limits.threads = 4;
  if (Status started = d.server.start(
          o.bind_ip, o.port,
          [this](std::string_view method, std::string_view path) { return respond(method, path); },
          limits);
      !started) {
    return started;
  }
  d.ticker.start(d.start + o.collect_interval,
                 [&d, next = d.start + o.collect_interval](Clock::time_point now) mutable {
                   d.collect(now, false);
                   return next = next_tick(next, d.options.collect_interval, Clock::now());
                 });
  d.started = true;
  return Ok{};
}

void SimGpu::stop() {
  impl_->ticker.stop();
  impl_->server.stop();
}

const std::string& SimGpu::address() const {
  return impl_->server.address();
}

std::uint16_t SimGpu::port() const {
  return impl_->server.port();
}

const std::string& SimGpu::hostname() const {
  return impl_->hostname;
}

std::string SimGpu::exposition_at(milliseconds elapsed) const {
  const auto& d = *impl_;
  const auto& o = d.options;
  const auto state = gpu_fault_state_at(o.faults, elapsed);
  std::vector<GpuReadout> readouts;
  {
    std::lock_guard<std::mutex> lock(d.mu);
    readouts = d.readouts;
  }
  std::vector<GpuSeries> series;
  ExpositionOptions eo;
  eo.hostname = o.hostname_label ? d.hostname : std::string();
  eo.driver_version = o.driver_version;
  eo.profiling = o.profiling;
  eo.names = o.names;
  for (std::uint32_t g = 0; g < o.gpus && g < readouts.size(); ++g) {
    if (state.vanished.count(g)) continue;
    GpuSeries s;
    s.index = g;
    const auto gen = state.uuid_generation.find(g);
    s.uuid =
        simulated_gpu_uuid(d.hostname, g, gen == state.uuid_generation.end() ? 0 : gen->second);
    s.pci_bus_id = simulated_pci_bus_id(g);
    s.model_name = o.model_name;
    s.values = readouts[g];
    if (std::find(o.mig_gpus.begin(), o.mig_gpus.end(), g) != o.mig_gpus.end()) {
      s.mig = {{1, "3g.48gb"}, {2, "4g.48gb"}};
    }
    series.push_back(std::move(s));
    if (o.kubernetes) {
      eo.pods.push_back({"main", "default", "sim-workload-" + std::to_string(g)});
    }
  }
  return render_dcgm_exposition(series, eo);
}

exporter::HttpResponse SimGpu::respond(std::string_view method, std::string_view path) {
  (void)method;  // like Go's mux, every method gets the route's answer
  auto& d = *impl_;
  exporter::HttpResponse r;
  r.content_type = std::string(kGoTextPlain);
  auto state = gpu_fault_state_at(d.options.faults, d.elapsed_ms());
  bool stopped = false;
  while (state.hang && !stopped) {
    stopped = d.ticker.wait_until(state.hang_until ? std::optional(d.start + *state.hang_until)
                                                   : std::nullopt);
    state = gpu_fault_state_at(d.options.faults, d.elapsed_ms());
  }
  if (stopped || (state.delay.count() > 0 && d.ticker.wait_until(Clock::now() + state.delay))) {
    r.status = 503;
    r.body = "stopping\n";
    return r;
  }

  if (path == "/metrics") {
    if (state.http500) {
      r.status = 500;
      r.body = "internal server error\n";  // Go's http.Error adds the newline
    } else if (state.garbage) {
      r.body = std::string(garbage_body());
    } else {
      r.body = exposition_at(d.elapsed_ms());
    }
  } else if (path == "/health") {
    r.body = "OK";
  } else if (path == "/") {
    r.content_type = "text/html; charset=utf-8";
    r.body =
        "<html>\n<head><title>GPU Exporter</title></head>\n<body>\n<h1>GPU Exporter</h1>\n"
        "<p><a href=\"./metrics\">Metrics</a></p>\n</body>\n</html>";
  } else {
    r.status = 404;
    r.body = "404 page not found\n";
  }
  return r;
}

}  // namespace cpupower::sim
