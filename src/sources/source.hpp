#pragma once
// The one interface every node-side reader implements (ACPI, RAPL, DCGM, NVML), as node_exporter's
// collectors do: start, stop, and a snapshot of the latest readings with their read time and
// age. Readers do their I/O on their own threads; a snapshot never touches a sensor or a
// library, so both sinks (the exporter's /metrics and the host collector's CSV) can take one
// at any time.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "expo/families.hpp"
#include "rails/rails.hpp"
#include "sources/sample_table.hpp"

namespace cpupower::sources {

// One row a source publishes. Fixed for the source's lifetime, except NVML's, whose `gpus`
// label names the GPUs that answered the last read.
struct Sensor {
  std::string name;  // unique: "hwmon2/power1", "intel-rapl:0", "dcgm/cpu0/1130"
  rails::Kind kind = rails::Kind::other;  // what the value measures
  std::optional<std::uint32_t> socket;    // the Grace socket, when the row has one
  std::optional<std::uint16_t> field_id;  // DCGM field
  bool power = true;                      // false for DCGM utilization fields (fractions 0-1)
  bool primary = false;         // the socket's power_w: an ACPI socket total, DCGM field 1130
  std::string label_text;       // escaped exposition labels of the value
  std::string self_label_text;  // escaped labels of the exporter's self metrics
};

// A socket of superchip module power (NVML) and why it is withheld, when it is: at most one
// of the two is set (a stale reading is stale whatever its GPUs said).
struct ModuleSocketState {
  std::uint32_t socket = 0;
  bool stale = false;     // its last reading is older than the maximum age
  bool disagree = false;  // its GPUs' last readings disagree by more than the bound
};

// The sensors' names, in order: the rows of the SampleTable that holds their readings.
inline std::vector<std::string> sensor_names(const std::vector<Sensor>& sensors) {
  std::vector<std::string> out;
  for (const auto& s : sensors) out.push_back(s.name);
  return out;
}

struct Snapshot {
  std::shared_ptr<const std::vector<Sensor>> sensors;
  std::vector<ChannelReading> readings;    // readings[i] belongs to (*sensors)[i]
  bool available = true;                   // false once the source gave up for good (NVML)
  std::vector<ModuleSocketState> modules;  // NVML: every socket read so far, ascending
};

class Source {
 public:
  virtual ~Source() = default;
  // "acpi", "rapl", "dcgm" or "nvml": the CSV `source` column and the exporter's info metric
  // say it.
  virtual std::string_view mode() const = 0;
  // The exposition family its readings are served in (expo/families.hpp).
  virtual const expo::Family& family() const = 0;
  // The counter families its energy readings (ChannelReading::energy_j, covered_s,
  // bridged_s) are served in, with the labels of family()'s samples.
  virtual expo::CounterFamilies counters() const = 0;
  virtual void start() = 0;
  // Stops every thread; waits up to `grace`, then leaves threads still blocked in a read
  // behind (they own their state and exit when the read returns).
  virtual void stop(std::chrono::milliseconds grace = std::chrono::milliseconds(1000)) = 0;
  virtual Snapshot snapshot(SteadyTime now = std::chrono::steady_clock::now()) const = 0;
  // Runs `sink` on the source's reader threads once a read cycle, on the wake-up of the
  // cycle's reads and before them (it sees what the last cycle finished, never slow reads
  // still in flight), from now until stop(): a sink that takes a snapshot at the read
  // cadence (the host collector) then costs the node no thread and no wake-up of its own. It
  // must not block: it shares a reader's thread. False when the source has no such cycle
  // (DCGM and NVML poll at their libraries' pace, RAPL on a thread of its own); the caller
  // then keeps a loop of its own.
  virtual bool run_on_read_cycle(std::function<void()> /*sink*/) { return false; }
};

}  // namespace cpupower::sources
