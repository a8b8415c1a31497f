#include "artifacts/csv_stream.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <deque>
#include <limits>
#include <memory>
#include <thread>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace cpupower::artifacts {
namespace {

bool is_blank(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

std::string_view trim_blanks(std::string_view s) {
  while (!s.empty() && is_blank(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_blank(s.back())) s.remove_suffix(1);
  return s;
}

// The first ',', '\n' or '"' in [p, end), or end. Eight bytes at a time (SWAR): a byte
// equal to c is found as a zero byte of x ^ c; the lowest flagged byte is always exact.
// Reads only inside [p, end).
inline const char* find_special(const char* p, const char* end) {
  static_assert(std::endian::native == std::endian::little, "byte order of the SWAR scan");
  constexpr std::uint64_t kOnes = 0x0101010101010101ULL;
  constexpr std::uint64_t kHigh = 0x8080808080808080ULL;
  const auto zero_bytes = [](std::uint64_t x) { return (x - kOnes) & ~x & kHigh; };
  while (p + 8 <= end) {
    std::uint64_t w;
    std::memcpy(&w, p, 8);
    const std::uint64_t hit = zero_bytes(w ^ (kOnes * ',')) | zero_bytes(w ^ (kOnes * '\n')) |
                              zero_bytes(w ^ (kOnes * '"'));
    if (hit != 0) return p + (__builtin_ctzll(hit) >> 3);
    p += 8;
  }
  while (p < end && *p != ',' && *p != '\n' && *p != '"') ++p;
  return p;
}

// Splits one record starting at `p`. Returns the start of the next record, or nullptr when
// the record is not complete before `end` and more input may follow (`eof` false). `quote`
// is set when the record used quoting; with `allow_quotes` false such a record is not
// split (the caller rescans serially).
class RecordSplitter {
 public:
  const char* split(const char* p, const char* end, bool eof, bool allow_quotes, bool* quote) {
    return split_with<detail::kVectorSplit>(p, end, eof, allow_quotes, quote);
  }

  // kVector: the SSE2 scan first (where the build has SSE2), then the portable SWAR scan for
  // the rest of the record; without it the portable scan alone (aarch64, and tests on x86).
  template <bool kVector>
  const char* split_with(const char* p, const char* end, bool eof, bool allow_quotes, bool* quote) {
    cells_.clear();
    pool_used_ = 0;
    const char* cell = p;
    const char* scan = p;
#if defined(__SSE2__)
    if constexpr (kVector) {
      // Sixteen bytes at a time: one mask of every separator, line end and quote in them.
      const __m128i comma = _mm_set1_epi8(',');
      const __m128i newline = _mm_set1_epi8('\n');
      const __m128i dquote = _mm_set1_epi8('"');
      for (; end - scan >= 16; scan += 16) {
        const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(scan));
        auto mask = static_cast<unsigned>(_mm_movemask_epi8(
            _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, comma), _mm_cmpeq_epi8(v, newline)),
                         _mm_cmpeq_epi8(v, dquote))));
        while (mask != 0) {
          const char* q = scan + __builtin_ctz(mask);
          mask &= mask - 1;
          if (*q == ',') {
            push(cell, q, false);
            cell = q + 1;
            continue;
          }
          if (*q == '\n') {
            push(cell, q, true);
            return q + 1;
          }
          *quote = true;
          if (!allow_quotes) return end;
          return split_quoted(p, end, eof);
        }
      }
    }
#endif
    while (true) {
      const char* q = find_special(scan, end);
      if (q < end && *q == '"') {
        *quote = true;
        if (!allow_quotes) return end;
        return split_quoted(p, end, eof);
      }
      if (q == end) {
        if (!eof) return nullptr;
        push(cell, q, true);
        return end;
      }
      if (*q == '\n') {
        push(cell, q, true);
        return q + 1;
      }
      push(cell, q, false);
      cell = scan = q + 1;
    }
  }

  std::span<const std::string_view> cells() const {
    return cells_;
  }

 private:
  [[gnu::always_inline]] void push(const char* b, const char* e, bool last) {
    if (last && e > b && e[-1] == '\r') --e;
    cells_.emplace_back(b, static_cast<std::size_t>(e - b));
  }

  std::string& next_pooled() {
    if (pool_used_ == pool_.size()) pool_.emplace_back();
    std::string& s = pool_[pool_used_++];
    s.clear();
    return s;
  }

  // The general path: a cell that starts with a quote runs to the matching quote ("" is a
  // literal quote, line breaks included); text after it up to the separator is kept, as the
  // csv module does. Cells are copied into pooled strings.
  const char* split_quoted(const char* p, const char* end, bool eof) {
    cells_.clear();
    pool_used_ = 0;
    while (true) {
      std::string& out = next_pooled();
      const char* q = p;
      if (q < end && *q == '"') {
        ++q;
        while (true) {
          if (q == end) return eof ? finish_torn(out) : nullptr;
          if (*q == '"') {
            if (q + 1 == end && !eof) return nullptr;
            if (q + 1 < end && q[1] == '"') {
              out += '"';
              q += 2;
              continue;
            }
            ++q;
            break;
          }
          out += *q++;
        }
      }
      while (q < end && *q != ',' && *q != '\n') out += *q++;
      if (q == end && !eof) return nullptr;
      const bool last = q == end || *q == '\n';
      if (last && !out.empty() && out.back() == '\r') out.pop_back();
      cells_.emplace_back(out);
      if (q == end) return end;
      if (last) return q + 1;
      p = q + 1;
    }
  }

  const char* finish_torn(std::string& out) {
    cells_.emplace_back(out);  // an unterminated quote at end of file: keep what is there
    return nullptr;
  }

  std::vector<std::string_view> cells_;
  // A deque: cells_ holds views into these strings, and growing a vector would move them
  // (a short string's characters live inside the string object) while the views remain.
  std::deque<std::string> pool_;
  std::size_t pool_used_ = 0;
};

bool record_is_blank(std::span<const std::string_view> cells) {
  return cells.size() == 1 && cells[0].empty();
}

struct ChunkJob {
  int fd = -1;
  std::uint64_t begin = 0;  // first byte the chunk may start a record at
  std::uint64_t end = 0;    // records starting at or after this belong to the next chunk
  std::uint64_t file_size = 0;
  bool allow_quotes = true;
  bool skip_partial_line = false;  // begin is not known to be a line start
  std::size_t index = 0;           // what on_record is told: the chunk, or in block mode the slot
  std::atomic<bool>* quote_seen = nullptr;
  const std::function<void(std::size_t, const CsvRecord&)>* on_record = nullptr;
  std::string error;
};

constexpr std::size_t kBufferBytes = 4u << 20;

// A read buffer whose new bytes are left for pread to write: zero-filling 4 MiB first would
// touch every page twice (and a small file needs far less).
class ReadBuffer {
 public:
  char* data() { return bytes_.get(); }
  std::size_t size() const { return size_; }
  // At least `n` bytes, the first `keep` of them kept.
  void grow(std::size_t n, std::size_t keep) {
    if (n <= size_) return;
    std::unique_ptr<char[]> next(new char[n]);
    if (keep > 0) std::memcpy(next.get(), bytes_.get(), keep);
    bytes_ = std::move(next);
    size_ = n;
  }

 private:
  std::unique_ptr<char[]> bytes_;
  std::size_t size_ = 0;
};

// Reads [begin, ...) with pread into `buf` and hands out complete records until one starts
// at `end`.
void run_chunk(ChunkJob& job, ReadBuffer& buf) {
  // Room for the whole chunk (and the record that runs past its end) up to 4 MiB.
  const std::uint64_t span = job.end - std::min(job.end, job.begin) + (64u << 10);
  buf.grow(static_cast<std::size_t>(std::min<std::uint64_t>(kBufferBytes, span)), 0);
  std::size_t have = 0;            // bytes valid in buf
  std::size_t pos = 0;             // next unread byte in buf
  std::uint64_t base = job.begin;  // file offset of buf[0]
  bool eof = false;
  auto refill = [&]() -> bool {
    if (pos > 0) {
      std::memmove(buf.data(), buf.data() + pos, have - pos);
      base += pos;
      have -= pos;
      pos = 0;
    }
    if (have == buf.size()) buf.grow(buf.size() * 2, have);
    const ssize_t n =
        ::pread(job.fd, buf.data() + have, buf.size() - have, static_cast<off_t>(base + have));
    if (n < 0) {
      job.error = std::strerror(errno);
      return false;
    }
    if (n == 0) eof = true;
    have += static_cast<std::size_t>(n);
    return true;
  };
  if (job.skip_partial_line) {
    // The previous byte decides: a record starts here only right after a line break.
    base = job.begin - 1;
    while (true) {
      if (!refill()) return;
      const void* nl = std::memchr(buf.data() + pos, '\n', have - pos);
      if (nl != nullptr) {
        pos = static_cast<std::size_t>(static_cast<const char*>(nl) - buf.data()) + 1;
        break;
      }
      pos = have;
      if (eof) return;
    }
  }
  RecordSplitter splitter;
  CsvRecord record;
  while (true) {
    if (base + pos >= job.end || base + pos >= job.file_size) return;
    const char* start = buf.data() + pos;
    bool quote = false;
    const char* next = splitter.split(start, buf.data() + have, eof, job.allow_quotes, &quote);
    if (quote && !job.allow_quotes) {
      job.quote_seen->store(true);
      return;
    }
    if (next == nullptr) {
      if (eof) return;  // torn quoted record at end of file: dropped
      if (!refill()) return;
      continue;
    }
    pos = static_cast<std::size_t>(next - buf.data());
    if (!record_is_blank(splitter.cells())) {
      record.cells = splitter.cells();
      (*job.on_record)(job.index, record);
    }
    if (!job.allow_quotes && job.quote_seen->load(std::memory_order_relaxed)) return;
  }
}

std::vector<std::string> to_strings(std::span<const std::string_view> cells) {
  return {cells.begin(), cells.end()};
}

// Reads the header record from the start of the file; returns the offset after it.
std::optional<std::uint64_t> read_header(int fd, std::vector<std::string>* header,
                                         std::string* error) {
  std::string text;
  std::vector<char> buf(64 * 1024);
  std::uint64_t off = 0;
  RecordSplitter splitter;
  while (true) {
    const ssize_t n = ::pread(fd, buf.data(), buf.size(), static_cast<off_t>(off));
    if (n < 0) {
      *error = std::strerror(errno);
      return std::nullopt;
    }
    text.append(buf.data(), static_cast<std::size_t>(n));
    off += static_cast<std::uint64_t>(n);
    const bool eof = n == 0;
    bool quote = false;
    const char* next = splitter.split(text.data(), text.data() + text.size(), eof, true, &quote);
    if (next != nullptr) {
      // An empty file (or a blank first line) has no header at all.
      *header = record_is_blank(splitter.cells()) ? std::vector<std::string>{}
                                                  : to_strings(splitter.cells());
      return static_cast<std::uint64_t>(next - text.data());
    }
    if (eof) {
      *header = {};
      return text.size();
    }
  }
}

}  // namespace

namespace detail {

std::vector<std::vector<std::string>> split_records(std::string_view text, bool vector_path) {
  std::vector<std::vector<std::string>> out;
  RecordSplitter splitter;
  const char* p = text.data();
  const char* const end = p + text.size();
  while (p < end) {
    bool quote = false;
    const char* next = vector_path ? splitter.split_with<true>(p, end, true, true, &quote)
                                   : splitter.split_with<false>(p, end, true, true, &quote);
    out.push_back(to_strings(splitter.cells()));
    if (next == nullptr) break;
    p = next;
  }
  return out;
}

}  // namespace detail

CsvScanResult scan_csv_file(const std::string& path, const CsvScanOptions& options,
                            const std::function<bool(const std::vector<std::string>&)>& on_header,
                            const std::function<void(std::size_t, const CsvRecord&)>& on_record,
                            const std::function<void()>& on_reset) {
  CsvScanResult result;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    result.missing = errno == ENOENT;
    result.error = path + ": " + std::strerror(errno);
    return result;
  }
  struct stat st {};
  ::fstat(fd, &st);
  const auto file_size = static_cast<std::uint64_t>(st.st_size);
  const auto body = read_header(fd, &result.header, &result.error);
  if (!body) {
    result.error = path + ": " + result.error;
    ::close(fd);
    return result;
  }
  if (result.header.empty() || !on_header(result.header)) {
    ::close(fd);
    result.ok = true;
    return result;
  }
  const std::uint64_t body_bytes = file_size - *body;
  std::size_t n = 1;
  if (options.threads > 1 && options.min_chunk_bytes > 0) {
    n = std::min<std::uint64_t>(options.threads, body_bytes / options.min_chunk_bytes + 1);
  }
  std::atomic<bool> quote_seen{false};
  auto make_jobs = [&](std::size_t count, bool allow_quotes) {
    std::vector<ChunkJob> jobs(count);
    for (std::size_t k = 0; k < count; ++k) {
      ChunkJob& j = jobs[k];
      j.fd = fd;
      j.begin = *body + body_bytes * k / count;
      j.end = k + 1 == count ? file_size : *body + body_bytes * (k + 1) / count;
      j.file_size = file_size;
      j.allow_quotes = allow_quotes;
      j.skip_partial_line = k > 0;
      j.index = k;
      j.quote_seen = &quote_seen;
      j.on_record = &on_record;
    }
    return jobs;
  };
  const bool blocks = n > 1 && options.block_bytes > 0 && options.on_block;
  if (blocks) n = std::max<std::uint64_t>(n, body_bytes / options.block_bytes + 1);
  std::vector<ChunkJob> jobs = make_jobs(n, n == 1);
  if (blocks) {
    // Every thread takes the next block until none is left (or a quote stops the scan).
    std::atomic<std::size_t> next{0};
    const auto worker = [&](std::size_t slot) {
      ReadBuffer buf;
      for (std::size_t k = next++; k < jobs.size(); k = next++) {
        jobs[k].index = slot;
        if (!quote_seen.load()) run_chunk(jobs[k], buf);
        options.on_block(slot, k);
      }
    };
    std::vector<std::thread> threads;
    for (std::size_t slot = 1; slot < options.threads; ++slot) threads.emplace_back(worker, slot);
    worker(0);
    for (auto& t : threads) t.join();
  } else {
    std::vector<std::thread> threads;
    std::vector<ReadBuffer> bufs(jobs.size());
    for (std::size_t k = 1; k < jobs.size(); ++k)
      threads.emplace_back(run_chunk, std::ref(jobs[k]), std::ref(bufs[k]));
    run_chunk(jobs[0], bufs[0]);
    for (auto& t : threads) t.join();
  }
  if (quote_seen.load()) {
    on_reset();
    quote_seen.store(false);
    jobs = make_jobs(1, true);
    ReadBuffer buf;
    run_chunk(jobs[0], buf);
    if (blocks) options.on_block(0, 0);
  }
  ::close(fd);
  for (const auto& j : jobs) {
    if (!j.error.empty()) {
      result.error = path + ": " + j.error;
      return result;
    }
  }
  result.chunks = jobs.size();
  result.ok = true;
  return result;
}

CsvScanResult scan_csv_text(std::string_view text,
                            const std::function<bool(const std::vector<std::string>&)>& on_header,
                            const std::function<void(std::size_t, const CsvRecord&)>& on_record) {
  CsvScanResult result;
  RecordSplitter splitter;
  const char* p = text.data();
  const char* end = text.data() + text.size();
  bool quote = false;
  const char* next = splitter.split(p, end, true, true, &quote);
  result.ok = true;
  if (next == nullptr && splitter.cells().empty()) return result;
  result.header = to_strings(splitter.cells());
  if (!on_header(result.header)) return result;
  result.chunks = 1;
  p = next == nullptr ? end : next;
  CsvRecord record;
  while (p < end) {
    next = splitter.split(p, end, true, true, &quote);
    if (!record_is_blank(splitter.cells())) {
      record.cells = splitter.cells();
      on_record(0, record);
    }
    if (next == nullptr) break;
    p = next;
  }
  return result;
}

namespace {

// Python float() semantics for anything the fast path does not take: blanks around the
// number, exponents, inf, nan, and decimals too long for one exact operation.
std::optional<double> parse_slow(std::string_view s) {
  s = trim_blanks(s);
  if (s.empty()) return std::nullopt;
  double v = 0;
  if (detail::fast_decimal(s, &v) == detail::Decimal::exact) return v;
  bool negative = false;
  if (s.front() == '+' || s.front() == '-') {
    negative = s.front() == '-';
    s.remove_prefix(1);
    if (s.empty() || s.front() == '+' || s.front() == '-') return std::nullopt;
  }
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (end != s.data() + s.size()) return std::nullopt;
  if (ec == std::errc::result_out_of_range) {
    // Python rounds overflow to inf and underflow to 0; from_chars reports both as errors.
    const std::size_t e = s.find_first_of("eE");
    const bool huge = e != std::string_view::npos && e + 1 < s.size() && s[e + 1] != '-';
    v = huge ? std::numeric_limits<double>::infinity() : 0.0;
  } else if (ec != std::errc()) {
    return std::nullopt;
  }
  return negative ? -v : v;
}

}  // namespace

bool parse_number_slow(std::string_view cell, double* out) {
  double v = 0;
  if (detail::fast_decimal(cell, &v) == detail::Decimal::long_plain) {
    const auto [end, ec] = std::from_chars(cell.data(), cell.data() + cell.size(), v);
    if (ec == std::errc() && end == cell.data() + cell.size()) {
      *out = v;
      return true;
    }
  }
  const auto slow = parse_slow(cell);
  if (slow) *out = *slow;
  return slow.has_value();
}

std::optional<double> parse_cell_double(std::string_view cell) {
  double v = 0;
  if (!parse_number(cell, &v)) return std::nullopt;
  return v;
}

std::optional<long long> parse_cell_int(std::string_view cell) {
  std::string_view s = trim_blanks(cell);
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  long long v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

std::optional<std::size_t> column_index(const std::vector<std::string>& header,
                                        std::string_view name) {
  for (std::size_t i = 0; i < header.size(); ++i) {
    if (header[i] == name) return i;
  }
  return std::nullopt;
}

std::string describe_bad_cell(std::string_view column, std::string_view cell,
                              std::string_view wanted) {
  if (cell.find_first_not_of(" \t\r") == std::string_view::npos) {
    return std::string(column) + " is blank";
  }
  constexpr std::size_t kShown = 40;
  std::string out = std::string(column) + " '" + std::string(cell.substr(0, kShown));
  return out + (cell.size() > kShown ? "...'" : "'") + " is not " + std::string(wanted);
}

}  // namespace cpupower::artifacts
