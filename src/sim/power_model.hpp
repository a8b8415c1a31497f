#pragma once
// Where the simulated watts come from: host CPU load read from /proc/stat, a recorded trace,
// or a fixed utilisation, mapped onto the Grace rails with coefficients measured on GB200.

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.hpp"
#include "rails/rails.hpp"
#include "sim/profiles.hpp"

namespace cpupower::sim {

// Cumulative jiffies of one CPU. busy excludes idle and iowait; guest time is already
// counted inside user and nice, so it is not added again.
struct CpuTimes {
  std::uint32_t cpu = 0;
  std::uint64_t busy = 0;
  std::uint64_t total = 0;
};

// The per-CPU lines (cpuN ...) of /proc/stat text; the aggregate "cpu" line is skipped.
// Lines that do not parse are skipped, so a partially written fake file reads as fewer CPUs.
std::vector<CpuTimes> parse_proc_stat(std::string_view text);

// The watts of one rail of one socket at utilisation `u` (0..1, clamped).
// cpu_rail 41..203 W and an idle total of ~96 W per socket were measured on GB200. For the x86
// profiles the kinds are RAPL zones: total the package, cpu_rail its cores, soc its uncore.
double model_watts(Profile profile, rails::Kind kind, double u);

// Per-socket CPU utilisation from successive /proc/stat reads, smoothed with an exponential
// moving average so that the simulated power lags load like the firmware's averaging does.
class LoadTracker {
 public:
  LoadTracker(std::string proc_stat, std::uint32_t sockets,
              std::chrono::milliseconds time_constant = std::chrono::milliseconds(200));

  // Takes the baseline reading. Fails when the file cannot be read or lists no CPU.
  Status prime(std::chrono::steady_clock::time_point now);

  // Folds the busy share since the previous reading into the average. A failed read or an
  // interval with no elapsed jiffies keeps the previous utilisation.
  void sample(std::chrono::steady_clock::time_point now);

  double utilisation(std::uint32_t socket) const;

 private:
  struct Totals {
    std::uint64_t busy = 0;
    std::uint64_t total = 0;
  };
  Result<std::vector<Totals>> read_sockets() const;

  std::string path_;
  std::uint32_t sockets_;
  double time_constant_s_;
  std::vector<Totals> previous_;
  std::vector<double> smoothed_;
  std::chrono::steady_clock::time_point previous_at_{};
};

// The amplitude of the noise the simulators add to a meter's power when asked to (--noise).
inline constexpr double kNoiseAmplitudeW = 0.3;

// Deterministic uniform noise in [-amplitude, +amplitude] (splitmix64, so the sequence for a
// seed does not depend on the standard library's distributions).
class Noise {
 public:
  explicit Noise(std::uint64_t seed) : state_(seed) {}
  double next(double amplitude);

 private:
  std::uint64_t state_;
};

// The power trace format both simulators read: CSV, header `time_s,<column>,...`, then rows
// of seconds (>= 0, strictly increasing: two rows never hold the same time) and watts (>= 0)
// per column. Blank lines and lines starting with '#' are ignored; cells are trimmed.
struct TraceTable {
  std::vector<std::string> columns;  // after time_s, in header order
  std::vector<double> times_s;
  std::vector<std::vector<double>> rows;  // rows[r][c]: column c at times_s[r]
};
// `column_error(column, index)` says why a header column is refused (empty when it is taken).
// Errors name the trace (`name`) and the line.
using TraceColumnCheck = std::function<std::string(const std::string& column, std::size_t index)>;
Result<TraceTable> parse_trace(std::string_view text, const std::string& name,
                               const TraceColumnCheck& column_error);
// A trace file's text (up to 64 MiB), or the error "cannot read trace PATH: ...".
Result<std::string> read_trace_file(const std::string& path);

// A recorded trace of the node's channels (a TraceTable whose columns are channel keys).
class Trace {
 public:
  // Every header key must be one of `channels`. Errors name the file and the line.
  static Result<Trace> load(const std::string& path, const std::vector<ChannelSpec>& channels);

  // Step hold: the value of the last row with time_s <= elapsed_s (the first row before the
  // trace begins, the last row after it ends). nullopt when the trace has no column for key.
  std::optional<double> value_at(const std::string& key, double elapsed_s) const;

  // The rows of key's column with after_s < time_s <= upto_s, as (time_s, watts), in order:
  // the steps a step-hold reader sees in that span. Empty when the trace has no such column.
  std::vector<std::pair<double, double>> steps(const std::string& key, double after_s,
                                               double upto_s) const;

 private:
  std::map<std::string, std::size_t> columns_;
  TraceTable table_;
};

// The underlying power of one channel as a step function of time (seconds since the node
// started): each set() holds from its time until the next one. What the firmware publishes
// as power1_average is mean() over its averaging interval, so a model sampled finely (or a
// trace fed its exact step times) gives the average the firmware would compute.
class PowerHistory {
 public:
  // Steps older than keep_s before the latest set() are folded away; keep_s must cover the
  // longest averaging interval asked for.
  explicit PowerHistory(double keep_s = 2.0) : keep_s_(keep_s) {}

  // From t_s on the power is `watts`. t_s below the latest step's time is taken as that
  // time (the step replaces the latest one's value from there on).
  void set(double t_s, double watts);

  // The exact mean over [from_s, to_s]: the first value holds before the first step, the
  // latest after the latest. The value at to_s when to_s <= from_s; 0 before any set().
  double mean(double from_s, double to_s) const;

  bool empty() const { return steps_.empty(); }

 private:
  double keep_s_;
  std::deque<std::pair<double, double>> steps_;  // (from time_s, watts), ascending
};

}  // namespace cpupower::sim
