#pragma once
// Reads ACPI power_meter channels in the background and keeps, per channel, the last good
// value with the time it was read. Scrapes only ever look at this snapshot: a read is a
// synchronous firmware round trip (~150 ms on Grace) that can also hang for good, so it
// must never happen on an HTTP thread.
//
// One reader thread per hwmon node: a hung device stops only its own channels. Each thread
// reads on a fixed cadence measured from the start of its cycle; a slow read stretches its
// own cycle and the next one starts at once, with no extra sleep. A watchdog thread marks a
// channel stale when its last good value is older than max_age (WARN once, INFO on
// recovery), whether or not anyone scrapes.

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sources/acpi_discovery.hpp"

namespace cpupower::sources {

using SteadyTime = std::chrono::steady_clock::time_point;

struct ChannelReading {
  std::optional<double> watts;            // last good value, present only while fresh
  std::optional<double> age_s;            // age of the last good value (also when stale)
  std::optional<double> read_duration_s;  // duration of the last completed read
  std::uint64_t reads_total = 0;
  std::uint64_t read_errors_total = 0;  // reads that gave no value
  bool stale = false;                   // had a value, or should have by now, and it is too old
};

class AcpiReader {
 public:
  AcpiReader(std::vector<AcpiChannel> channels, std::chrono::milliseconds read_interval,
             std::chrono::milliseconds max_age);
  ~AcpiReader();
  AcpiReader(const AcpiReader&) = delete;
  AcpiReader& operator=(const AcpiReader&) = delete;

  void start();
  // Stops every thread; waits up to `grace` for them, then leaves the ones blocked in a read
  // behind (they own their state and exit when the read returns).
  void stop(std::chrono::milliseconds grace = std::chrono::milliseconds(1000));

  const std::vector<AcpiChannel>& channels() const;
  std::vector<ChannelReading> snapshot(SteadyTime now = std::chrono::steady_clock::now()) const;

  // Waits until each channel in `indices` has completed a read that started at or after
  // `since`, or until `deadline`. Returns how many of them then hold a good value read since
  // `since`. Used by the liveness probe, so a hung channel cannot hang startup.
  std::size_t wait_live(const std::vector<std::size_t>& indices, SteadyTime since,
                        SteadyTime deadline) const;

  struct Shared;

 private:
  std::shared_ptr<Shared> shared_;
};

}  // namespace cpupower::sources
