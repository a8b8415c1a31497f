#include "artifacts/gpu_samples_check.hpp"

#include <fcntl.h>
#include <nettle/sha2.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <map>

#include "artifacts/csv.hpp"
#include "artifacts/gpu_reasons.hpp"
#include "artifacts/layout.hpp"
#include "common/text.hpp"

namespace cpupower::artifacts {
namespace {

namespace reason = gpu_reason;

constexpr std::size_t kMaxProblems = 20;
constexpr std::size_t kDigestBlockBytes = 1u << 20;

// Column positions, the same in every version (later versions only append).
constexpr std::size_t kTimestampUnix = column_of(kGpuColumns, "timestamp_unix");
constexpr std::size_t kScrapeSeq = column_of(kGpuColumns, "scrape_seq");
constexpr std::size_t kHostname = column_of(kGpuColumns, "hostname");
constexpr std::size_t kGpuIndex = column_of(kGpuColumns, "gpu_index");
constexpr std::size_t kGpuUuid = column_of(kGpuColumns, "gpu_uuid");

// The digest as 64 lowercase hex digits.
std::string digest_hex(sha256_ctx& ctx) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::uint8_t digest[SHA256_DIGEST_SIZE];
  sha256_digest(&ctx, sizeof digest, digest);
  std::string out;
  for (const std::uint8_t b : digest) (out += kDigits[b >> 4]) += kDigits[b & 0xf];
  return out;
}

// The version whose header `cells` are, among those accepted; 0 when none.
int accepted_version(std::span<const std::string_view> cells, std::optional<int> expected) {
  std::string line;
  for (std::size_t i = 0; i < cells.size(); ++i) line.append(i ? "," : "").append(cells[i]);
  const int v = header_version(kGpuColumns, line);
  if (v == 0 || cells.size() != csv_width(kGpuColumns, v)) return 0;
  return !expected || v == *expected ? v : 0;
}

// One well-formed row, before duplicates and ordering are looked at.
struct ParsedRow {
  std::uint64_t scrape_seq = 0;
  long long gpu_index = 0;
  double timestamp_unix = 0;
  std::string_view hostname;
  std::string_view gpu_uuid;
};

// Why the row breaks a cell rule (the first, in column order), or empty when it does not.
std::string row_problem(std::span<const std::string_view> c, int version, ParsedRow* out) {
  const std::size_t width = csv_width(kGpuColumns, version);
  if (c.size() != width) {
    return std::to_string(c.size()) + " cells, the header has " + std::to_string(width);
  }
  for (std::size_t i = 0; i < width; ++i) {
    if (auto why = cell_problem(kGpuColumns[i], c[i], version)) return std::move(*why);
    if (i == kGpuUuid && (!common::valid_utf8(c[kHostname]) || !common::valid_utf8(c[kGpuUuid]))) {
      return "invalid UTF-8";
    }
  }
  *out = {static_cast<std::uint64_t>(*parse_int(c[kScrapeSeq])), *parse_int(c[kGpuIndex]),
          *parse_double(c[kTimestampUnix]), c[kHostname], c[kGpuUuid]};
  return {};
}

// Every kept row of one device, in file order until finish().
class DeviceRows {
 public:
  void add(const ParsedRow& r) {
    auto it = std::find(uuids_.begin(), uuids_.end(), r.gpu_uuid);
    if (it == uuids_.end()) it = uuids_.insert(uuids_.end(), std::string(r.gpu_uuid));
    rows_.push_back(
        {r.scrape_seq, r.timestamp_unix, static_cast<std::size_t>(it - uuids_.begin())});
  }

  // Sorts by scrape_seq, keeping the first of each scrape_seq in file order; returns how
  // many later ones were dropped.
  std::size_t drop_duplicates() {
    std::stable_sort(rows_.begin(), rows_.end(),
                     [](const Row& a, const Row& b) { return a.scrape_seq < b.scrape_seq; });
    const auto end = std::unique(rows_.begin(), rows_.end(), [](const Row& a, const Row& b) {
      return a.scrape_seq == b.scrape_seq;
    });
    const auto dropped = static_cast<std::size_t>(rows_.end() - end);
    rows_.erase(end, rows_.end());
    return dropped;
  }

  // After drop_duplicates: a later scrape with an earlier time.
  bool non_monotonic() const {
    for (std::size_t i = 1; i < rows_.size(); ++i) {
      if (rows_[i].timestamp_unix < rows_[i - 1].timestamp_unix) return true;
    }
    return false;
  }

  std::size_t size() const { return rows_.size(); }
  std::uint64_t max_scrape_seq() const { return rows_.back().scrape_seq; }

  // After drop_duplicates: UUIDs in scrape_seq order of first appearance, times sorted.
  GpuObservedDevice observed(std::string_view hostname, long long gpu_index) const {
    GpuObservedDevice d;
    d.hostname = hostname;
    d.gpu_index = gpu_index;
    d.sample_times_unix.reserve(rows_.size());
    for (const Row& r : rows_) {
      if (std::find(d.gpu_uuids.begin(), d.gpu_uuids.end(), uuids_[r.uuid]) == d.gpu_uuids.end()) {
        d.gpu_uuids.push_back(uuids_[r.uuid]);
      }
      d.sample_times_unix.push_back(r.timestamp_unix);
    }
    std::sort(d.sample_times_unix.begin(), d.sample_times_unix.end());
    d.first_sample_time_unix = d.sample_times_unix.front();
    d.last_sample_time_unix = d.sample_times_unix.back();
    return d;
  }

 private:
  struct Row {
    std::uint64_t scrape_seq;
    double timestamp_unix;
    std::size_t uuid;  // index into uuids_
  };
  std::vector<Row> rows_;
  std::vector<std::string> uuids_;  // distinct, in file order
};

class StrictReader {
 public:
  StrictReader(GpuSamplesCheck& out, std::optional<int> expected)
      : out_(out), expected_(expected) {}

  void read(CsvFileReader& reader) {
    CsvRecord r;
    std::vector<CsvDamage> damage;
    bool first = true;
    while (reader.next(r, damage)) {
      const bool damaged = damage.size() > damage_seen_;
      if (first) {
        first = false;
        if (!header(r, damaged)) return;
      } else {
        if (damaged)
          damaged_lines(damage);
        else if (r.line != lines_read_ + 1)
          malformed(lines_read_ + 1, "a blank line");
        row(r);
      }
      lines_read_ = reader.lines();
    }
    if (first) {
      out_.reason_codes.add(reason::kSamplesCsvHeaderMismatch);
      return problem(1, "no header line");
    }
    if (damage.size() > damage_seen_)
      damaged_lines(damage);
    else if (reader.lines() > lines_read_)
      malformed(lines_read_ + 1, "a blank line");
    finish();
  }

 private:
  bool header(const CsvRecord& r, bool damaged) {
    out_.schema_version = damaged || r.line != 1 ? 0 : accepted_version(r.cells, expected_);
    if (out_.schema_version == 0) {
      out_.reason_codes.add(reason::kSamplesCsvHeaderMismatch);
      problem(r.line, "the header is not the samples.csv header of " +
                          (expected_ ? "schema v" + std::to_string(*expected_) : "v1, v2 or v3"));
      return false;
    }
    return true;
  }

  void row(const CsvRecord& r) {
    if (!r.terminated) return malformed(r.line, "no line end (a torn last line)");
    ParsedRow parsed;
    const std::string why = row_problem(r.cells, out_.schema_version, &parsed);
    if (!why.empty()) return malformed(r.line, why);
    auto host = devices_.find(parsed.hostname);
    if (host == devices_.end()) host = devices_.emplace(std::string(parsed.hostname), Gpus{}).first;
    host->second[parsed.gpu_index].add(parsed);
  }

  void finish() {
    bool non_monotonic = false;
    for (auto& [hostname, gpus] : devices_) {
      for (auto& [gpu_index, rows] : gpus) {
        out_.duplicate_rows += rows.drop_duplicates();
        non_monotonic = non_monotonic || rows.non_monotonic();
        out_.row_count += rows.size();
        out_.max_scrape_seq = std::max(out_.max_scrape_seq.value_or(0), rows.max_scrape_seq());
        out_.devices.push_back(rows.observed(hostname, gpu_index));
      }
    }
    if (out_.duplicate_rows > 0) out_.reason_codes.add(reason::kDuplicateSampleRow);
    if (non_monotonic) out_.reason_codes.add(reason::kTimestampNonMonotonic);
  }

  void damaged_lines(const std::vector<CsvDamage>& damage) {
    for (; damage_seen_ < damage.size(); ++damage_seen_) {
      malformed(damage[damage_seen_].line, damage[damage_seen_].what);
    }
  }

  void malformed(std::size_t line, const std::string& what) {
    ++out_.malformed_rows;
    out_.reason_codes.add(reason::kSamplesCsvMalformed);
    problem(line, what);
  }

  void problem(std::size_t line, const std::string& what) {
    if (out_.problems.size() < kMaxProblems) {
      out_.problems.push_back("line " + std::to_string(line) + ": " + what);
    }
  }

  using Gpus = std::map<long long, DeviceRows>;
  GpuSamplesCheck& out_;
  std::optional<int> expected_;
  std::map<std::string, Gpus, std::less<>> devices_;  // by hostname, then gpu_index
  std::size_t lines_read_ = 0;
  std::size_t damage_seen_ = 0;
};

}  // namespace

std::string sha256_hex(std::string_view bytes) {
  sha256_ctx ctx;
  sha256_init(&ctx);
  sha256_update(&ctx, bytes.size(), reinterpret_cast<const std::uint8_t*>(bytes.data()));
  return digest_hex(ctx);
}

Result<std::string> sha256_file_hex(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Error{"open " + path + ": " + std::strerror(errno)};
  sha256_ctx ctx;
  sha256_init(&ctx);
  std::vector<std::uint8_t> buf(kDigestBlockBytes);
  while (true) {
    const ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const std::string error = "read " + path + ": " + std::strerror(errno);
      ::close(fd);
      return Error{error};
    }
    if (n == 0) break;
    sha256_update(&ctx, static_cast<std::size_t>(n), buf.data());
  }
  ::close(fd);
  return digest_hex(ctx);
}

GpuSamplesCheck check_gpu_samples(const std::string& path,
                                  std::optional<int> expected_schema_version) {
  GpuSamplesCheck out;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 && errno == ENOENT) {
    out.reason_codes.add(reason::kSamplesCsvMissing);
    return out;
  }
  auto digest = sha256_file_hex(path);
  if (digest) {
    out.sha256_hex = std::move(*digest);
  } else {
    out.reason_codes.add(reason::kSamplesDigestUnavailable);
  }
  if (!S_ISREG(st.st_mode)) {
    out.reason_codes.add(reason::kSamplesCsvMissing);
    return out;
  }
  auto reader = CsvFileReader::open(path);
  if (!reader) {
    out.reason_codes.add(reason::kSamplesCsvMalformed);
    out.problems.push_back(reader.error());
    return out;
  }
  StrictReader(out, expected_schema_version).read(*reader);
  if (!reader->error().empty()) {
    out.reason_codes.add(reason::kSamplesCsvMalformed);
    out.problems.push_back(reader->error());
  }
  return out;
}

}  // namespace cpupower::artifacts
