#pragma once
// One telemetry leg of a `cpu-power run` (the exporter leg, the GPU leg, the host leg), as
// the session drives it: started against its startup deadline before the command, finished
// after it. Each leg is best-effort unless the recipe requires it; then a leg that is not
// ready keeps the command from running, and an unpublishable result turns exit 0 into 1. A
// leg never masks the command's own failure.

#include <chrono>
#include <functional>
#include <optional>
#include <string>

#include "artifacts/gpu_contract.hpp"
#include "launch/session_plan.hpp"
#include "launch/session_record.hpp"
#include "scrape/collector.hpp"

namespace cpupower::launch {

// What a leg left at the end of the session.
struct LegVerdict {
  std::string status;  // complete | incomplete | failed
  artifacts::ReasonSet reasons;
  bool publishable = false;
  bool exit_nonzero = false;  // the session's exit code 0 becomes 1
  std::string summary;        // its lines of the run's summary (empty: none)
};

struct SessionEnd {
  bool interrupted = false;
  const SessionRecord* command = nullptr;  // null: the command never started
  int exit_code = 0;                       // the session's so far
};

class Leg {
 public:
  virtual ~Leg() = default;

  // Starts the leg; its startup deadline counts from `started`, and `give_up` (a signal)
  // ends the waiting early. Whether the leg is ready.
  virtual bool start(std::chrono::steady_clock::time_point started,
                     const std::function<bool()>& give_up) = 0;

  // Once start() returned: the error line that keeps the command from running, when the
  // recipe requires this leg and it is not ready.
  virtual std::optional<std::string> blocks() const { return std::nullopt; }

  // A signal came: the leg's stop, also one under way, hurries. Safe from another thread
  // once start() has returned.
  virtual void interrupt() {}

  // Waits (bounded) for rows past the command's end, stops collecting and writes the leg's
  // artifacts. Logs why when its verdict turns the session's exit code 0 into 1.
  virtual LegVerdict finish(const SessionEnd& end) = 0;

  // After every leg has finished, before the exporters stop.
  virtual void withdraw() {}
};

// What the legs share.
std::chrono::milliseconds to_ms(double seconds);  // rounded to the millisecond

// A collector's options from the recipe, writing under `out_dir`.
scrape::CollectorOptions collector_options(const SessionPlan& plan, std::string out_dir);

// How long to wait past readiness for first rows, or past the command's end for last rows:
// one collect interval and one request, so that an energy window is bracketed.
std::chrono::milliseconds row_wait(const SessionPlan& plan);

// Polls the collector until `satisfied(index, node)` holds for every node, `deadline`
// passes or `give_up` says so; whether every node did.
bool wait_for_rows(const scrape::Collector& collector,
                   std::chrono::steady_clock::time_point deadline,
                   const std::function<bool(std::size_t, const scrape::NodeStats&)>& satisfied,
                   const std::function<bool()>& give_up);

}  // namespace cpupower::launch
