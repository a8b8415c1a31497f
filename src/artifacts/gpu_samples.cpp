#include "artifacts/gpu_samples.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <tuple>
#include <unordered_map>

#include "artifacts/gpu_manifest.hpp"
#include "artifacts/row_issues.hpp"
#include "common/json_fields.hpp"
#include "common/text.hpp"

namespace cpupower::artifacts {
namespace {

// A header cell as a message shows it: control bytes escaped, cut after 80 bytes.
std::string shown_header(std::span<const std::string_view> cells) {
  std::string line;
  for (std::size_t i = 0; i < cells.size() && line.size() <= 80; ++i) {
    if (i > 0) line += ',';
    line += cells[i];
  }
  return common::escape_controls(line.substr(0, 80)) + (line.size() > 80 ? "..." : "");
}

constexpr std::size_t kTimestampUnix = column_of(kGpuColumns, "timestamp_unix");
constexpr std::size_t kHostname = column_of(kGpuColumns, "hostname");
constexpr std::size_t kGpuIndex = column_of(kGpuColumns, "gpu_index");
constexpr std::size_t kPowerW = column_of(kGpuColumns, "power_w");
constexpr std::size_t kUtil = column_of(kGpuColumns, kGpuUtilColumns[0]);  // then the others
static_assert(kGpuColumns[kUtil + 1].name == kGpuUtilColumns[1]);

class GpuRowCollector {
 public:
  explicit GpuRowCollector(GpuSamplesFile& out) : out_(out) {}

  // The columns by name; an error names the first key column the header lacks.
  std::string header(std::span<const std::string_view> cells, std::size_t line) {
    header_.assign(cells.begin(), cells.end());
    at_ = find_columns(kGpuColumns, header_);
    for (std::size_t i = 0; i < kGpuUtils; ++i)
      out_.has_util_column[i] = at_[kUtil + i].has_value();
    if (const auto missing = missing_key(kGpuColumns, at_)) {
      return "line " + std::to_string(line) + ": the header has no '" + std::string(*missing) +
             "' column (" + std::to_string(cells.size()) +
             (cells.size() == 1 ? " cell: '" : " cells: '") + shown_header(cells) + "')";
    }
    return "";
  }

  void record(const CsvRecord& r) {
    ++out_.rows_read;
    if (!whole_record(r, header_.size(), out_.issues)) return;
    const auto cell = [&](std::size_t column) -> std::string_view {
      return at_[column] ? r.cells[*at_[column]] : std::string_view{};
    };
    double t = 0;
    if (!read_time(cell(kTimestampUnix), r.line, out_.issues, &t)) return;
    const auto idx = parse_int(cell(kGpuIndex));
    if (!idx || *idx < 0) {
      return out_.issues.add("gpu_index is not a non-negative integer", true, r.line, [&] {
        return describe_bad_cell("gpu_index", cell(kGpuIndex), "a non-negative integer");
      });
    }
    const std::string_view host = cell(kHostname);
    if (!read_hostname(host, r.line, out_.issues)) return;
    double watts = 0;
    if (!read_watts(cell(kPowerW), kGpuColumns[kPowerW], r.line, out_.issues, &watts)) {
      return;
    }
    GpuSampleRow row;
    row.timestamp_unix = t;
    row.host = static_cast<std::uint32_t>(host_index(host));
    row.gpu_index = *idx;
    row.line = static_cast<std::uint32_t>(std::min<std::size_t>(r.line, UINT32_MAX));
    if (!std::isnan(watts)) row.power_w = watts;
    for (std::size_t i = 0; i < kGpuUtils; ++i) {
      double u = 0;
      if (parse_double(cell(kUtil + i), &u) && std::isfinite(u)) row.util[i] = u;
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
  std::vector<std::optional<std::size_t>> at_;  // kGpuColumns positions in the header
  std::unordered_map<std::string, std::size_t> index_;
};

// A row whose (hostname, gpu_index, timestamp_unix) an earlier row already has is the same
// instant read twice (a file written twice, rows appended again): it is dropped, so that it
// adds nothing to a device, a node or a role, and counted with its first line.
void drop_repeated_instants(GpuSamplesFile& out) {
  // The collector writes each device's rows in time order: then no time repeats, and one
  // pass tells so without sorting.
  struct KeyHash {
    std::size_t operator()(const std::pair<std::uint32_t, long long>& k) const {
      return std::hash<std::uint32_t>{}(k.first) * 1000003u ^ std::hash<long long>{}(k.second);
    }
  };
  std::unordered_map<std::pair<std::uint32_t, long long>, double, KeyHash> last;
  bool increasing = true;
  for (const GpuSampleRow& r : out.rows) {
    const auto [it, added] = last.try_emplace({r.host, r.gpu_index}, r.timestamp_unix);
    if (added) continue;
    if (!(r.timestamp_unix > it->second)) {
      increasing = false;
      break;
    }
    it->second = r.timestamp_unix;
  }
  if (increasing) return;
  std::vector<std::size_t> order(out.rows.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  const auto key = [&](std::size_t i) {
    const GpuSampleRow& r = out.rows[i];
    return std::tuple(r.host, r.gpu_index, r.timestamp_unix);
  };
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return key(a) < key(b); });
  std::vector<std::size_t> first_of(out.rows.size(), SIZE_MAX);  // the row a repeat repeats
  bool any = false;
  for (std::size_t k = 1; k < order.size(); ++k) {
    if (key(order[k]) != key(order[k - 1])) continue;
    const std::size_t prev = order[k - 1];
    first_of[order[k]] = first_of[prev] == SIZE_MAX ? prev : first_of[prev];
    any = true;
  }
  if (!any) return;
  std::size_t kept = 0;
  for (std::size_t i = 0; i < out.rows.size(); ++i) {
    if (first_of[i] != SIZE_MAX) {
      ++out.repeated_rows;
      out.issues.add(kRepeatedInstantReason, true, out.rows[i].line,
                     [&] { return "repeats line " + std::to_string(out.rows[first_of[i]].line); });
      continue;
    }
    out.rows[kept++] = out.rows[i];
  }
  out.rows.resize(kept);
}

template <typename Reader>
Status read_all(Reader& reader, GpuSamplesFile& out) {
  GpuRowCollector collector(out);
  CsvRecord r;
  std::vector<CsvDamage> damage;
  bool first = true;
  while (reader.next(r, damage)) {
    if (first) {
      std::string problem = csv_header_problem(r.cells, r.line, damage);
      if (problem.empty()) problem = collector.header(r.cells, r.line);
      if (!problem.empty()) return Error{problem};
      first = false;
    } else {
      collector.record(r);
    }
  }
  if (first && !damage.empty()) return Error{csv_header_problem({}, 0, damage)};
  out.empty = first;
  out.issues.add_damage(damage);
  drop_repeated_instants(out);
  return Ok{};
}

}  // namespace

Result<GpuSamplesFile> read_gpu_samples(const std::string& path) {
  // The header first, from the file's first bytes: a file whose first line is no header (2 GiB
  // of NUL bytes) is refused without reading the rest.
  const auto header = read_csv_header(path);
  if (!header) {
    return Error{header.error().starts_with(path) ? header.error() : path + ": " + header.error()};
  }
  auto reader = CsvFileReader::open(path);
  if (!reader) return Error{reader.error()};
  GpuSamplesFile out;
  if (const Status read = read_all(*reader, out); !read) return Error{path + ": " + read.error()};
  if (!reader->error().empty()) return Error{reader->error()};
  return out;
}

Result<GpuSamplesFile> parse_gpu_samples(std::string_view text) {
  GpuSamplesFile out;
  CsvTextReader reader(text, true);
  if (const Status read = read_all(reader, out); !read) return Error{read.error()};
  return out;
}

GpuManifestRoles parse_gpu_manifest_roles(std::string_view json_text) {
  GpuManifestRoles out;
  const nlohmann::json doc = nlohmann::json::parse(json_text, nullptr, false);
  if (doc.is_discarded()) {
    out.error = "malformed JSON";
    return out;
  }
  if (!doc.is_object()) {
    out.error = "not a JSON object";
    return out;
  }
  out.ok = true;
  common::get_to(doc, "sample_row_count", out.sample_row_count);
  common::get_to(doc, "samples_sha256", out.samples_sha256);
  common::get_to(doc, "publication_valid", out.publication_valid);
  common::get_to(doc, "reason_codes", out.reason_codes);
  const auto devices = doc.find("expected_devices");
  if (devices == doc.end() || !devices->is_array()) return out;
  out.expected_devices.emplace();
  for (const auto& d : *devices) {
    const auto entry = read_gpu_expected_device(d);
    if (entry.device) {
      out.expected_devices->emplace(entry.device->hostname, entry.device->gpu_index);
    }
    if (!entry.device || !entry.assignments) {
      ++out.skipped_devices;
      continue;
    }
    auto& roles = out.roles[{entry.device->hostname, entry.device->gpu_index}];
    for (const auto& a : entry.device->assignments) roles.insert(a.worker_role);
  }
  return out;
}

GpuManifestRoles read_gpu_manifest_roles(const std::string& path) {
  const auto text = common::read_small_file(path, SIZE_MAX);
  if (!text) {
    GpuManifestRoles out;
    out.error = path + ": cannot be read: " + text.error();
    return out;
  }
  GpuManifestRoles out = parse_gpu_manifest_roles(*text);
  if (!out.ok) out.error = path + ": " + out.error;
  return out;
}

}  // namespace cpupower::artifacts
