// The report's GPU samples reader (artifacts/gpu_samples, v1-v3) and what the report builds
// from it (report/gpu_data): text and file reads agree, and every device, node and role track
// integrates without fault. The same bytes also go to the GPU manifest's role reader.

#include <set>
#include <string>
#include <tuple>

#include "artifacts/gpu_samples.hpp"
#include "fuzz_util.hpp"
#include "report/gpu_data.hpp"
#include "track_checks.hpp"

namespace {

namespace artifacts = cpupower::artifacts;
using cpupower::fuzz::append_bits;

std::string summary(const artifacts::GpuSamplesFile& f) {
  std::string out = "rows_read=" + std::to_string(f.rows_read) + "\nhosts:";
  for (const auto& h : f.hosts) out += " " + h;
  for (const bool u : f.has_util_column) out += u ? " util" : " -";
  for (const auto& r : f.rows) {
    out += "\n";
    append_bits(out, r.timestamp_unix);
    out += std::to_string(r.host) + " " + std::to_string(r.gpu_index) + " ";
    append_bits(out, r.power_w.value_or(-0.0));
    for (const auto& u : r.util) append_bits(out, u.value_or(-0.0));
  }
  for (const auto& w : f.issues.warnings("samples.csv", f.rows_read)) out += "\n" + w;
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = cpupower::fuzz::as_text(data, size);
  const auto from_text = artifacts::parse_gpu_samples(text);
  const std::string path = cpupower::fuzz::scratch_dir() + "/gpu_samples.csv";
  cpupower::fuzz::write_file(path, text);
  const auto from_file = artifacts::read_gpu_samples(path);
  // A header the report cannot use is the same error either way, the file's named by path.
  FUZZ_CHECK(from_text.ok() == from_file.ok(), "text %s, file %s",
             from_text ? "ok" : from_text.error().c_str(),
             from_file ? "ok" : from_file.error().c_str());
  if (!from_text) {
    FUZZ_CHECK(from_file.error() == path + ": " + from_text.error(), "%s vs %s",
               from_file.error().c_str(), from_text.error().c_str());
    FUZZ_CHECK(from_text.error().starts_with("line "), "%s", from_text.error().c_str());
    return 0;
  }
  // Repeated instants are gone: no two rows share (host, gpu_index, timestamp_unix).
  std::set<std::tuple<std::size_t, long long, double>> instants;
  for (const auto& r : from_text->rows) {
    FUZZ_CHECK(instants.emplace(r.host, r.gpu_index, r.timestamp_unix).second,
               "a repeated instant survived at line %zu", static_cast<std::size_t>(r.line));
  }
  FUZZ_CHECK(from_text->rows.size() + from_text->repeated_rows <= from_text->rows_read, "%zu rows",
             from_text->rows.size());
  const std::string a = summary(*from_text), b = summary(*from_file);
  FUZZ_CHECK(a == b, "text and file reads differ:\n%s\n---\n%s", a.c_str(), b.c_str());

  const auto roles = artifacts::parse_gpu_manifest_roles(text);
  const auto gpu = cpupower::report::build_gpu_data(*from_file, roles.roles);
  for (const auto& d : gpu.devices) cpupower::fuzz::integrate_checks(d.power);
  for (const auto& n : gpu.nodes) cpupower::fuzz::integrate_checks(n.power);
  for (const auto& r : gpu.roles) cpupower::fuzz::integrate_checks(r.power);
  return 0;
}
