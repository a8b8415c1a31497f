#include "artifacts/host_samples.hpp"

#include "artifacts/cpu_samples.hpp"
#include "artifacts/csv.hpp"

namespace cpupower::artifacts {
namespace {

std::string join(const std::vector<std::string>& cells) {
  std::string out;
  for (std::size_t i = 0; i < cells.size(); ++i) {
    if (i > 0) out += ',';
    out += cells[i];
  }
  return out;
}

// The rail and utilization columns follow their first in the table, in the arrays' order.
constexpr bool follow(std::size_t first, std::span<const std::string_view> names) {
  for (std::size_t k = 0; k < names.size(); ++k) {
    if (kHostColumns[first + k].name != names[k]) return false;
  }
  return true;
}
static_assert(follow(host_column::kRail, kCpuRailColumns));
static_assert(follow(host_column::kUtil, kCpuUtilColumns));

}  // namespace

int host_schema_version(const std::vector<std::string>& header) {
  return header_version(kHostColumns, join(header));
}

std::string describe_cpu_header(const std::vector<std::string>& header) {
  const std::string line = join(header);
  if (line == kCpuHeaderV1) return "exporter v1 / host v1";
  if (const int v = header_version(kCpuColumns, line); v > 0)
    return "exporter v" + std::to_string(v);
  const int v = header_version(kHostColumns, line);
  if (v > 0) return "host v" + std::to_string(v);
  return "unrecognised";
}

CpuCsvColumns CpuCsvColumns::from_header(const std::vector<std::string>& header) {
  CpuCsvColumns c;
  c.at = find_columns(kHostColumns, header);
  c.wide = true;
  for (std::size_t k = 0; k < kRails; ++k) c.wide = c.wide && c.at[host_column::kRail + k];
  return c;
}

std::string CpuCsvColumns::missing_required() const {
  return std::string(missing_key(kHostColumns, at).value_or(""));
}

}  // namespace cpupower::artifacts
