#pragma once
// <log_dir>/session.json: the command `cpu-power run` ran and its window, which the energy
// report uses when a run has no benchmark artifacts of its own.
//   {"schema_version": 1, "command": [...], "start_unix": <float>, "end_unix": <float>,
//    "exit_code": <int>, "benchmark_start_time_unix": <float>, "benchmark_end_time_unix":
//    <float>, "duration": <float>}
// The last three repeat the window as a benchmark result states one (duration from the
// monotonic clock), for the GPU leg's windows/session.json.

#include <string>
#include <vector>

namespace cpupower::launch {

inline constexpr int kSessionSchemaVersion = 1;

struct SessionRecord {
  std::vector<std::string> command;
  double start_unix = 0;  // wall clock, just before the command was started
  double end_unix = 0;    // wall clock, when its exit was seen
  int exit_code = 0;      // as the session exits with it (128 + signal when killed)
  double duration_s = 0;  // steady clock, start to end
};

std::string session_json(const SessionRecord& record);

// Written atomically (temporary file, rename, fsync). False with `error`.
bool write_session_record(const std::string& path, const SessionRecord& record, std::string* error);

}  // namespace cpupower::launch
