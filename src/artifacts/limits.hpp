#pragma once
// Physical bounds on a power reading, shared by the collectors and the report
// (docs/formats.md): above them a reading is an error, never a value. Zero, negative and
// non-finite readings are missing values instead.

namespace cpupower::artifacts {

inline constexpr double kMaxSocketWatts = 10'000;  // power_w, rails, module_w of one socket; a GPU
inline constexpr double kMaxNodeWatts = 100'000;   // total_power_w of one node

}  // namespace cpupower::artifacts
