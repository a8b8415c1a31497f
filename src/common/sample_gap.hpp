#pragma once
// The largest gap between two samples that an energy window tolerates: the bound upstream's
// report and downstream consumers hold every window to (a larger gap inside a window rejects
// it). One constant for the recipe rules and the collectors' interval checks (config), the
// GPU windows' audit (artifacts), cpu-power validate and the report's coverage checks, so they
// cannot drift.

namespace cpupower::common {

inline constexpr double kMaxSampleGapS = 3.0;

}  // namespace cpupower::common
