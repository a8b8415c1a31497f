#include "artifacts/cpu_samples_check.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <unordered_map>
#include <utility>

#include "artifacts/cpu_samples.hpp"
#include "artifacts/csv.hpp"
#include "artifacts/host_samples.hpp"
#include "artifacts/row_issues.hpp"

namespace cpupower::artifacts {
namespace {

void count(CpuSamplesCheck& out, std::string_view code, std::size_t line, std::string first) {
  for (auto& i : out.issues) {
    if (i.code == code) {
      ++i.count;
      return;
    }
  }
  out.issues.push_back({std::string(code), 1, line, std::move(first)});
}

std::string join(std::span<const std::string_view> cells) {
  std::string out;
  for (std::size_t i = 0; i < cells.size(); ++i) {
    if (i) out += ',';
    out += cells[i];
  }
  return out;
}

std::string sensor_kind(std::string_view sensor) {
  std::string out;
  for (const char c : sensor) {
    if (c < '0' || c > '9') out += c;
  }
  return out;
}

bool non_negative_integer(std::string_view cell, long long* out) {
  const auto v = cell.find_first_not_of("0123456789") == std::string_view::npos ? parse_int(cell)
                                                                                : std::nullopt;
  if (v) *out = *v;
  return v.has_value();
}

}  // namespace

std::string CpuSeriesKey::label() const {
  std::string out = "cpu/" + hostname + "/socket" + std::to_string(socket_id);
  if (!sensor.empty()) out += "/" + sensor;
  return out;
}

int cpu_samples_version(const CpuSamplesCheck& check) {
  return check.exporter_version != 0 ? check.exporter_version : check.host_version;
}

CpuSamplesCheck check_cpu_samples(const std::string& path) {
  CpuSamplesCheck out;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return out;
  out.found = true;
  auto opened = CsvFileReader::open(path);
  if (!opened) {
    out.header_problem = opened.error();
    return out;
  }
  CsvFileReader reader = std::move(*opened);
  std::vector<CsvDamage> damage;
  CsvRecord rec;
  if (!reader.next(rec, damage)) {
    out.header_problem = reader.error().empty() ? "the file is empty" : reader.error();
    return out;
  }
  if (const auto problem = csv_header_problem(rec.cells, rec.line, damage); !problem.empty()) {
    out.header_problem = problem;
    return out;
  }
  out.header = join(rec.cells);
  out.exporter_version = header_version(kCpuColumns, out.header);
  out.host_version = header_version(kHostColumns, out.header);
  const int version = cpu_samples_version(out);
  if (version == 0) return out;
  out.wide = out.exporter_version >= 2 || out.host_version >= 4;

  const std::vector<std::string> header(rec.cells.begin(), rec.cells.end());
  const std::size_t cells = header.size();
  const auto col = [&](std::string_view name) { return *column_index(header, name); };
  const std::size_t c_version = col("schema_version"), c_time = col("timestamp_unix"),
                    c_host = col("hostname"), c_source = col("source"), c_sensor = col("sensor"),
                    c_socket = col("socket_id"), c_power = col("power_w");
  const std::string version_text = std::to_string(version);

  // Per row only look-ups with a reused key buffer: no allocation once every series and
  // sensor has been seen, and 16 bytes kept per row (a large run has millions).
  struct Series {
    CpuSeriesKey key;
    std::vector<std::pair<double, std::size_t>> rows;  // (time, line) in file order
  };
  std::vector<Series> series;
  std::unordered_map<std::string, std::size_t> series_index;  // host \x1f socket \x1f sensor
  struct Kind {
    std::string host, kind;
    std::vector<std::pair<std::string, std::size_t>> sources;  // (source, first line)
  };
  std::vector<Kind> kinds;
  std::unordered_map<std::string, std::size_t> kind_index;    // host \x1f kind
  std::unordered_map<std::string, std::size_t> sensor_kinds;  // host \x1f sensor -> kinds[]
  std::string buf;
  damage.clear();
  while (true) {
    const bool more = reader.next(rec, damage);
    for (const auto& d : damage) {
      ++out.rows;
      count(out, cpu_reason::kMalformed, d.line, d.what);
    }
    damage.clear();
    if (!more) break;
    ++out.rows;
    const std::size_t line = rec.line;
    if (const auto why = record_damage(rec, cells)) {
      count(out, cpu_reason::kMalformed, line, *why);
      continue;
    }
    const auto& c = rec.cells;
    double t = 0;
    long long socket = 0;
    if (!parse_double(c[c_time], &t) || !std::isfinite(t)) {
      count(out, cpu_reason::kMalformed, line,
            describe_bad_cell("timestamp_unix", c[c_time], "a finite number"));
      continue;
    }
    if (c[c_host].empty()) {
      count(out, cpu_reason::kMalformed, line, "hostname is blank");
      continue;
    }
    if (!non_negative_integer(c[c_socket], &socket)) {
      count(out, cpu_reason::kMalformed, line,
            describe_bad_cell("socket_id", c[c_socket], "an integer >= 0"));
      continue;
    }
    if (c[c_version] != version_text) {
      count(out, cpu_reason::kSchemaVersionMismatch, line,
            "schema_version '" + std::string(c[c_version]) + "' in a file whose header is v" +
                version_text);
      continue;
    }
    double w = 0;
    if (!parse_double(c[c_power], &w) || !std::isfinite(w) || w < 0) {
      count(out, cpu_reason::kInvalidPowerValue, line,
            describe_bad_cell("power_w", c[c_power], "a finite number >= 0"));
      continue;
    }
    char socket_text[24];
    const auto socket_end =
        std::to_chars(socket_text, socket_text + sizeof socket_text, socket).ptr;
    buf.assign(c[c_host]);
    buf += '\x1f';
    buf.append(socket_text, socket_end);
    buf += '\x1f';
    if (!out.wide) buf += c[c_sensor];
    auto found = series_index.find(buf);
    if (found == series_index.end()) {
      found = series_index.emplace(buf, series.size()).first;
      series.push_back(
          {{std::string(c[c_host]), socket, out.wide ? std::string() : std::string(c[c_sensor])},
           {}});
    }
    series[found->second].rows.emplace_back(t, line);
    buf.assign(c[c_host]);
    buf += '\x1f';
    buf += c[c_sensor];
    auto sk = sensor_kinds.find(buf);
    if (sk == sensor_kinds.end()) {
      const std::string kind = sensor_kind(c[c_sensor]);
      const std::string kind_key = std::string(c[c_host]) + '\x1f' + kind;
      auto k = kind_index.find(kind_key);
      if (k == kind_index.end()) {
        k = kind_index.emplace(kind_key, kinds.size()).first;
        kinds.push_back({std::string(c[c_host]), kind, {}});
      }
      sk = sensor_kinds.emplace(buf, k->second).first;
    }
    auto& seen = kinds[sk->second].sources;
    bool known = false;
    for (const auto& src : seen) known = known || src.first == c[c_source];
    if (!known) seen.emplace_back(std::string(c[c_source]), line);
    ++out.rows_kept;
  }
  if (!reader.error().empty()) {
    count(out, cpu_reason::kMalformed, 0, reader.error());
  }
  for (const auto& k : kinds) {
    if (k.sources.size() < 2) continue;
    std::string listed;
    for (const auto& [source, line] : k.sources) {
      if (!listed.empty()) listed += ", ";
      listed += "'" + source + "' (line " + std::to_string(line) + ")";
    }
    count(out, cpu_reason::kSourceConflict, k.sources[1].second,
          "host " + k.host + ", sensor kind '" + k.kind + "' has sources " + listed);
  }
  // A second row of a series at a time it has: the later one in the file is the duplicate.
  std::size_t duplicates = 0, first_line = 0;
  std::string first;
  for (auto& s : series) {
    std::stable_sort(s.rows.begin(), s.rows.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<double> times;
    times.reserve(s.rows.size());
    for (std::size_t i = 0; i < s.rows.size(); ++i) {
      if (i > 0 && s.rows[i].first == s.rows[i - 1].first) {
        const std::size_t line = std::max(s.rows[i].second, s.rows[i - 1].second);
        ++duplicates;
        if (first_line == 0 || line < first_line) {
          first_line = line;
          first = s.key.label() + " has a row at " + format_double(s.rows[i].first) + " already";
        }
        continue;
      }
      times.push_back(s.rows[i].first);
    }
    auto& socks = out.sockets[s.key.hostname];
    if (std::find(socks.begin(), socks.end(), s.key.socket_id) == socks.end()) {
      socks.insert(std::upper_bound(socks.begin(), socks.end(), s.key.socket_id), s.key.socket_id);
    }
    out.series.emplace(std::move(s.key), std::move(times));
  }
  if (duplicates > 0) {
    out.issues.push_back(
        {std::string(cpu_reason::kDuplicateTimestamp), duplicates, first_line, std::move(first)});
    out.rows_kept -= duplicates;
  }
  return out;
}

}  // namespace cpupower::artifacts
