#pragma once
// DCGM CPU-entity power (fields 1130 CPU rail and 1132 SysIO), loaded with dlopen. DCGM has
// no CPU power backend of its own: its sysmon module reads the same ACPI hwmon channels by
// label, so 1130 is the CPU rail, about half of the socket envelope ACPI reports.
//
// The session owns the library handle, the DCGM handle (a running host engine, else an
// embedded one), the entity group and the field group, and undoes each on every path. Reads
// run on a poller thread into a SampleTable; scrapes never call DCGM.

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sources/reader_threads.hpp"
#include "sources/sample_table.hpp"
#include "sources/source.hpp"

namespace cpupower::sources {

struct DcgmOptions {
  std::string library;  // empty: libdcgm.so.4, then .so.3, then .so
  std::chrono::milliseconds connect_timeout{1000};
  std::chrono::milliseconds poll_interval{100};
  std::chrono::milliseconds max_age{3000};
  // Also watch the utilization fields 1100..1104 (the host collector's cpu_util_* columns);
  // when the library refuses them, power is watched alone (WARN).
  bool utilization = false;
};

// One value of a read: watts, or why there is none (non-OK status, blank, not positive).
struct DcgmValue {
  std::optional<double> watts;
  std::string problem;
};

class DcgmSession;

class DcgmReader final : public Source {
 public:
  DcgmReader(std::unique_ptr<DcgmSession> session, std::chrono::milliseconds poll_interval,
             std::chrono::milliseconds max_age);
  ~DcgmReader() override;

  static constexpr std::string_view kMode = "dcgm";
  std::string_view mode() const override { return kMode; }
  const expo::Family& family() const override { return expo::kDcgmWatts; }
  expo::CounterFamilies counters() const override { return expo::kDcgmCounters; }
  void start() override;
  void stop(std::chrono::milliseconds grace = std::chrono::milliseconds(1000)) override;
  Snapshot snapshot(SteadyTime now = std::chrono::steady_clock::now()) const override;

  std::vector<std::uint16_t> fields() const;
  std::vector<std::uint32_t> entities() const;  // DCGM CPU entity ids, published as `socket`

 private:
  std::shared_ptr<DcgmSession> session_;
  std::shared_ptr<const std::vector<Sensor>> sensors_;
  std::shared_ptr<SampleTable> table_;
  std::chrono::milliseconds interval_;
  ReaderThreads threads_;
};

struct DcgmRung {
  std::unique_ptr<DcgmReader> reader;
  std::string reason;
};

// Both DCGM rungs of the ladder: watch 1130 + 1132, or 1130 alone when the library refuses
// the pair (WARN); accepted only when some CPU entity returns a positive 1130 on a first
// read. A live 1132 alone never vouches: it would publish soc_w with no power_w.
DcgmRung try_dcgm(const DcgmOptions& options);

// Value rules, exposed for tests: non-OK status, DCGM blanks (>= 2^47 for doubles),
// non-finite and non-positive values are missing, and so is power above
// artifacts::kMaxSocketWatts. Utilization (`allow_zero`) may be 0.
DcgmValue interpret_dcgm_value(int status, unsigned short field_type, double dbl, std::int64_t i64,
                               bool allow_zero = false);

}  // namespace cpupower::sources
