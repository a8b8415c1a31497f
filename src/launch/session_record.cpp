#include "launch/session_record.hpp"

#include <nlohmann/json.hpp>

#include "common/text.hpp"

namespace cpupower::launch {

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
  // Invalid UTF-8 in an argument is replaced rather than refused: the record must be written.
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

bool write_session_record(const std::string& path, const SessionRecord& record,
                          std::string* error) {
  return common::write_file_atomic(path, session_json(record), error, true);
}

}  // namespace cpupower::launch
