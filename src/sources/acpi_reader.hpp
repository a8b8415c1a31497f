#pragma once
// Reads ACPI power_meter channels in the background into a SampleTable. Scrapes only ever
// look at the table: a read is a synchronous firmware round trip (~150 ms on Grace) that can
// also hang for good, so it must never happen on an HTTP thread.
//
// One reader thread per hwmon node: a hung device stops only its own channels. Each thread
// reads on a fixed cadence measured from the start of its cycle; a slow read stretches its
// own cycle and the next one starts at once, with no extra sleep.

#include <chrono>
#include <memory>
#include <vector>

#include "sources/acpi_discovery.hpp"
#include "sources/sample_table.hpp"

namespace cpupower::sources {

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
  const SampleTable& table() const;

  struct Shared;

 private:
  std::shared_ptr<Shared> shared_;
};

}  // namespace cpupower::sources
