#include "artifacts/gpu_samples.hpp"

#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>
#include <unordered_map>

#include "artifacts/csv_stream.hpp"

namespace cpupower::artifacts {
namespace {

struct GpuColumns {
  std::optional<std::size_t> timestamp_unix, hostname, gpu_index, power_w;
  std::optional<std::size_t> util[2];
};

class GpuRowCollector {
 public:
  explicit GpuRowCollector(GpuSamplesFile& out) : out_(out) {}

  bool header(const std::vector<std::string>& header) {
    c_.timestamp_unix = column_index(header, "timestamp_unix");
    c_.hostname = column_index(header, "hostname");
    c_.gpu_index = column_index(header, "gpu_index");
    c_.power_w = column_index(header, "power_w");
    for (int i = 0; i < 2; ++i) {
      c_.util[i] = column_index(header, kGpuUtilColumns[i]);
      out_.has_util_column[i] = c_.util[i].has_value();
    }
    return true;
  }

  void record(const CsvRecord& r) {
    const auto cell = [&](const std::optional<std::size_t>& i) -> std::string_view {
      return i && *i < r.cells.size() ? r.cells[*i] : std::string_view{};
    };
    const auto t = parse_cell_double(cell(c_.timestamp_unix));
    const auto idx = parse_cell_int(cell(c_.gpu_index));
    const std::string_view host = cell(c_.hostname);
    if (!t || !idx || (!c_.hostname && host.empty())) {
      if (out_.skipped_rows++ == 0) {
        if (!t) {
          out_.first_skipped = describe_bad_cell("timestamp_unix", cell(c_.timestamp_unix));
        } else if (!idx) {
          out_.first_skipped = describe_bad_cell("gpu_index", cell(c_.gpu_index), "an integer");
        } else {
          out_.first_skipped = "hostname is blank";
        }
      }
      return;
    }
    GpuSampleRow row;
    row.timestamp_unix = *t;
    row.host = host_index(host);
    row.gpu_index = *idx;
    row.power_w = parse_cell_double(cell(c_.power_w));
    for (int i = 0; i < 2; ++i) row.util[i] = parse_cell_double(cell(c_.util[i]));
    out_.rows.push_back(row);
  }

 private:
  std::size_t host_index(std::string_view host) {
    auto it = index_.find(std::string(host));
    if (it != index_.end()) return it->second;
    out_.hosts.emplace_back(host);
    index_.emplace(std::string(host), out_.hosts.size() - 1);
    return out_.hosts.size() - 1;
  }

  GpuSamplesFile& out_;
  GpuColumns c_;
  std::unordered_map<std::string, std::size_t> index_;
};

}  // namespace

GpuSamplesFile read_gpu_samples(const std::string& path) {
  GpuSamplesFile out;
  GpuRowCollector collector(out);
  const CsvScanResult scan = scan_csv_file(
      path, CsvScanOptions{},
      [&](const std::vector<std::string>& h) { return collector.header(h); },
      [&](std::size_t, const CsvRecord& r) { collector.record(r); }, [] {});
  out.ok = scan.ok;
  out.error = scan.error;
  return out;
}

GpuSamplesFile parse_gpu_samples(std::string_view text) {
  GpuSamplesFile out;
  GpuRowCollector collector(out);
  scan_csv_text(
      text, [&](const std::vector<std::string>& h) { return collector.header(h); },
      [&](std::size_t, const CsvRecord& r) { collector.record(r); });
  out.ok = true;
  return out;
}

GpuManifestRoles parse_gpu_manifest_roles(std::string_view json_text) {
  GpuManifestRoles out;
  const nlohmann::json doc = nlohmann::json::parse(json_text, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) {
    out.error = "not a JSON object";
    return out;
  }
  out.ok = true;
  const auto devices = doc.find("expected_devices");
  if (devices == doc.end() || !devices->is_array()) return out;
  for (const auto& d : *devices) {
    if (!d.is_object() || !d.contains("hostname") || !d["hostname"].is_string() ||
        !d.contains("gpu_index") || !d["gpu_index"].is_number_integer() ||
        !d.contains("assignments") || !d["assignments"].is_array()) {
      ++out.skipped_devices;
      continue;
    }
    auto& roles = out.roles[{d["hostname"].get<std::string>(), d["gpu_index"].get<long long>()}];
    for (const auto& a : d["assignments"]) {
      if (a.is_object() && a.contains("worker_role") && a["worker_role"].is_string()) {
        roles.insert(a["worker_role"].get<std::string>());
      }
    }
  }
  return out;
}

GpuManifestRoles read_gpu_manifest_roles(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    GpuManifestRoles out;
    out.error = path + ": cannot be read";
    return out;
  }
  std::ostringstream text;
  text << in.rdbuf();
  GpuManifestRoles out = parse_gpu_manifest_roles(text.str());
  if (!out.ok) out.error = path + ": " + out.error;
  return out;
}

}  // namespace cpupower::artifacts
