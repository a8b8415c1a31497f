#pragma once
// `cpu-power validate RUN_DIR`: a finished run directory checked offline the way the
// downstream consumers check it, package by package: the GPU package (<run>/power/:
// manifest.json, samples.csv, windows/), the exporter leg's CPU package (<run>/power/cpu/:
// samples.csv, cpu_manifest.json) and the host leg's CPU package (<run>/cpu_power/:
// manifest.json, samples.csv). Every rule is the artifacts module's (the strict readers, the
// device, window and coverage audits); this module only gathers them, adds the consumers'
// schema pins and clock rule, and says for each finding which option or step fixes it
// (docs/formats.md, "Validation: `cpu-power validate`").

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.hpp"

namespace cpupower::validate {

enum class Package { gpu, cpu, host, run };
std::string_view package_name(Package package);  // "gpu", "cpu", "host", "run"

struct Finding {
  Package package = Package::run;
  std::string code;    // reason code (snake_case)
  std::string file;    // relative to the run directory
  std::string detail;  // what is wrong
  std::string fix;     // the option or step that fixes it
  bool operator==(const Finding&) const = default;
};

struct PackageVerdict {
  Package package = Package::run;
  std::string dir;       // relative to the run directory
  bool present = false;  // the directory exists
  bool publishable = false;
  std::size_t findings = 0;
};

// --expect-role ROLE[=COUNT]: with a count, exactly that many expected GPUs mapped to ROLE;
// without, at least one. Either way the roles found must be exactly the roles named.
struct RoleExpectation {
  std::string role;
  std::optional<long long> count;
};
// "prefill=4" or "decode"; an error names what is wrong.
Result<RoleExpectation> parse_role_expectation(std::string_view text);

struct Options {
  std::string run_dir;
  // Package directories, relative to run_dir (or absolute).
  std::string gpu_dir = "power";
  std::string cpu_dir = "power/cpu";
  std::string host_dir = "cpu_power";
  std::vector<RoleExpectation> expect_roles;
  bool require_distinct_het_groups = false;
};

struct Report {
  std::string run_dir;
  std::vector<Finding> findings;         // by package (gpu, cpu, host, run), in check order
  std::vector<PackageVerdict> packages;  // gpu, cpu, host
  bool publishable = false;              // a package is present, each present one publishable,
                                         // and no run-level finding
};

// The whole check. An error (exit 2) only when run_dir is not a readable directory or holds
// none of the three packages.
Result<Report> validate_run(const Options& options);

// One line per finding, "<code> <file>: <detail> (fix: <fix>)", then one verdict line per
// package, "package <name> <dir>: publishable|not publishable (N findings)|absent", then
// "verdict: publishable|not publishable".
std::string render_text(const Report& report);

// The JSON shape in docs/formats.md: {"schema_version": 1, "run_dir", "publishable",
// "packages": [{"package", "dir", "present", "publishable", "findings"}], "findings":
// [{"package", "code", "file", "detail", "fix"}]}.
std::string render_json(const Report& report);

// For `cpu-power run`: validates the finished session's directory and logs the findings
// (WARN) and the verdict (INFO). Never throws; the session's exit status is not touched.
void log_session_verdict(const Options& options);

}  // namespace cpupower::validate
