#include "report/phase_log.hpp"

#include <fmt/core.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <vector>

namespace cpupower::report {
namespace {

bool is_word(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         static_cast<unsigned char>(c) >= 0x80;
}
bool is_digit(char c) {
  return c >= '0' && c <= '9';
}
bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v';
}

// Matches `Phase \w+ \(<kind>\) (started|complete)` at `p`; returns the position after it.
std::optional<std::size_t> match_phase(std::string_view s, std::size_t p, std::string* kind,
                                       bool* started) {
  if (s.substr(p, 6) != "Phase ") return std::nullopt;
  std::size_t q = p + 6;
  const std::size_t word = q;
  while (q < s.size() && is_word(s[q])) ++q;
  if (q == word || s.substr(q, 2) != " (") return std::nullopt;
  const std::size_t open = q + 2;
  const std::size_t close = s.find(") ", open);
  if (close == std::string_view::npos) return std::nullopt;
  *kind = std::string(s.substr(open, close - open));
  q = close + 2;
  if (s.substr(q, 7) == "started") {
    *started = true;
    return q + 7;
  }
  if (s.substr(q, 8) == "complete") {
    *started = false;
    return q + 8;
  }
  return std::nullopt;
}

bool is_stamp(std::string_view s) {
  if (s.size() != 12) return false;
  for (std::size_t i = 0; i < 12; ++i) {
    const bool ok = (i == 2 || i == 5) ? s[i] == ':' : i == 8 ? s[i] == '.' : is_digit(s[i]);
    if (!ok) return false;
  }
  return true;
}

double time_of_day_s(std::string_view stamp) {
  const auto num = [&](std::size_t at, std::size_t n) {
    return std::strtod(std::string(stamp.substr(at, n)).c_str(), nullptr);
  };
  return num(0, 2) * 3600 + num(3, 2) * 60 + num(6, 6);
}

template <typename F>
void for_each_line(const std::string& path, F&& f) {
  std::ifstream in(path, std::ios::binary);
  std::string line;
  while (std::getline(in, line)) f(std::string_view(line));
}

}  // namespace

bool has_aiperf_marker(std::string_view line) {
  for (std::size_t p = line.find("Phase "); p != std::string_view::npos;
       p = line.find("Phase ", p + 1)) {
    std::string kind;
    bool started = false;
    if (match_phase(line, p, &kind, &started) && kind == "profiling") return true;
  }
  return false;
}

bool has_sa_bench_marker(std::string_view line) {
  return line.find("Serving Benchmark Result") != std::string_view::npos ||
         line.find("Successful requests:") != std::string_view::npos;
}

std::optional<PhaseLine> parse_phase_line(std::string_view line) {
  if (!line.empty() && line.back() == '\n') line.remove_suffix(1);
  if (line.size() < 13 || !is_stamp(line.substr(0, 12))) return std::nullopt;
  if (line.substr(12, 7) != " NOTICE") return std::nullopt;
  std::size_t p = 19;
  if (p >= line.size() || !(is_space(line[p]) || line[p] == '\n')) return std::nullopt;
  while (p < line.size() && is_space(line[p])) ++p;
  PhaseLine out;
  const auto end = match_phase(line, p, &out.kind, &out.started);
  if (!end || (*end < line.size() && is_word(line[*end]))) return std::nullopt;  // \b
  out.stamp = std::string(line.substr(0, 12));
  out.rest = std::string(line.substr(*end));
  return out;
}

double stamp_difference_s(std::string_view from, std::string_view to) {
  double d = time_of_day_s(to) - time_of_day_s(from);
  if (d < 0) d += 86400;
  return d;
}

std::optional<double> elapsed_seconds(std::string_view rest) {
  for (std::size_t p = rest.find("elapsed="); p != std::string_view::npos;
       p = rest.find("elapsed=", p + 1)) {
    std::size_t q = p + 8;
    const std::size_t digits = q;
    while (q < rest.size() && is_digit(rest[q])) ++q;
    if (q == digits) continue;
    if (q + 1 < rest.size() && rest[q] == '.' && is_digit(rest[q + 1])) {
      ++q;
      while (q < rest.size() && is_digit(rest[q])) ++q;
    }
    if (q < rest.size() && rest[q] == 's') {
      // Digits beyond a double's range (a damaged log) are no duration: infinity would be
      // printed as one.
      const double s = std::strtod(std::string(rest.substr(digits, q - digits)).c_str(), nullptr);
      if (std::isfinite(s)) return s;
      continue;
    }
  }
  return std::nullopt;
}

ReportedTiming phase_log_timing(const std::string& benchmark_out) {
  std::vector<std::string> started;
  std::vector<PhaseLine> completed;
  for_each_line(benchmark_out, [&](std::string_view line) {
    auto phase = parse_phase_line(line);
    if (!phase || phase->kind != "profiling") return;
    if (phase->started) {
      started.push_back(phase->stamp);
    } else {
      completed.push_back(*phase);
    }
  });
  ReportedTiming r;
  if (started.empty() || completed.empty()) return r;
  if (started.size() != 1 || completed.size() != 1) {
    const std::string base = benchmark_out.substr(benchmark_out.find_last_of('/') + 1);
    r.note = fmt::format("{} profiling phases in {}; cannot pair them to one concurrency",
                         std::max(started.size(), completed.size()), base);
    return r;
  }
  r.source = "aiperf-phase-log";
  const auto elapsed = elapsed_seconds(completed[0].rest);
  r.duration_seconds = elapsed ? *elapsed : stamp_difference_s(started[0], completed[0].stamp);
  r.note = fmt::format("phase started {}, complete {} (time-of-day only)", started[0],
                       completed[0].stamp);
  return r;
}

std::optional<std::pair<double, double>> warmup_span_from_log(const std::string& benchmark_out,
                                                              std::string_view start_hms,
                                                              double start_unix) {
  // A plain flag, not std::optional<double>: GCC 12 misreads the latter as uninitialised.
  bool have_elapsed = false;
  double warmup_elapsed = 0;
  std::optional<std::string> warmup_started;
  std::optional<std::pair<double, double>> span;
  for_each_line(benchmark_out, [&](std::string_view line) {
    const auto phase = parse_phase_line(line);
    if (!phase) return;
    if (phase->kind == "warmup") {
      if (phase->started) {
        warmup_started = phase->stamp;
        return;
      }
      const auto elapsed = elapsed_seconds(phase->rest);
      if (elapsed) {
        warmup_elapsed = *elapsed;
        have_elapsed = true;
      } else if (warmup_started) {
        warmup_elapsed = stamp_difference_s(*warmup_started, phase->stamp);
        have_elapsed = true;
      }
      return;
    }
    if (phase->kind != "profiling" || !phase->started) return;
    if (phase->stamp.substr(0, 8) == start_hms && have_elapsed) {
      span = std::pair(start_unix - warmup_elapsed, start_unix);
    }
    have_elapsed = false;
  });
  return span;
}

}  // namespace cpupower::report
