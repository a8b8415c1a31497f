#pragma once
// The head-node collector: scrapes every endpoint on its own fixed-rate schedule and hands
// each body to a leg (scrape/leg.hpp), which turns it into rows; the collector appends them
// to the leg's samples file and has the leg write its manifest at the end. Without a leg it
// runs the CPU leg (scrape/cpu_leg.hpp): cpu-power-exporter bodies into samples.csv (v3, or v2
// when asked) and cpu_manifest.json.
//
// One event loop thread drives every request through libcurl multi, so a thousand
// endpoints cost one thread and keep-alive connections are reused. Each endpoint has its
// own slots on the monotonic clock (collect_interval apart), numbered from 0 (the scrape
// sequence: the same number is the same slot on every endpoint): a slot that comes while
// the endpoint's previous request is still in flight is skipped and counted as missed,
// never replayed later, so a slow or dead exporter loses only its own slots and never
// delays the others. Each request has one deadline covering connect and read, and a body
// cap.
//
// Best-effort throughout: resolution, connection, timeout, HTTP status, malformed body and
// write failures are counted per node and logged with rate limiting; nothing is thrown and
// collection goes on. The samples file itself is watched at every flush: a failing write
// (disk full) is logged once when it starts and once when writes resume, with the rows
// dropped meanwhile; a file deleted or replaced under the collector is logged once and a
// new one is started at the path (docs/reliability.md).

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "artifacts/cpu_manifest.hpp"
#include "scrape/client_security.hpp"
#include "scrape/endpoint.hpp"
#include "scrape/leg.hpp"
#include "scrape/readings.hpp"

namespace cpupower::scrape {

// What became of one completed request.
enum class ScrapeOutcome {
  written,    // rows appended
  unchanged,  // the same readings as the last rows written for the node: nothing appended
  failed,     // no rows: see ScrapeEvent::reason
};

// Reason codes of a failed scrape; NodeStats::last_error starts with one, then ": detail".
inline constexpr std::string_view kReasonResolve = "resolve";  // name did not resolve
inline constexpr std::string_view kReasonConnect = "connect";  // refused, unreachable
inline constexpr std::string_view kReasonTimeout = "timeout";  // request deadline hit
inline constexpr std::string_view kReasonBodyTooLarge = "body_too_large";
inline constexpr std::string_view kReasonHttpStatus = "http_status";  // anything but 200
inline constexpr std::string_view kReasonTransport = "transport";     // other libcurl errors
inline constexpr std::string_view kReasonMalformed = "malformed";     // exposition refused
inline constexpr std::string_view kReasonNoSockets = "no_sockets";    // no socket power

// One completed request, reported to CollectorOptions::on_scrape on the loop thread.
struct ScrapeEvent {
  std::size_t endpoint_index = 0;
  std::chrono::steady_clock::time_point slot;      // when its slot was due
  std::chrono::steady_clock::time_point started;   // handed to libcurl
  std::chrono::steady_clock::time_point finished;  // response complete, or failed
  ScrapeOutcome outcome = ScrapeOutcome::failed;
  std::string_view reason;       // a kReason* code when failed, else empty
  std::size_t rows = 0;          // rows appended
  double timestamp_unix = 0;     // the row time (written and unchanged scrapes)
  bool final_cycle = false;      // the extra scrape after stop, off the slot grid
  std::uint64_t scrape_seq = 0;  // the slot's number (the final cycle: the next number)
};

struct CollectorOptions {
  std::string out_dir;  // the leg's samples file and manifest; must exist
  std::chrono::milliseconds collect_interval{1000};
  std::chrono::milliseconds request_timeout{2000};  // connect + read, per request
  // How long stop_and_finalize() waits for the loop; unset: 2 x (2 x timeout + 1 s) + 2 s
  // (12 s at the default timeout), as long as upstream's collector waits.
  std::optional<std::chrono::milliseconds> join_timeout;
  std::size_t max_body_bytes = std::size_t{1} << 20;
  // Per node: the first failure of each reason is logged, then at most one line per this.
  std::chrono::milliseconds log_interval{30000};
  // Above 64 endpoints, spread their slots over the interval in phases at least 5 ms apart
  // instead of firing all at once, so that a thousand requests do not queue behind each
  // other. Fewer endpoints always start together.
  bool spread_slots = true;
  // samples.csv layout: 3 (module_w included) or 2 (the v3 columns without module_w, for
  // readers pinned to the v1/v2 headers). Anything else: the file never opens.
  int cpu_samples_schema = 3;
  std::optional<std::string> producer_git_commit;
  // TLS and Basic authentication toward the exporters (their --web.config.file); https:// when
  // security.https.
  ClientSecurity security;
  std::function<void(const ScrapeEvent&)> on_scrape;  // tests and benchmarks
};

struct NodeStats {
  std::string hostname;
  std::string endpoint_url;
  Mode resolved_mode = Mode::unknown;  // the last mode a scrape resolved
  std::uint64_t scrape_count = 0;      // completed requests, whatever their outcome
  std::uint64_t error_count = 0;       // completed requests that failed
  std::uint64_t unchanged_count = 0;   // completed requests that repeated the last readings
  std::uint64_t missed_slots = 0;      // slots skipped: previous request still in flight
  std::uint64_t rows_appended = 0;
  std::optional<std::string> last_error;  // "<reason>: <detail>"
  std::optional<double> first_sample_unix;
  std::optional<double> last_sample_unix;
  std::optional<bool> last_ok;  // outcome of the latest completed request; unset before one
  // Degraded: the latest body with socket power lacked some of the node's sockets (the
  // exporter's cpu_power_exporter_socket_up at 0, or a socket the node served before).
  std::vector<std::uint32_t> sockets_missing;  // of that body, ascending; empty: whole
  std::uint64_t degraded_scrapes = 0;          // completed requests with a socket missing
  // Series repeated within a body (the same family and label set twice; the first sample of
  // each is used), over the run, and the latest body's first repeat.
  std::uint64_t duplicate_series = 0;
  std::string last_duplicate;
};

// Each kind of samples.csv failure (the same text each time, counted), each change of the file
// under the collector, and each step of the wall clock, as cpu_manifest.json records them.
using SamplesWriteError = artifacts::CpuManifestWriteError;
using SamplesFileEvent = artifacts::CpuManifestFileChange;
using WallClockStep = artifacts::CpuManifestClockStep;

struct CollectorStats {
  std::vector<NodeStats> nodes;    // in endpoint order
  std::uint64_t rows_written = 0;  // handed to the OS, over the run (a deleted file's included)
  std::uint64_t rows_dropped = 0;  // collected, never written: write failures, no file open
  std::uint64_t write_errors = 0;  // failed writes, opens and truncations of samples.csv
  // Set while samples.csv is failing (its latest write or open failed): the errno text.
  std::optional<std::string> samples_failing;
  std::vector<SamplesWriteError> write_error_log;  // by text, in the order first seen
  std::vector<SamplesFileEvent> samples_file_changes;
  std::vector<WallClockStep> clock_steps;  // in order

  std::size_t nodes_ok() const;        // latest request succeeded, with every socket
  std::size_t nodes_degraded() const;  // latest request succeeded, with a socket missing
  std::size_t nodes_failing() const;   // latest request failed
  // Rows written to a samples.csv that was then deleted, replaced or truncated: gone.
  std::uint64_t rows_lost() const;
};

// What went wrong with samples.csv, for a status line: "" when nothing did, else e.g.
// "samples.csv FAILING (No space left on device), rows dropped 2391" or "rows dropped 12,
// samples.csv deleted mid-run (42 rows lost with it; writing a new one)".
std::string samples_health_text(const CollectorStats& stats);

namespace detail {
struct CollectorState;  // shared with the loop thread
}  // namespace detail

// What a stop left undone; ok when every row was flushed and the manifest written.
struct [[nodiscard]] Finalized {
  bool loop_left_behind = false;  // the loop did not stop within the join timeout
  std::string problems;           // each thing left undone, "; "-joined
  bool ok() const { return problems.empty(); }
  explicit operator bool() const { return ok(); }
};

class Collector {
 public:
  // `leg` null: the CPU leg, with the options' interval and producer commit.
  Collector(std::vector<Endpoint> endpoints, CollectorOptions options,
            std::unique_ptr<Leg> leg = nullptr);
  ~Collector();  // stop_and_finalize() if started and not finalized
  Collector(const Collector&) = delete;
  Collector& operator=(const Collector&) = delete;

  // Starts the loop thread. An error for options that cannot work (duplicate hostnames, a
  // non-positive interval or timeout) or when libcurl cannot be set up. A samples.csv that
  // cannot be opened is not fatal: it is retried every interval.
  Status start();

  CollectorStats stats() const;

  // Stops the schedule, scrapes every endpoint that is not busy once more, waits for the
  // loop within the join timeout, closes samples.csv and writes cpu_manifest.json. Not ok
  // when the loop had to be left behind or a file could not be closed or written. Safe to
  // call once; later calls return ok and do nothing.
  Finalized stop_and_finalize();

  // stop_and_finalize for a stop that a signal asked for (SIGTERM from a batch system, which
  // sends SIGKILL after its own wait): the final cycle and every request still in flight get
  // kInterruptedDrain at most instead of the request timeout, so that the rows are flushed and
  // the manifest written well within that wait however long the timeout. A request cut off
  // this way gives no row and is not counted as a scrape.
  Finalized stop_and_finalize_interrupted();
  static constexpr std::chrono::milliseconds kInterruptedDrain{500};

  // Makes the stop interrupted, also one already draining: its drain ends within
  // kInterruptedDrain. Safe from any thread once start() has returned (a signal waiter's).
  void interrupt();

  std::string samples_path() const;
  std::string manifest_path() const;
  // Whether stop_and_finalize wrote the manifest at manifest_path().
  bool manifest_written() const { return manifest_written_; }

 private:
  std::shared_ptr<detail::CollectorState> state_;
  std::thread thread_;
  bool started_ = false;
  bool finalized_ = false;
  bool manifest_written_ = false;
};

}  // namespace cpupower::scrape
