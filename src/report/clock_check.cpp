#include "report/clock_check.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <filesystem>

#include "report/json_value.hpp"

namespace cpupower::report {
namespace {

void load_from(const std::string& path, std::vector<RecordedClockStep>& out,
               std::vector<std::string>* warnings) {
  if (!is_file(path)) return;
  const auto doc = read_json_file(path);
  if (!doc || !doc->is_object()) return;  // the file's own loader says what is wrong with it
  const auto it = doc->find("clock_steps");
  if (it == doc->end() || it->is_null()) return;
  if (!it->is_array()) {
    warnings->push_back(path + ": clock_steps is not a list; wall-clock steps not checked");
    return;
  }
  for (const auto& s : *it) {
    const auto at = s.is_object() ? json_member_number(s, "at_unix") : std::nullopt;
    const auto step = s.is_object() ? json_member_number(s, "step_s") : std::nullopt;
    if (!at || !step) {
      warnings->push_back(path + ": a clock_steps entry without at_unix and step_s numbers");
      continue;
    }
    out.push_back({*at, *step, path});
  }
}

}  // namespace

std::vector<RecordedClockStep> load_clock_steps(const RunInputs& run,
                                                std::vector<std::string>* warnings) {
  std::vector<RecordedClockStep> out;
  load_from((std::filesystem::path(run.log_dir) / "session.json").string(), out, warnings);
  if (run.cpu_samples) {
    const auto dir = std::filesystem::path(*run.cpu_samples).parent_path();
    load_from((dir / "cpu_manifest.json").string(), out, warnings);
  }
  return out;
}

void check_clock_steps(const std::vector<RecordedClockStep>& steps, WindowReport& r) {
  if (!r.error.empty()) return;
  const double lo = r.window.start_unix, hi = r.window.end_unix;
  for (const auto& s : steps) {
    const double from = s.at_unix - s.step_s;
    if (std::max(from, s.at_unix) < lo || std::min(from, s.at_unix) > hi) continue;
    r.error = fmt::format(
        "the wall clock stepped by {:+.3f} s at {:.3f} (recorded in {}) inside or across this "
        "window; its span and energy are not vouched for",
        s.step_s, s.at_unix, s.source);
    r.warnings.push_back(r.error);
    return;
  }
}

}  // namespace cpupower::report
