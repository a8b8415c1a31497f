#pragma once
// Wall-clock steps a run recorded: `cpu-power run`'s session.json `clock_steps` (the wall clock
// against the monotonic one while the command ran) and the collector's cpu_manifest.json
// `clock_steps` (between scrape cycles). Row times and window bounds are wall-clock times, so a
// window that a step falls in or crosses integrates over a span the clock did not measure:
// such a window fails, the step named, and its energy is not vouched for.

#include <string>
#include <vector>

#include "report/discovery.hpp"
#include "report/window_report.hpp"

namespace cpupower::report {

struct RecordedClockStep {
  double at_unix = 0;  // wall-clock time just after the step
  double step_s = 0;   // negative: back
  std::string source;  // the file that recorded it
};

// Every step the run's files record; an entry that is not two numbers is a warning.
std::vector<RecordedClockStep> load_clock_steps(const RunInputs& run,
                                                std::vector<std::string>* warnings);

// Fails `r` when a step's jump (the wall clock went from at_unix - step_s to at_unix) overlaps
// its window.
void check_clock_steps(const std::vector<RecordedClockStep>& steps, WindowReport& r);

}  // namespace cpupower::report
