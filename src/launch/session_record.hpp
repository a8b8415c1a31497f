#pragma once
// <log_dir>/session.json: the command `cpu-power run` ran and its window, which the energy
// report uses when a run has no benchmark artifacts of its own.
//   {"schema_version": 1, "command": [...], "start_unix": <float>, "end_unix": <float>,
//    "exit_code": <int>, "benchmark_start_time_unix": <float>, "benchmark_end_time_unix":
//    <float>, "duration": <float>, "start_monotonic": <float>, "end_monotonic": <float>,
//    "clock_steps": [{"at_unix": <float>, "step_s": <float>}, ...], "job_id": <string>}
// benchmark_start_time_unix to duration repeat the window as a benchmark result states one
// (duration from the monotonic clock), for the GPU leg's windows/session.json. The monotonic
// readings beside the wall-clock ones, and every step of the wall clock against the monotonic
// one seen while the command ran, let the report refuse to integrate across a step.

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "common/result.hpp"

namespace cpupower::launch {

inline constexpr int kSessionSchemaVersion = 1;

// The wall clock moved against the monotonic one: a step (NTP, an operator) by `step_s`
// (negative: back), first seen at wall-clock time `at_unix`, that is just after it.
struct ClockStep {
  double at_unix = 0;
  double step_s = 0;
};

// Smaller changes of wall minus monotonic are reading jitter and slewing, not steps.
inline constexpr double kClockStepThresholdS = 0.25;

// Watches wall minus monotonic: each observe() compares it with the last one and records a
// change of more than kClockStepThresholdS as a step.
class ClockStepWatch {
 public:
  ClockStepWatch();
  // Compares now; true when a step was recorded.
  bool observe();
  // Records what the watch missed between `start` and `end` (each a wall and a monotonic
  // reading, in seconds) beyond the steps already recorded, as a step at `end_wall`.
  void settle(double start_wall, double start_mono, double end_wall, double end_mono);
  const std::vector<ClockStep>& steps() const { return steps_; }

 private:
  double last_offset_ = 0;
  std::vector<ClockStep> steps_;
};

// The monotonic clock (CLOCK_MONOTONIC, which libfaketime and clock steps leave alone), s.
double monotonic_now_s();
double now_unix();  // the wall clock, seconds since the epoch

struct SessionRecord {
  std::vector<std::string> command;
  double start_unix = 0;  // wall clock, just before the command was started
  double end_unix = 0;    // wall clock, when its exit was seen
  int exit_code = 0;      // as the session exits with it (128 + signal when killed)
  double duration_s = 0;  // steady clock, start to end
  double start_monotonic = 0, end_monotonic = 0;  // the monotonic clock at start and end
  std::vector<ClockStep> clock_steps;             // seen while the command ran
  std::string job_id;  // the artifacts' job id (SessionPlan::artifact_job_id), never empty
};

std::string session_json(const SessionRecord& record);

// Written atomically (temporary file, rename, fsync); an error when it cannot be.
Status write_session_record(const std::string& path, const SessionRecord& record);

}  // namespace cpupower::launch
