#include "launch/exporter_binary.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>

#include "common/text.hpp"

#ifndef CPUPOWER_SOURCE_DIR
#define CPUPOWER_SOURCE_DIR ""
#endif
// The installed fallback's directory relative to the installed binaries (GNUInstallDirs'
// DATADIR/cpu-power-telemetry from BINDIR; CMakeLists.txt works it out).
#ifndef CPUPOWER_FALLBACK_RELDIR
#define CPUPOWER_FALLBACK_RELDIR "../share/cpu-power-telemetry"
#endif

namespace cpupower::launch {
namespace {

bool executable_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

bool readable_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), R_OK) == 0;
}

}  // namespace

std::string self_exe_path() {
  char buf[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string();
}

std::string self_exe_dir() {
  const std::string path = self_exe_path();
  if (path.empty()) return ".";
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
}

ExporterLookup ExporterLookup::from_process() {
  ExporterLookup l;
  if (const char* bin = std::getenv("CPU_POWER_EXPORTER_BIN"); bin && *bin) l.env_bin = bin;
  l.self_dir = self_exe_dir();
  if (const char* path = std::getenv("PATH")) l.path_env = path;
  l.fallback_scripts.push_back(l.self_dir + "/" + kFallbackScriptName);
  l.fallback_scripts.push_back(l.self_dir + "/" + CPUPOWER_FALLBACK_RELDIR + "/" +
                               kFallbackScriptName);
  if (*CPUPOWER_SOURCE_DIR) {
    l.fallback_scripts.push_back(std::string(CPUPOWER_SOURCE_DIR) + "/tools/" +
                                 kFallbackScriptName);
  }
  l.is_executable_file = executable_file;
  l.is_readable_file = readable_file;
  return l;
}

ExporterChoice resolve_exporter(const ExporterLookup& l) {
  ExporterChoice c;
  auto take = [&](ExporterKind kind, const std::string& path, const char* origin) {
    c.kind = kind;
    c.path = path;
    c.origin = origin;
    return c;
  };
  if (l.env_bin) {
    if (l.is_executable_file(*l.env_bin))
      return take(ExporterKind::native, *l.env_bin, "CPU_POWER_EXPORTER_BIN");
    c.warnings.push_back("CPU_POWER_EXPORTER_BIN=" + *l.env_bin +
                         " is not an executable file; looking further");
  }
  const std::string beside = l.self_dir + "/" + kExporterName;
  if (l.is_executable_file(beside)) return take(ExporterKind::native, beside, "beside cpu-power");
  for (const auto& dir : common::split(l.path_env, ':')) {
    // An empty PATH entry means the working directory, as for execvp.
    const std::string candidate = (dir.empty() ? std::string(".") : dir) + "/" + kExporterName;
    if (l.is_executable_file(candidate)) return take(ExporterKind::native, candidate, "PATH");
  }
  for (const auto& script : l.fallback_scripts) {
    if (l.is_readable_file(script)) return take(ExporterKind::python_fallback, script, "fallback");
  }
  c.warnings.push_back(std::string("no ") + kExporterName + " (CPU_POWER_EXPORTER_BIN, beside " +
                       "cpu-power, PATH) and no " + kFallbackScriptName);
  return c;
}

std::vector<std::string> exporter_argv(const ExporterChoice& choice, long port,
                                       const std::string& source,
                                       const std::vector<std::string>& extra) {
  std::vector<std::string> argv;
  if (choice.kind == ExporterKind::native) {
    argv = {choice.path, "--port", std::to_string(port), "--source", source};
  } else if (choice.kind == ExporterKind::python_fallback) {
    argv = {"python3", choice.path, "--port", std::to_string(port)};
  } else {
    return argv;
  }
  argv.insert(argv.end(), extra.begin(), extra.end());
  return argv;
}

std::string exporter_source_warning(const ExporterChoice& choice, const std::string& source) {
  if (choice.kind != ExporterKind::python_fallback || source == "auto") return {};
  return "telemetry.cpu_power_exporter.source=" + source +
         " requested, but the Python fallback exporter is ACPI-only and has no --source "
         "flag; this request cannot be honored";
}

}  // namespace cpupower::launch
