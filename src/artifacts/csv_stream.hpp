#pragma once
// A tolerant, fast CSV record stream for the large sample files the energy report reads (a
// run's samples.csv can hold tens of millions of rows). It follows Python's csv module in the
// default dialect, which wrote these files: comma separator, double-quote quoting with ""
// as an escaped quote, CR LF or LF line ends, fully blank lines skipped. The file is read
// with pread into small buffers, never mapped, so resident memory stays far below the file
// size; large files are cut into chunks at line starts and scanned on several threads.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace cpupower::artifacts {

struct CsvRecord {
  std::span<const std::string_view> cells;  // valid only during the callback
};

struct CsvScanOptions {
  unsigned threads = 1;  // chunks scanned at once; 1 reads the file in order on this thread
  std::size_t min_chunk_bytes = 8u << 20;  // smaller files are never split
  // Block mode (block_bytes > 0, more than one thread, a file above min_chunk_bytes): the
  // file is cut into blocks of about this size instead of one chunk per thread, and each
  // thread takes the next block in file order. on_record's first argument is then the
  // thread's slot (0 to threads - 1), and `on_block(slot, block)` runs on that thread after
  // the block's last record: for every block a thread took, also one without records or
  // cut short by an error or a quote, so a caller can join the blocks in file order (block k
  // may wait in on_block until blocks 0..k-1 are joined). After on_reset the file is scanned
  // once more as block 0 on slot 0.
  std::size_t block_bytes = 0;
  std::function<void(std::size_t, std::size_t)> on_block;
};

struct CsvScanResult {
  bool ok = false;
  bool missing = false;  // the file does not exist
  std::string error;     // what went wrong, with the path
  std::vector<std::string> header;
  std::size_t chunks = 0;  // how many chunk indexes the record callback saw
};

// Reads the header line, calls `on_header` (returning false stops the scan with ok=true and
// no records), then calls `on_record(chunk, record)` for every data record. Records of one
// chunk arrive in file order on one thread; chunk k lies before chunk k+1 in the file, so a
// caller that keeps one state per chunk and concatenates them in chunk order sees the file
// order. `on_reset` is called when a parallel scan met a quote character (a quoted cell may
// hide a line break, so chunk edges are not trustworthy) and the file is scanned again as
// one chunk: the caller drops whatever it collected.
CsvScanResult scan_csv_file(const std::string& path, const CsvScanOptions& options,
                            const std::function<bool(const std::vector<std::string>&)>& on_header,
                            const std::function<void(std::size_t, const CsvRecord&)>& on_record,
                            const std::function<void()>& on_reset);

// The same over text in memory, always as one chunk (tests, small files).
CsvScanResult scan_csv_text(std::string_view text,
                            const std::function<bool(const std::vector<std::string>&)>& on_header,
                            const std::function<void(std::size_t, const CsvRecord&)>& on_record);

namespace detail {

inline constexpr double kExactPow10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                         1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                         1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

enum class Decimal { exact, long_plain, other };

// Clinger's fast path: a mantissa up to 2^53 and a power of ten up to 22 are both exact
// doubles, so one IEEE division rounds correctly. `long_plain` is a plain decimal with too
// many digits for that (time.time() stamps have 17): std::from_chars takes it, correctly
// rounded. `other` is anything else (blanks, exponents, inf, nan, garbage).
inline constexpr std::uint64_t kPow10U64[] = {1ULL,
                                              10ULL,
                                              100ULL,
                                              1000ULL,
                                              10000ULL,
                                              100000ULL,
                                              1000000ULL,
                                              10000000ULL,
                                              100000000ULL,
                                              1000000000ULL,
                                              10000000000ULL,
                                              100000000000ULL,
                                              1000000000000ULL,
                                              10000000000000ULL,
                                              100000000000000ULL,
                                              1000000000000000ULL,
                                              10000000000000000ULL,
                                              100000000000000000ULL,
                                              1000000000000000000ULL,
                                              10000000000000000000ULL};

// The digits of a plain decimal ([+-]digits[.digits], at least one digit, nothing else):
// its value is mantissa / 10^frac with the sign apart. The mantissa is exact up to 19 digits.
struct PlainDecimal {
  std::uint64_t mantissa = 0;
  int frac = 0;
  bool negative = false;
  bool plus = false;  // a leading '+'
};
enum class Plain { ok, too_long, other };

inline Plain scan_plain_decimal(std::string_view s, PlainDecimal* d) {
  const char* p = s.data();
  const char* const end = p + s.size();
  d->negative = p < end && *p == '-';
  d->plus = p < end && *p == '+';
  if (d->negative || d->plus) ++p;
  // The integer and fraction digits accumulate separately (two short dependency chains
  // instead of one long one) and are joined at the end. Up to 19 digits in all cannot
  // overflow; longer numbers (leading zeros included) go the long way.
  const char* const int_start = p;
  std::uint64_t int_part = 0;
  while (p < end && static_cast<unsigned>(*p - '0') < 10) {
    int_part = int_part * 10 + static_cast<unsigned>(*p - '0');
    ++p;
  }
  const auto int_digits = p - int_start;
  std::ptrdiff_t frac_digits = 0;
  std::uint64_t frac_part = 0;
  if (p < end && *p == '.') {
    const char* const frac_start = ++p;
    while (p < end && static_cast<unsigned>(*p - '0') < 10) {
      frac_part = frac_part * 10 + static_cast<unsigned>(*p - '0');
      ++p;
    }
    frac_digits = p - frac_start;
  }
  if (p != end || int_digits + frac_digits == 0) return Plain::other;
  if (int_digits + frac_digits > 19) return Plain::too_long;
  d->mantissa = int_part * kPow10U64[frac_digits] + frac_part;
  d->frac = static_cast<int>(frac_digits);
  return Plain::ok;
}

// Whether this build has the x87 extended-precision path below (x86 only: long double is a
// 128-bit software type on aarch64 and a plain double elsewhere).
#if (defined(__x86_64__) || defined(__i386__)) && __LDBL_MANT_DIG__ == 64
inline constexpr bool kExtendedPrecisionPath = true;
#else
inline constexpr bool kExtendedPrecisionPath = false;
#endif

// kExtended selects the x87 path for mantissas above 2^53; without it they go the long way.
// Both give the same doubles (the correctly rounded ones); tests run both where both exist.
template <bool kExtended>
inline Decimal fast_decimal_with(std::string_view s, double* out) {
  PlainDecimal d;
  const Plain plain = scan_plain_decimal(s, &d);
  if (plain == Plain::other) return Decimal::other;
  // from_chars, the long way, takes no '+'.
  const Decimal long_way = d.plus ? Decimal::other : Decimal::long_plain;
  if (plain == Plain::too_long) return long_way;
  if (d.mantissa > (std::uint64_t{1} << 53)) {
#if (defined(__x86_64__) || defined(__i386__)) && __LDBL_MANT_DIG__ == 64
    if constexpr (kExtended) {
      // x87 extended precision holds every 19-digit mantissa and power of ten up to 10^19
      // exactly, so the quotient is correctly rounded to 64 bits. Rounding that to 53 bits
      // gives the correctly rounded double unless the quotient sits exactly halfway between
      // two doubles (its 11 dropped bits are 100 0000 0000), where the exact value may lie
      // on either side: only those go the long way.
      const long double q =
          static_cast<long double>(d.mantissa) / static_cast<long double>(kPow10U64[d.frac]);
      std::uint64_t significand = 0;
      std::memcpy(&significand, &q, sizeof significand);
      if ((significand & 0x7FF) != 0x400) {
        const auto v = static_cast<double>(q);
        *out = d.negative ? -v : v;
        return Decimal::exact;
      }
    }
#endif
    return long_way;
  }
  const double v = static_cast<double>(d.mantissa) / kExactPow10[d.frac];
  *out = d.negative ? -v : v;
  return Decimal::exact;
}

// The fast path this build uses.
inline Decimal fast_decimal(std::string_view s, double* out) {
  return fast_decimal_with<kExtendedPrecisionPath>(s, out);
}

// Splits `text` into records with the SSE2 scan (where the build has it) or the portable
// one, the same way scan_csv_text does, blank records included: for tests that hold both
// paths to the same answer. `vector_path` is ignored where there is no SSE2.
std::vector<std::vector<std::string>> split_records(std::string_view text, bool vector_path);

// Whether this build has a vector (SSE2) record scan beside the portable one.
#if defined(__SSE2__)
inline constexpr bool kVectorSplit = true;
#else
inline constexpr bool kVectorSplit = false;
#endif

}  // namespace detail

// Everything parse_number's inline fast path leaves (see below).
bool parse_number_slow(std::string_view cell, double* out);

// Python float() for one cell: surrounding blanks allowed, decimal or exponent notation,
// inf and nan. False (and `out` untouched) for an empty or unparsable cell. Correctly
// rounded. The plain decimals the collectors write are parsed inline; this is the loaders'
// per-cell hot path, so it returns a flag rather than an optional.
inline bool parse_number(std::string_view cell, double* out) {
  if (cell.empty()) return false;
  if (detail::fast_decimal(cell, out) == detail::Decimal::exact) return true;
  return parse_number_slow(cell, out);
}

// The same as an optional.
std::optional<double> parse_cell_double(std::string_view cell);

// Python int() for one cell (surrounding blanks allowed). nullopt when not an integer.
std::optional<long long> parse_cell_int(std::string_view cell);

// Index of `name` in `header`, or nullopt.
std::optional<std::size_t> column_index(const std::vector<std::string>& header,
                                        std::string_view name);

// Why a row was dropped, for a warning: "timestamp_unix is blank" or "timestamp_unix 'abc' is
// not <wanted>" (a long cell is cut to its first 40 characters).
std::string describe_bad_cell(std::string_view column, std::string_view cell,
                              std::string_view wanted = "a number");

}  // namespace cpupower::artifacts
