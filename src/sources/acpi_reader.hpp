#pragma once
// Reads ACPI power_meter channels in the background into a SampleTable. Sinks only ever
// look at the table: a read is a synchronous firmware round trip (~150 ms on Grace) that can
// also hang for good, so it must never happen on an HTTP thread or the sample loop.
//
// One reader thread per hwmon node: a hung device stops only its own channels. Each thread
// reads on a fixed cadence measured from the start of its cycle; a slow read stretches its
// own cycle and the next one starts at once, with no extra sleep.

#include <chrono>
#include <memory>
#include <vector>

#include "sources/acpi_discovery.hpp"
#include "sources/reader_threads.hpp"
#include "sources/sample_table.hpp"
#include "sources/source.hpp"

namespace cpupower::sources {

class AcpiReader final : public Source {
 public:
  AcpiReader(std::vector<AcpiChannel> channels, std::chrono::milliseconds read_interval,
             std::chrono::milliseconds max_age);
  ~AcpiReader() override;

  std::string_view mode() const override { return "acpi"; }
  void start() override;
  void stop(std::chrono::milliseconds grace = std::chrono::milliseconds(1000)) override;
  Snapshot snapshot(SteadyTime now = std::chrono::steady_clock::now()) const override;

  const std::vector<AcpiChannel>& channels() const { return *channels_; }
  const SampleTable& table() const { return *table_; }

 private:
  std::shared_ptr<const std::vector<AcpiChannel>> channels_;
  std::shared_ptr<const std::vector<Sensor>> sensors_;
  std::shared_ptr<SampleTable> table_;
  std::chrono::milliseconds interval_;
  ReaderThreads threads_;
};

}  // namespace cpupower::sources
