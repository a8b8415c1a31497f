// The window of a `cpu-power run` session without benchmark artifacts: the command's own
// start and end, so every session still gets its energy figure.

#include <fmt/core.h>

#include "report/json_value.hpp"
#include "report/window.hpp"

namespace cpupower::report {

Window load_session_window(const std::string& path) {
  Window w("session", path);
  const auto doc = read_json_file(path);
  if (!doc) return w.error = doc.error(), w;
  const auto start = json_member_number(*doc, "start_unix");
  const auto end = json_member_number(*doc, "end_unix");
  if (!start || !end) return w.error = path + ": start_unix and end_unix must be numbers", w;
  w.start_unix = *start;
  w.end_unix = *end;
  w.start_json = (*doc)["start_unix"];
  w.end_json = (*doc)["end_unix"];
  w.reported.source = "session-json";
  w.reported.start_unix = *start;
  w.reported.end_unix = *end;
  w.reported.duration_seconds = *end - *start;
  std::string command;
  if (doc->contains("command") && (*doc)["command"].is_array()) {
    for (const auto& arg : (*doc)["command"]) {
      if (!command.empty()) command += ' ';
      command += arg.is_string() ? arg.get<std::string>() : arg.dump();
    }
  }
  const auto exit_code = doc->find("exit_code");
  w.reported.note = fmt::format("command: {} (exit code {})", command,
                                exit_code == doc->end() ? "unknown" : exit_code->dump());
  return w;
}

}  // namespace cpupower::report
