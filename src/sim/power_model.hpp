#pragma once
// Where the simulated watts come from: host CPU load read from /proc/stat, a recorded trace,
// or a fixed utilisation, mapped onto the Grace rails with coefficients measured on GB200.

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

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
// cpu_rail 41..203 W and an idle total of ~96 W per socket were measured on GB200.
double model_watts(Profile profile, rails::Kind kind, double u);

// Per-socket CPU utilisation from successive /proc/stat reads, smoothed with an exponential
// moving average so that the simulated power lags load like the firmware's averaging does.
class LoadTracker {
 public:
  LoadTracker(std::string proc_stat, std::uint32_t sockets,
              std::chrono::milliseconds time_constant = std::chrono::milliseconds(200));

  // Takes the baseline reading. Fails when the file cannot be read or lists no CPU.
  bool prime(std::chrono::steady_clock::time_point now, std::string* error);

  // Folds the busy share since the previous reading into the average. A failed read or an
  // interval with no elapsed jiffies keeps the previous utilisation.
  void sample(std::chrono::steady_clock::time_point now);

  double utilisation(std::uint32_t socket) const;

 private:
  struct Totals {
    std::uint64_t busy = 0;
    std::uint64_t total = 0;
  };
  std::vector<Totals> read_sockets(bool* ok, std::string* error) const;

  std::string path_;
  std::uint32_t sockets_;
  double time_constant_s_;
  std::vector<Totals> previous_;
  std::vector<double> smoothed_;
  std::chrono::steady_clock::time_point previous_at_{};
};

// Deterministic uniform noise in [-amplitude, +amplitude] (splitmix64, so the sequence for a
// seed does not depend on the standard library's distributions).
class Noise {
 public:
  explicit Noise(std::uint64_t seed) : state_(seed) {}
  double next(double amplitude);

 private:
  std::uint64_t state_;
};

// A recorded power trace: CSV with header `time_s,<key>,<key>...`, watts, rows ascending in
// time. Blank lines and lines starting with '#' are ignored.
class Trace {
 public:
  // Every header key must be one of `channels`. Errors name the file and the line.
  static std::optional<Trace> load(const std::string& path,
                                   const std::vector<ChannelSpec>& channels, std::string* error);

  // Step hold: the value of the last row with time_s <= elapsed_s (the first row before the
  // trace begins, the last row after it ends). nullopt when the trace has no column for key.
  std::optional<double> value_at(const std::string& key, double elapsed_s) const;

 private:
  std::map<std::string, std::size_t> columns_;
  std::vector<double> times_s_;
  std::vector<std::vector<double>> rows_;
};

}  // namespace cpupower::sim
