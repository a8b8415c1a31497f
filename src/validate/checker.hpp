#pragma once
// What the package checks share: the findings so far, the GPU package's results that the
// CPU packages' coverage rules use, the codes, and the helpers for paths and lists. The rules
// of each package are in a file of their own: gpu.cpp, clock.cpp, cpu.cpp (both CPU
// packages' samples, and the exporter leg's), host.cpp; output.cpp renders the report.

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "artifacts/cpu_samples_check.hpp"
#include "artifacts/gpu_manifest.hpp"
#include "artifacts/gpu_reasons.hpp"
#include "artifacts/gpu_samples_check.hpp"
#include "common/result.hpp"
#include "validate/validate.hpp"

namespace cpupower::validate {

namespace fs = std::filesystem;
namespace ar = artifacts;
namespace reason = artifacts::gpu_reason;
using Json = nlohmann::json;

// Codes the consumers' vocabulary has no word for (docs/formats.md lists them all).
namespace code {
constexpr std::string_view kManifestMissing = "manifest_missing";
constexpr std::string_view kManifestMalformed = "manifest_malformed";
constexpr std::string_view kManifestContractMismatch = "manifest_contract_mismatch";
constexpr std::string_view kManifestEvidenceMismatch = "manifest_evidence_mismatch";
constexpr std::string_view kJobIdMissing = "job_id_missing";
constexpr std::string_view kStatusNotComplete = "status_not_complete";
constexpr std::string_view kVerdictMismatch = "publication_verdict_mismatch";
constexpr std::string_view kShaMismatch = "samples_sha256_mismatch";
constexpr std::string_view kSchemaVersionMismatch = "samples_schema_version_mismatch";
constexpr std::string_view kRoleMismatch = "expected_role_mismatch";
constexpr std::string_view kHetGroupsNotDistinct = "het_groups_not_distinct";
constexpr std::string_view kCpuManifestMissing = "cpu_manifest_missing";
constexpr std::string_view kCpuManifestMalformed = "cpu_manifest_malformed";
constexpr std::string_view kCpuHostMissing = "cpu_host_missing";
constexpr std::string_view kCpuSocketsIncomplete = "cpu_sockets_incomplete";
constexpr std::string_view kCpuNodeSamplesMissing = "cpu_node_samples_missing";
constexpr std::string_view kCpuSamplesEmpty = "cpu_samples_empty";
}  // namespace code

inline constexpr std::string_view kRerun = "rerun the benchmark with `cpu-power run`";
inline constexpr std::string_view kRestore = reason::kRestoreFix;
inline constexpr std::string_view kJobIdFix =
    "run inside a Slurm allocation, or give `cpu-power run --job-id ID`";

// What a GPU contract code means, and what fixes it (gpu_reason::kCodeTexts); nullptr for a
// code without a row.
using CodeText = reason::CodeText;
const CodeText* gpu_code(std::string_view c);

std::string path_of(const std::string& run_dir, const std::string& rel);
std::string join_rel(const std::string& dir, std::string_view name);
// The file as JSON; an error ("cannot be read", "not JSON") when it is not.
Result<Json> read_json(const std::string& path);
// The first `most` items, comma-separated, then " and N more".
std::string list_text(const std::vector<std::string>& items, std::size_t most = 8);

struct Checker {
  const Options& o;
  std::vector<Finding> findings;
  std::optional<ar::GpuSamplesCheck> gpu_samples;  // when the GPU package was read
  struct Window {
    std::string name;
    double start = 0, end = 0;
  };
  std::vector<Window> completed;  // the GPU package's completed windows

  // A finding is one line: control bytes from a file's cells or names are escaped.
  void add(Package p, std::string_view c, const std::string& file, const std::string& detail,
           std::string_view fix);
};

void check_gpu(Checker& k);
// clock_sync.json in the run directory, else the GPU manifest's clock_sync_check.
void check_clock(Checker& k, Package p, const Json* raw_manifest, const ar::GpuManifest* m);
void check_cpu(Checker& k);
void check_host(Checker& k);

// Both CPU packages (cpu.cpp): the rows' rules, returning the check for the coverage rules,
// and the GPU hosts' sockets and completed windows covered by the rows.
ar::CpuSamplesCheck check_cpu_samples(Checker& k, Package p, const std::string& rel,
                                      bool exporter_leg);
void check_cpu_coverage(Checker& k, Package p, const std::string& rel,
                        const ar::CpuSamplesCheck& c);

}  // namespace cpupower::validate
