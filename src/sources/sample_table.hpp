#pragma once
// The last good value of each sensor with the time it was read, shared by every source's
// background readers and read by scrapes. A value older than max_age is withheld, and so is a
// sensor that never produced one (stale from the start). A watchdog thread warns once when a
// value goes stale, or when none has come within max_age of the start (INFO when a fresh
// value returns), whether or not anyone scrapes, so a wedged read shows as a gap instead of a
// frozen number.

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sources/reader_threads.hpp"

namespace cpupower::sources {

using SteadyTime = std::chrono::steady_clock::time_point;

struct ChannelReading {
  std::optional<double> watts;  // last good value, present only while fresh
  std::optional<double> age_s;  // age of the last good value (also when stale)
  // How long the value stays fresh from the snapshot's time (max_age less its age), present
  // while it is served: a watcher can sleep that long before the value can be withheld.
  std::optional<double> fresh_for_s;
  std::optional<double> read_duration_s;  // duration of the last completed read
  std::optional<double> read_at_unix;     // wall time the last good value was read (midpoint)
  // The sensor's averaging window as last discovered (ACPI power*_average_interval, NVML's
  // 1 s); nullopt where unknown (DCGM).
  std::optional<double> average_interval_s;
  // How long before its read the centre of what the last good value measured lies: half
  // the window it averaged, 0 for an instantaneous or unknown one. age_s + centre_offset_s
  // is the age of the measurement's centre, which the exporter publishes as sample age.
  double centre_offset_s = 0.0;
  // The channel's energy counters since the source started (sources/energy_counter.hpp):
  // joules integrated from its good readings (a counter source, RAPL, puts its hardware
  // counter's here), the seconds their averaging covered and the seconds bridged between
  // them. Present for every power channel from the start, stale or not.
  std::optional<double> energy_j;
  std::optional<double> covered_s;
  std::optional<double> bridged_s;
  std::uint64_t reads_total = 0;
  std::uint64_t read_errors_total = 0;  // reads that gave no value
  bool stale = false;                   // withheld: the last good value is too old, or none yet
};

class SampleTable {
 public:
  // `sensors` name the rows in log lines; `what` names the reading ("ACPI reading").
  SampleTable(std::vector<std::string> sensors, std::chrono::milliseconds max_age,
              std::string log_target, std::string what);
  ~SampleTable();
  SampleTable(const SampleTable&) = delete;
  SampleTable& operator=(const SampleTable&) = delete;

  // The watchdog looks again `period` after a pass while a value is stale, else when the
  // first value can go stale (about once per max_age while every sensor is read), and never
  // sooner than `period` after its last pass.
  void start_watchdog(std::chrono::milliseconds period);
  void stop();                            // stops the watchdog; records keep working
  std::uint64_t watchdog_passes() const;  // for tests and diagnostics

  // One completed read of row `i` that started at t0 and ended at t1: a value, or none with
  // the reason. The value is taken as read at the midpoint; `window_s` is the interval it
  // averages (the value's centre lies half of it before the read), nullopt for unknown.
  void record(std::size_t i, std::optional<double> watts, SteadyTime t0, SteadyTime t1,
              const std::string& problem = {}, std::optional<double> window_s = std::nullopt);

  std::size_t size() const;
  std::vector<ChannelReading> snapshot(SteadyTime now = std::chrono::steady_clock::now()) const;

  // Waits until each row in `rows` has completed a read that started at or after `since`,
  // or until `deadline`; returns how many then hold a value read since `since`.
  std::size_t wait_live(const std::vector<std::size_t>& rows, SteadyTime since,
                        SteadyTime deadline) const;

  struct State;

 private:
  std::shared_ptr<State> state_;
  ReaderThreads watchdog_;
};

}  // namespace cpupower::sources
