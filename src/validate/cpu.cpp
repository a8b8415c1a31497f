#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "artifacts/cpu_manifest.hpp"
#include "artifacts/gpu_contract.hpp"
#include "artifacts/gpu_windows.hpp"
#include "validate/checker.hpp"

// The CPU samples of both CPU packages, and the exporter leg's package (power/cpu/).
namespace cpupower::validate {

ar::CpuSamplesCheck check_cpu_samples(Checker& k, Package P, const std::string& rel,
                                      bool exporter_leg) {
  const auto c = ar::check_cpu_samples(path_of(k.o.run_dir, rel));
  if (!c.found) {
    k.add(P, ar::cpu_reason::kSamplesMissing, rel, "no samples.csv",
          exporter_leg ? "the CPU exporter leg writes it while the run lasts: check the "
                         "exporters' endpoints, then rerun"
                       : "the host collectors' merge writes it at the end of the run: rerun "
                         "the merge with `cpu-power merge DIR`, or rerun");
    return c;
  }
  if (!c.header_problem.empty()) {
    k.add(P, ar::cpu_reason::kHeaderMismatch, rel, c.header_problem, kRestore);
    return c;
  }
  const bool accepted =
      exporter_leg ? c.exporter_version == 1 || c.exporter_version == 2 : c.host_version != 0;
  if (!accepted) {
    if (exporter_leg && c.exporter_version == 3) {
      k.add(P, ar::cpu_reason::kHeaderMismatch, rel,
            "CPU samples schema v3 (module_w): the consumers read only the v1 and v2 CPU "
            "headers and refuse the file whole",
            "`cpu-power run --consumer-profile compat` or `--cpu-samples-schema 2`");
    } else {
      k.add(P, ar::cpu_reason::kHeaderMismatch, rel,
            fmt::format("header '{}' is no {} samples header", c.header.substr(0, 200),
                        exporter_leg ? "CPU (v1, v2)" : "host-leg (v1..v5)"),
            kRestore);
    }
  }
  for (const auto& i : c.issues) {
    k.add(P, i.code, rel,
          fmt::format("{} row{}; first{}: {}", i.count, i.count == 1 ? "" : "s",
                      i.first_line ? fmt::format(" at line {}", i.first_line) : std::string(),
                      i.first),
          i.code == ar::cpu_reason::kSourceConflict
              ? "use one source per node (`cpu_power_exporter.source: acpi`, `rapl` or `dcgm`, "
                "not a mix across restarts), then rerun"
              : kRestore);
  }
  return c;
}

// Sockets 0..N-1 for every host of the GPU package, and every completed GPU window
// bracketed with no gap over 3.0 s in every series of those hosts.
void check_cpu_coverage(Checker& k, Package P, const std::string& rel,
                        const ar::CpuSamplesCheck& c) {
  if (!k.gpu_samples || k.gpu_samples->schema_version == 0 || cpu_samples_version(c) == 0) return;
  std::set<std::string> hosts;
  for (const auto& d : k.gpu_samples->devices) hosts.insert(d.hostname);
  long long wanted = 0;
  for (const auto& h : hosts) {
    if (auto it = c.sockets.find(h); it != c.sockets.end() && !it->second.empty()) {
      wanted = std::max(wanted, it->second.back() + 1);
    }
  }
  for (const auto& h : hosts) {
    const auto it = c.sockets.find(h);
    if (it == c.sockets.end()) {
      k.add(P, code::kCpuHostMissing, rel, "host " + h + " of the GPU samples has no CPU rows",
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
      k.add(P, code::kCpuSocketsIncomplete, rel,
            fmt::format("host {}: no rows for socket {} (want 0..{})", h, list_text(lacking),
                        wanted - 1),
            "a socket's meter gave no reading (see the exporter's log and the manifest's "
            "sockets_missing): fix the node's power meters, then rerun");
    }
  }
  for (const auto& w : k.completed) {
    std::vector<std::string> unbracketed, gaps;
    for (const auto& [key, times] : c.series) {
      if (!hosts.count(key.hostname)) continue;
      const auto seq = ar::bracketing_samples(times, w.start, w.end);
      if (!seq) {
        unbracketed.push_back(key.label());
        continue;
      }
      const double gap = ar::largest_sample_gap_s(*seq);
      if (gap > common::kMaxSampleGapS)
        gaps.push_back(fmt::format("{} {:.3f} s", key.label(), gap));
    }
    if (!unbracketed.empty()) {
      k.add(P, reason::kWindowNotBracketed, rel,
            fmt::format("window {} [{:.3f}, {:.3f}]: no sample at or before its start or at or "
                        "after its end: {}",
                        w.name, w.start, w.end, list_text(unbracketed)),
            gpu_code(reason::kWindowNotBracketed)->fix);
    }
    if (!gaps.empty()) {
      k.add(P, reason::kSampleGapExceeded, rel,
            fmt::format("window {}: samples more than 3.0 s apart: {}", w.name, list_text(gaps)),
            gpu_code(reason::kSampleGapExceeded)->fix);
    }
  }
}

void check_cpu(Checker& k) {
  const Package P = Package::cpu;
  const std::string samples_rel = join_rel(k.o.cpu_dir, std::string_view("samples.csv"));
  const std::string manifest_rel = join_rel(k.o.cpu_dir, ar::kCpuManifestFilename);
  const auto c = check_cpu_samples(k, P, samples_rel, true);
  if (!fs::exists(path_of(k.o.run_dir, manifest_rel))) {
    k.add(P, code::kCpuManifestMissing, manifest_rel, "no cpu_manifest.json",
          "the collector writes it when it stops; a session killed before that has none: "
          "rerun");
  } else if (const auto doc = read_json(path_of(k.o.run_dir, manifest_rel)); !doc) {
    k.add(P, code::kCpuManifestMalformed, manifest_rel, "cpu_manifest.json is " + doc.error(),
          kRestore);
  } else if (const auto m = ar::parse_cpu_manifest(doc->dump()); !m) {
    k.add(P, code::kCpuManifestMalformed, manifest_rel, m.error(), kRestore);
  } else if (m->samples_schema_version && c.exporter_version != 0 &&
             *m->samples_schema_version != c.exporter_version) {
    k.add(P, code::kSchemaVersionMismatch, manifest_rel,
          fmt::format("samples_schema_version is {}, samples.csv has the v{} header",
                      *m->samples_schema_version, c.exporter_version),
          kRestore);
  }
  check_cpu_coverage(k, P, samples_rel, c);
}

}  // namespace cpupower::validate
