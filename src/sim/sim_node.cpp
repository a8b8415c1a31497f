#include "sim/sim_node.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cmath>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <thread>

#include "common/log.hpp"
#include "common/text.hpp"
#include "sim/ticker.hpp"
#include "sim/tree_writer.hpp"

namespace cpupower::sim {
namespace {

using std::chrono::milliseconds;

// What older kernels print for the firmware's 0xFFFFFFFF mW "unknown" reading.
constexpr std::string_view kInvalidReading = "4294967295000\n";
constexpr std::int64_t kNoReading = -1;
// The averaging intervals Grace's _PAI accepts, in ms, and the range the _min and _max
// attributes advertise.
constexpr std::int64_t kIntervalMinMs = 50;
constexpr std::int64_t kIntervalMaxMs = 1000;
// Longer than the longest averaging interval, so that every mean finds its whole window.
constexpr double kHistoryKeepS = 2.0;

bool accepted_interval(std::int64_t ms) {
  return ms == kIntervalMinMs || ms == kIntervalMaxMs;
}

// A number as sysfs shows it: decimal, then a newline.
std::string sysfs_line(std::int64_t n) {
  return std::to_string(n) + "\n";
}

// Every attribute of one power meter channel, power1_average first.
std::vector<std::pair<std::string, std::string>> meter_attributes(
    const ChannelSpec& spec, std::chrono::milliseconds interval, std::string value) {
  return {{"power1_average", std::move(value)},
          {"power1_oem_info", spec.oem_info + "\n"},
          {"power1_average_interval", sysfs_line(interval.count())},
          {"power1_average_interval_min", sysfs_line(kIntervalMinMs)},
          {"power1_average_interval_max", sysfs_line(kIntervalMaxMs)},
          {"power1_accuracy", "95.0%\n"},
          {"power1_is_battery", "0\n"},
          {"power1_model_number", "\n"}};
}

std::int64_t to_microwatts(double watts) {
  if (!std::isfinite(watts) || watts <= 0) return 0;
  return std::llround(watts * 1e6);
}

// Never lets a reader that went away kill the process: the writer's thread blocks SIGPIPE and
// swallows the one its failed write raised.
void discard_pending_sigpipe() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGPIPE);
  timespec zero{};
  while (sigtimedwait(&set, nullptr, &zero) == SIGPIPE) {
  }
}

void write_all_nonblocking(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EPIPE) discard_pending_sigpipe();
      return;  // EPIPE: the reader left; EAGAIN: it stopped reading. Neither is ours to fix.
    }
    data.remove_prefix(static_cast<std::size_t>(n));
  }
}

}  // namespace

struct SimNode::Impl {
  enum class FileState { regular, socket, fifo };

  struct Channel {
    ChannelSpec spec;
    std::size_t index = 0;  // into channels
    // The file holding power1_average. Owned by the update thread (a writer thread reads it
    // while it runs); infos[index] shows it to channels() once the node is visible.
    std::string value_path;
    std::optional<Fault> fault;
    FileState state = FileState::regular;
    bool failing = false;  // a write error was already logged
    std::atomic<std::int64_t> model_uw{0};
    // Update thread only: the underlying power, how far the trace's steps were fed into
    // it, the averaging interval, and how many polls in a row found its file unacceptable.
    PowerHistory history{kHistoryKeepS};
    double trace_until_s = 0.0;
    int bad_interval_polls = 0;
    // Written by the update thread only; atomic for average_interval().
    std::atomic<std::int64_t> interval_ms{50};
    milliseconds interval() const { return milliseconds(interval_ms.load()); }
    // Held across a value's file change and reading_uw, so that whoever saw the new file
    // content and then asks current_watts() never gets the value before it.
    mutable std::mutex value_mutex;
    std::atomic<std::int64_t> reading_uw{kNoReading};
    // Slow fault: the thread feeding the FIFO, one value per reader open.
    std::thread writer;
    std::mutex writer_mutex;
    std::condition_variable writer_cv;
    bool writer_stop = false;  // guarded by writer_mutex
  };

  explicit Impl(SimOptions o) : options(std::move(o)), noise_source(options.seed) {}

  SimOptions options;
  // Written by the update thread (re-registration) under infos_mutex; channels() copies.
  mutable std::mutex infos_mutex;
  std::vector<ChannelInfo> infos;
  std::string abs_root;
  int next_hwmon = 0;  // the number the next re-registration gets
  std::vector<std::unique_ptr<Channel>> channels;
  std::optional<LoadTracker> tracker;
  std::optional<Trace> trace;
  Noise noise_source;
  Clock::time_point started_at{};
  double started_unix = 0;  // started_at on the system clock: a trace's time 0
  std::shared_ptr<spdlog::logger> log = common::logger("cpu_power::sim");

  mutable std::mutex mutex;  // overrides, lifecycle flags
  std::map<std::string, double> overrides;
  bool started = false;
  bool stopped = false;
  // The update thread's schedule: the next publication, load sample and fault window edge.
  Ticker ticker;
  Clock::time_point next_update{}, next_sample{}, boundary{};

  // The channel's power1_average_interval, beside its value file.
  static std::string interval_path(const Channel& c) {
    return c.value_path.substr(0, c.value_path.rfind('/') + 1) + "power1_average_interval";
  }

  Channel* find(const std::string& key) const {
    for (const auto& c : channels) {
      if (c->spec.key == key) return c.get();
    }
    return nullptr;
  }

  Status validate() const {
    if (options.root.empty()) return Error{"no root directory given"};
    if (is_rapl_profile(options.profile)) {
      return Error{"profile " + std::string(profile_name(options.profile)) +
                   " is an x86 node with RAPL zones, not hwmon power meters (SimRaplNode)"};
    }
    if (options.update_interval.count() <= 0) return Error{"update interval must be > 0 ms"};
    if (!accepted_interval(options.average_interval.count())) {
      return Error{"averaging interval must be 50 or 1000 ms"};
    }
    if (options.sample_step.count() <= 0) return Error{"sample step must be > 0 ms"};
    if (!(options.load >= 0.0 && options.load <= 1.0)) return Error{"load must be within 0..1"};
    if (options.model == Model::trace && options.trace_path.empty()) {
      return Error{"the trace model needs a trace file"};
    }
    for (const auto& [key, fault] : options.faults) {
      if (!find(key)) {
        std::string known;
        for (const auto& c : channels) known += (known.empty() ? "" : ", ") + c->spec.key;
        return Error{"fault for unknown channel '" + key + "' (profile " +
                     std::string(profile_name(options.profile)) + " has " + known + ")"};
      }
      if (fault.kind == Fault::Kind::slow && options.once) {
        return Error{"slow fault on '" + key + "' needs a running node, not a one-shot tree"};
      }
      if (fault.kind == Fault::Kind::slow && fault.delay.count() <= 0) {
        return Error{"slow fault on '" + key + "' needs a delay > 0 ms"};
      }
    }
    return Ok{};
  }

  void build_channels(const std::string& root) {
    const auto specs = profile_channels(options.profile);
    if (channels.empty()) {
      for (std::size_t i = 0; i < specs.size(); ++i) {
        auto c = std::make_unique<Channel>();
        c->spec = specs[i];
        c->index = i;
        c->interval_ms = options.average_interval.count();
        if (auto f = options.faults.find(specs[i].key); f != options.faults.end()) {
          c->fault = f->second;
        }
        channels.push_back(std::move(c));
      }
      infos.resize(specs.size());
    }
    for (std::size_t i = 0; i < specs.size(); ++i) {
      NodeSpec node{power_meter_hwmon(i), acpi_device_dir(i), "power_meter", options.layout, {}};
      infos[i] = ChannelInfo{specs[i], node.hwmon, attribute_dir(root, node) + "/power1_average"};
      channels[i]->value_path = infos[i].value_path;
    }
  }

  Status write_tree() {
    const std::string& root = options.root;
    if (Status prepared = prepare_root(root); !prepared) return prepared;
    std::error_code ec;
    const auto canonical = std::filesystem::canonical(root, ec);
    if (ec) return Error{"cannot resolve root " + root + ": " + ec.message()};
    abs_root = canonical.string();
    build_channels(abs_root);

    if (options.model == Model::load) {
      tracker.emplace(options.proc_stat, profile_sockets(options.profile));
      if (Status primed = tracker->prime(Clock::now()); !primed) return primed;
    }
    if (options.model == Model::trace) {
      auto loaded = Trace::load(options.trace_path, profile_channels(options.profile));
      if (!loaded) return Error{loaded.error()};
      trace = std::move(*loaded);
    }

    // Unrelated hwmon devices a consumer must skip: a thermal zone, and an NVMe drive that
    // even reports a power1_average of its own.
    std::vector<NodeSpec> nodes;
    nodes.push_back(NodeSpec{"hwmon0",
                             "devices/virtual/thermal/thermal_zone0",
                             "acpitz",
                             Layout::modern,
                             {{"temp1_input", "45000\n"}}});
    nodes.push_back(NodeSpec{"hwmon1",
                             "devices/pci0000:00/0000:00:01.0/nvme/nvme0",
                             "nvme",
                             options.layout,
                             {{"temp1_input", "38850\n"}, {"power1_average", "5000000\n"}}});
    for (std::size_t i = 0; i < channels.size(); ++i) {
      const auto& c = *channels[i];
      // power1_average first holds the unfaulted first value; apply() below lays any fault
      // active at t = 0 over it before the class entry makes the node visible.
      nodes.push_back(NodeSpec{power_meter_hwmon(i), acpi_device_dir(i), "power_meter",
                               options.layout,
                               meter_attributes(c.spec, c.interval(), sysfs_line(0))});
    }
    if (!channels.empty()) {
      // Re-registration numbers continue after the highest power meter's.
      next_hwmon = std::stoi(power_meter_hwmon(channels.size() - 1).substr(5)) + 1;
    }
    for (const auto& node : nodes) {
      if (Status written = write_node(abs_root, node); !written) return written;
    }
    started_at = Clock::now();
    started_unix =
        std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    if (Status first = update(started_at, true); !first) return first;
    for (const auto& node : nodes) {
      if (Status linked = link_class_entry(abs_root, node); !linked) return linked;
    }
    return Ok{};
  }

  double underlying(const Channel& c, double t_s) const {
    switch (options.model) {
      case Model::load:
        return model_watts(options.profile, c.spec.kind,
                           tracker ? tracker->utilisation(c.spec.socket) : 0.0);
      case Model::trace:
        if (trace) {
          if (const auto v = trace->value_at(c.spec.key, t_s)) return *v;
        }
        [[fallthrough]];
      case Model::constant:
        break;
    }
    return model_watts(options.profile, c.spec.kind, options.load);
  }

  void feed(Channel& c, double t_s, const std::optional<double>& forced) {
    if (forced) {
      c.history.set(t_s, *forced);
      c.trace_until_s = t_s;
      return;
    }
    if (trace) {
      // A trace's steps go in at their own times, so its averages are exact whatever the
      // update and sample cadence.
      for (const auto& [at_s, watts] : trace->steps(c.spec.key, c.trace_until_s, t_s)) {
        c.history.set(at_s, watts);
      }
      c.trace_until_s = t_s;
    }
    c.history.set(t_s, underlying(c, t_s));
  }

  // Feeds every channel's underlying power up to `now`, the load model sampled first unless
  // this is the first update (priming took its reading); the overrides it used.
  std::map<std::string, double> sample_models(Clock::time_point now, bool first = false) {
    if (tracker && !first) tracker->sample(now);
    const double t_s = seconds(now - started_at);
    const auto forced = [this] {
      std::lock_guard lock(mutex);
      return overrides;
    }();
    for (auto& c : channels) {
      const auto f = forced.find(c->spec.key);
      feed(*c, t_s, f == forced.end() ? std::nullopt : std::optional(f->second));
    }
    return forced;
  }

  // The first update's first failing channel is its error; other failures are logged.
  Status update(Clock::time_point now, bool first) {
    Status result = Ok{};
    const auto elapsed = std::chrono::duration_cast<milliseconds>(now - started_at);
    const double t_s = seconds(now - started_at);
    const auto forced = sample_models(now, first);
    for (auto& c : channels) {
      const bool overridden = forced.count(c->spec.key) > 0;
      // What the firmware publishes: the mean over the averaging interval ending now.
      double watts = c->history.mean(t_s - seconds(c->interval()), t_s);
      // Measurement noise on the published value. It is drawn even when overridden, so the
      // noise sequence for a seed does not depend on which channels were forced.
      const double noise =
          options.model == Model::load && options.noise ? noise_source.next(kNoiseAmplitudeW) : 0.0;
      if (!overridden) watts += noise;
      std::unique_lock value_lock(c->value_mutex);
      const Status applied = apply(*c, to_microwatts(watts), elapsed);
      value_lock.unlock();
      if (applied) {
        c->failing = false;
      } else if (first && result) {
        result = applied;
      } else if (!c->failing) {
        c->failing = true;
        log->warn("cannot update channel={} error={}", c->spec.key,
                  common::quoted(applied.error()));
      }
    }
    return result;
  }

  void poll_intervals(Clock::time_point now) {
    for (auto& c : channels) {
      const std::string path = interval_path(*c);
      const auto text = common::read_small_file(path, 64);
      const std::string content = text ? std::string(common::trim(*text)) : std::string("<none>");
      const auto ms = text ? common::parse_u64(content) : std::nullopt;
      const auto wanted = ms && *ms <= 3600000
                              ? std::optional<std::int64_t>(static_cast<std::int64_t>(*ms))
                              : std::nullopt;
      if (wanted && *wanted == c->interval().count()) {
        c->bad_interval_polls = 0;
        if (*text != sysfs_line(c->interval().count())) {
          // "50" -> "50\n", as sysfs shows it
          (void)write_atomic(path, sysfs_line(c->interval().count()));
        }
        continue;
      }
      if (wanted && accepted_interval(*wanted)) {
        change_interval(*c, milliseconds(*wanted), now);
        continue;
      }
      // Seen twice in a row: a writer caught between truncation and write gets another poll.
      if (++c->bad_interval_polls < 2) continue;
      c->bad_interval_polls = 0;
      log->warn(
          "power1_average_interval holds a value the firmware refuses; putting back the interval "
          "(a real kernel fails such a write with EINVAL) channel={} content={} interval_ms={}",
          c->spec.key, common::quoted(content.substr(0, 32)), c->interval().count());
      if (const Status restored = write_atomic(path, sysfs_line(c->interval().count()));
          !restored) {
        log->warn("cannot restore power1_average_interval channel={} error={}", c->spec.key,
                  common::quoted(restored.error()));
      }
    }
  }

  void change_interval(Channel& c, milliseconds interval, Clock::time_point now) {
    const auto from = c.interval();
    c.interval_ms = interval.count();
    c.bad_interval_polls = 0;
    if (options.layout == Layout::modern) {
      reregister(c, now);
      return;
    }
    // Kernels <= 6.14 keep the hwmon device on a CONFIG notify: only the value changes.
    (void)write_atomic(interval_path(c), sysfs_line(interval.count()));
    log->info("averaging interval changed channel={} from_ms={} to_ms={}", c.spec.key, from.count(),
              interval.count());
  }

  void reregister(Channel& c, Clock::time_point now) {
    namespace fs = std::filesystem;
    std::lock_guard value_lock(c.value_mutex);
    const std::size_t i = c.index;
    const std::string old_hwmon = infos[i].hwmon;
    // A slow or hang FIFO goes first: its readers get a value and its writer thread stops
    // before the directory it writes in disappears.
    if (c.state == FileState::fifo) {
      if (const Status retired = retire_fifo(c, sysfs_line(c.model_uw)); !retired) {
        log->warn("cannot retire channel={} error={}", c.spec.key, common::quoted(retired.error()));
      }
    }
    // hwmon_device_unregister: the class entry and the class directory disappear.
    const std::string device_dir = acpi_device_dir(i);
    ::unlink((abs_root + "/" + old_hwmon).c_str());
    std::error_code ec;
    fs::remove_all(abs_root + "/" + device_dir + "/hwmon/" + old_hwmon, ec);
    // hwmon_device_register_with_info: a new number, the same device and labels.
    NodeSpec node{"hwmon" + std::to_string(next_hwmon++), device_dir, "power_meter", options.layout,
                  meter_attributes(c.spec, c.interval(), sysfs_line(c.model_uw))};
    Status registered = write_node(abs_root, node);
    c.value_path = attribute_dir(abs_root, node) + "/power1_average";
    c.state = FileState::regular;
    c.reading_uw = c.model_uw.load();
    if (registered) {
      // Any fault active now applies to the new file before the node becomes visible.
      registered = apply(c, c.model_uw, std::chrono::duration_cast<milliseconds>(now - started_at));
      if (registered) registered = link_class_entry(abs_root, node);
    }
    {
      // channels() shows the new node only once it can be found under the root.
      std::lock_guard lock(infos_mutex);
      infos[i].hwmon = node.hwmon;
      infos[i].value_path = c.value_path;
    }
    if (!registered) {
      log->warn("cannot re-register channel={} error={}", c.spec.key,
                common::quoted(registered.error()));
      return;
    }
    log->info(
        "averaging interval changed; re-registered the hwmon device as the kernel does channel={} "
        "oem_info={} from={} to={} interval_ms={}",
        c.spec.key, common::quoted(c.spec.oem_info), old_hwmon, node.hwmon, c.interval().count());
  }

  Status apply(Channel& c, std::int64_t uw, milliseconds elapsed) {
    const std::string& path = c.value_path;
    c.model_uw = uw;
    const bool faulted = c.fault && c.fault->active_at(elapsed);
    const auto kind = faulted ? std::optional(c.fault->kind) : std::nullopt;

    if (kind == Fault::Kind::unreadable) {
      if (c.state == FileState::socket) return Ok{};
      if (c.state == FileState::fifo) {
        if (Status s = retire_fifo(c, sysfs_line(uw)); !s) return s;
      }
      c.reading_uw = kNoReading;
      if (Status s = replace_with_socket(path); !s) return s;
      c.state = FileState::socket;
      return Ok{};
    }
    if (kind == Fault::Kind::slow || kind == Fault::Kind::hang) {
      c.reading_uw = kind == Fault::Kind::slow ? uw : kNoReading;
      if (c.state == FileState::fifo) return Ok{};
      if (Status s = replace_with_fifo(path); !s) return s;
      c.state = FileState::fifo;
      if (kind == Fault::Kind::slow) start_writer(c);
      return Ok{};
    }

    std::string content;
    std::int64_t reading = kNoReading;
    if (!kind) {
      content = sysfs_line(uw);
      reading = uw;
    } else if (kind == Fault::Kind::invalid) {
      content = kInvalidReading;
    } else if (kind == Fault::Kind::zero) {
      content = "0\n";
      reading = 0;
    }  // empty: no content
    const Status written =
        c.state == FileState::fifo ? retire_fifo(c, content) : write_atomic(path, content);
    if (!written) return written;
    c.state = FileState::regular;
    c.reading_uw = reading;
    return Ok{};
  }

  Status retire_fifo(Channel& c, std::string_view content) {
    const std::string& path = c.value_path;
    // A slow writer's last act is a fresh FIFO, so the only readers left on the one at `path`
    // are blocked in open() and have had no value yet.
    if (c.writer.joinable()) stop_writer(c);
    // Holding the FIFO open read-write is a writer arriving: readers blocked in open() wake up.
    // The handle also keeps the inode reachable after the rename, so every reader that got in
    // before the regular file replaced it receives a value instead of hanging. Several such
    // readers share one pipe: the first gets the value, the rest read EOF.
    const int keep = ::open(path.c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC);
    Status written = write_atomic(path, content);
    if (keep >= 0) {
      const std::string line = content.empty() ? sysfs_line(c.model_uw) : std::string(content);
      write_all_nonblocking(keep, line);
      ::close(keep);
    }
    if (written) c.state = FileState::regular;
    return written;
  }

  void start_writer(Channel& c) {
    {
      std::lock_guard lock(c.writer_mutex);
      c.writer_stop = false;
    }
    c.writer = std::thread([this, &c] { writer_loop(c); });
  }

  void stop_writer(Channel& c) {
    {
      std::lock_guard lock(c.writer_mutex);
      c.writer_stop = true;
    }
    c.writer_cv.notify_all();
    // A reader of our own lets a writer blocked in open() through; it stays open until the
    // join so that the writer's final write cannot hit a pipe with no reader.
    const int unblock = ::open(c.value_path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    c.writer.join();
    if (unblock >= 0) ::close(unblock);
  }

  void writer_loop(Channel& c) {
    sigset_t pipe_set;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_set, nullptr);

    const std::string path = c.value_path;
    const auto delay = c.fault ? c.fault->delay : milliseconds(0);
    auto pause = [&c](milliseconds how_long) {
      std::unique_lock lock(c.writer_mutex);
      return c.writer_cv.wait_for(lock, how_long, [&c] { return c.writer_stop; });
    };
    bool logged = false;
    while (!pause(milliseconds(0))) {
      const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);  // blocks until a reader opens
      if (fd < 0) {
        if (errno != EINTR) pause(milliseconds(10));
        continue;
      }
      struct stat st {};
      if (::fstat(fd, &st) != 0 || !S_ISFIFO(st.st_mode)) {  // replaced behind our back
        ::close(fd);
        pause(milliseconds(10));
        continue;
      }
      // The firmware round trip. The value is the one published half-way through it: when
      // in the round trip firmware takes its value is not known, and the middle is what the
      // exporter assumes when it dates a read by its midpoint. Stopping cuts the trip short;
      // the reader still gets its value.
      const auto half = delay / 2;
      pause(half);
      const std::string value = sysfs_line(c.model_uw);
      pause(delay - half);
      // A fresh FIFO for the next reader before this one gets its value: a reader that has its
      // value but has not yet seen EOF must never see a second writer (and a second value) on
      // its inode, and a reader that opens the path once this one has its value must get the
      // fresh FIFO, not this one's EOF, however late either gets scheduled.
      if (const Status renewed = replace_with_fifo(path); !renewed && !logged) {
        logged = true;
        log->warn("cannot renew slow channel={} error={}", c.spec.key,
                  common::quoted(renewed.error()));
      }
      ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
      write_all_nonblocking(fd, value);
      ::close(fd);
    }
  }

  // The update thread's work at `at`; when it is due next.
  Clock::time_point tick(Clock::time_point at) {
    bool publish = at >= boundary;
    if (at >= next_update) {
      publish = true;
      next_update = next_tick(next_update, options.update_interval, at);
    }
    if (at >= next_sample) {
      next_sample = next_tick(next_sample, options.sample_step, at);
      if (!publish) sample_models(at);  // a publication samples too
    }
    if (publish) {
      poll_intervals(at);
      (void)update(at, false);  // not the first: it logs its failures
    }
    return next_wake();
  }

  Clock::time_point next_wake() {
    const auto elapsed = std::chrono::duration_cast<milliseconds>(Clock::now() - started_at);
    boundary = Clock::time_point::max();
    for (const auto& c : channels) {
      if (!c->fault) continue;
      for (const auto edge : {std::optional(c->fault->from), c->fault->to}) {
        if (edge && *edge > elapsed) boundary = std::min(boundary, started_at + *edge);
      }
    }
    return std::min({next_update, next_sample, boundary});
  }

  void release_files() {
    for (auto& c : channels) {
      std::lock_guard value_lock(c->value_mutex);
      if (c->writer.joinable()) stop_writer(*c);
      if (c->state != FileState::fifo) continue;
      if (const Status retired = retire_fifo(*c, sysfs_line(c->model_uw)); !retired) {
        log->warn("cannot restore channel={} error={}", c->spec.key,
                  common::quoted(retired.error()));
      }
      c->reading_uw = static_cast<std::int64_t>(c->model_uw);
    }
  }
};

SimNode::SimNode(SimOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {
  std::error_code ec;
  auto root = std::filesystem::weakly_canonical(impl_->options.root, ec);
  if (ec) root = std::filesystem::absolute(impl_->options.root, ec).lexically_normal();
  impl_->build_channels(root.string());
}

SimNode::~SimNode() {
  stop();
}

Status SimNode::start() {
  {
    std::lock_guard lock(impl_->mutex);
    if (impl_->started) return Error{"simulated node already started"};
    impl_->started = true;
  }
  Status started = impl_->validate();
  if (started) started = impl_->write_tree();
  if (!started) {
    impl_->release_files();
    return started;
  }
  if (!impl_->options.once) {
    auto& d = *impl_;
    d.next_update = d.started_at + d.options.update_interval;
    d.next_sample = d.options.model == Model::load ? d.started_at + d.options.sample_step
                                                   : Clock::time_point::max();
    d.ticker.start(d.next_wake(), [&d](Clock::time_point at) { return d.tick(at); });
  }
  return Ok{};
}

void SimNode::stop() {
  {
    std::lock_guard lock(impl_->mutex);
    if (!impl_->started || impl_->stopped) return;
    impl_->stopped = true;
  }
  impl_->ticker.stop();
  if (!impl_->options.once) impl_->release_files();
}

std::vector<ChannelInfo> SimNode::channels() const {
  std::lock_guard lock(impl_->infos_mutex);
  return impl_->infos;
}

std::optional<std::chrono::milliseconds> SimNode::average_interval(const std::string& key) const {
  const auto* c = impl_->find(key);
  if (!c) return std::nullopt;
  return c->interval();
}

void SimNode::set_override(const std::string& key, std::optional<double> watts) {
  if (!impl_->find(key)) return;
  std::lock_guard lock(impl_->mutex);
  if (watts) {
    impl_->overrides[key] = *watts;
  } else {
    impl_->overrides.erase(key);
  }
}

double SimNode::started_unix() const {
  return impl_->started_unix;
}

std::optional<double> SimNode::current_watts(const std::string& key) const {
  const auto* c = impl_->find(key);
  if (!c) return std::nullopt;
  {
    std::lock_guard lock(impl_->mutex);
    if (!impl_->started) return std::nullopt;
  }
  std::lock_guard value_lock(c->value_mutex);
  const std::int64_t uw = c->reading_uw;
  if (uw == kNoReading) return std::nullopt;
  return static_cast<double>(uw) / 1e6;
}

}  // namespace cpupower::sim
