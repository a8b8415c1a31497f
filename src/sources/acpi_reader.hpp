#pragma once
// Reads ACPI power_meter channels in the background into a SampleTable. Sinks only ever
// look at the table: a read is a synchronous firmware round trip (~150 ms on Grace) that can
// also hang for good, so it must never happen on an HTTP thread or the sample loop.
//
// One job per hwmon node on a pool of at most kMaxReaderThreads threads (ReaderPool), so that
// a machine with thousands of power meters costs a bounded number of threads: a node reads its
// channels one after the other (their files kept open: ValueFile), on a fixed cadence on its
// own grid; a slow read stretches its own cycle and the next one starts at once, with no
// extra sleep. The pool keeps as many workers as the reads keep busy: one where the values
// come back at once (a driver answering from its cache, a simulated tree), one a node where
// every read is a firmware round trip. A hung device stops only its own channels: a job
// waiting longer than max(read interval, 250 ms) for a worker doubles the workers, a worker
// in one cycle for max(2 x read interval, 500 ms) is replaced, and the other nodes keep their
// cadence.
//
// Channels move: on kernels >= 6.15 a change of the averaging interval (ours, DCGM's, an
// administrator's) unregisters and re-registers the hwmon device under a new hwmonN. A read
// that fails with ENOENT or ENODEV makes the reader discover again (one scan at a time, at
// most one per 100 ms) and follow each channel to its new path by its OEM label (else its
// ACPI device and channel name). Sensor names and labels stay those of the first discovery,
// so the series continue unbroken. Each value is recorded with the averaging interval it
// was read under; intervals are read again every 10 s (older kernels change them in place).

#include <chrono>
#include <memory>
#include <vector>

#include "sources/acpi_discovery.hpp"
#include "sources/reader_threads.hpp"
#include "sources/sample_table.hpp"
#include "sources/source.hpp"

namespace cpupower::sources {

// Up to this many hwmon nodes, each has a thread of its own (real Grace nodes have a dozen).
inline constexpr std::size_t kMaxReaderThreads = 16;

class AcpiReader final : public Source {
 public:
  // hwmon_root: where to look for channels whose device disappeared; empty: nowhere.
  AcpiReader(std::vector<AcpiChannel> channels, std::chrono::milliseconds read_interval,
             std::chrono::milliseconds max_age, std::string hwmon_root = {});
  ~AcpiReader() override;

  static constexpr std::string_view kMode = "acpi";
  std::string_view mode() const override { return kMode; }
  const expo::Family& family() const override { return expo::kAcpiWatts; }
  expo::CounterFamilies counters() const override { return expo::kAcpiCounters; }
  void start() override;
  void stop(std::chrono::milliseconds grace = std::chrono::milliseconds(1000)) override;
  Snapshot snapshot(SteadyTime now = std::chrono::steady_clock::now()) const override;
  // An observer of the reader pool at the read interval (ReaderPool::add_observer).
  bool run_on_read_cycle(std::function<void()> sink) override;

  // The channels as first discovered: their sensor names and labels are the published ones.
  const std::vector<AcpiChannel>& channels() const { return *channels_; }
  // Where each channel is read now (value path, hwmon node, averaging interval), in the
  // same order; sensor names and labels as first discovered.
  std::vector<AcpiChannel> current_channels() const;
  const SampleTable& table() const { return *table_; }
  // Reader threads running now (for tests and diagnostics).
  std::size_t reader_threads() const { return threads_.threads(); }

  struct Live;

 private:
  std::shared_ptr<const std::vector<AcpiChannel>> channels_;
  std::shared_ptr<Live> live_;
  std::shared_ptr<const std::vector<Sensor>> sensors_;
  std::shared_ptr<SampleTable> table_;
  std::chrono::milliseconds interval_;
  ReaderPool threads_;
};

}  // namespace cpupower::sources
