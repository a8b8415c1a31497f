#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "artifacts/gpu_contract.hpp"
#include "artifacts/gpu_windows.hpp"
#include "validate/checker.hpp"

// The GPU package: manifest.json against the contract and against samples.csv and windows/.
namespace cpupower::validate {

const CodeText* gpu_code(std::string_view c) {
  for (const auto& t : reason::kCodeTexts) {
    if (t.code == c) return &t;
  }
  return nullptr;
}

namespace {

std::string key_text(const ar::GpuDeviceKey& key) {
  return key.hostname + "/gpu" + std::to_string(key.gpu_index);
}

void gpu_manifest(Checker& k, const ar::GpuManifest& m, const std::string& file) {
  const Package P = Package::gpu;
  const auto expect = [&](std::string_view key, const std::string& got, std::string_view want) {
    if (got != want) {
      k.add(P, code::kManifestContractMismatch, file,
            fmt::format("{} is '{}', the contract's is '{}'", key, got, want), kRestore);
    }
  };
  if (m.schema_version != ar::kGpuContractSchemaVersion) {
    k.add(P, code::kManifestContractMismatch, file,
          fmt::format("schema_version is {}, the contract's is {}", m.schema_version,
                      ar::kGpuContractSchemaVersion),
          kRestore);
  }
  expect("producer", m.producer, ar::kGpuProducer);
  expect("source_metric", m.source_metric, ar::kGpuSourceMetric);
  expect("unit", m.unit, ar::kGpuPowerUnit);
  expect("power_scope", m.power_scope, ar::kGpuPowerScope);
  expect("timestamp_source", m.timestamp_source, ar::kGpuClockSource);
  for (const auto& [key, v] :
       {std::pair<std::string_view, double>{"sample_interval_seconds", m.sample_interval_seconds},
        {"request_timeout_seconds", m.request_timeout_seconds}}) {
    if (!(std::isfinite(v) && v > 0)) {
      k.add(P, code::kManifestContractMismatch, file,
            fmt::format("{} is {}, not a finite positive number", key, v), kRestore);
    }
  }
  if (!m.stopped_at_unix) {
    k.add(P, code::kManifestContractMismatch, file,
          "stopped_at_unix is null: the manifest was never finalized", kRerun);
  }
  if (m.job_id.empty()) {
    k.add(P, code::kJobIdMissing, file, "job_id is not a non-empty string", kJobIdFix);
  }
  if (m.status != ar::GpuRunStatus::complete) {
    k.add(P, code::kStatusNotComplete, file,
          fmt::format("status is '{}' ({}): only a complete run can publish",
                      ar::gpu_run_status_name(m.status),
                      m.reason_codes.empty() ? std::string("no reasons recorded")
                                             : fmt::format("{}", fmt::join(m.reason_codes, ", "))),
          "the collection was lost or never started (see the reasons and the run's log): fix "
          "the exporters or the stop, then rerun");
  } else {
    // A complete manifest cannot carry a reason that forbids `complete`.
    std::vector<std::string> blocking;
    for (const auto& c : m.reason_codes) {
      if (ar::is_gpu_fatal_lifecycle_reason(c) || (m.required && ar::is_gpu_startup_reason(c))) {
        blocking.push_back(c);
      }
    }
    if (!blocking.empty()) {
      k.add(P, code::kManifestContractMismatch, file,
            "a complete manifest carries lifecycle-failure reasons: " + list_text(blocking),
            kRestore);
    }
  }
}

void gpu_devices(Checker& k, const ar::GpuManifest& m, const ar::GpuSamplesCheck& check,
                 const std::string& manifest_rel, const std::string& samples_rel) {
  const Package P = Package::gpu;
  if (check.schema_version == 0) return;  // no rows were read: nothing to compare
  const auto reasons = ar::gpu_device_reasons(m.expected_devices, check.devices);
  std::set<ar::GpuDeviceKey> want, got;
  for (const auto& d : m.expected_devices) want.insert(d.key());
  for (const auto& d : check.devices) got.insert(d.key());
  for (const auto& c : reasons) {
    const auto* t = gpu_code(c);
    std::string detail(t ? t->what : c);
    std::vector<std::string> keys;
    if (c == reason::kExpectedDeviceMissing) {
      for (const auto& key : want) {
        if (!got.count(key)) keys.push_back(key_text(key));
      }
      if (want.empty()) detail = "the manifest expects no GPU";
    } else if (c == reason::kUnexpectedDevice) {
      for (const auto& key : got) {
        if (!want.count(key)) keys.push_back(key_text(key));
      }
    }
    if (!keys.empty()) detail += ": " + list_text(keys);
    k.add(P, c,
          c == reason::kConflictingWorkerRoles || c == reason::kConflictingHetGroups ? manifest_rel
                                                                                     : samples_rel,
          detail, t ? t->fix : kRestore);
  }
  // What the manifest says it saw must be what the file holds.
  if (m.sample_row_count != check.row_count) {
    k.add(P, code::kManifestEvidenceMismatch, manifest_rel,
          fmt::format("sample_row_count is {}, samples.csv has {} rows", m.sample_row_count,
                      check.row_count),
          kRestore);
  }
  if (check.max_scrape_seq && m.scrape_count < *check.max_scrape_seq + 1) {
    k.add(P, code::kManifestEvidenceMismatch, manifest_rel,
          fmt::format("scrape_count is {}, samples.csv needs at least {}", m.scrape_count,
                      *check.max_scrape_seq + 1),
          kRestore);
  }
  auto observed = check.devices;
  for (auto& d : observed) d.sample_times_unix.clear();
  auto stored = m.observed_devices;
  for (auto& d : stored) d.sample_times_unix.clear();
  if (observed != stored) {
    k.add(P, code::kManifestEvidenceMismatch, manifest_rel,
          "observed_devices do not match the devices samples.csv shows", kRestore);
  }
}

void gpu_windows(Checker& k, const ar::GpuManifest& m, const ar::GpuSamplesCheck& check,
                 const std::string& dir, const std::string& manifest_rel) {
  const Package P = Package::gpu;
  if (m.expected_windows.empty()) {
    k.add(P, reason::kWindowMissing, manifest_rel, "the manifest expects no measurement window",
          "run a benchmark whose results the session finds (sa-bench, aiperf), or keep "
          "session.json so the session window is stamped");
  }
  ar::GpuCoverageInputs coverage;
  coverage.expected_devices = m.expected_devices;
  coverage.observed_devices = check.devices;
  coverage.sample_interval_s = m.sample_interval_seconds;
  std::vector<ar::GpuArtifactError> errors;
  const auto validations =
      ar::validate_gpu_windows(dir, k.o.run_dir, m.expected_windows, coverage, errors);
  const auto windows = ar::scan_gpu_windows(dir, k.o.run_dir);
  for (const auto& v : validations) {
    const std::string file =
        v.window_file ? join_rel(k.o.gpu_dir, *v.window_file) : join_rel(k.o.gpu_dir, "windows");
    for (const auto& c : v.reason_codes) {
      const auto* t = gpu_code(c);
      std::string detail =
          fmt::format("window {}/{}: {}", v.benchmark_type, v.concurrency, t ? t->what : c);
      if (c == reason::kSampleGapExceeded) {
        std::vector<std::string> over;
        for (const auto& [dev, gap] : v.per_device_max_sample_gap_seconds) {
          if (gap > common::kMaxSampleGapS) over.push_back(fmt::format("{} {:.3f} s", dev, gap));
        }
        if (!over.empty()) detail += " (" + list_text(over) + ")";
      }
      k.add(P, c, file, detail, t ? t->fix : kRestore);
    }
    if (check.schema_version != 0) {
      if (auto it = windows.windows.find(v.key()); it != windows.windows.end()) {
        const auto& w = it->second.window;
        if (w.status == ar::GpuWindowStatus::completed && w.benchmark_end_time_unix) {
          k.completed.push_back({fmt::format("{}/{}", v.benchmark_type, v.concurrency),
                                 w.benchmark_start_time_unix, *w.benchmark_end_time_unix});
        }
      }
    }
  }
  for (const auto& e : errors) {
    for (const auto& c : e.reason_codes) {
      const auto* t = gpu_code(c);
      k.add(P, c, join_rel(k.o.gpu_dir, e.path), std::string(t ? t->what : c),
            t ? t->fix : kRestore);
    }
  }
  if (check.schema_version == 0) return;
  // Per-device gaps are a JSON object: compared as a map, whatever the key order.
  const auto normal = [](std::vector<ar::GpuWindowValidation> vs) {
    for (auto& v : vs) {
      std::sort(v.per_device_max_sample_gap_seconds.begin(),
                v.per_device_max_sample_gap_seconds.end());
    }
    return vs;
  };
  if (normal(validations) != normal(m.window_validations)) {
    k.add(P, code::kManifestEvidenceMismatch, manifest_rel,
          "window_validations do not match the window audit recomputed from the files", kRestore);
  }
  if (errors != m.artifact_errors) {
    k.add(P, code::kManifestEvidenceMismatch, manifest_rel,
          "artifact_errors do not match the artifact scan recomputed from the files", kRestore);
  }
}

void gpu_topology(Checker& k, const ar::GpuManifest& m, const std::string& file) {
  const Package P = Package::gpu;
  if (k.o.expect_roles.empty() && !k.o.require_distinct_het_groups) return;
  std::map<std::string, long long> counts;
  std::map<ar::GpuDeviceKey, std::string> roles;
  for (const auto& d : m.expected_devices) {
    std::set<std::string> r;
    for (const auto& a : d.assignments) r.insert(a.worker_role);
    if (r.size() != 1) return;  // conflicting_worker_roles already says so
    roles[d.key()] = *r.begin();
    ++counts[*r.begin()];
  }
  if (!k.o.expect_roles.empty()) {
    std::set<std::string> named, found;
    for (const auto& e : k.o.expect_roles) named.insert(e.role);
    for (const auto& [r, n] : counts) found.insert(r);
    if (named != found) {
      k.add(P, code::kRoleMismatch, file,
            fmt::format("expected roles {}, the manifest has {}", fmt::join(named, ","),
                        fmt::join(found, ",")),
            "check the recipe's worker roles against --expect-role");
    }
    for (const auto& e : k.o.expect_roles) {
      const long long n = counts.count(e.role) ? counts[e.role] : 0;
      if (e.count ? n != *e.count : n == 0) {
        k.add(P, code::kRoleMismatch, file,
              e.count ? fmt::format("expected {} {} GPUs, found {}", *e.count, e.role, n)
                      : fmt::format("expected {} GPUs, found none", e.role),
              "check the recipe's worker counts against --expect-role");
      }
    }
  }
  if (k.o.require_distinct_het_groups) {
    std::map<std::string, std::set<std::optional<long long>>> host_groups;
    for (const auto& d : m.expected_devices) {
      for (const auto& a : d.assignments) host_groups[d.hostname].insert(a.het_group);
    }
    std::map<std::string, std::set<std::optional<long long>>> per_role;
    for (const auto& d : m.expected_devices) {
      const auto& g = host_groups[d.hostname];
      if (g.size() != 1) return;  // conflicting_het_groups already says so
      per_role[roles[d.key()]].insert(*g.begin());
    }
    std::map<long long, std::vector<std::string>> owners;
    for (const auto& [role, groups] : per_role) {
      if (groups.size() != 1) {
        k.add(P, code::kHetGroupsNotDistinct, file,
              fmt::format("role {} spans {} het groups, expected exactly one", role, groups.size()),
              "place each worker role in its own heterogeneous job group");
        continue;
      }
      const auto g = *groups.begin();
      if (!g) {
        k.add(P, code::kHetGroupsNotDistinct, file,
              fmt::format("role {} has no het group (not a heterogeneous job)", role),
              "run the roles as a heterogeneous Slurm job, one group per role");
        continue;
      }
      owners[*g].push_back(role);
    }
    for (const auto& [g, rs] : owners) {
      if (rs.size() > 1) {
        k.add(P, code::kHetGroupsNotDistinct, file,
              fmt::format("roles {} share het group {}", fmt::join(rs, ","), g),
              "place each worker role in its own heterogeneous job group");
      }
    }
  }
}

void gpu_clock(Checker& k, const Json* raw_manifest, const ar::GpuManifest* m = nullptr) {
  check_clock(k, fs::exists(path_of(k.o.run_dir, k.o.gpu_dir)) ? Package::gpu : Package::run,
              raw_manifest, m);
}

}  // namespace

void check_gpu(Checker& k) {
  const Package P = Package::gpu;
  const std::string dir = path_of(k.o.run_dir, k.o.gpu_dir);
  const std::string manifest_rel = join_rel(k.o.gpu_dir, ar::kGpuManifestFilename);
  const std::string samples_rel = join_rel(k.o.gpu_dir, "samples.csv");

  // samples.csv first: it is read whether or not the manifest is usable.
  const auto check = ar::check_gpu_samples(path_of(k.o.run_dir, samples_rel), std::nullopt);
  k.gpu_samples = check;
  for (const auto& c : check.reason_codes) {
    const auto* t = gpu_code(c);
    std::string detail(t ? t->what : c);
    if (c == reason::kSamplesCsvMalformed || c == reason::kDuplicateSampleRow ||
        c == reason::kTimestampNonMonotonic) {
      if (!check.problems.empty()) detail += ": " + list_text(check.problems, 3);
    }
    k.add(P, c, samples_rel, detail, t ? t->fix : kRestore);
  }
  if (check.schema_version == 3) {
    k.add(P, reason::kSamplesCsvHeaderMismatch, samples_rel,
          "GPU samples schema v3 (temperature_c): the consumers read only the v1 and v2 GPU "
          "headers and refuse the file whole",
          "`cpu-power run --consumer-profile compat` or `--gpu-samples-schema 2`");
  }

  const auto raw = read_json(path_of(k.o.run_dir, manifest_rel));
  if (!fs::exists(path_of(k.o.run_dir, manifest_rel))) {
    k.add(P, code::kManifestMissing, manifest_rel, "no manifest.json",
          "the GPU leg writes it when the session ends; a session killed before that has "
          "none: rerun");
    gpu_clock(k, nullptr);
    return;
  }
  auto m = raw ? ar::parse_gpu_manifest(raw->dump()) : Result<ar::GpuManifest>(Error{raw.error()});
  if (!m) {
    k.add(P, code::kManifestMalformed, manifest_rel, m.error(), kRestore);
    gpu_clock(k, raw && raw->is_object() ? &*raw : nullptr);
    return;
  }
  const auto& man = *m;
  gpu_manifest(k, man, manifest_rel);
  if (check.schema_version != 0 && man.samples_schema_version != check.schema_version) {
    k.add(P, code::kSchemaVersionMismatch, manifest_rel,
          fmt::format("samples_schema_version is {}, samples.csv has the v{} header",
                      man.samples_schema_version, check.schema_version),
          kRestore);
  }
  // The digest: the manifest vouches for exactly these bytes.
  if (!man.samples_sha256) {
    k.add(P, reason::kSamplesDigestUnavailable, manifest_rel,
          "samples_sha256 is null: a package without the digest cannot be certified", kRerun);
  } else if (check.sha256_hex && *check.sha256_hex != *man.samples_sha256) {
    k.add(P, code::kShaMismatch, samples_rel,
          fmt::format("SHA-256 {} is not the manifest's samples_sha256 {}", *check.sha256_hex,
                      *man.samples_sha256),
          kRestore);
  }
  gpu_devices(k, man, check, manifest_rel, samples_rel);
  gpu_windows(k, man, check, dir, manifest_rel);
  gpu_topology(k, man, manifest_rel);
  gpu_clock(k, &*raw, &man);
  // The stored verdict: consumers take a package only when it says true.
  const bool clean = std::none_of(k.findings.begin(), k.findings.end(),
                                  [](const Finding& f) { return f.package == Package::gpu; });
  if (clean && man.publication_valid != true) {
    k.add(P, code::kVerdictMismatch, manifest_rel,
          "publication_valid is not true, though every rule holds on the files", kRestore);
  }
}

}  // namespace cpupower::validate
