#include <fmt/format.h>
#include <fmt/ranges.h>

#include <nlohmann/json.hpp>

#include "common/enum_names.hpp"
#include "common/log.hpp"
#include "validate/validate.hpp"

// The report as text, as JSON and as the session's log lines.
namespace cpupower::validate {

constexpr common::EnumName<Package> kPackages[] = {
    {Package::gpu, "gpu"}, {Package::cpu, "cpu"}, {Package::host, "host"}, {Package::run, "run"}};

std::string_view package_name(Package p) {
  return common::name_of(kPackages, p, "run");
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
  Ordered doc{{"schema_version", 1},
              {"run_dir", r.run_dir},
              {"publishable", r.publishable},
              {"packages", Ordered::array()},
              {"findings", Ordered::array()}};
  for (const auto& v : r.packages) {
    doc["packages"].push_back({{"package", package_name(v.package)},
                               {"dir", v.dir},
                               {"present", v.present},
                               {"publishable", v.publishable},
                               {"findings", v.findings}});
  }
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
