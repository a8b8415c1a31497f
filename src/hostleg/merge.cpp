#include "hostleg/merge.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <tuple>

#include "artifacts/csv.hpp"
#include "artifacts/host_samples.hpp"
#include "artifacts/row_issues.hpp"
#include "common/log.hpp"
#include "common/result.hpp"
#include "common/text.hpp"
#include "hostleg/manifest.hpp"
#include "hostleg/markers.hpp"
#include "rails/rails.hpp"

namespace cpupower::hostleg {
namespace {

namespace fs = std::filesystem;
using artifacts::HostSampleRow;
namespace col = artifacts::host_column;

// The rows of one (timestamp_unix, hostname, socket_id) in a long file.
struct Group {
  std::optional<HostSampleRow> side, dcgm;     // primary candidates: the ACPI total wins
  std::array<std::optional<double>, 5> rails;  // by rails::Kind: cpu_rail, soc, dram, module
  std::optional<double> total;
  std::array<std::optional<double>, artifacts::kUtils> util;
};

// Human messages naming file:line and what was wrong; the first kMaxProblems only.
void add_problem(MergeOutcome& out, std::string message) {
  if (out.problems.size() < MergeOutcome::kMaxProblems) out.problems.push_back(std::move(message));
}

std::string join(const std::vector<std::string>& items, std::string_view sep) {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += sep;
    out += items[i];
  }
  return out;
}

struct FileTally {
  std::uint64_t torn = 0, dropped = 0, unknown_sensors = 0;
};

// Reads one node file into v5 rows by the report's row rules (artifacts/row_issues.hpp), so
// that the merged file reads as the node files do: rows the report skips are skipped and
// counted, readings it reads as missing are empty cells. The file as a whole is refused only
// when its header is none of the host versions.
class NodeFileReader {
 public:
  NodeFileReader(std::string name, MergeOutcome& out, std::vector<HostSampleRow>& rows)
      : name_(std::move(name)), out_(out), rows_(rows) {}

  void read(const std::string& path) {
    const auto text = common::read_small_file(path, SIZE_MAX);  // no cap: a long run's rows
    if (!text) {
      malformed_file(name_ + ": cannot read: " + text.error());
      return;
    }
    if (text->empty()) {
      // The collector died before its header: no rows, and nothing wrong with the bytes.
      add_problem(out_, name_ + ": empty file (no header)");
      return;
    }
    // Collectors flush every row, so a SIGKILL can leave the last line cut short: its last
    // cell may be a prefix of the real value ("94.2" of "94.29"), so it is not trusted.
    std::size_t body_end = text->size();
    std::string torn_message;  // reported after the rows before it, in line order
    const char last = text->back();
    if (last != '\n' && last != '\r') {
      const auto nl = text->find_last_of("\r\n");
      body_end = nl == std::string::npos ? 0 : nl + 1;
      ++tally_.torn;
      if (body_end == 0) {
        add_problem(out_, name_ + ":1: header line torn (writer stopped mid-line)");
        return;
      }
      torn_message = name_ + ":" + std::to_string(line_at(*text, body_end)) +
                     ": torn last line dropped (writer stopped mid-row)";
    }
    artifacts::CsvTextReader reader(std::string_view(*text).substr(0, body_end), true);
    artifacts::CsvRecord record;
    std::vector<artifacts::CsvDamage> damage;
    bool header = true;
    while (reader.next(record, damage)) {
      if (header) {
        header = false;
        if (!on_header(std::vector<std::string>(record.cells.begin(), record.cells.end()))) break;
      } else {
        on_record(record);
      }
    }
    issues_.add_damage(damage);
    for (auto& w : issues_.warnings(name_, rows_read_)) add_problem(out_, std::move(w));
    if (!torn_message.empty()) add_problem(out_, torn_message);
    flush_groups();
    out_.malformed_rows += issues_.skipped_rows();
    out_.torn_rows += tally_.torn;
    out_.dropped_groups += tally_.dropped;
    if (tally_.unknown_sensors > 0) {
      add_problem(out_, name_ + ": " + std::to_string(tally_.unknown_sensors) +
                            " rows of unrecognised sensors ignored");
    }
  }

  // The file as a whole was refused (unreadable, or a header of no host version).
  bool bad_file() const { return bad_file_; }
  const FileTally& tally() const { return tally_; }

 private:
  static std::size_t line_at(std::string_view text, std::size_t offset) {
    return 1 + static_cast<std::size_t>(std::count(text.begin(), text.begin() + offset, '\n'));
  }

  bool on_header(const std::vector<std::string>& header) {
    if (artifacts::host_schema_version(header) == 0) {
      std::string shown = join(header, ",");
      if (shown.size() > 80) shown = shown.substr(0, 80) + "...";
      malformed_file(name_ + ":1: header is none of host schema v1..v" +
                     std::to_string(artifacts::kHostSchemaVersion) + ": '" + shown + "'");
      return false;
    }
    columns_ = artifacts::CpuCsvColumns::from_header(header);
    width_ = header.size();
    return true;
  }

  void on_record(const artifacts::CsvRecord& r) {
    ++rows_read_;
    if (!artifacts::whole_record(r, width_, issues_)) return;
    const auto cell = [&](std::size_t column) { return columns_.cell(r.cells, column); };
    HostSampleRow row;
    if (!artifacts::read_time(cell(col::kTimestampUnix), r.line, issues_, &row.timestamp_unix) ||
        !artifacts::read_hostname(cell(col::kHostname), r.line, issues_) ||
        !artifacts::read_socket_id(cell(col::kSocketId), r.line, issues_, &row.socket_id)) {
      return;
    }
    // Every reading in the report's order: one above its physical bound skips the row.
    for (const auto& w : artifacts::kHostWatts) {
      double v = 0;
      if (!artifacts::read_watts(cell(w.column), artifacts::kHostColumns[w.column], r.line, issues_,
                                 &v)) {
        return;
      }
      w.put(row, v);
    }
    row.hostname = cell(col::kHostname);
    row.timestamp_local = cell(col::kTimestampLocal);
    row.source = cell(col::kSource);
    row.sensor = cell(col::kSensor);
    for (std::size_t k = 0; k < artifacts::kUtils; ++k) {
      const auto u = artifacts::parse_double(cell(col::kUtil + k));
      if (u && std::isfinite(*u)) row.cpu_util[k] = u;
    }
    if (columns_.wide) {
      rows_.push_back(std::move(row));
      return;
    }
    add_long(std::move(row));
  }

  void add_long(HostSampleRow row) {
    const auto named =
        row.sensor.starts_with("CPU") ? rails::parse_sensor_name(row.sensor) : std::nullopt;
    if (!named) {
      ++tally_.unknown_sensors;
      return;
    }
    auto key = std::make_tuple(row.timestamp_unix, row.hostname, row.socket_id);
    auto [it, inserted] = group_index_.try_emplace(std::move(key), groups_.size());
    if (inserted) groups_.emplace_back();
    Group& g = groups_[it->second];
    const auto take = [](std::optional<double>& slot, const std::optional<double>& v) {
      if (!slot && v) slot = v;
    };
    take(g.total, row.total_power_w);
    for (std::size_t i = 0; i < g.util.size(); ++i) take(g.util[i], row.cpu_util[i]);
    if (std::isnan(row.power_w)) return;  // the report too takes only its total and utilization
    if (named->dcgm || named->kind == rails::Kind::total) {
      auto& primary = named->dcgm ? g.dcgm : g.side;
      if (!primary) primary = std::move(row);
    } else {
      take(g.rails[static_cast<std::size_t>(named->kind)], row.power_w);
    }
  }

  void flush_groups() {
    for (auto& g : groups_) {
      std::optional<HostSampleRow>& primary = g.side ? g.side : g.dcgm;
      if (!primary) {
        ++tally_.dropped;
        continue;
      }
      // DCGM field 1130 is the CPU rail itself, so it fills both columns, as v4+ writers do.
      // Read before the primary's row is moved from: it may be the DCGM row.
      std::optional<double> dcgm_rail;
      if (g.dcgm && g.dcgm->source == "dcgm") dcgm_rail = g.dcgm->power_w;
      HostSampleRow row = std::move(*primary);
      const auto rail = [&](rails::Kind k) { return g.rails[static_cast<std::size_t>(k)]; };
      row.cpu_rail_w = rail(rails::Kind::cpu_rail) ? rail(rails::Kind::cpu_rail) : dcgm_rail;
      row.soc_w = rail(rails::Kind::soc);
      row.dram_w = rail(rails::Kind::dram);
      row.module_w = rail(rails::Kind::module);
      if (!row.total_power_w) row.total_power_w = g.total;
      for (std::size_t i = 0; i < row.cpu_util.size(); ++i) {
        if (!row.cpu_util[i]) row.cpu_util[i] = g.util[i];
      }
      rows_.push_back(std::move(row));
    }
    groups_.clear();
    group_index_.clear();
  }

  void malformed_file(const std::string& message) {
    bad_file_ = true;
    add_problem(out_, message);
  }

  std::string name_;
  MergeOutcome& out_;
  std::vector<HostSampleRow>& rows_;
  artifacts::CpuCsvColumns columns_;
  std::size_t width_ = 0;
  std::size_t rows_read_ = 0;  // records after the header
  artifacts::RowIssues issues_;
  std::vector<Group> groups_;
  std::map<std::tuple<double, std::string, std::uint32_t>, std::size_t> group_index_;
  FileTally tally_;
  bool bad_file_ = false;
};

// Regular files in `dir` whose names end in `suffix` (hidden ones and the atomic writers'
// temporary files excluded), sorted by name.
std::vector<std::string> files_ending(const std::string& dir, std::string_view suffix) {
  std::vector<std::string> names;
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  if (ec) return names;
  for (const fs::directory_iterator end; it != end; it.increment(ec)) {
    if (ec) break;
    const std::string name = it->path().filename().string();
    if (name.size() <= suffix.size() || name.front() == '.') continue;
    if (name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) continue;
    std::error_code type_ec;
    if (!it->is_regular_file(type_ec)) continue;
    names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string stem(const std::string& name, std::string_view suffix) {
  return name.substr(0, name.size() - suffix.size());
}

nlohmann::ordered_json read_metadata(const std::string& path, const std::string& name,
                                     MergeOutcome& out, std::uint64_t& bad) {
  using Json = nlohmann::ordered_json;
  const auto text = common::read_small_file(path, 16u << 20);
  std::string error;
  if (!text) {
    error = name + ": cannot be read: " + text.error();
  } else {
    try {
      Json doc = Json::parse(*text);
      if (doc.is_object()) return doc;
      error = name + ": malformed JSON: not an object";
    } catch (const std::exception& e) {
      error = name + ": malformed JSON: " + e.what();
    }
  }
  ++bad;
  add_problem(out, error);
  return Json{{"error", error}};
}

void add_reason(std::vector<std::string>& reasons, std::string_view code) {
  if (code.empty()) return;
  if (std::find(reasons.begin(), reasons.end(), code) == reasons.end()) {
    reasons.emplace_back(code);
  }
}

double now_unix() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

MergeOutcome merge(const MergeSettings& settings) {
  MergeOutcome out;
  auto log = common::logger("cpu_power::merge");
  const fs::path cpu_dir(settings.cpu_dir);
  const std::string nodes_dir = (cpu_dir / kNodesDir).string();
  const std::string nodes_prefix = std::string(kNodesDir) + "/";

  std::vector<HostSampleRow> rows;
  std::uint64_t unknown_sensor_rows = 0;
  for (const auto& name : files_ending(nodes_dir, ".csv")) {
    NodeFileReader reader(nodes_prefix + name, out, rows);
    reader.read((fs::path(nodes_dir) / name).string());
    unknown_sensor_rows += reader.tally().unknown_sensors;
    if (reader.bad_file()) out.malformed_files.push_back(nodes_prefix + name);
  }
  std::stable_sort(rows.begin(), rows.end(), [](const HostSampleRow& a, const HostSampleRow& b) {
    return std::tie(a.timestamp_unix, a.hostname, a.sensor) <
           std::tie(b.timestamp_unix, b.hostname, b.sensor);
  });

  std::set<std::string> observed;
  for (const auto& r : rows) observed.insert(r.hostname);
  out.observed_nodes.assign(observed.begin(), observed.end());
  std::set<std::string> expected_seen;
  std::vector<std::string> expected;
  for (const auto& n : settings.expected_nodes) {
    if (!n.empty() && expected_seen.insert(n).second) expected.push_back(n);
  }
  for (const auto& n : expected) {
    if (!observed.count(n)) out.missing_nodes.push_back(n);
  }
  out.sample_row_count = rows.size();

  std::string body(artifacts::kHostHeader);
  body += "\r\n";
  body.reserve(body.size() + rows.size() * 160);
  for (const auto& r : rows) body += artifacts::format_host_row(r);
  const std::string samples_path = (cpu_dir / kSamplesFilename).string();
  if (const auto written = common::write_file_atomic(samples_path, body, true); !written) {
    out.error = written.error();
  }

  HostManifest manifest;
  std::uint64_t bad_metadata = 0;
  for (const auto& name : files_ending(nodes_dir, kMetadataSuffix)) {
    manifest.node_metadata[stem(name, kMetadataSuffix)] = read_metadata(
        (fs::path(nodes_dir) / name).string(), nodes_prefix + name, out, bad_metadata);
  }
  manifest.ready_errors = scan_markers((cpu_dir / kReadyDir).string()).errors;

  if (settings.interrupted) add_reason(out.reason_codes, kReasonInterrupted);
  for (const auto& r : settings.readiness_reasons) add_reason(out.reason_codes, r);
  if (out.malformed_rows > 0 || !out.malformed_files.empty()) {
    add_reason(out.reason_codes, kReasonMalformed);
  }
  if (!out.missing_nodes.empty()) add_reason(out.reason_codes, kReasonNodeMissing);
  if (rows.empty()) add_reason(out.reason_codes, kReasonEmpty);
  if (!settings.failed_processes.empty()) add_reason(out.reason_codes, kReasonCollectorFailed);
  if (!out.error.empty()) add_reason(out.reason_codes, kReasonWriteFailed);
  out.publication_valid = out.reason_codes.empty();
  out.status = std::string(out.publication_valid ? kStatusComplete : kStatusIncomplete);
  out.exit_nonzero = settings.required && !out.publication_valid;

  manifest.job_id = settings.job_id;
  manifest.run_name = settings.run_name;
  manifest.status = out.status;
  manifest.required = settings.required;
  manifest.requested_source = settings.requested_source;
  manifest.sample_interval_seconds = settings.sample_interval_seconds;
  manifest.expected_nodes = expected;
  manifest.observed_nodes = out.observed_nodes;
  manifest.missing_nodes = out.missing_nodes;
  manifest.sample_row_count = out.sample_row_count;
  manifest.reason_codes = out.reason_codes;
  manifest.failed_processes = settings.failed_processes;
  manifest.producer_git_commit = settings.producer_git_commit;
  manifest.updated_at_unix = now_unix();
  manifest.malformed_rows = out.malformed_rows;
  manifest.torn_rows = out.torn_rows;
  manifest.dropped_groups = out.dropped_groups;
  manifest.malformed_files = out.malformed_files;
  manifest.problems = out.problems;
  if (const auto written = write_host_manifest((cpu_dir / kManifestFilename).string(), manifest);
      !written) {
    // The verdict on disk is lost, so the caller's must say so.
    out.error += (out.error.empty() ? "" : "; ") + written.error();
    add_reason(out.reason_codes, kReasonWriteFailed);
    out.publication_valid = false;
    out.status = std::string(kStatusIncomplete);
    out.exit_nonzero = settings.required;
  }

  if (out.malformed_rows > 0) {
    log->warn("skipped malformed rows count={}", out.malformed_rows);
  }
  if (!out.malformed_files.empty()) {
    log->warn("skipped unreadable files or files with an unknown header count={} files={}",
              out.malformed_files.size(), common::quoted(join(out.malformed_files, ",")));
  }
  if (out.torn_rows > 0) log->warn("dropped torn last lines count={}", out.torn_rows);
  if (out.dropped_groups > 0) {
    log->warn("dropped sockets without a primary reading count={}", out.dropped_groups);
  }
  if (unknown_sensor_rows > 0) {
    log->warn("ignored rows of unrecognised sensors count={}", unknown_sensor_rows);
  }
  if (bad_metadata > 0) log->warn("malformed node metadata count={}", bad_metadata);
  if (!out.missing_nodes.empty()) {
    log->warn("nodes without samples count={} nodes={}", out.missing_nodes.size(),
              join(out.missing_nodes, ","));
  }
  if (!manifest.ready_errors.empty()) {
    log->warn("nodes with error markers count={}", manifest.ready_errors.size());
  }
  if (!out.error.empty()) log->error("writing outputs failed error={}", common::quoted(out.error));
  log->info("{}", summary_line(out));
  return out;
}

}  // namespace

bool is_merge_reason(std::string_view code) {
  for (const auto known : {kReasonInterrupted, kReasonMalformed, kReasonNodeMissing, kReasonEmpty,
                           kReasonCollectorFailed, kReasonWriteFailed}) {
    if (code == known) return true;
  }
  return false;
}

MergeOutcome merge_host_samples(const MergeSettings& settings) {
  try {
    return merge(settings);
  } catch (const std::exception& e) {
    // Only resource exhaustion gets here; the run must still learn it has no telemetry.
    MergeOutcome out;
    out.error = std::string("merge failed: ") + e.what();
    out.reason_codes = {std::string(kReasonWriteFailed)};
    out.status = std::string(kStatusIncomplete);
    out.exit_nonzero = settings.required;
    return out;
  }
}

std::vector<std::string> hosts_with_files(const std::string& cpu_dir) {
  const std::string nodes_dir = (fs::path(cpu_dir) / kNodesDir).string();
  std::set<std::string> hosts;
  for (const auto& name : files_ending(nodes_dir, kMetadataSuffix)) {
    hosts.insert(stem(name, kMetadataSuffix));
  }
  for (const auto& name : files_ending(nodes_dir, ".csv")) hosts.insert(stem(name, ".csv"));
  return {hosts.begin(), hosts.end()};
}

std::string summary_line(const MergeOutcome& outcome) {
  return "CPU power telemetry: status=" + outcome.status +
         " publication_valid=" + (outcome.publication_valid ? "true" : "false") +
         " reasons=" + (outcome.reason_codes.empty() ? "none" : join(outcome.reason_codes, ","));
}

}  // namespace cpupower::hostleg
