#pragma once
// Finding a run's inputs below its log directory: the CPU samples (exporter leg under
// `cpu/`, host leg under `cpu_power/`), the GPU leg's samples.csv and manifest.json, the
// benchmark type from benchmark.out, and one window source per concurrency point - or the
// `cpu-power run` session's own window when there are no benchmark artifacts.

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace cpupower::report {

enum class SourceKind { sa_bench, aiperf_records, aiperf_aggregate, session };

struct WindowSource {
  SourceKind kind = SourceKind::sa_bench;
  std::string path;
  long long concurrency = 0;
};

struct RunInputs {
  std::string log_dir;
  std::string benchmark_out;
  std::string benchmark_type;  // aiperf | sa-bench | session
  std::optional<std::string> cpu_samples;
  std::optional<std::string> gpu_samples;
  std::optional<std::string> gpu_manifest;
  std::vector<WindowSource> sources;  // by (concurrency, path)
};

struct Discovery {
  std::optional<RunInputs> run;
  std::string error;  // texts existing consumers know, e.g. "<dir>/benchmark.out: not found"
};

Discovery discover_run(const std::string& log_dir,
                       const std::optional<std::string>& cpu_samples_override);

// The run's windows alone, for a report whose energy comes from elsewhere (a metrics store,
// store/): discover_run without looking for samples files, so a run without any still has
// its windows.
Discovery discover_windows(const std::string& log_dir);

// A regular file (or a link to one); false on any error rather than an exception.
bool is_file(const std::filesystem::path& p);

// Python's str(pathlib.Path(p)): no empty or "." components, no trailing slash.
std::string python_path_str(const std::string& path);

}  // namespace cpupower::report
