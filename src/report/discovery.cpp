#include "report/discovery.hpp"

#include <fmt/ranges.h>

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>

#include "report/phase_log.hpp"

namespace cpupower::report {
namespace {

namespace fs = std::filesystem;

using Parts = std::vector<std::string>;

// Why `path` is not a regular file to read: "not found" when nothing is there (the text
// existing consumers know), else what is (a symlink loop, a directory, a permission).
std::string not_a_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return errno == ENOENT || errno == ENOTDIR ? "not found" : std::strerror(errno);
  }
  if (S_ISDIR(st.st_mode)) return "is a directory";
  return "not a regular file";
}

// `root` (as python_path_str gives it) joined with the components below it.
std::string join(const std::string& root, const Parts& rel) {
  return python_path_str(fmt::format("{}/{}", root, fmt::join(rel, "/")));
}

struct Tree {
  std::vector<Parts> samples;      // every samples.csv
  std::vector<Parts> sa_bench;     // sa-bench_*/results_concurrency_*.json
  std::vector<Parts> aiperf_dirs;  // conc_<N>/aiperf_artifacts directories
};

// A concurrency: decimal digits that fit a long long (longer ones are not windows).
bool all_digits(std::string_view s) {
  return !s.empty() && s.size() <= 18 &&
         std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// One walk collects everything the rules below look for; paths are kept as components
// because Python orders paths component by component.
Tree walk(const std::string& root) {
  Tree tree;
  std::error_code ec;
  fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied, ec);
  for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    const fs::path rel = it->path().lexically_relative(root);
    Parts parts;
    for (const auto& p : rel) parts.push_back(p.string());
    if (parts.empty()) continue;
    const std::string& name = parts.back();
    const std::string parent = parts.size() >= 2 ? parts[parts.size() - 2] : "";
    const bool is_dir = it->is_directory(ec);
    // A samples.csv that is not a file (a directory, a link that leads nowhere) is still the
    // leg's samples: reading it says what it is, where skipping it would report a leg as absent.
    if (name == "samples.csv") tree.samples.push_back(parts);
    if (!is_dir && parent.rfind("sa-bench_", 0) == 0 &&
        name.rfind("results_concurrency_", 0) == 0 && name.size() >= 25 &&
        name.ends_with(".json")) {
      tree.sa_bench.push_back(parts);
    }
    if (is_dir && name == "aiperf_artifacts" && parent.rfind("conc_", 0) == 0 &&
        all_digits(std::string_view(parent).substr(5))) {
      tree.aiperf_dirs.push_back(parts);
    }
  }
  std::sort(tree.samples.begin(), tree.samples.end());
  std::sort(tree.sa_bench.begin(), tree.sa_bench.end());
  std::sort(tree.aiperf_dirs.begin(), tree.aiperf_dirs.end());
  return tree;
}

// `^results_concurrency_(\d+)_`: the underscore after the digits is required.
std::optional<long long> sa_bench_concurrency(const std::string& name) {
  const std::string_view rest = std::string_view(name).substr(20);
  const std::size_t digits = rest.find_first_not_of("0123456789");
  if (digits == 0 || digits == std::string_view::npos || rest[digits] != '_' || digits > 18) {
    return std::nullopt;
  }
  return std::stoll(std::string(rest.substr(0, digits)));
}

enum class Markers { aiperf, sa_bench, both, neither };

Markers detect_markers(const std::string& benchmark_out) {
  std::ifstream in(benchmark_out, std::ios::binary);
  bool aiperf = false, sa_bench = false;
  std::string line;
  while (std::getline(in, line)) {
    if (has_aiperf_marker(line)) {
      aiperf = true;
    } else if (has_sa_bench_marker(line)) {
      sa_bench = true;
    }
  }
  if (aiperf && sa_bench) return Markers::both;
  if (aiperf) return Markers::aiperf;
  return sa_bench ? Markers::sa_bench : Markers::neither;
}

std::vector<WindowSource> window_sources(const Tree& tree, const std::string& root,
                                         const std::string& type) {
  std::vector<std::pair<Parts, WindowSource>> found;
  if (type == "sa-bench") {
    for (const auto& parts : tree.sa_bench) {
      const auto n = sa_bench_concurrency(parts.back());
      if (n) found.push_back({parts, {SourceKind::sa_bench, join(root, parts), *n}});
    }
  } else {
    // At most one source per N: the per-record export wins over an aggregate.
    std::map<long long, std::pair<Parts, WindowSource>> by_n;
    for (const auto& dir : tree.aiperf_dirs) {
      const long long n = std::stoll(dir[dir.size() - 2].substr(5));
      Parts jsonl = dir, agg = dir;
      jsonl.push_back("profile_export.jsonl");
      agg.push_back("profile_export_aiperf.json");
      if (is_file(join(root, jsonl))) {
        by_n[n] = {jsonl, {SourceKind::aiperf_records, join(root, jsonl), n}};
      } else if (is_file(join(root, agg)) && !by_n.contains(n)) {
        by_n[n] = {agg, {SourceKind::aiperf_aggregate, join(root, agg), n}};
      }
    }
    for (auto& [n, entry] : by_n) found.push_back(entry);
  }
  std::stable_sort(found.begin(), found.end(), [](const auto& a, const auto& b) {
    return std::tie(a.second.concurrency, a.first) < std::tie(b.second.concurrency, b.first);
  });
  std::vector<WindowSource> out;
  for (auto& f : found) out.push_back(f.second);
  return out;
}

// Picks the CPU and GPU samples; an error text when the choice is ambiguous.
std::string choose_samples(const Tree& tree, const std::string& root,
                           const std::optional<std::string>& cpu_override, RunInputs& run) {
  std::vector<std::string> cpu, gpu;
  for (const auto& parts : tree.samples) {
    const std::string parent = parts.size() >= 2 ? parts[parts.size() - 2] : "";
    (parent == "cpu" || parent == "cpu_power" ? cpu : gpu).push_back(join(root, parts));
  }
  if (cpu_override) {
    if (!is_file(*cpu_override)) return *cpu_override + ": " + not_a_file(*cpu_override);
    run.cpu_samples = *cpu_override;
  } else if (cpu.size() > 1) {
    return fmt::format(
        "multiple CPU power samples.csv found below {}: {}; pick one with --cpu-samples", root,
        fmt::join(cpu, ", "));
  } else if (cpu.size() == 1) {
    run.cpu_samples = cpu[0];
  }
  if (gpu.size() > 1) {
    return fmt::format("multiple GPU power samples.csv found below {}: [PosixPath('{}')]", root,
                       fmt::join(gpu, "'), PosixPath('"));
  }
  if (!run.cpu_samples && gpu.empty())
    return "no power samples.csv (CPU or GPU) found below " + root;
  if (gpu.size() == 1) {
    run.gpu_samples = gpu[0];
    const std::string manifest = (fs::path(gpu[0]).parent_path() / "manifest.json").string();
    if (is_file(manifest)) run.gpu_manifest = manifest;
  }
  return "";
}

}  // namespace

bool is_file(const std::filesystem::path& p) {
  std::error_code ec;
  return std::filesystem::is_regular_file(p, ec);
}

std::string python_path_str(const std::string& path) {
  if (path.empty()) return ".";
  const bool absolute = path.front() == '/';
  std::string out = absolute ? "/" : "";
  std::size_t i = 0;
  while (i < path.size()) {
    std::size_t j = path.find('/', i);
    if (j == std::string::npos) j = path.size();
    const std::string part = path.substr(i, j - i);
    if (!part.empty() && part != ".") {
      if (!out.empty() && out.back() != '/') out += '/';
      out += part;
    }
    i = j + 1;
  }
  return out.empty() ? "." : out;
}

namespace {

// discover_run, and with `samples` false discover_windows.
Discovery discover(const std::string& log_dir, const std::optional<std::string>& cpu_override,
                   bool samples) {
  RunInputs run;
  run.log_dir = python_path_str(log_dir);
  run.benchmark_out = join(run.log_dir, {"benchmark.out"});
  const std::string session = join(run.log_dir, {"session.json"});
  const bool has_session = is_file(session);
  const bool has_out = is_file(run.benchmark_out);
  if (!has_out && !has_session) {
    return {std::nullopt, run.benchmark_out + ": " + not_a_file(run.benchmark_out)};
  }
  const Tree tree = walk(run.log_dir);
  if (std::string e = samples ? choose_samples(tree, run.log_dir, cpu_override, run) : "";
      !e.empty()) {
    return {std::nullopt, e};
  }
  std::string missing = run.benchmark_out + ": not found";
  if (has_out) {
    const Markers markers = detect_markers(run.benchmark_out);
    if (markers == Markers::both) {
      return {std::nullopt, run.benchmark_out + ": matched both aiperf and sa-bench markers"};
    }
    run.benchmark_type = markers == Markers::aiperf ? "aiperf" : "sa-bench";
    if (markers == Markers::neither) {
      missing = run.benchmark_out + ": matched neither aiperf nor sa-bench markers";
    } else {
      run.sources = window_sources(tree, run.log_dir, run.benchmark_type);
      missing = "no " + run.benchmark_type + " result artifacts found below " + run.log_dir;
    }
  }
  if (run.sources.empty()) {
    // No benchmark artifacts: a `cpu-power run` session still has its command's window.
    if (!has_session) return {std::nullopt, missing};
    run.benchmark_type = "session";
    run.sources.push_back({SourceKind::session, session, 0});
  }
  return {run, ""};
}

}  // namespace

Discovery discover_run(const std::string& log_dir,
                       const std::optional<std::string>& cpu_samples_override) {
  return discover(log_dir, cpu_samples_override, true);
}

Discovery discover_windows(const std::string& log_dir) {
  return discover(log_dir, std::nullopt, false);
}

}  // namespace cpupower::report
