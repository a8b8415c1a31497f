#include "validate/validate.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "artifacts/cpu_manifest.hpp"
#include "artifacts/cpu_samples_check.hpp"
#include "artifacts/gpu_contract.hpp"
#include "artifacts/gpu_manifest.hpp"
#include "artifacts/gpu_reasons.hpp"
#include "artifacts/gpu_samples_check.hpp"
#include "artifacts/gpu_windows.hpp"
#include "common/log.hpp"

namespace cpupower::validate {
namespace {

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

constexpr std::string_view kRerun = "rerun the benchmark with `cpu-power run`";
constexpr std::string_view kRestore =
    "restore the files as the run wrote them (any edit invalidates the package), or rerun";

// What each GPU contract code means, and what fixes it.
struct CodeText {
  std::string_view code, what, fix;
};
constexpr CodeText kGpuCodes[] = {
    {reason::kSamplesCsvMissing, "no samples.csv",
     "the GPU leg writes it while the run lasts: check that dcgm-exporter answers on every "
     "node, then rerun"},
    {reason::kSamplesCsvHeaderMismatch, "the first line is no GPU samples header", kRestore},
    {reason::kSamplesCsvMalformed, "rows break the contract's cell rules", kRestore},
    {reason::kSamplesDigestUnavailable, "the file's SHA-256 cannot be computed", kRestore},
    {reason::kDuplicateSampleRow, "a (scrape_seq, hostname, gpu_index) appears twice", kRestore},
    {reason::kTimestampNonMonotonic, "a GPU's timestamps decrease in scrape_seq order",
     "synchronise the head node's clock (a step back moved the rows), then rerun"},
    {reason::kExpectedDeviceMissing, "expected GPUs have no samples",
     "make dcgm-exporter serve every allocated GPU on every node (visible devices), then rerun"},
    {reason::kUnexpectedDevice, "samples of GPUs no worker was assigned",
     "restrict the exporter to the allocated GPUs (visible devices) or fix the worker "
     "placement, then rerun"},
    {reason::kGpuUuidChanged, "a GPU has other than one UUID, or two GPUs share one",
     "run on whole GPUs (no MIG instances or partitions), then rerun"},
    {reason::kConflictingWorkerRoles, "a GPU is assigned to more than one worker role",
     "give each GPU one role in the recipe's worker placement"},
    {reason::kConflictingHetGroups, "a node's GPUs are in more than one het group",
     "give each node one heterogeneous job group"},
    {reason::kWindowMissing, "an expected window has no window file",
     "the benchmark must finish and write its result so the window is stamped: rerun"},
    {reason::kWindowUnexpected, "a window file no expected window names", kRestore},
    {reason::kWindowDuplicate, "two window files have the same window", kRestore},
    {reason::kWindowMalformed, "the window file breaks the window contract", kRestore},
    {reason::kWindowArtifactPathInvalid, "an entry of windows/ is not a regular *.json file",
     kRestore},
    {reason::kWindowIncomplete, "the window did not complete", "rerun the benchmark to its end"},
    {reason::kWindowResultMissing, "the benchmark result the window points at is missing",
     "keep the benchmark's result file beside the run (under the run directory)"},
    {reason::kWindowResultMismatch, "the benchmark result disagrees with the window", kRestore},
    {reason::kWindowResultPathInvalid, "the window's result_path leaves the run directory",
     kRestore},
    {reason::kWindowClockMismatch,
     "the window's wall-clock span disagrees with its monotonic duration",
     "the head node's clock stepped during the window: synchronise it, then rerun"},
    {reason::kWindowNotBracketed, "no sample at or before the start, or at or after the end",
     "keep telemetry running from before the benchmark starts to after it ends (a longer "
     "`telemetry.startup_timeout_seconds`, no early stop), then rerun"},
    {reason::kSampleGapExceeded, "two consecutive samples more than 3.0 s apart",
     "lower `telemetry.collect_interval_ms` and check the exporters for slow scrapes "
     "(`request_timeout_seconds`), then rerun"},
    {reason::kSampleLossExceeded, "more than 5% of the expected sample intervals are missing",
     "the collector missed scrapes at the recorded cadence: use a `collect_interval_ms` the "
     "exporters keep up with, then rerun"},
};

const CodeText* gpu_code(std::string_view c) {
  for (const auto& t : kGpuCodes) {
    if (t.code == c) return &t;
  }
  return nullptr;
}

std::string path_of(const std::string& run_dir, const std::string& rel) {
  return fs::path(rel).is_absolute() ? rel : (fs::path(run_dir) / rel).string();
}

std::string join_rel(const std::string& dir, std::string_view name) {
  return (fs::path(dir) / std::string(name)).lexically_normal().string();
}

std::optional<Json> read_json(const std::string& path, std::string* why) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    *why = "cannot be read";
    return std::nullopt;
  }
  std::ostringstream text;
  text << in.rdbuf();
  Json doc = Json::parse(text.str(), nullptr, false);
  if (doc.is_discarded()) {
    *why = "not JSON";
    return std::nullopt;
  }
  return doc;
}

std::string key_text(const ar::GpuDeviceKey& k) {
  return k.hostname + "/gpu" + std::to_string(k.gpu_index);
}

std::string list_text(const std::vector<std::string>& items, std::size_t most = 8) {
  std::string out;
  for (std::size_t i = 0; i < items.size() && i < most; ++i) out += (i ? ", " : "") + items[i];
  if (items.size() > most) out += fmt::format(" and {} more", items.size() - most);
  return out;
}

// A finding is one line: control bytes from a file's cells or names are escaped.
std::string one_line(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char ch : text) {
    const auto u = static_cast<unsigned char>(ch);
    if (u < 0x20 || u == 0x7f) {
      out += fmt::format("\\x{:02x}", u);
    } else {
      out += ch;
    }
  }
  return out;
}

class Checker {
 public:
  explicit Checker(const Options& o) : o_(o) {}

  void add(Package p, std::string_view c, const std::string& file, const std::string& detail,
           std::string_view fix) {
    findings_.push_back({p, std::string(c), one_line(file), one_line(detail), std::string(fix)});
  }
  std::vector<Finding>& findings() { return findings_; }

  // ---- GPU package --------------------------------------------------------------------
  void gpu() {
    const Package P = Package::gpu;
    const std::string dir = path_of(o_.run_dir, o_.gpu_dir);
    const std::string manifest_rel = join_rel(o_.gpu_dir, ar::kGpuManifestFilename);
    const std::string samples_rel = join_rel(o_.gpu_dir, "samples.csv");

    // samples.csv first: it is read whether or not the manifest is usable.
    const auto check = ar::check_gpu_samples(path_of(o_.run_dir, samples_rel), std::nullopt);
    gpu_samples_ = check;
    for (const auto& c : check.reason_codes) {
      const auto* t = gpu_code(c);
      std::string detail(t ? t->what : c);
      if (c == reason::kSamplesCsvMalformed || c == reason::kDuplicateSampleRow ||
          c == reason::kTimestampNonMonotonic) {
        if (!check.problems.empty()) detail += ": " + list_text(check.problems, 3);
      }
      add(P, c, samples_rel, detail, t ? t->fix : kRestore);
    }
    if (check.schema_version == 3) {
      add(P, reason::kSamplesCsvHeaderMismatch, samples_rel,
          "GPU samples schema v3 (temperature_c): the consumers read only the v1 and v2 GPU "
          "headers and refuse the file whole",
          "`cpu-power run --consumer-profile compat` or `--gpu-samples-schema 2`");
    }

    std::string why;
    const auto raw = read_json(path_of(o_.run_dir, manifest_rel), &why);
    if (!fs::exists(path_of(o_.run_dir, manifest_rel))) {
      add(P, code::kManifestMissing, manifest_rel, "no manifest.json",
          "the GPU leg writes it when the session ends; a session killed before that has "
          "none: rerun");
      gpu_clock(nullptr);
      return;
    }
    auto m = raw ? ar::parse_gpu_manifest(raw->dump()) : Result<ar::GpuManifest>(Error{why});
    if (!m) {
      add(P, code::kManifestMalformed, manifest_rel, m.error(), kRestore);
      gpu_clock(raw && raw->is_object() ? &*raw : nullptr);
      return;
    }
    const auto& man = *m;
    gpu_manifest(man, manifest_rel);
    if (check.schema_version != 0 && man.samples_schema_version != check.schema_version) {
      add(P, code::kSchemaVersionMismatch, manifest_rel,
          fmt::format("samples_schema_version is {}, samples.csv has the v{} header",
                      man.samples_schema_version, check.schema_version),
          kRestore);
    }
    // The digest: the manifest vouches for exactly these bytes.
    if (!man.samples_sha256) {
      add(P, reason::kSamplesDigestUnavailable, manifest_rel,
          "samples_sha256 is null: a package without the digest cannot be certified", kRerun);
    } else if (check.sha256_hex && *check.sha256_hex != *man.samples_sha256) {
      add(P, code::kShaMismatch, samples_rel,
          fmt::format("SHA-256 {} is not the manifest's samples_sha256 {}", *check.sha256_hex,
                      *man.samples_sha256),
          kRestore);
    }
    gpu_devices(man, check, manifest_rel, samples_rel);
    gpu_windows(man, check, dir, manifest_rel);
    gpu_topology(man, manifest_rel);
    gpu_clock(&*raw, &man);
    // The stored verdict: consumers take a package only when it says true.
    const bool clean = std::none_of(findings_.begin(), findings_.end(),
                                    [](const Finding& f) { return f.package == Package::gpu; });
    if (clean && man.publication_valid != true) {
      add(P, code::kVerdictMismatch, manifest_rel,
          "publication_valid is not true, though every rule holds on the files", kRestore);
    }
  }

  void gpu_manifest(const ar::GpuManifest& m, const std::string& file) {
    const Package P = Package::gpu;
    const auto expect = [&](std::string_view key, const std::string& got, std::string_view want) {
      if (got != want) {
        add(P, code::kManifestContractMismatch, file,
            fmt::format("{} is '{}', the contract's is '{}'", key, got, want), kRestore);
      }
    };
    if (m.schema_version != ar::kGpuContractSchemaVersion) {
      add(P, code::kManifestContractMismatch, file,
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
        add(P, code::kManifestContractMismatch, file,
            fmt::format("{} is {}, not a finite positive number", key, v), kRestore);
      }
    }
    if (!m.stopped_at_unix) {
      add(P, code::kManifestContractMismatch, file,
          "stopped_at_unix is null: the manifest was never finalized", kRerun);
    }
    if (m.job_id.empty()) {
      add(P, code::kJobIdMissing, file, "job_id is not a non-empty string",
          "run inside a Slurm allocation, or give `cpu-power run --job-id ID`");
    }
    if (m.status != ar::GpuRunStatus::complete) {
      add(P, code::kStatusNotComplete, file,
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
        add(P, code::kManifestContractMismatch, file,
            "a complete manifest carries lifecycle-failure reasons: " + list_text(blocking),
            kRestore);
      }
    }
  }

  void gpu_devices(const ar::GpuManifest& m, const ar::GpuSamplesCheck& check,
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
        for (const auto& k : want) {
          if (!got.count(k)) keys.push_back(key_text(k));
        }
        if (want.empty()) detail = "the manifest expects no GPU";
      } else if (c == reason::kUnexpectedDevice) {
        for (const auto& k : got) {
          if (!want.count(k)) keys.push_back(key_text(k));
        }
      }
      if (!keys.empty()) detail += ": " + list_text(keys);
      add(P, c,
          c == reason::kConflictingWorkerRoles || c == reason::kConflictingHetGroups ? manifest_rel
                                                                                     : samples_rel,
          detail, t ? t->fix : kRestore);
    }
    // What the manifest says it saw must be what the file holds.
    if (m.sample_row_count != check.row_count) {
      add(P, code::kManifestEvidenceMismatch, manifest_rel,
          fmt::format("sample_row_count is {}, samples.csv has {} rows", m.sample_row_count,
                      check.row_count),
          kRestore);
    }
    if (check.max_scrape_seq && m.scrape_count < *check.max_scrape_seq + 1) {
      add(P, code::kManifestEvidenceMismatch, manifest_rel,
          fmt::format("scrape_count is {}, samples.csv needs at least {}", m.scrape_count,
                      *check.max_scrape_seq + 1),
          kRestore);
    }
    auto observed = check.devices;
    for (auto& d : observed) d.sample_times_unix.clear();
    auto stored = m.observed_devices;
    for (auto& d : stored) d.sample_times_unix.clear();
    if (observed != stored) {
      add(P, code::kManifestEvidenceMismatch, manifest_rel,
          "observed_devices do not match the devices samples.csv shows", kRestore);
    }
  }

  void gpu_windows(const ar::GpuManifest& m, const ar::GpuSamplesCheck& check,
                   const std::string& dir, const std::string& manifest_rel) {
    const Package P = Package::gpu;
    if (m.expected_windows.empty()) {
      add(P, reason::kWindowMissing, manifest_rel, "the manifest expects no measurement window",
          "run a benchmark whose results the session finds (sa-bench, aiperf), or keep "
          "session.json so the session window is stamped");
    }
    ar::GpuCoverageInputs coverage;
    coverage.expected_devices = m.expected_devices;
    coverage.observed_devices = check.devices;
    coverage.sample_interval_s = m.sample_interval_seconds;
    std::vector<ar::GpuArtifactError> errors;
    const auto validations =
        ar::validate_gpu_windows(dir, o_.run_dir, m.expected_windows, coverage, errors);
    const auto windows = ar::scan_gpu_windows(dir, o_.run_dir);
    for (const auto& v : validations) {
      const std::string file =
          v.window_file ? join_rel(o_.gpu_dir, *v.window_file) : join_rel(o_.gpu_dir, "windows");
      for (const auto& c : v.reason_codes) {
        const auto* t = gpu_code(c);
        std::string detail =
            fmt::format("window {}/{}: {}", v.benchmark_type, v.concurrency, t ? t->what : c);
        if (c == reason::kSampleGapExceeded) {
          std::vector<std::string> over;
          for (const auto& [dev, gap] : v.per_device_max_sample_gap_seconds) {
            if (gap > ar::kGpuMaxSampleGapS) over.push_back(fmt::format("{} {:.3f} s", dev, gap));
          }
          if (!over.empty()) detail += " (" + list_text(over) + ")";
        }
        add(P, c, file, detail, t ? t->fix : kRestore);
      }
      if (check.schema_version != 0) {
        if (auto it = windows.windows.find(v.key()); it != windows.windows.end()) {
          const auto& w = it->second.window;
          if (w.status == ar::GpuWindowStatus::completed && w.benchmark_end_time_unix) {
            completed_.push_back({fmt::format("{}/{}", v.benchmark_type, v.concurrency),
                                  w.benchmark_start_time_unix, *w.benchmark_end_time_unix});
          }
        }
      }
    }
    for (const auto& e : errors) {
      for (const auto& c : e.reason_codes) {
        const auto* t = gpu_code(c);
        add(P, c, join_rel(o_.gpu_dir, e.path), std::string(t ? t->what : c),
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
      add(P, code::kManifestEvidenceMismatch, manifest_rel,
          "window_validations do not match the window audit recomputed from the files", kRestore);
    }
    if (errors != m.artifact_errors) {
      add(P, code::kManifestEvidenceMismatch, manifest_rel,
          "artifact_errors do not match the artifact scan recomputed from the files", kRestore);
    }
  }

  void gpu_topology(const ar::GpuManifest& m, const std::string& file) {
    const Package P = Package::gpu;
    if (o_.expect_roles.empty() && !o_.require_distinct_het_groups) return;
    std::map<std::string, long long> counts;
    std::map<ar::GpuDeviceKey, std::string> roles;
    for (const auto& d : m.expected_devices) {
      std::set<std::string> r;
      for (const auto& a : d.assignments) r.insert(a.worker_role);
      if (r.size() != 1) return;  // conflicting_worker_roles already says so
      roles[d.key()] = *r.begin();
      ++counts[*r.begin()];
    }
    if (!o_.expect_roles.empty()) {
      std::set<std::string> named, found;
      for (const auto& e : o_.expect_roles) named.insert(e.role);
      for (const auto& [r, n] : counts) found.insert(r);
      if (named != found) {
        add(P, code::kRoleMismatch, file,
            fmt::format("expected roles {}, the manifest has {}", fmt::join(named, ","),
                        fmt::join(found, ",")),
            "check the recipe's worker roles against --expect-role");
      }
      for (const auto& e : o_.expect_roles) {
        const long long n = counts.count(e.role) ? counts[e.role] : 0;
        if (e.count ? n != *e.count : n == 0) {
          add(P, code::kRoleMismatch, file,
              e.count ? fmt::format("expected {} {} GPUs, found {}", *e.count, e.role, n)
                      : fmt::format("expected {} GPUs, found none", e.role),
              "check the recipe's worker counts against --expect-role");
        }
      }
    }
    if (o_.require_distinct_het_groups) {
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
          add(P, code::kHetGroupsNotDistinct, file,
              fmt::format("role {} spans {} het groups, expected exactly one", role, groups.size()),
              "place each worker role in its own heterogeneous job group");
          continue;
        }
        const auto g = *groups.begin();
        if (!g) {
          add(P, code::kHetGroupsNotDistinct, file,
              fmt::format("role {} has no het group (not a heterogeneous job)", role),
              "run the roles as a heterogeneous Slurm job, one group per role");
          continue;
        }
        owners[*g].push_back(role);
      }
      for (const auto& [g, rs] : owners) {
        if (rs.size() > 1) {
          add(P, code::kHetGroupsNotDistinct, file,
              fmt::format("roles {} share het group {}", fmt::join(rs, ","), g),
              "place each worker role in its own heterogeneous job group");
        }
      }
    }
  }

  // clock_sync.json in the run directory, else the GPU manifest's clock_sync_check.
  void gpu_clock(const Json* raw_manifest, const ar::GpuManifest* m = nullptr) {
    clock(fs::exists(path_of(o_.run_dir, o_.gpu_dir)) ? Package::gpu : Package::run, raw_manifest,
          m);
  }

  void clock(Package P, const Json* raw_manifest, const ar::GpuManifest* m) {
    const std::string rel = "clock_sync.json";
    const std::string path = path_of(o_.run_dir, rel);
    const std::string_view fix_none =
        "let `cpu-power run` probe the node clocks (it writes clock_sync.json unless the "
        "recipe sets `telemetry.clock_sync_check: false`), then rerun";
    const std::string_view fix_sync =
        "synchronise the node clocks (chronyd, ntpd or systemd-timesyncd), then rerun: row "
        "times come from each node's clock, so an offset moves every window edge";
    std::optional<Json> doc;
    std::string file = rel;
    if (fs::exists(path)) {
      std::string why;
      doc = read_json(path, &why);
      if (!doc) {
        add(P, reason::kClockSyncUnverified, rel, "clock_sync.json is " + why, fix_none);
        return;
      }
    } else if (raw_manifest && raw_manifest->contains("clock_sync_check") &&
               !(*raw_manifest)["clock_sync_check"].is_null()) {
      doc = (*raw_manifest)["clock_sync_check"];
      file = join_rel(o_.gpu_dir, ar::kGpuManifestFilename);
    }
    if (m && !m->clock_sync_failures.empty()) {
      add(P, reason::kClockSyncUnverified, join_rel(o_.gpu_dir, ar::kGpuManifestFilename),
          "clock_sync_failures names " + list_text(m->clock_sync_failures), fix_sync);
    }
    if (!doc) {
      add(P, reason::kClockSyncUnverified, rel,
          "no clock check ran: no clock_sync.json and no clock_sync_check in the GPU manifest",
          fix_none);
      return;
    }
    const Json* nodes = doc->is_object() && doc->contains("nodes") ? &(*doc)["nodes"] : nullptr;
    if (!nodes || !nodes->is_array()) {
      add(P, reason::kClockSyncUnverified, file, "the clock check has no \"nodes\" list", fix_none);
      return;
    }
    std::optional<double> bound;
    if (doc->contains("max_offset_seconds") && (*doc)["max_offset_seconds"].is_number()) {
      bound = (*doc)["max_offset_seconds"].get<double>();
    }
    std::size_t unknown = 0;
    std::vector<std::string> unsynced, over;
    for (const auto& n : *nodes) {
      const std::string host = n.is_object() && n.contains("hostname") && n["hostname"].is_string()
                                   ? n["hostname"].get<std::string>()
                                   : std::string("?");
      const std::string state =
          n.is_object() && n.contains("synchronized") && n["synchronized"].is_string()
              ? n["synchronized"].get<std::string>()
              : std::string("unknown");
      if (state == "no") {
        unsynced.push_back(host);
      } else if (state != "yes") {
        ++unknown;
      }
      if (bound && n.is_object() && n.contains("offset_seconds") &&
          n["offset_seconds"].is_number()) {
        const double off = n["offset_seconds"].get<double>();
        if (std::abs(off) > *bound) over.push_back(fmt::format("{} ({:+.6f} s)", host, off));
      }
    }
    if (nodes->empty() || unknown == nodes->size()) {
      add(P, reason::kClockSyncUnverified, file,
          nodes->empty() ? std::string("the clock check lists no node")
                         : std::string("no node's clock state could be read (every node "
                                       "unknown)"),
          "install a tool that reports the clock's state (chronyc, timedatectl, ntpq) on the "
          "nodes, then rerun");
    }
    if (!unsynced.empty()) {
      add(P, reason::kClockSyncUnverified, file, "not synchronised: " + list_text(unsynced),
          fix_sync);
    }
    if (!over.empty()) {
      add(P, reason::kClockSyncUnverified, file,
          fmt::format("offset over the {} s bound: {}", bound.value_or(0), list_text(over)),
          fix_sync);
    }
  }

  // ---- CPU samples shared by both CPU packages ----------------------------------------
  // The rows' rules; returns the check for the coverage rules.
  ar::CpuSamplesCheck cpu_samples(Package P, const std::string& rel, bool exporter_leg) {
    const auto c = ar::check_cpu_samples(path_of(o_.run_dir, rel));
    if (!c.found) {
      add(P, ar::cpu_reason::kSamplesMissing, rel, "no samples.csv",
          exporter_leg ? "the CPU exporter leg writes it while the run lasts: check the "
                         "exporters' endpoints, then rerun"
                       : "the host collectors' merge writes it at the end of the run: rerun "
                         "the merge with `cpu-power merge DIR`, or rerun");
      return c;
    }
    if (!c.header_problem.empty()) {
      add(P, ar::cpu_reason::kHeaderMismatch, rel, c.header_problem, kRestore);
      return c;
    }
    const bool accepted =
        exporter_leg ? c.exporter_version == 1 || c.exporter_version == 2 : c.host_version != 0;
    if (!accepted) {
      if (exporter_leg && c.exporter_version == 3) {
        add(P, ar::cpu_reason::kHeaderMismatch, rel,
            "CPU samples schema v3 (module_w): the consumers read only the v1 and v2 CPU "
            "headers and refuse the file whole",
            "`cpu-power run --consumer-profile compat` or `--cpu-samples-schema 2`");
      } else {
        add(P, ar::cpu_reason::kHeaderMismatch, rel,
            fmt::format("header '{}' is no {} samples header", c.header.substr(0, 200),
                        exporter_leg ? "CPU (v1, v2)" : "host-leg (v1..v5)"),
            kRestore);
      }
    }
    for (const auto& i : c.issues) {
      add(P, i.code, rel,
          fmt::format("{} row{}; first{}: {}", i.count, i.count == 1 ? "" : "s",
                      i.first_line ? fmt::format(" at line {}", i.first_line) : std::string(),
                      i.first),
          i.code == ar::cpu_reason::kSourceConflict
              ? "use one source per node (`cpu_power_exporter.source: acpi` or `dcgm`, not a "
                "mix across restarts), then rerun"
              : kRestore);
    }
    return c;
  }

  // Sockets 0..N-1 for every host of the GPU package, and every completed GPU window
  // bracketed with no gap over 3.0 s in every series of those hosts.
  void cpu_coverage(Package P, const std::string& rel, const ar::CpuSamplesCheck& c) {
    if (!gpu_samples_ || gpu_samples_->schema_version == 0 || cpu_samples_version(c) == 0) return;
    std::set<std::string> hosts;
    for (const auto& d : gpu_samples_->devices) hosts.insert(d.hostname);
    long long wanted = 0;
    for (const auto& h : hosts) {
      if (auto it = c.sockets.find(h); it != c.sockets.end() && !it->second.empty()) {
        wanted = std::max(wanted, it->second.back() + 1);
      }
    }
    for (const auto& h : hosts) {
      const auto it = c.sockets.find(h);
      if (it == c.sockets.end()) {
        add(P, code::kCpuHostMissing, rel, "host " + h + " of the GPU samples has no CPU rows",
            "run the CPU leg on every node of the GPU leg (its exporter answering), then rerun");
        continue;
      }
      std::vector<std::string> lacking;
      for (long long s = 0; s < wanted; ++s) {
        if (!std::binary_search(it->second.begin(), it->second.end(), s)) {
          lacking.push_back(std::to_string(s));
        }
      }
      if (!lacking.empty()) {
        add(P, code::kCpuSocketsIncomplete, rel,
            fmt::format("host {}: no rows for socket {} (want 0..{})", h, list_text(lacking),
                        wanted - 1),
            "a socket's meter gave no reading (see the exporter's log and the manifest's "
            "sockets_missing): fix the node's power meters, then rerun");
      }
    }
    for (const auto& w : completed_) {
      std::vector<std::string> unbracketed, gaps;
      for (const auto& [key, times] : c.series) {
        if (!hosts.count(key.hostname)) continue;
        const auto seq = ar::bracketing_samples(times, w.start, w.end);
        if (!seq) {
          unbracketed.push_back(key.label());
          continue;
        }
        const double gap = ar::largest_sample_gap_s(*seq);
        if (gap > ar::kGpuMaxSampleGapS)
          gaps.push_back(fmt::format("{} {:.3f} s", key.label(), gap));
      }
      if (!unbracketed.empty()) {
        add(P, reason::kWindowNotBracketed, rel,
            fmt::format("window {} [{:.3f}, {:.3f}]: no sample at or before its start or at or "
                        "after its end: {}",
                        w.name, w.start, w.end, list_text(unbracketed)),
            gpu_code(reason::kWindowNotBracketed)->fix);
      }
      if (!gaps.empty()) {
        add(P, reason::kSampleGapExceeded, rel,
            fmt::format("window {}: samples more than 3.0 s apart: {}", w.name, list_text(gaps)),
            gpu_code(reason::kSampleGapExceeded)->fix);
      }
    }
  }

  // ---- exporter-leg CPU package -------------------------------------------------------
  void cpu() {
    const Package P = Package::cpu;
    const std::string samples_rel = join_rel(o_.cpu_dir, std::string_view("samples.csv"));
    const std::string manifest_rel = join_rel(o_.cpu_dir, ar::kCpuManifestFilename);
    const auto c = cpu_samples(P, samples_rel, true);
    std::string why;
    if (!fs::exists(path_of(o_.run_dir, manifest_rel))) {
      add(P, code::kCpuManifestMissing, manifest_rel, "no cpu_manifest.json",
          "the collector writes it when it stops; a session killed before that has none: "
          "rerun");
    } else if (const auto doc = read_json(path_of(o_.run_dir, manifest_rel), &why); !doc) {
      add(P, code::kCpuManifestMalformed, manifest_rel, "cpu_manifest.json is " + why, kRestore);
    } else if (!doc->is_object() || !(*doc).contains("producer") ||
               !(*doc)["producer"].is_string() || !(*doc).contains("nodes") ||
               !(*doc)["nodes"].is_object()) {
      add(P, code::kCpuManifestMalformed, manifest_rel,
          "not an object with \"producer\" and \"nodes\"", kRestore);
    } else if (doc->contains("samples_schema_version") &&
               (*doc)["samples_schema_version"].is_number_integer() && c.exporter_version != 0 &&
               (*doc)["samples_schema_version"].get<int>() != c.exporter_version) {
      add(P, code::kSchemaVersionMismatch, manifest_rel,
          fmt::format("samples_schema_version is {}, samples.csv has the v{} header",
                      (*doc)["samples_schema_version"].get<int>(), c.exporter_version),
          kRestore);
    }
    cpu_coverage(P, samples_rel, c);
  }

  // ---- host-leg CPU package -----------------------------------------------------------
  void host() {
    const Package P = Package::host;
    const std::string samples_rel = join_rel(o_.host_dir, std::string_view("samples.csv"));
    const std::string manifest_rel = join_rel(o_.host_dir, "manifest.json");
    const auto c = cpu_samples(P, samples_rel, false);
    std::string why;
    if (!fs::exists(path_of(o_.run_dir, manifest_rel))) {
      add(P, code::kManifestMissing, manifest_rel, "no manifest.json",
          "the merge writes it at the end of the run: `cpu-power merge DIR`, or rerun");
    } else if (const auto doc = read_json(path_of(o_.run_dir, manifest_rel), &why);
               !doc || !doc->is_object()) {
      add(P, code::kManifestMalformed, manifest_rel,
          doc ? std::string("not a JSON object") : "manifest.json is " + why, kRestore);
    } else {
      host_manifest(*doc, c, manifest_rel);
    }
    cpu_coverage(P, samples_rel, c);
  }

  void host_manifest(const Json& doc, const ar::CpuSamplesCheck& c, const std::string& file) {
    const Package P = Package::host;
    const auto str = [&](const char* k) {
      return doc.contains(k) && doc[k].is_string() ? doc[k].get<std::string>() : std::string();
    };
    if (!doc.contains("job_id") || !doc["job_id"].is_string() || str("job_id").empty()) {
      add(P, code::kJobIdMissing, file, "job_id is not a non-empty string",
          "run inside a Slurm allocation, or give `cpu-power run --job-id ID`");
    }
    const std::string status = str("status");
    std::vector<std::string> stored;
    if (doc.contains("reason_codes") && doc["reason_codes"].is_array()) {
      for (const auto& r : doc["reason_codes"]) {
        if (r.is_string()) stored.push_back(r.get<std::string>());
      }
    }
    if (status != "complete") {
      add(P, code::kStatusNotComplete, file,
          fmt::format("status is '{}' ({})", status,
                      stored.empty() ? std::string("no reasons recorded") : list_text(stored)),
          "the host collectors did not all finish (see the reasons and the run's log): fix the "
          "nodes, then rerun");
    }
    // Recomputed from the files: every expected node has rows, and the count agrees.
    std::vector<std::string> missing;
    if (doc.contains("expected_nodes") && doc["expected_nodes"].is_array() &&
        cpu_samples_version(c) != 0) {
      for (const auto& n : doc["expected_nodes"]) {
        if (n.is_string() && !c.sockets.count(n.get<std::string>())) {
          missing.push_back(n.get<std::string>());
        }
      }
    }
    if (cpu_samples_version(c) != 0 && c.rows_kept == 0) {
      add(P, code::kCpuSamplesEmpty, join_rel(o_.host_dir, std::string_view("samples.csv")),
          "samples.csv has no rows", "check the host collectors' logs, then rerun");
    } else if (!missing.empty()) {
      add(P, code::kCpuNodeSamplesMissing, join_rel(o_.host_dir, std::string_view("samples.csv")),
          "expected nodes without rows: " + list_text(missing),
          "check those nodes' host collectors (telemetry_cpu_power.<node>.out), then rerun");
    }
    if (cpu_samples_version(c) != 0 && doc.contains("sample_row_count") &&
        doc["sample_row_count"].is_number_integer() &&
        doc["sample_row_count"].get<long long>() != static_cast<long long>(c.rows)) {
      add(P, code::kManifestEvidenceMismatch, file,
          fmt::format("sample_row_count is {}, samples.csv has {} rows",
                      doc["sample_row_count"].get<long long>(), c.rows),
          kRestore);
    }
  }

 private:
  struct Window {
    std::string name;
    double start = 0, end = 0;
  };
  const Options& o_;
  std::vector<Finding> findings_;
  std::optional<ar::GpuSamplesCheck> gpu_samples_;
  std::vector<Window> completed_;
};

}  // namespace

std::string_view package_name(Package p) {
  switch (p) {
    case Package::gpu:
      return "gpu";
    case Package::cpu:
      return "cpu";
    case Package::host:
      return "host";
    case Package::run:
      return "run";
  }
  return "run";
}

Result<RoleExpectation> parse_role_expectation(std::string_view text) {
  RoleExpectation e;
  const auto eq = text.find('=');
  e.role = std::string(text.substr(0, eq));
  if (e.role != "prefill" && e.role != "decode" && e.role != "agg") {
    return Error{"--expect-role '" + std::string(text) +
                 "': the role must be prefill, decode or agg"};
  }
  if (eq != std::string_view::npos) {
    const auto n = text.substr(eq + 1);
    long long v = 0;
    const auto [p, ec] = std::from_chars(n.data(), n.data() + n.size(), v);
    if (n.empty() || ec != std::errc() || p != n.data() + n.size() || v < 0) {
      return Error{"--expect-role '" + std::string(text) + "': COUNT must be an integer >= 0"};
    }
    e.count = v;
  }
  return e;
}

Result<Report> validate_run(const Options& given) {
  // Package directories under the run directory are named relative to it, in every finding.
  Options options = given;
  for (std::string* dir : {&options.gpu_dir, &options.cpu_dir, &options.host_dir}) {
    const fs::path p(*dir);
    if (!p.is_absolute()) continue;
    const auto rel =
        p.lexically_normal().lexically_relative(fs::absolute(options.run_dir).lexically_normal());
    if (!rel.empty() && *rel.begin() != "..") *dir = rel.string();
  }
  std::error_code ec;
  if (!fs::is_directory(options.run_dir, ec)) {
    return Error{options.run_dir + ": not a directory"};
  }
  if (ec = {}; fs::directory_iterator(options.run_dir, ec), ec) {
    return Error{options.run_dir + ": cannot be read: " + ec.message()};
  }
  Report report;
  report.run_dir = options.run_dir;
  Checker checker(options);
  const std::pair<Package, std::string> dirs[] = {{Package::gpu, options.gpu_dir},
                                                  {Package::cpu, options.cpu_dir},
                                                  {Package::host, options.host_dir}};
  bool any = false;
  for (const auto& [p, rel] : dirs) {
    PackageVerdict v;
    v.package = p;
    v.dir = rel;
    v.present = fs::is_directory(path_of(options.run_dir, rel), ec);
    // The GPU directory holds the CPU exporter leg's too: it is a GPU package only with a
    // file of its own.
    if (p == Package::gpu && v.present) {
      const std::string d = path_of(options.run_dir, rel);
      v.present = fs::exists(fs::path(d) / "manifest.json", ec) ||
                  fs::exists(fs::path(d) / "samples.csv", ec) ||
                  fs::exists(fs::path(d) / "windows", ec);
    }
    any = any || v.present;
    report.packages.push_back(v);
  }
  if (!any) {
    return Error{options.run_dir + ": no power package (" + options.gpu_dir + "/, " +
                 options.cpu_dir + "/, " + options.host_dir + "/)"};
  }
  if (report.packages[0].present) {
    checker.gpu();
  } else {
    checker.clock(Package::run, nullptr, nullptr);
  }
  if (report.packages[1].present) checker.cpu();
  if (report.packages[2].present) checker.host();
  report.findings = std::move(checker.findings());
  std::stable_sort(report.findings.begin(), report.findings.end(),
                   [](const Finding& a, const Finding& b) { return a.package < b.package; });
  report.publishable = true;
  for (auto& v : report.packages) {
    v.findings = static_cast<std::size_t>(
        std::count_if(report.findings.begin(), report.findings.end(),
                      [&](const Finding& f) { return f.package == v.package; }));
    v.publishable = v.present && v.findings == 0;
    if (v.present && !v.publishable) report.publishable = false;
  }
  if (std::any_of(report.findings.begin(), report.findings.end(),
                  [](const Finding& f) { return f.package == Package::run; })) {
    report.publishable = false;
  }
  return report;
}

std::string render_text(const Report& r) {
  std::string out;
  for (const auto& f : r.findings) {
    out += fmt::format("{} {}: {} (fix: {})\n", f.code, f.file, f.detail, f.fix);
  }
  for (const auto& v : r.packages) {
    if (!v.present) {
      out += fmt::format("package {} {}: absent\n", package_name(v.package), v.dir);
    } else {
      out += fmt::format("package {} {}: {} ({} finding{})\n", package_name(v.package), v.dir,
                         v.publishable ? "publishable" : "not publishable", v.findings,
                         v.findings == 1 ? "" : "s");
    }
  }
  out += fmt::format("verdict: {}\n", r.publishable ? "publishable" : "not publishable");
  return out;
}

std::string render_json(const Report& r) {
  using Ordered = nlohmann::ordered_json;
  Ordered doc = Ordered::object();
  doc["schema_version"] = 1;
  doc["run_dir"] = r.run_dir;
  doc["publishable"] = r.publishable;
  doc["packages"] = Ordered::array();
  for (const auto& v : r.packages) {
    doc["packages"].push_back({{"package", package_name(v.package)},
                               {"dir", v.dir},
                               {"present", v.present},
                               {"publishable", v.publishable},
                               {"findings", v.findings}});
  }
  doc["findings"] = Ordered::array();
  for (const auto& f : r.findings) {
    doc["findings"].push_back({{"package", package_name(f.package)},
                               {"code", f.code},
                               {"file", f.file},
                               {"detail", f.detail},
                               {"fix", f.fix}});
  }
  // Invalid UTF-8 in a file name or cell is replaced, never thrown on.
  return doc.dump(2, ' ', false, Ordered::error_handler_t::replace) + "\n";
}

void log_session_verdict(const Options& options) {
  auto log = common::logger("cpu_power::validate");
  try {
    const auto report = validate_run(options);
    if (!report) {
      log->warn("validation skipped: {}", report.error());
      return;
    }
    for (const auto& f : report->findings) {
      log->warn("{} {}: {} (fix: {})", f.code, f.file, f.detail, f.fix);
    }
    std::vector<std::string> parts;
    for (const auto& v : report->packages) {
      if (v.present) {
        parts.push_back(fmt::format("{}={}", package_name(v.package),
                                    v.publishable ? "publishable" : "not publishable"));
      }
    }
    log->info("validation ({}): {}; verdict: {} (details: cpu-power validate {})",
              fmt::join(parts, ", "),
              report->findings.size() == 1 ? "1 finding"
                                           : fmt::format("{} findings", report->findings.size()),
              report->publishable ? "publishable" : "not publishable", options.run_dir);
  } catch (const std::exception& e) {
    log->warn("validation failed: {}", e.what());
  }
}

}  // namespace cpupower::validate
