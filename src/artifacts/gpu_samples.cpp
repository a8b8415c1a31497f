#include "artifacts/gpu_samples.hpp"

#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <sstream>
#include <unordered_map>

#include "artifacts/row_issues.hpp"

namespace cpupower::artifacts {
namespace {

class GpuRowCollector {
 public:
  explicit GpuRowCollector(GpuSamplesFile& out) : out_(out) {}

  void header(std::span<const std::string_view> cells) {
    header_.assign(cells.begin(), cells.end());
    timestamp_unix_ = column_index(header_, "timestamp_unix");
    hostname_ = column_index(header_, "hostname");
    gpu_index_ = column_index(header_, "gpu_index");
    power_w_ = column_index(header_, "power_w");
    for (std::size_t i = 0; i < kGpuUtils; ++i) {
      util_[i] = column_index(header_, kGpuUtilColumns[i]);
      out_.has_util_column[i] = util_[i].has_value();
    }
  }

  void record(const CsvRecord& r) {
    ++out_.rows_read;
    if (!whole_record(r, header_.size(), out_.issues)) return;
    const auto cell = [&](const std::optional<std::size_t>& i) -> std::string_view {
      return i ? r.cells[*i] : std::string_view{};
    };
    const auto skip = [&](std::string_view reason, std::string detail) {
      out_.issues.add(reason, true, r.line, [&] { return detail; });
    };
    double t = 0;
    if (!parse_double(cell(timestamp_unix_), &t) || !std::isfinite(t)) {
      return skip("timestamp_unix is not a finite number",
                  describe_bad_cell("timestamp_unix", cell(timestamp_unix_), "a finite number"));
    }
    const auto idx = parse_int(cell(gpu_index_));
    if (!idx || *idx < 0) {
      return skip("gpu_index is not a non-negative integer",
                  describe_bad_cell("gpu_index", cell(gpu_index_), "a non-negative integer"));
    }
    const std::string_view host = cell(hostname_);
    if (host.empty()) return skip("hostname is blank", "hostname is blank");
    double watts = 0;
    if (!read_watts(cell(power_w_), "power_w", kMaxSocketWatts, r.line, out_.issues, &watts)) {
      return;
    }
    GpuSampleRow row;
    row.timestamp_unix = t;
    row.host = host_index(host);
    row.gpu_index = *idx;
    if (!std::isnan(watts)) row.power_w = watts;
    for (std::size_t i = 0; i < kGpuUtils; ++i) {
      double u = 0;
      if (parse_double(cell(util_[i]), &u) && std::isfinite(u)) row.util[i] = u;
    }
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
  std::vector<std::string> header_;
  std::optional<std::size_t> timestamp_unix_, hostname_, gpu_index_, power_w_, util_[kGpuUtils];
  std::unordered_map<std::string, std::size_t> index_;
};

template <typename Reader>
void read_all(Reader& reader, GpuSamplesFile& out) {
  GpuRowCollector collector(out);
  CsvRecord r;
  std::vector<CsvDamage> damage;
  bool first = true;
  while (reader.next(r, damage)) {
    if (first) {
      collector.header(r.cells);
      first = false;
    } else {
      collector.record(r);
    }
  }
  out.issues.add_damage(damage);
}

}  // namespace

Result<GpuSamplesFile> read_gpu_samples(const std::string& path) {
  auto reader = CsvFileReader::open(path);
  if (!reader) return Error{reader.error()};
  GpuSamplesFile out;
  read_all(*reader, out);
  if (!reader->error().empty()) return Error{reader->error()};
  return out;
}

GpuSamplesFile parse_gpu_samples(std::string_view text) {
  GpuSamplesFile out;
  CsvTextReader reader(text, true);
  read_all(reader, out);
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
