#include <fmt/format.h>

#include "artifacts/cpu_samples_check.hpp"
#include "artifacts/host_manifest.hpp"
#include "validate/checker.hpp"

// The host leg's CPU package (cpu_power/): its samples, and manifest.json against them.
namespace cpupower::validate {
namespace {

void host_manifest(Checker& k, const ar::host::HostManifest& m, const ar::CpuSamplesCheck& c,
                   const std::string& file) {
  const Package P = Package::host;
  if (m.job_id.empty()) {
    k.add(P, code::kJobIdMissing, file, "job_id is not a non-empty string", kJobIdFix);
  }
  if (m.status != ar::host::kStatusComplete) {
    k.add(P, code::kStatusNotComplete, file,
          fmt::format("status is '{}' ({})", m.status,
                      m.reason_codes.empty() ? std::string("no reasons recorded")
                                             : list_text(m.reason_codes)),
          "the host collectors did not all finish (see the reasons and the run's log): fix the "
          "nodes, then rerun");
  }
  // Recomputed from the files: every expected node has rows, and the count agrees.
  const bool read = ar::cpu_samples_version(c) != 0;
  std::vector<std::string> missing;
  for (const auto& n : m.expected_nodes) {
    if (read && !c.sockets.count(n)) missing.push_back(n);
  }
  const std::string samples_rel = join_rel(k.o.host_dir, std::string_view("samples.csv"));
  if (read && c.rows_kept == 0) {
    k.add(P, code::kCpuSamplesEmpty, samples_rel, "samples.csv has no rows",
          "check the host collectors' logs, then rerun");
  } else if (!missing.empty()) {
    k.add(P, code::kCpuNodeSamplesMissing, samples_rel,
          "expected nodes without rows: " + list_text(missing),
          "check those nodes' host collectors (telemetry_cpu_power.<node>.out), then rerun");
  }
  if (read && m.sample_row_count && *m.sample_row_count != static_cast<long long>(c.rows)) {
    k.add(
        P, code::kManifestEvidenceMismatch, file,
        fmt::format("sample_row_count is {}, samples.csv has {} rows", *m.sample_row_count, c.rows),
        kRestore);
  }
}

}  // namespace

void check_host(Checker& k) {
  const Package P = Package::host;
  const std::string samples_rel = join_rel(k.o.host_dir, std::string_view("samples.csv"));
  const std::string manifest_rel = join_rel(k.o.host_dir, ar::host::kManifestFilename);
  const auto c = check_cpu_samples(k, P, samples_rel, false);
  if (!fs::exists(path_of(k.o.run_dir, manifest_rel))) {
    k.add(P, code::kManifestMissing, manifest_rel, "no manifest.json",
          "the merge writes it at the end of the run: `cpu-power merge DIR`, or rerun");
  } else if (const auto doc = read_json(path_of(k.o.run_dir, manifest_rel)); !doc) {
    k.add(P, code::kManifestMalformed, manifest_rel, "manifest.json is " + doc.error(), kRestore);
  } else if (const auto m = ar::host::parse_host_manifest(doc->dump()); !m) {
    k.add(P, code::kManifestMalformed, manifest_rel, m.error(), kRestore);
  } else {
    host_manifest(k, *m, c, manifest_rel);
  }
  check_cpu_coverage(k, P, samples_rel, c);
}

}  // namespace cpupower::validate
