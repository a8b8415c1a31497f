#include "scrape/collector.hpp"

#include <arpa/inet.h>
#include <pthread.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <queue>
#include <set>
#include <utility>

#include <fmt/ranges.h>

#include "artifacts/row_appender.hpp"
#include "common/log.hpp"
#include "common/version.hpp"
#include "scrape/cpu_leg.hpp"
#include "scrape/curl_api.hpp"

namespace cpupower::scrape {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// Slots of different endpoints are at least this far apart, or together; and only spread
// over the interval at all above this many endpoints (see Loop::run).
constexpr milliseconds kMinPhaseGap{5};
constexpr std::size_t kSpreadAbove = 64;

// Endpoints per libcurl multi handle. libcurl 7.88 walks its whole connection cache each
// time a transfer is removed (looking for CONNECT_ONLY connections), so one multi for a
// thousand kept-alive connections costs a thousand steps per scrape; shards bound that.
constexpr std::size_t kShardSize = 64;

// A change of wall minus monotonic larger than this between two cycles is a step of the wall
// clock, not reading jitter or slewing.
constexpr double kClockStepS = 0.25;

double seconds(auto duration) {
  return std::chrono::duration<double>(duration).count();
}

double now_unix() {
  return seconds(std::chrono::system_clock::now().time_since_epoch());
}

double wall_minus_monotonic() {
  const double mono = seconds(Clock::now().time_since_epoch());
  return now_unix() - mono;
}

// Logs a failing thing without flooding: the first failure of each reason right away, then
// at most one line per interval with how many failed since, and one line on recovery when
// the failure had been announced.
class RateLimitedLog {
 public:
  // Returns true when a line should be written now; `since` receives the failures that
  // went unlogged since the previous line.
  bool on_failure(std::string_view reason, Clock::time_point now, milliseconds interval,
                  std::uint64_t* since) {
    ++streak_;
    ++unlogged_;
    const bool new_reason = reasons_.insert(std::string(reason)).second;
    if (!new_reason && last_line_ && now - *last_line_ < interval) return false;
    *since = unlogged_;
    unlogged_ = 0;
    last_line_ = now;
    announced_ = true;
    return true;
  }
  // Returns true when the recovery should be logged; `streak` receives the failures it ends.
  bool on_success(Clock::time_point now, std::uint64_t* streak) {
    const bool log = streak_ > 0 && announced_;
    *streak = std::exchange(streak_, 0);
    if (log) last_line_ = now;
    unlogged_ = 0;
    announced_ = false;
    return log;
  }

 private:
  std::set<std::string> reasons_;
  std::optional<Clock::time_point> last_line_;
  std::uint64_t streak_ = 0;
  std::uint64_t unlogged_ = 0;
  bool announced_ = false;
};

bool is_ip_literal(const std::string& address) {
  unsigned char buf[sizeof(in6_addr)];
  const std::string bare = address.substr(0, address.find('%'));  // an IPv6 zone id
  return ::inet_pton(AF_INET, bare.c_str(), buf) == 1 ||
         ::inet_pton(AF_INET6, bare.c_str(), buf) == 1;
}

std::string_view reason_of(CURLcode code) {
  const bool resolve = code == CURLE_COULDNT_RESOLVE_HOST || code == CURLE_COULDNT_RESOLVE_PROXY;
  return resolve                            ? kReasonResolve
         : code == CURLE_COULDNT_CONNECT    ? kReasonConnect
         : code == CURLE_OPERATION_TIMEDOUT ? kReasonTimeout
         : code == CURLE_FILESIZE_EXCEEDED  ? kReasonBodyTooLarge
                                            : kReasonTransport;
}

}  // namespace

std::size_t CollectorStats::nodes_ok() const {
  return std::ranges::count_if(
      nodes, [](const auto& n) { return n.last_ok == true && n.sockets_missing.empty(); });
}

std::size_t CollectorStats::nodes_degraded() const {
  return std::ranges::count_if(
      nodes, [](const auto& n) { return n.last_ok == true && !n.sockets_missing.empty(); });
}

std::size_t CollectorStats::nodes_failing() const {
  return std::ranges::count_if(nodes, [](const auto& n) { return n.last_ok == false; });
}

std::uint64_t CollectorStats::rows_lost() const {
  std::uint64_t lost = 0;
  for (const auto& c : samples_file_changes) {
    if (c.change != artifacts::samples_file_change_name(artifacts::SamplesFileChange::moved)) {
      lost += c.rows_in_old_file;
    }
  }
  return lost;
}

std::string samples_health_text(const CollectorStats& stats) {
  std::string out;
  if (stats.samples_failing) {
    out = fmt::format("samples.csv FAILING ({}), rows dropped {}", *stats.samples_failing,
                      stats.rows_dropped);
  } else if (stats.rows_dropped > 0) {
    out = fmt::format("rows dropped {}", stats.rows_dropped);
  }
  const auto& changes = stats.samples_file_changes;
  if (!changes.empty()) {
    if (!out.empty()) out += ", ";
    const auto& last = changes.back();
    const std::string what = changes.size() == 1
                                 ? last.change
                                 : fmt::format("{} ({} times)", last.change, changes.size());
    const auto lost = stats.rows_lost();
    out += fmt::format("samples.csv {} mid-run ({}; writing a new one)", what,
                       lost > 0 ? fmt::format("{} rows lost with it", lost)
                                : std::string("earlier rows moved with it"));
  }
  return out;
}

// Everything the loop thread shares with the caller. Held through a shared pointer so that
// a loop left behind by a join timeout still owns what it touches.
struct detail::CollectorState {
  std::vector<Endpoint> endpoints;
  CollectorOptions options;
  // Taken before writer_mutex when both are held: every call into the leg holds it.
  std::mutex leg_mutex;
  std::unique_ptr<Leg> leg;
  std::string samples_path;
  std::string manifest_path;
  std::shared_ptr<spdlog::logger> log = common::logger("cpu_power::collector");
  std::optional<double> started_at_unix;

  mutable std::mutex stats_mutex;
  std::vector<NodeStats> nodes;

  // Taken before stats_mutex when both are held. Everything about samples.csv lives under it.
  mutable std::mutex writer_mutex;
  std::unique_ptr<artifacts::RowAppender> writer;
  bool writer_closed = false;               // finalize closed it for good; never reopen
  std::uint64_t rows_dropped_unopened = 0;  // rows with no writer to take them
  std::uint64_t open_failures = 0;
  // The counters of writers given up on (a file that could not be opened again).
  std::uint64_t retired_written = 0;
  std::uint64_t retired_dropped = 0;
  std::uint64_t retired_errors = 0;
  std::optional<std::string> samples_failing;  // errno text while writes or opens fail
  std::vector<SamplesWriteError> write_error_log;
  std::vector<SamplesFileEvent> file_changes;

  std::uint64_t rows_written_locked() const {
    return retired_written + (writer ? writer->rows_written() : 0);
  }
  std::uint64_t rows_dropped_locked() const {
    return rows_dropped_unopened + retired_dropped + (writer ? writer->rows_dropped() : 0);
  }

  std::atomic<bool> stop_requested{false};
  int wake_fd = -1;  // eventfd in the loop's epoll set: stop() writes to it

  std::vector<WallClockStep> clock_steps;  // under stats_mutex

  // A signal's stop: set before stop_requested, and the final cycle drains briefly.
  std::atomic<bool> interrupted{false};

  ~CollectorState() {
    if (wake_fd >= 0) ::close(wake_fd);
  }
  void wake() const {
    const std::uint64_t one = 1;
    [[maybe_unused]] const auto w = ::write(wake_fd, &one, sizeof one);
  }

  std::mutex done_mutex;
  std::condition_variable done_cv;
  bool done = false;
};

namespace {

// One endpoint's request state; lives at a fixed address for libcurl's callbacks.
struct Transfer {
  CURL* easy = nullptr;
  std::size_t shard = 0;
  std::string url;
  std::string body;
  std::size_t max_body_bytes = 0;
  bool over_cap = false;
  bool in_flight = false;
  // The request in flight as its ScrapeEvent will report it: endpoint, slot, start, scrape_seq
  // (the number of its slot) and final_cycle; the outcome is filled in when it completes.
  ScrapeEvent request;
  Clock::time_point next_slot;
  std::chrono::system_clock::time_point started_wall;
  char curl_error[CURL_ERROR_SIZE] = {};
  std::uint64_t next_seq = 0;  // the number of next_slot: slots since the schedule began
  RateLimitedLog failures;
};

std::size_t on_body(char* data, std::size_t size, std::size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const std::size_t n = size * count;
  if (t->body.size() + n > t->max_body_bytes) {
    t->over_cap = true;
    return 0;  // aborts the transfer (CURLE_WRITE_ERROR)
  }
  t->body.append(data, n);
  return n;
}

class Loop;

// A libcurl multi handle and the endpoints it carries (see kShardSize).
struct Shard {
  Loop* loop = nullptr;
  std::size_t index = 0;
  CURLM* multi = nullptr;
  std::optional<Clock::time_point> deadline;  // when libcurl wants its timers run

  void set_timer(long timeout_ms) {  // libcurl's timeout: -1 for none
    if (timeout_ms < 0) {
      deadline.reset();
    } else {
      deadline = Clock::now() + milliseconds(timeout_ms);
    }
  }
};

// The event loop: libcurl multi handles driven by socket_action over one epoll set, so each
// wake-up touches only the transfers with activity (curl_multi_perform would visit every
// transfer and poll each socket again), plus a heap of per-endpoint slots.
class Loop {
 public:
  Loop(std::shared_ptr<detail::CollectorState> state, const CurlApi& curl)
      : s_(std::move(state)), curl_(curl), transfers_(s_->endpoints.size()) {}

  ~Loop() {
    // In this order: removing handles and closing connections still calls on_socket.
    for (auto& t : transfers_) {
      if (!t.easy) continue;
      if (t.in_flight) curl_.multi_remove_handle(shards_[t.shard].multi, t.easy);
      curl_.easy_cleanup(t.easy);
    }
    for (auto& shard : shards_) {
      if (shard.multi) curl_.multi_cleanup(shard.multi);
    }
    if (ep_ >= 0) ::close(ep_);
  }
  Loop(const Loop&) = delete;
  Loop& operator=(const Loop&) = delete;

  Status setup();
  void run();

 private:
  using Slot = std::pair<Clock::time_point, std::size_t>;

  static int on_socket(CURL* easy, curl_socket_t fd, int what, void* shard, void* known);
  static int on_timer(CURLM* multi, long timeout_ms, void* shard);

  milliseconds interval() const { return s_->options.collect_interval; }
  void fire_due_slots(Clock::time_point now);
  void start_transfer(std::size_t i, Clock::time_point slot);
  void run_curl_timers();
  void wait_for_events(Clock::time_point until);
  void handle_event(const epoll_event& ev);
  void drive(Shard& shard, curl_socket_t fd, int mask);
  void complete(std::size_t i, CURLcode code, Clock::time_point finished);
  void note_duplicates(std::size_t i, const BodyOutcome& body);
  // A completed request without rows: counted, told to the leg, logged and reported.
  void fail(std::size_t i, Clock::time_point finished, std::string_view reason,
            const std::string& detail);
  void flush(Clock::time_point now);
  void note_clock_step(double& last_offset);
  void check_samples_file(Clock::time_point now);
  void on_write_failure(Clock::time_point now, std::string_view what, const std::string& error,
                        const std::string& reason, std::uint64_t dropped_before);
  void on_write_success(Clock::time_point now, std::string_view what);

  std::shared_ptr<detail::CollectorState> s_;
  const CurlApi& curl_;
  std::vector<Shard> shards_;  // sized once: libcurl holds pointers to its elements
  int ep_ = -1;
  struct Socket {
    std::uint32_t registered = 0;  // events the epoll set holds for this descriptor
    bool wanted = false;           // libcurl is waiting on it
    std::size_t shard = 0;         // whose multi handle it belongs to
  };
  std::vector<Socket> sockets_;  // by descriptor
  std::vector<Transfer> transfers_;
  std::priority_queue<Slot, std::vector<Slot>, std::greater<>> slots_;
  Clock::time_point next_flush_;
  Clock::time_point next_open_attempt_;
  // A samples.csv failure in progress (writes or opens failing), logged when it began.
  struct WriteOutage {
    Clock::time_point since;
    std::uint64_t dropped_before = 0;  // rows dropped before it began
    std::uint64_t failures = 0;        // failed flushes or opens in it
  };
  std::optional<WriteOutage> outage_;
  std::string lines_;  // reused buffer for the rows of one scrape
};

int Loop::on_socket(CURL*, curl_socket_t fd, int what, void* shard_ptr, void*) {
  auto& shard = *static_cast<Shard*>(shard_ptr);
  auto* self = shard.loop;
  if (fd < 0) return 0;
  const auto slot = static_cast<std::size_t>(fd);
  if (slot >= self->sockets_.size()) self->sockets_.resize(slot + 1);
  auto& sock = self->sockets_[slot];
  sock.shard = shard.index;
  // A kept-alive connection is removed after every transfer and added again for the next
  // one. Leaving it in the epoll set saves two epoll_ctl calls per scrape; an event on it
  // while libcurl does not want one takes it out then (see wait_for_events).
  if (what == CURL_POLL_REMOVE) {
    sock.wanted = false;
    return 0;
  }
  const std::uint32_t events =
      ((what & CURL_POLL_IN) ? EPOLLIN : 0u) | ((what & CURL_POLL_OUT) ? EPOLLOUT : 0u);
  sock.wanted = true;
  if (sock.registered == events) return 0;
  epoll_event ev{};
  ev.events = events;
  ev.data.fd = fd;
  // The kernel drops a closed descriptor from the set by itself, so what we remember can be
  // stale when libcurl reuses a number: fall back from MOD to ADD and back.
  int rc = ::epoll_ctl(self->ep_, sock.registered ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, fd, &ev);
  if (rc != 0 && errno == ENOENT) rc = ::epoll_ctl(self->ep_, EPOLL_CTL_ADD, fd, &ev);
  if (rc != 0 && errno == EEXIST) rc = ::epoll_ctl(self->ep_, EPOLL_CTL_MOD, fd, &ev);
  sock.registered = rc == 0 ? events : 0;
  return 0;
}

int Loop::on_timer(CURLM*, long timeout_ms, void* shard) {
  static_cast<Shard*>(shard)->set_timer(timeout_ms);
  return 0;
}

Status Loop::setup() {
  ep_ = ::epoll_create1(EPOLL_CLOEXEC);
  if (ep_ < 0) return Error{std::string("epoll_create1: ") + std::strerror(errno)};
  epoll_event wake{};
  wake.events = EPOLLIN;
  wake.data.fd = s_->wake_fd;
  if (::epoll_ctl(ep_, EPOLL_CTL_ADD, s_->wake_fd, &wake) != 0) {
    return Error{std::string("epoll_ctl: ") + std::strerror(errno)};
  }
  shards_.resize((transfers_.size() + kShardSize - 1) / kShardSize);
  for (std::size_t k = 0; k < shards_.size(); ++k) {
    auto& shard = shards_[k];
    shard.loop = this;
    shard.index = k;
    shard.multi = curl_.multi_init();
    if (!shard.multi) return Error{"curl_multi_init failed"};
    curl_.multi_setopt(shard.multi, CURLMOPT_SOCKETFUNCTION, &Loop::on_socket);
    curl_.multi_setopt(shard.multi, CURLMOPT_SOCKETDATA, &shard);
    curl_.multi_setopt(shard.multi, CURLMOPT_TIMERFUNCTION, &Loop::on_timer);
    curl_.multi_setopt(shard.multi, CURLMOPT_TIMERDATA, &shard);
    // The default cache (4 x the transfers in progress) is far smaller than the endpoint
    // count when slots are spread, and would close the keep-alive connections we want.
    curl_.multi_setopt(shard.multi, CURLMOPT_MAXCONNECTS, static_cast<long>(kShardSize + 8));
  }
  for (std::size_t i = 0; i < transfers_.size(); ++i) {
    auto& t = transfers_[i];
    t.shard = i / kShardSize;
    t.request.endpoint_index = i;
    t.url = endpoint_url(s_->endpoints[i], s_->options.security.https);
    t.max_body_bytes = s_->options.max_body_bytes;
    t.easy = curl_.easy_init();
    if (!t.easy) return Error{"curl_easy_init failed"};
    CURL* e = t.easy;
    curl_.easy_setopt(e, CURLOPT_URL, t.url.c_str());
    curl_.easy_setopt(e, CURLOPT_PRIVATE, reinterpret_cast<void*>(i));
    curl_.easy_setopt(e, CURLOPT_WRITEFUNCTION, &on_body);
    curl_.easy_setopt(e, CURLOPT_WRITEDATA, &t);
    curl_.easy_setopt(e, CURLOPT_ERRORBUFFER, t.curl_error);
    // One deadline for the whole request, connect included: a trickling exporter is cut
    // off, where a timeout per read would start again with every byte that arrives.
    curl_.easy_setopt(e, CURLOPT_TIMEOUT_MS,
                      static_cast<long>(s_->options.request_timeout.count()));
    curl_.easy_setopt(e, CURLOPT_MAXFILESIZE_LARGE,
                      static_cast<curl_off_t>(s_->options.max_body_bytes));
    curl_.easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_.easy_setopt(e, CURLOPT_HTTP_VERSION, static_cast<long>(CURL_HTTP_VERSION_1_1));
    curl_.easy_setopt(e, CURLOPT_PROTOCOLS_STR, s_->options.security.https ? "https" : "http");
    apply_client_security(curl_, e, s_->options.security);
    // An http_proxy in the environment must not reroute scrapes of cluster-internal nodes.
    curl_.easy_setopt(e, CURLOPT_PROXY, "");
    curl_.easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
    curl_.easy_setopt(e, CURLOPT_TCP_NODELAY, 1L);
    curl_.easy_setopt(e, CURLOPT_USERAGENT, (std::string("cpu-power/") + kVersion).c_str());
    if (is_ip_literal(s_->endpoints[i].address)) {
      // libcurl caches even literal addresses, and every transfer of a handle with an
      // expiry sweeps the whole cache: with a thousand endpoints that sweep was the
      // collector's largest cost. A literal never changes, so its entry may live forever.
      curl_.easy_setopt(e, CURLOPT_DNS_CACHE_TIMEOUT, -1L);
      // With one address there is no second family to wait for, yet libcurl 7.88 driven by
      // socket_action waits out the happy-eyeballs delay (200 ms) before it reports a
      // refused connection, long enough to miss slots of a node whose exporter is down.
      curl_.easy_setopt(e, CURLOPT_HAPPY_EYEBALLS_TIMEOUT_MS, 0L);
    }
  }
  return Ok{};
}

void Loop::run() {
  const auto start = Clock::now();
  const auto n = transfers_.size();
  // Up to kSpreadAbove endpoints all start at once: their first rows come right away and
  // the nodes' rows share nearly one time. Above it, endpoints are spread over a few phases
  // of the interval, so that a thousand requests do not queue behind each other, and share
  // them rather than each its own offset: every wake-up of the loop (and of the thread
  // behind it) then starts or finishes a batch of transfers instead of one, which is most of
  // what a thousand endpoints cost.
  const auto step = std::chrono::duration_cast<Clock::duration>(interval());
  const auto phases = static_cast<long>(std::clamp<std::size_t>(
      static_cast<std::size_t>(step / kMinPhaseGap), 1, std::max<std::size_t>(n, 1)));
  const bool spread = s_->options.spread_slots && n > kSpreadAbove;
  for (std::size_t i = 0; i < n; ++i) {
    auto offset = Clock::duration::zero();
    if (spread) offset = step * (static_cast<long>(i) * phases / static_cast<long>(n)) / phases;
    transfers_[i].next_slot = start + offset;
    slots_.emplace(transfers_[i].next_slot, i);
  }
  next_flush_ = start + interval();
  next_open_attempt_ = start;

  double clock_offset = wall_minus_monotonic();
  while (!s_->stop_requested.load()) {
    note_clock_step(clock_offset);
    fire_due_slots(Clock::now());
    run_curl_timers();  // starts the transfers just added
    const auto now = Clock::now();
    if (now >= next_flush_) {
      flush(now);
      next_flush_ = std::max(next_flush_ + interval(), now);
    }
    auto wake = next_flush_;
    if (!slots_.empty()) wake = std::min(wake, slots_.top().first);
    wait_for_events(wake);
  }

  // The final cycle: one more scrape of every endpoint that is free, so the tail of a run
  // is not lost. Busy endpoints finish their request instead.
  const auto final_slot = Clock::now();
  for (std::size_t i = 0; i < n; ++i) {
    if (transfers_[i].in_flight) continue;
    transfers_[i].request.final_cycle = true;
    start_transfer(i, final_slot);
  }
  const auto drain =
      s_->interrupted.load()
          ? std::min<Clock::duration>(Collector::kInterruptedDrain,
                                      s_->options.request_timeout + milliseconds(500))
          : Clock::duration(s_->options.request_timeout + milliseconds(500));
  auto deadline = final_slot + drain;
  while (Clock::now() < deadline) {
    // A signal during a normal drain shortens it (Collector::interrupt).
    if (s_->interrupted.load()) {
      deadline = std::min(deadline, Clock::now() + Collector::kInterruptedDrain);
    }
    run_curl_timers();  // on loopback a transfer can finish right here
    if (std::ranges::none_of(transfers_, &Transfer::in_flight)) break;
    wait_for_events(deadline);
  }
  flush(Clock::now());
  if (outage_) {
    std::lock_guard lock(s_->writer_mutex);
    s_->log->error(
        "samples.csv still failing at stop failed_attempts={} failing_s={:.1f} "
        "rows_dropped_meanwhile={} rows_dropped_total={}",
        outage_->failures, seconds(Clock::now() - outage_->since),
        s_->rows_dropped_locked() - outage_->dropped_before, s_->rows_dropped_locked());
  }
}

// Wall minus monotonic moved by more than kClockStepS since the last cycle: the wall clock was
// stepped. The schedule runs on the monotonic clock and is unaffected; the row times are not,
// so the step is logged and goes into the manifest.
void Loop::note_clock_step(double& last_offset) {
  const double offset = wall_minus_monotonic();
  const double step = offset - last_offset;
  last_offset = offset;
  if (std::abs(step) <= kClockStepS) return;
  const double at = now_unix();
  s_->log->warn(
      "the wall clock stepped by {:+.3f} s against the monotonic clock at {:.3f}; row "
      "times on either side of it are on different clocks",
      step, at);
  std::lock_guard lock(s_->stats_mutex);
  s_->clock_steps.push_back({at, step});
}

void Loop::run_curl_timers() {
  for (auto& shard : shards_) {
    if (!shard.deadline || *shard.deadline > Clock::now()) continue;
    drive(shard, CURL_SOCKET_TIMEOUT, 0);
    // Ask rather than wait for the timer callback: it is not called again when the earliest
    // timer did not change, e.g. when our clock ran a little ahead of libcurl's and nothing
    // had expired yet, and a lost timer would stall a transfer.
    long timeout_ms = -1;
    curl_.multi_timeout(shard.multi, &timeout_ms);
    shard.set_timer(timeout_ms);
  }
}

// Sleeps until `until`, libcurl's next timer or socket activity, whichever comes first, and
// hands the activity to libcurl. One batch per call: the loop fires due slots in between, so
// a stream of completions cannot hold back the starts of the next requests.
void Loop::wait_for_events(Clock::time_point until) {
  for (const auto& shard : shards_) {
    if (shard.deadline) until = std::min(until, *shard.deadline);
  }
  const auto wait =
      std::chrono::ceil<milliseconds>(std::max(until - Clock::now(), Clock::duration{}));
  std::array<epoll_event, 256> events;
  const int n = ::epoll_wait(ep_, events.data(), static_cast<int>(events.size()),
                             static_cast<int>(std::min<long>(wait.count(), 1000)));
  for (int k = 0; k < n; ++k) handle_event(events[static_cast<std::size_t>(k)]);
}

void Loop::handle_event(const epoll_event& ev) {
  if (ev.data.fd == s_->wake_fd) {
    std::uint64_t count = 0;
    [[maybe_unused]] const auto r = ::read(s_->wake_fd, &count, sizeof count);
    return;
  }
  const auto slot = static_cast<std::size_t>(ev.data.fd);
  if (slot < sockets_.size() && !sockets_[slot].wanted) {
    // An idle kept-alive connection became readable: the exporter closed it (or sent
    // something unasked). Stop watching; libcurl finds out when it next uses it.
    ::epoll_ctl(ep_, EPOLL_CTL_DEL, ev.data.fd, nullptr);
    sockets_[slot].registered = 0;
    return;
  }
  int mask = 0;
  if (ev.events & EPOLLIN) mask |= CURL_CSELECT_IN;
  if (ev.events & EPOLLOUT) mask |= CURL_CSELECT_OUT;
  if (ev.events & (EPOLLERR | EPOLLHUP)) mask |= CURL_CSELECT_ERR;
  drive(shards_[sockets_[slot].shard], ev.data.fd, mask);
}

void Loop::fire_due_slots(Clock::time_point now) {
  const auto step = std::chrono::duration_cast<Clock::duration>(interval());
  while (!slots_.empty() && slots_.top().first <= now) {
    const auto i = slots_.top().second;
    slots_.pop();
    auto& t = transfers_[i];
    std::uint64_t missed = 0;
    // Slots that passed entirely while the loop was held up are missed, not replayed.
    if (now - t.next_slot >= step) {
      const auto behind = (now - t.next_slot) / step;
      missed += static_cast<std::uint64_t>(behind);
      t.next_slot += step * behind;
      t.next_seq += static_cast<std::uint64_t>(behind);
    }
    if (t.in_flight) {
      ++missed;
    } else {
      start_transfer(i, t.next_slot);
    }
    t.next_slot += step;
    ++t.next_seq;
    slots_.emplace(t.next_slot, i);
    if (missed > 0) {
      std::lock_guard lock(s_->stats_mutex);
      s_->nodes[i].missed_slots += missed;
    }
  }
}

void Loop::start_transfer(std::size_t i, Clock::time_point slot) {
  auto& t = transfers_[i];
  t.body.clear();
  if (t.body.capacity() > 64 * 1024) t.body.shrink_to_fit();  // after an oversized body
  t.over_cap = false;
  t.curl_error[0] = '\0';
  t.request.slot = slot;
  t.request.scrape_seq = t.next_seq;  // the final cycle's: the number after the last slot's
  t.request.started = Clock::now();
  t.started_wall = std::chrono::system_clock::now();
  const CURLMcode rc = curl_.multi_add_handle(shards_[t.shard].multi, t.easy);
  if (rc != CURLM_OK) {
    return fail(i, t.request.started, kReasonTransport,
                std::string("curl_multi_add_handle: ") + curl_.multi_strerror(rc));
  }
  t.in_flight = true;
}

void Loop::drive(Shard& shard, curl_socket_t fd, int mask) {
  int still_running = 0;
  curl_.multi_socket_action(shard.multi, fd, mask, &still_running);
  // Taken before any completion is processed, so that a batch of responses does not carry
  // the time spent parsing the ones ahead of it.
  const auto finished = Clock::now();
  int queued = 0;
  while (CURLMsg* msg = curl_.multi_info_read(shard.multi, &queued)) {
    if (msg->msg != CURLMSG_DONE) continue;
    char* priv = nullptr;
    curl_.easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &priv);
    const CURLcode code = msg->data.result;
    complete(reinterpret_cast<std::size_t>(priv), code, finished);  // invalidates msg
  }
}

void Loop::fail(std::size_t i, Clock::time_point finished, std::string_view reason,
                const std::string& detail) {
  ScrapeEvent event = transfers_[i].request;
  event.finished = finished;
  event.outcome = ScrapeOutcome::failed;
  event.reason = reason;
  const std::string text = std::string(reason) + ": " + detail;
  {
    std::lock_guard lock(s_->stats_mutex);
    auto& node = s_->nodes[i];
    ++node.scrape_count;
    ++node.error_count;
    node.last_error = text;
    node.last_ok = false;
  }
  {
    std::lock_guard lock(s_->leg_mutex);
    s_->leg->on_failure(i, reason);
  }
  std::uint64_t since = 0;
  if (transfers_[i].failures.on_failure(reason, finished, s_->options.log_interval, &since)) {
    s_->log->warn("scrape failed host={} url={} reason={} error={} failures_since_last_line={}",
                  common::quoted(s_->endpoints[i].hostname), transfers_[i].url, reason,
                  common::quoted(detail), since);
  }
  if (s_->options.on_scrape) s_->options.on_scrape(event);
}

// A body that repeats a series: counted, and a WARN when a node starts doing it or repeats
// another series than the one last named (not on every scrape of a node that keeps at it).
void Loop::note_duplicates(std::size_t i, const BodyOutcome& body) {
  bool say = false;
  {
    std::lock_guard lock(s_->stats_mutex);
    auto& node = s_->nodes[i];
    node.duplicate_series += body.duplicate_series;
    say = node.last_duplicate != body.first_duplicate;
    node.last_duplicate = body.first_duplicate;
  }
  if (say) {
    s_->log->warn(
        "body repeats a series; the first sample of each is used host={} url={} "
        "duplicate_series={} first={}",
        common::quoted(s_->endpoints[i].hostname), transfers_[i].url, body.duplicate_series,
        common::quoted(body.first_duplicate));
  }
}

void Loop::complete(std::size_t i, CURLcode code, Clock::time_point finished) {
  auto& t = transfers_[i];
  long status = 0;
  curl_.easy_getinfo(t.easy, CURLINFO_RESPONSE_CODE, &status);
  curl_.multi_remove_handle(shards_[t.shard].multi, t.easy);
  t.in_flight = false;

  if (t.over_cap || code == CURLE_FILESIZE_EXCEEDED) {
    return fail(
        i, finished, kReasonBodyTooLarge,
        "body over the " + std::to_string(t.max_body_bytes) + "-byte cap; transfer aborted");
  }
  if (code != CURLE_OK) {
    return fail(i, finished, reason_of(code),
                t.curl_error[0] ? t.curl_error : curl_.easy_strerror(code));
  }
  if (status != 200) return fail(i, finished, kReasonHttpStatus, "HTTP " + std::to_string(status));

  const auto round_trip = finished - t.request.started;
  BodyInput input;
  input.endpoint_index = i;
  input.hostname = s_->endpoints[i].hostname;
  input.body = t.body;
  input.midpoint_unix = seconds(t.started_wall.time_since_epoch()) + seconds(round_trip) / 2;
  input.round_trip_s = seconds(round_trip);
  input.scrape_seq = t.request.scrape_seq;
  lines_.clear();
  BodyOutcome body;
  {
    std::lock_guard lock(s_->leg_mutex);
    body = s_->leg->on_body(input, lines_);
    if (body.refused > 0) {
      std::lock_guard writer_lock(s_->writer_mutex);
      if (!s_->writer) s_->rows_dropped_unopened += body.refused;
      for (std::size_t k = 0; s_->writer && k < body.refused; ++k) {
        s_->writer->refuse(body.refused_why);
      }
    }
  }
  if (body.duplicate_series > 0) note_duplicates(i, body);
  if (!body.reason.empty() && body.rows == 0) {
    {
      std::lock_guard lock(s_->stats_mutex);
      s_->nodes[i].resolved_mode = body.mode;
    }
    return fail(i, finished, body.reason, body.detail);
  }
  ScrapeEvent event = t.request;
  event.finished = finished;
  event.timestamp_unix = body.timestamp_unix;
  event.outcome = body.unchanged ? ScrapeOutcome::unchanged : ScrapeOutcome::written;
  const auto& hostname = s_->endpoints[i].hostname;
  if (body.rows > 0) {
    std::lock_guard lock(s_->writer_mutex);
    if (s_->writer && !s_->writer_closed) {
      s_->writer->append_rows(lines_, body.rows);
    } else {
      s_->rows_dropped_unopened += body.rows;
    }
  }
  event.rows = body.rows;
  std::vector<std::uint32_t> was_missing;
  {
    std::lock_guard lock(s_->stats_mutex);
    auto& node = s_->nodes[i];
    ++node.scrape_count;
    node.resolved_mode = body.mode;
    node.last_ok = true;
    was_missing = std::exchange(node.sockets_missing, body.sockets_missing);
    if (!body.sockets_missing.empty()) ++node.degraded_scrapes;
    if (body.unchanged) {
      ++node.unchanged_count;
    } else {
      node.rows_appended += event.rows;
      if (!node.first_sample_unix) node.first_sample_unix = body.timestamp_unix;
      node.last_sample_unix = body.timestamp_unix;
    }
  }
  // Degraded and whole again: once each way (and again when the missing sockets change).
  if (body.sockets_missing != was_missing) {
    if (!body.sockets_missing.empty()) {
      s_->log->warn(
          "node degraded: a socket gives no power; its rows carry no total_power_w host={} "
          "url={} sockets_missing={}",
          common::quoted(hostname), t.url, fmt::join(body.sockets_missing, ","));
    } else {
      s_->log->info("node whole again: every socket gives power host={} url={} was_missing={}",
                    common::quoted(hostname), t.url, fmt::join(was_missing, ","));
    }
  }
  std::uint64_t streak = 0;
  if (t.failures.on_success(event.finished, &streak)) {
    s_->log->info("scrapes recovered host={} url={} failures={}", common::quoted(hostname), t.url,
                  streak);
  }
  if (s_->options.on_scrape) s_->options.on_scrape(event);
}

// The text a status line gives for a failure: the errno text at the end of "<op> <path>:
// <errno text>", or all of it when it has no such part.
std::string reason_of_error(const std::string& error) {
  const auto colon = error.rfind(": ");
  return colon == std::string::npos ? error : error.substr(colon + 2);
}

void record_write_error(detail::CollectorState& s, const std::string& error, double now_unix) {
  constexpr std::size_t kMaxKinds = 16;  // distinct texts kept; the rest share one entry
  auto it = std::ranges::find(s.write_error_log, error, &SamplesWriteError::error);
  if (it == s.write_error_log.end()) {
    if (s.write_error_log.size() >= kMaxKinds) {
      it = s.write_error_log.end() - 1;
      it->error = "(more kinds of error than are listed)";
    } else {
      s.write_error_log.push_back(SamplesWriteError{error, 0, now_unix, now_unix});
      it = s.write_error_log.end() - 1;
    }
  }
  ++it->count;
  it->last_unix = now_unix;
}

// Called with writer_mutex held.
void Loop::on_write_failure(Clock::time_point now, std::string_view what, const std::string& error,
                            const std::string& reason, std::uint64_t dropped_before) {
  record_write_error(*s_, error, now_unix());
  s_->samples_failing = reason;
  if (outage_) {
    ++outage_->failures;  // said when it began; the status line and manifest keep counting
    return;
  }
  outage_ = WriteOutage{now, dropped_before, 1};
  s_->log->error(
      "samples.csv {} failed; rows are dropped until it succeeds (logged again then) error={} "
      "rows_dropped={} rows_written={}",
      what, common::quoted(error), s_->rows_dropped_locked() - dropped_before,
      s_->rows_written_locked());
}

// Called with writer_mutex held, after a write or open that succeeded.
void Loop::on_write_success(Clock::time_point now, std::string_view what) {
  s_->samples_failing.reset();
  if (!outage_) return;
  const auto dropped = s_->rows_dropped_locked();
  s_->log->warn(
      "samples.csv writes recovered: {} succeeded again failed_attempts={} failing_s={:.1f} "
      "rows_dropped_meanwhile={} rows_dropped_total={}",
      what, outage_->failures, seconds(now - outage_->since), dropped - outage_->dropped_before,
      dropped);
  outage_.reset();
}

// Called with writer_mutex held. A samples.csv deleted, replaced, moved or truncated under
// us would otherwise go on taking rows nobody can read at the path: say so once and start
// a new file there (or continue the one put there, if it is a v3 samples.csv).
void Loop::check_samples_file(Clock::time_point now) {
  auto& w = *s_->writer;
  const auto change = w.check_path();
  if (change == artifacts::SamplesFileChange::none) return;
  const auto name = artifacts::samples_file_change_name(change);
  const auto rows = w.rows_in_file();
  s_->file_changes.push_back(SamplesFileEvent{now_unix(), std::string(name), rows});
  const bool moved = change == artifacts::SamplesFileChange::moved;
  s_->log->error(
      "samples.csv was {} under the collector; the {} rows written to it {}; writing samples.csv "
      "anew at the path path={}",
      name, rows, moved ? "are in the moved file, no longer at the path" : "are lost with it",
      s_->samples_path);
  const auto dropped_before = s_->rows_dropped_locked();
  if (Status reopened = w.reopen(); !reopened) {
    ++s_->open_failures;
    const std::string error = reopened.error();
    // Gives up on the writer, counting its pending rows dropped.
    w.discard_pending();
    s_->retired_written += w.rows_written();
    s_->retired_dropped += w.rows_dropped();
    s_->retired_errors += w.write_errors();
    s_->writer.reset();
    next_open_attempt_ = now + std::max(interval(), milliseconds(1000));
    on_write_failure(now, "open", error, reason_of_error(error), dropped_before);
  }
}

void Loop::flush(Clock::time_point now) {
  std::lock_guard lock(s_->writer_mutex);
  if (s_->writer_closed) return;
  if (s_->writer) check_samples_file(now);
  if (!s_->writer) {
    if (now < next_open_attempt_) return;
    next_open_attempt_ = now + std::max(interval(), milliseconds(1000));
    const auto dropped_before = s_->rows_dropped_locked();
    auto opened = artifacts::RowAppender::open(s_->samples_path, s_->leg->samples_header());
    if (!opened) {
      ++s_->open_failures;
      const auto& error = opened.error();
      return on_write_failure(now, "open", error, reason_of_error(error), dropped_before);
    }
    s_->writer = std::move(opened.value());
    on_write_success(now, "open");
    return;
  }
  auto& w = *s_->writer;
  // A flush with nothing to write says nothing about the disk: no recovery from it.
  if (w.pending_rows() == 0) return;
  const auto errors_before = w.write_errors();
  const auto written_before = w.rows_written();
  const auto dropped_before = s_->rows_dropped_locked();
  w.flush();
  if (w.write_errors() != errors_before) {
    const std::string reason = w.last_errno() ? std::strerror(w.last_errno()) : w.last_error();
    on_write_failure(now, "write", w.last_error(), reason, dropped_before);
  } else if (w.rows_written() > written_before) {
    on_write_success(now, "write");
  }
}

}  // namespace

Collector::Collector(std::vector<Endpoint> endpoints, CollectorOptions options,
                     std::unique_ptr<Leg> leg)
    : state_(std::make_shared<detail::CollectorState>()) {
  state_->endpoints = std::move(endpoints);
  state_->options = std::move(options);
  if (!leg) {
    leg = std::make_unique<CpuLeg>(
        state_->endpoints.size(),
        CpuLegOptions{state_->options.collect_interval, state_->options.producer_git_commit,
                      state_->options.cpu_samples_schema});
  }
  state_->leg = std::move(leg);
  const std::filesystem::path dir = state_->options.out_dir;
  state_->samples_path = dir / state_->leg->samples_filename();
  const auto manifest = state_->leg->manifest_filename();
  if (!manifest.empty()) state_->manifest_path = dir / manifest;
  for (const auto& e : state_->endpoints) {
    auto& node = state_->nodes.emplace_back();
    node.hostname = e.hostname;
    node.endpoint_url = endpoint_url(e, state_->options.security.https);
  }
}

Collector::~Collector() {
  if (started_ && !finalized_) (void)stop_and_finalize();
}

std::string Collector::samples_path() const {
  return state_->samples_path;
}

std::string Collector::manifest_path() const {
  return state_->manifest_path;
}

Status Collector::start() {
  if (started_) return Error{"collector already started"};
  const auto& o = state_->options;
  if (o.collect_interval.count() <= 0) return Error{"collect interval must be positive"};
  if (o.request_timeout.count() <= 0) return Error{"request timeout must be positive"};
  if (o.max_body_bytes == 0) return Error{"body cap must be positive"};
  if (state_->leg->samples_header().empty()) {
    return Error{"no samples.csv layout to write (CPU samples schema " +
                 std::to_string(o.cpu_samples_schema) + "; only 2 and 3 are written)"};
  }
  std::set<std::string> hosts;
  for (const auto& e : state_->endpoints) {
    if (!hosts.insert(e.hostname).second) return Error{"duplicate hostname '" + e.hostname + "'"};
  }
  // Loaded (and curl_global_init run) before our thread exists.
  const auto curl = curl_api();
  if (!curl) return Error{curl.error()};
  if (state_->wake_fd < 0) state_->wake_fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (state_->wake_fd < 0) return Error{std::string("eventfd: ") + std::strerror(errno)};
  auto loop = std::make_unique<Loop>(state_, **curl);
  if (const Status set_up = loop->setup(); !set_up) return set_up;

  {
    std::lock_guard lock(state_->writer_mutex);
    // On failure the loop retries (and logs) every interval.
    auto opened = artifacts::RowAppender::open(state_->samples_path, state_->leg->samples_header());
    if (opened) state_->writer = std::move(opened.value());
  }
  state_->started_at_unix = now_unix();
  state_->log->info("collector started endpoints={} interval_ms={} request_timeout_ms={} out={}",
                    state_->endpoints.size(), o.collect_interval.count(), o.request_timeout.count(),
                    state_->samples_path);
  thread_ = std::thread([state = state_, loop = std::move(loop)]() mutable {
    pthread_setname_np(pthread_self(), "cpu-power-coll");
    loop->run();
    loop.reset();
    {
      std::lock_guard lock(state->done_mutex);
      state->done = true;
    }
    state->done_cv.notify_all();
  });
  started_ = true;
  return Ok{};
}

CollectorStats Collector::stats() const {
  CollectorStats out;
  {
    std::lock_guard lock(state_->stats_mutex);
    out.nodes = state_->nodes;
    out.clock_steps = state_->clock_steps;
  }
  const auto& s = *state_;
  std::lock_guard lock(s.writer_mutex);
  out.rows_written = s.rows_written_locked();
  out.rows_dropped = s.rows_dropped_locked();
  out.write_errors = s.retired_errors + s.open_failures + (s.writer ? s.writer->write_errors() : 0);
  out.samples_failing = s.samples_failing;
  out.write_error_log = s.write_error_log;
  out.samples_file_changes = s.file_changes;
  return out;
}

void Collector::interrupt() {
  state_->interrupted.store(true);
  if (state_->wake_fd >= 0) state_->wake();
}

Finalized Collector::stop_and_finalize_interrupted() {
  state_->interrupted.store(true);
  return stop_and_finalize();
}

Finalized Collector::stop_and_finalize() {
  Finalized out;
  if (finalized_) return out;
  finalized_ = true;
  auto& s = *state_;
  auto problem = [&](const std::string& text) {
    out.problems += (out.problems.empty() ? "" : "; ") + text;
  };

  if (thread_.joinable()) {
    s.stop_requested.store(true);
    s.wake();
    const auto join_timeout = s.options.join_timeout.value_or(
        2 * (2 * s.options.request_timeout + milliseconds(1000)) + milliseconds(2000));
    std::unique_lock lock(s.done_mutex);
    const bool done = s.done_cv.wait_for(lock, join_timeout, [&] { return s.done; });
    lock.unlock();
    if (done) {
      thread_.join();
    } else {
      // It owns its state through the shared pointer; the writer is closed under it below.
      thread_.detach();
      s.log->warn("collector thread did not stop within {}s; leaving it behind",
                  seconds(join_timeout));
      out.loop_left_behind = true;
      problem("collector thread did not stop in time");
    }
  }

  {
    std::lock_guard lock(s.writer_mutex);
    s.writer_closed = true;
    if (s.writer && !s.writer->close()) {
      s.log->error("failed to close samples.csv error={}", common::quoted(s.writer->last_error()));
      problem("closing samples.csv: " + s.writer->last_error());
    }
  }

  const auto stats = this->stats();
  {
    const auto stopped_unix = now_unix();
    std::lock_guard lock(s.leg_mutex);
    if (const Status done =
            s.leg->finalize(stats, s.started_at_unix, stopped_unix, s.manifest_path);
        !done) {
      s.log->error("failed to write {} error={}", s.leg->manifest_filename(),
                   common::quoted(done.error()));
      problem("writing " + std::string(s.leg->manifest_filename()) + ": " + done.error());
    } else {
      manifest_written_ = !s.manifest_path.empty();
    }
  }
  std::uint64_t scrapes = 0, errors = 0, missed = 0, unchanged = 0;
  for (const auto& node : stats.nodes) {
    scrapes += node.scrape_count;
    errors += node.error_count;
    missed += node.missed_slots;
    unchanged += node.unchanged_count;
  }
  s.log->info(
      "collector stopped rows_written={} rows_dropped={} write_errors={} rows_lost={} scrapes={} "
      "errors={} unchanged={} missed_slots={}",
      stats.rows_written, stats.rows_dropped, stats.write_errors, stats.rows_lost(), scrapes,
      errors, unchanged, missed);
  return out;
}

}  // namespace cpupower::scrape
