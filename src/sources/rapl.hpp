#pragma once
// x86 CPU power from RAPL: the Linux powercap tree's `intel-rapl` zones (the one driver that
// serves Intel packages and AMD Zen packages alike). Each zone is an energy counter in
// microjoules that wraps at its max_energy_range_uj; the hardware integrates, so power is the
// counter's difference between two reads over the time between them, and the counter itself
// is served too, unwrapped, from the reader's first read on.
//
// Zones (the kernel's layout of /sys/class/powercap, every zone a flat entry of the class
// directory): intel-rapl:<N> named package-<P> is package P (socket = P); its subzones
// intel-rapl:<N>:<M> named core, uncore or dram. A package boundary is the CPU package (cores,
// caches, uncore, memory controller; DRAM is its own zone), not a Grace socket envelope.
//
// Counter rules: a read below the previous one is a wrap when the energy the wrap implies
// ((max - previous) + current + 1 µJ) over the interval stays within the physical bound
// (artifacts::kMaxSocketWatts); otherwise the counter was reset and the interval gives no
// power (never a negative one) and adds nothing to the energy. An interval whose counter did
// not advance gives no value, as a zero does everywhere else. The first read of a zone is its
// baseline: no value, and it counts in neither reads_total nor read_errors_total.
//
// Permissions: energy_uj is readable by root only (mode 0400) on current kernels. A read
// refused with EACCES is an error that names the file and what grants access
// (rapl_permission_error); the source is then unusable, never silently absent.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sources/reader_threads.hpp"
#include "sources/sample_table.hpp"
#include "sources/source.hpp"
#include "sources/sysfs_read.hpp"

namespace cpupower::sources {

// The powercap class directory as the kernel lays it out, and the names in it that RAPL uses.
inline constexpr std::string_view kPowercapRoot = "/sys/class/powercap";
inline constexpr std::string_view kRaplZonePrefix = "intel-rapl:";  // zones of the control type
inline constexpr std::string_view kRaplPackagePrefix = "package-";  // `name` of a package zone
inline constexpr std::string_view kRaplEnergyFile = "energy_uj";
inline constexpr std::string_view kRaplMaxEnergyFile = "max_energy_range_uj";
inline constexpr std::string_view kRaplNameFile = "name";

// What a zone measures; its `type` label. total: the package, the socket's power_w; core,
// uncore and dram: its subzones, component rails (cpu_rail_w, soc_w and dram_w in the files).
enum class RaplType { total, core, uncore, dram };
std::string_view rapl_type_name(RaplType type);  // "total" "core" "uncore" "dram"
rails::Kind rapl_kind(RaplType type);            // total, cpu_rail, soc, dram

struct RaplZone {
  std::string sensor;     // the zone's entry in the class directory: "intel-rapl:0:2"
  std::string zone_name;  // its `name`: "package-0", "core", "uncore", "dram"
  RaplType type = RaplType::total;
  std::uint32_t socket = 0;               // the package id
  std::string energy_path;                // <root>/<sensor>/energy_uj
  std::uint64_t max_energy_range_uj = 0;  // 0: unknown (every step back is then a reset)
  std::string label_text;                 // escaped cpu_power_rapl_watts labels, built once
};

struct RaplDiscovery {
  std::vector<RaplZone> zones;  // by socket, each package before its subzones
  std::vector<std::string> warnings;
  std::string error;  // the root cannot be listed
};

// The zones under a powercap class directory. Zones left out, each with a warning: one
// without `name` or energy_uj, a package split by die (package-P-die-D, not supported), a
// subzone of a zone that is not a package, an unknown name; the platform zone psys (it covers
// more than the packages) is left out silently.
RaplDiscovery discover_rapl(const std::string& powercap_root);

// One read of an energy counter file: microjoules, or why there are none.
struct EnergyRead {
  std::optional<std::uint64_t> uj;
  std::string problem;
  int error_number = 0;  // errno of a failed open or read, else 0
};
// Opens, reads and closes the file; decimal text with an optional newline.
EnergyRead read_energy_file(const std::string& path);
// The same through a file kept open between reads (ValueFile): the reader's every cycle.
EnergyRead read_energy_file(ValueFile& file, const std::string& path);
// Empty: each zone's counter file, kept open between reads.
using EnergyReadFn = std::function<EnergyRead(const std::string& path)>;

// The error for a counter the process may not read: the file, its mode and what grants
// access (docs/operations.md, RAPL permissions).
std::string rapl_permission_error(const std::string& path);

// One step of a counter from `previous_uj` to `current_uj` over `seconds`: the energy in
// between, or none for a reset (the rules above). `wrapped` when it went through a wrap.
struct CounterStep {
  std::optional<std::uint64_t> delta_uj;
  bool wrapped = false;
};
CounterStep counter_step(std::uint64_t previous_uj, std::uint64_t current_uj,
                         std::uint64_t max_energy_range_uj, double seconds);

struct RaplOptions {
  std::string root = std::string(kPowercapRoot);
  std::chrono::milliseconds read_interval{100};
  std::chrono::milliseconds max_age{3000};
  std::chrono::milliseconds probe_retry_delay{1000};
  EnergyReadFn read{};  // tests inject errors here; empty: the files, kept open
};

class RaplReader final : public Source {
 public:
  RaplReader(std::vector<RaplZone> zones, std::chrono::milliseconds read_interval,
             std::chrono::milliseconds max_age, EnergyReadFn read = {});
  ~RaplReader() override;

  static constexpr std::string_view kMode = "rapl";
  std::string_view mode() const override { return kMode; }
  const expo::Family& family() const override { return expo::kRaplWatts; }
  expo::CounterFamilies counters() const override { return expo::kRaplCounters; }
  void start() override;
  void stop(std::chrono::milliseconds grace = std::chrono::milliseconds(1000)) override;
  // Each zone carries its energy since the first read (energy_j, the hardware counter's) and
  // the interval its power averaged (average_interval_s: the time between its two reads).
  Snapshot snapshot(SteadyTime now = std::chrono::steady_clock::now()) const override;

  const std::vector<RaplZone>& zones() const { return *zones_; }
  // How often the counters are read: what each power value averages, nominally.
  std::chrono::milliseconds read_interval() const { return interval_; }
  const SampleTable& table() const { return *table_; }

  struct Live;

 private:
  std::shared_ptr<const std::vector<RaplZone>> zones_;
  std::shared_ptr<const std::vector<Sensor>> sensors_;
  std::shared_ptr<SampleTable> table_;
  std::shared_ptr<Live> live_;
  std::chrono::milliseconds interval_;
  EnergyReadFn read_;
  ReaderThreads threads_;
};

// The outcome of the RAPL rung: a running reader, or the reason it is unusable.
struct RaplRung {
  std::unique_ptr<RaplReader> reader;
  std::string reason;
  std::vector<std::string> warnings;  // discovery warnings and zones left out, to be logged
};

// Discovery; one read of every zone's counter (a refused read makes the rung unusable with
// rapl_permission_error; a zone that cannot be read otherwise is left out, a package too);
// then the liveness probe: some package's counter advances between two reads, on the first
// pass or on one retry after probe_retry_delay.
RaplRung try_rapl(const RaplOptions& options);

}  // namespace cpupower::sources
