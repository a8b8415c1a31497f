#pragma once
// Which exporter runs on the nodes. In order: $CPU_POWER_EXPORTER_BIN, the cpu-power-exporter
// beside this cpu-power, cpu-power-exporter on PATH, and last the single-file python3 stdlib
// exporter shipped with the project, which reads ACPI only and has no --source.

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace cpupower::launch {

inline constexpr const char* kExporterName = "cpu-power-exporter";
inline constexpr const char* kFallbackScriptName = "cpu_power_exporter_fallback.py";

enum class ExporterKind { native, python_fallback, none };

struct ExporterChoice {
  ExporterKind kind = ExporterKind::none;
  std::string path;    // the binary, or the fallback script
  std::string origin;  // "CPU_POWER_EXPORTER_BIN", "beside cpu-power", "PATH", "fallback"
  std::vector<std::string> warnings;  // candidates passed over, and why
};

// Everything the resolution looks at, so that tests can stand in for the machine.
struct ExporterLookup {
  std::optional<std::string> env_bin;         // $CPU_POWER_EXPORTER_BIN
  std::string self_dir;                       // directory of this cpu-power (/proc/self/exe)
  std::string path_env;                       // $PATH
  std::vector<std::string> fallback_scripts;  // candidate paths of the python fallback
  std::function<bool(const std::string&)> is_executable_file;
  std::function<bool(const std::string&)> is_readable_file;

  // This process's view: the environment, /proc/self/exe, and the fallback beside the
  // binaries (a build tree), in the installed DATADIR/cpu-power-telemetry (`cmake --install`),
  // or in the source tree this cpu-power was built from, in that order.
  static ExporterLookup from_process();
};

ExporterChoice resolve_exporter(const ExporterLookup& lookup);

// The exporter's argv for `port` and `source`, plus `extra` flags (--bind, --hwmon-root for
// local exporters). The fallback gets no --source.
std::vector<std::string> exporter_argv(const ExporterChoice& choice, long port,
                                       const std::string& source,
                                       const std::vector<std::string>& extra);

// Why `choice` cannot honor `source` (a non-auto source on the fallback, which has no
// --source): a warning beside the argv, empty when there is nothing to say.
std::string exporter_source_warning(const ExporterChoice& choice, const std::string& source);

// The running executable (/proc/self/exe), and the directory holding it.
std::string self_exe_path();
std::string self_exe_dir();

}  // namespace cpupower::launch
