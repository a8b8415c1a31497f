#include "validate/validate.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstdint>

#include "common/text.hpp"
#include "validate/checker.hpp"

namespace cpupower::validate {
std::string path_of(const std::string& run_dir, const std::string& rel) {
  return fs::path(rel).is_absolute() ? rel : (fs::path(run_dir) / rel).string();
}

std::string join_rel(const std::string& dir, std::string_view name) {
  return (fs::path(dir) / std::string(name)).lexically_normal().string();
}

std::string list_text(const std::vector<std::string>& items, std::size_t most) {
  std::string out;
  for (std::size_t i = 0; i < items.size() && i < most; ++i) out += (i ? ", " : "") + items[i];
  if (items.size() > most) out += fmt::format(" and {} more", items.size() - most);
  return out;
}

Result<Json> read_json(const std::string& path) {
  const auto text = common::read_small_file(path, SIZE_MAX);
  if (!text) {
    // A directory opens but holds no JSON.
    return Error{fs::is_directory(path) ? "not JSON" : "cannot be read"};
  }
  Json doc = Json::parse(*text, nullptr, false);
  if (doc.is_discarded()) return Error{"not JSON"};
  return doc;
}

void Checker::add(Package p, std::string_view c, const std::string& file, const std::string& detail,
                  std::string_view fix) {
  findings.push_back({p, std::string(c), common::escape_controls(file),
                      common::escape_controls(detail), std::string(fix)});
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
  Checker checker{options, {}, {}, {}};
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
    check_gpu(checker);
  } else {
    check_clock(checker, Package::run, nullptr, nullptr);
  }
  if (report.packages[1].present) check_cpu(checker);
  if (report.packages[2].present) check_host(checker);
  report.findings = std::move(checker.findings);
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

}  // namespace cpupower::validate
