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

}  // namespace

std::string format_host_v5_row(const HostSampleRow& row) {
  std::string out;
  out.reserve(192);
  out += "5,";
  append_number(out, row.timestamp_unix);
  out += ',';
  append_cell(out, row.timestamp_local);
  out += ',';
  append_cell(out, row.hostname);
  out += ',';
  append_cell(out, row.source);
  out += ',';
  append_cell(out, row.sensor);
  out += ',';
  out += std::to_string(row.socket_id);
  out += ',';
  append_number(out, row.power_w);
  for (const auto* v :
       {&row.cpu_rail_w, &row.soc_w, &row.dram_w, &row.module_w, &row.total_power_w}) {
    append_optional(out, *v);
  }
  for (const auto& u : row.cpu_util) append_optional(out, u);
  out += "\r\n";
  return out;
}

int host_schema_version(const std::vector<std::string>& header) {
  const std::string line = join(header);
  const std::string_view known[] = {kHostHeaderV1, kHostHeaderV2, kHostHeaderV3, kHostHeaderV4,
                                    kHostHeaderV5};
  for (int v = 1; v <= 5; ++v) {
    if (line == known[v - 1]) return v;
  }
  return 0;
}

std::string describe_cpu_header(const std::vector<std::string>& header) {
  const std::string line = join(header);
  if (line == kCpuHeaderV1) return "exporter v1 / host v1";
  if (line == kCpuHeaderV2) return "exporter v2";
  if (line == kCpuHeaderV3) return "exporter v3";
  const int v = host_schema_version(header);
  if (v > 0) return "host v" + std::to_string(v);
  return "unrecognised";
}

CpuCsvColumns CpuCsvColumns::from_header(const std::vector<std::string>& header) {
  CpuCsvColumns c;
  c.timestamp_unix = column_index(header, "timestamp_unix");
  c.hostname = column_index(header, "hostname");
  c.source = column_index(header, "source");
  c.sensor = column_index(header, "sensor");
  c.socket_id = column_index(header, "socket_id");
  c.power_w = column_index(header, "power_w");
  c.total_power_w = column_index(header, "total_power_w");
  c.module_w = column_index(header, "module_w");
  c.wide = true;
  for (std::size_t i = 0; i < kCpuRailColumns.size(); ++i) {
    c.rails[i] = column_index(header, kCpuRailColumns[i]);
    c.wide = c.wide && c.rails[i].has_value();
  }
  for (std::size_t i = 0; i < kCpuUtilColumns.size(); ++i) {
    c.util[i] = column_index(header, kCpuUtilColumns[i]);
  }
  return c;
}

std::string CpuCsvColumns::missing_required() const {
  if (!timestamp_unix) return "timestamp_unix";
  if (!hostname) return "hostname";
  if (!socket_id) return "socket_id";
  if (!power_w) return "power_w";
  if (!total_power_w) return "total_power_w";
  return "";
}

}  // namespace cpupower::artifacts
