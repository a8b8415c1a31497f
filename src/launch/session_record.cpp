#include "launch/session_record.hpp"

#include <nlohmann/json.hpp>

#include <cmath>

#include "common/text.hpp"

namespace cpupower::launch {
double now_unix() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

double monotonic_now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

ClockStepWatch::ClockStepWatch() : last_offset_(now_unix() - monotonic_now_s()) {}

bool ClockStepWatch::observe() {
  const double mono = monotonic_now_s();
  const double wall = now_unix();
  const double offset = wall - mono;
  const double step = offset - last_offset_;
  last_offset_ = offset;
  if (std::abs(step) <= kClockStepThresholdS) return false;
  steps_.push_back({wall, step});
  return true;
}

void ClockStepWatch::settle(double start_wall, double start_mono, double end_wall,
                            double end_mono) {
  double seen = 0;
  for (const auto& s : steps_) seen += s.step_s;
  const double missed = (end_wall - start_wall) - (end_mono - start_mono) - seen;
  if (std::abs(missed) > kClockStepThresholdS) steps_.push_back({end_wall, missed});
}

std::string session_json(const SessionRecord& r) {
  nlohmann::ordered_json j;
  j["schema_version"] = kSessionSchemaVersion;
  j["command"] = r.command;
  j["start_unix"] = r.start_unix;
  j["end_unix"] = r.end_unix;
  j["exit_code"] = r.exit_code;
  // The same window under the names a benchmark result uses, so that the GPU leg's
  // windows/session.json can point at this file as its result (docs/formats.md).
  j["benchmark_start_time_unix"] = r.start_unix;
  j["benchmark_end_time_unix"] = r.end_unix;
  j["duration"] = r.duration_s;
  j["start_monotonic"] = r.start_monotonic;
  j["end_monotonic"] = r.end_monotonic;
  j["clock_steps"] = nlohmann::ordered_json::array();
  for (const auto& s : r.clock_steps) {
    j["clock_steps"].push_back({{"at_unix", s.at_unix}, {"step_s", s.step_s}});
  }
  j["job_id"] = r.job_id;
  // Invalid UTF-8 in an argument is replaced rather than refused: the record must be written.
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

Status write_session_record(const std::string& path, const SessionRecord& record) {
  return common::write_file_atomic(path, session_json(record), true);
}

}  // namespace cpupower::launch
