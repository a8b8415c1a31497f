// aiperf windows: from the per-record export (profile_export.jsonl) when it exists, else
// from the aggregate (profile_export_aiperf.json) alone.

#include <fmt/ranges.h>

#include <simdjson.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <vector>

#include "report/discovery.hpp"
#include "report/iso_time.hpp"
#include "report/json_value.hpp"
#include "report/phase_log.hpp"
#include "report/window.hpp"

namespace cpupower::report {
namespace {

namespace fs = std::filesystem;

struct RecordSpan {
  long long min_start_ns = std::numeric_limits<long long>::max();
  long long max_end_ns = std::numeric_limits<long long>::min();
  std::size_t profiling = 0;
  std::optional<long long> warmup_start_ns, warmup_end_ns;
};

// One line of the export, for saying where in it something is wrong.
struct Line {
  std::string_view text;
  std::size_t number = 0;

  // "<line>:<column>" of a value inside the line.
  std::string at(simdjson::ondemand::value& value) const {
    const std::string_view raw = value.raw_json_token();
    const auto column = raw.data() >= text.data() && raw.data() <= text.data() + text.size()
                            ? static_cast<std::size_t>(raw.data() - text.data()) + 1
                            : 1;
    return fmt::format("{}:{}", number, column);
  }
  Error malformed(simdjson::error_code code) const {
    return Error{fmt::format("{}: malformed JSON ({})", number, simdjson::error_message(code))};
  }
};

// A number simdjson could not read as a double: beyond a double's range (which simdjson, like
// nlohmann, refuses), or not a JSON number at all.
Error bad_number(simdjson::ondemand::value& value, const Line& line) {
  std::string_view token = value.raw_json_token();
  token = token.substr(0, token.find_last_not_of(" \t\r\n") + 1);  // npos + 1 is 0
  double parsed = 0;
  const auto [end, ec] = std::from_chars(token.data(), token.data() + token.size(), parsed);
  const std::string shown =
      token.size() <= 32 ? std::string(token)
                         : fmt::format("{}... ({} characters)", token.substr(0, 24), token.size());
  if (ec == std::errc::result_out_of_range && end == token.data() + token.size()) {
    return Error{fmt::format("{}: number out of a double's range: {}", line.at(value), shown)};
  }
  return Error{fmt::format("{}: malformed number: {}", line.at(value), shown)};
}

// Python's truth value of a JSON value: a record whose "error" is truthy is skipped, so the
// records counted are those upstream's report counts.
Result<bool> truthy(simdjson::ondemand::value value, const Line& line) {
  simdjson::ondemand::json_type type;
  if (const auto code = value.type().get(type)) return line.malformed(code);
  switch (type) {
    case simdjson::ondemand::json_type::null:
      return false;
    case simdjson::ondemand::json_type::boolean: {
      bool b = false;
      if (const auto code = value.get_bool().get(b)) return line.malformed(code);
      return b;
    }
    case simdjson::ondemand::json_type::number: {
      double d = 0;
      if (value.get_double().get(d)) return bad_number(value, line);
      return d != 0;
    }
    case simdjson::ondemand::json_type::string: {
      std::string_view s;
      if (const auto code = value.get_string().get(s)) return line.malformed(code);
      return !s.empty();
    }
    case simdjson::ondemand::json_type::array:
      for (auto element : value.get_array()) {
        if (element.error()) return line.malformed(element.error());
        return true;
      }
      return false;
    case simdjson::ondemand::json_type::object:
      for (auto field : value.get_object()) {
        if (field.error()) return line.malformed(field.error());
        return true;
      }
      return false;
  }
  return true;
}

// metadata.<key>: nullopt when absent or null; an error when it is anything but an integer
// that fits a long long (a float or a number past 2^63 would be rounded or wrapped into the
// window).
Result<std::optional<long long>> nanoseconds(simdjson::ondemand::object& meta, const char* key,
                                             const Line& line) {
  simdjson::ondemand::value value;
  const auto code = meta.find_field_unordered(key).get(value);
  if (code == simdjson::NO_SUCH_FIELD) return std::optional<long long>();
  if (code) return line.malformed(code);
  int64_t ns = 0;
  if (!value.get_int64().get(ns)) return std::optional<long long>(ns);
  bool null = false;
  if (!value.is_null().get(null) && null) return std::optional<long long>();
  double d = 0;
  simdjson::ondemand::json_type type;
  if (!value.type().get(type) && type == simdjson::ondemand::json_type::number &&
      value.get_double().get(d)) {
    return bad_number(value, line);
  }
  return Error{fmt::format("{}: metadata.{} is not an integer nanosecond time in range",
                           line.at(value), key)};
}

// One record: skipped when it has a truthy "error"; profiling records extend the span,
// warmup records the warmup span. An error says where the record cannot be read.
Status take_record(simdjson::ondemand::document& doc, const Line& line, RecordSpan& span) {
  simdjson::ondemand::object record;
  if (const auto code = doc.get_object().get(record)) {
    // Only a whole value of another kind is "not an object"; a truncated record, a byte
    // order mark or any other damage is malformed JSON, said as simdjson says it.
    simdjson::ondemand::json_type type;
    if (code == simdjson::INCORRECT_TYPE && !doc.type().get(type)) {
      return Error{fmt::format("{}: record is not a JSON object", line.number)};
    }
    return line.malformed(code);
  }
  simdjson::ondemand::value error;
  const auto code = record.find_field_unordered("error").get(error);
  if (code && code != simdjson::NO_SUCH_FIELD) return line.malformed(code);
  if (!code) {
    const auto failed = truthy(error, line);
    if (!failed) return Error{failed.error()};
    if (*failed) return Ok{};
  }
  simdjson::ondemand::object meta;
  if (record.find_field_unordered("metadata").get_object().get(meta)) {
    return Error{fmt::format("{}: record has no metadata object", line.number)};
  }
  std::string_view phase;
  if (meta.find_field_unordered("benchmark_phase").get_string().get(phase)) {
    return Error{fmt::format("{}: record has no metadata.benchmark_phase", line.number)};
  }
  const auto start = nanoseconds(meta, "request_start_ns", line);
  if (!start) return Error{start.error()};
  const auto end = nanoseconds(meta, "request_end_ns", line);
  if (!end) return Error{end.error()};
  if (phase == "profiling") {
    if (!*start || !*end) {
      return Error{
          fmt::format("{}: profiling record without request_start_ns/request_end_ns", line.number)};
    }
    span.min_start_ns = std::min(span.min_start_ns, **start);
    span.max_end_ns = std::max(span.max_end_ns, **end);
    ++span.profiling;
  } else if (phase == "warmup" && *start) {
    const long long first = **start;
    const long long last = (*end && **end != 0) ? **end : first;
    span.warmup_start_ns = std::min(span.warmup_start_ns.value_or(first), first);
    span.warmup_end_ns = std::max(span.warmup_end_ns.value_or(last), last);
  }
  return Ok{};
}

// Every record of the export. simdjson reads what the report uses - "error" and the
// metadata's phase and request times - and checks the rest of a record for structure only.
Result<RecordSpan> scan_records(const std::string& jsonl) {
  simdjson::padded_string text;
  if (simdjson::padded_string::load(jsonl).get(text)) return Error{jsonl + ": cannot be read"};
  RecordSpan span;
  simdjson::ondemand::parser parser;
  std::size_t line_no = 0;
  std::size_t pos = 0;
  const std::string_view all(text.data(), text.size());
  while (pos < all.size()) {
    std::size_t nl = all.find('\n', pos);
    if (nl == std::string_view::npos) nl = all.size();
    ++line_no;
    const Line line{all.substr(pos, nl - pos), line_no};
    const std::size_t begin = pos;
    pos = nl + 1;
    if (line.text.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    if (line.text.starts_with("\xEF\xBB\xBF")) {
      return Error{fmt::format("{}:{}: malformed JSON (a UTF-8 byte order mark before the record)",
                               jsonl, line_no)};
    }
    simdjson::ondemand::document doc;
    // The rest of the padded file lies behind the line, so simdjson may read past it.
    const std::size_t capacity = text.size() + simdjson::SIMDJSON_PADDING - begin;
    Status taken = Ok{};
    if (const auto code = parser.iterate(line.text.data(), line.text.size(), capacity).get(doc)) {
      taken = line.malformed(code);
    } else {
      taken = take_record(doc, line, span);
    }
    if (!taken) return Error{jsonl + ":" + taken.error()};
  }
  return span;
}

struct Aggregate {
  Json doc;
  ReportedTiming reported;
  std::optional<double> cut_s;  // benchmark_duration in seconds, when its unit is known
};

// How far an aggregate may be from the records beside it and still be the same run's
// (docs/formats.md): its start_time/end_time mark the profiling phase, which opens a moment
// before the first request and closes after the last reply is processed; its request_count
// can miss a few records still being processed when a run is cut short.
constexpr double kAggregateStampToleranceS = 5.0;
constexpr double kAggregateCountTolerance = 0.01;  // of the records' count, at least 1 request

// <key>.avg, or <key> itself when it is a plain number, as aiperf writes its metrics.
std::optional<double> metric(const Json& agg, const char* key) {
  const auto it = agg.find(key);
  if (it == agg.end()) return std::nullopt;
  return it->is_object() ? json_member_number(*it, "avg") : json_number(*it);
}

// A warning naming both files when the aggregate's run is not the records' run: its stamps
// more than kAggregateStampToleranceS from the first request and the last reply, or its
// request count further than kAggregateCountTolerance from the successful profiling records.
// Empty when they agree or the aggregate says nothing to compare.
std::string aggregate_mismatch(const Json& agg, const std::string& agg_path,
                               const ReportedTiming& reported, const RecordSpan& span,
                               const std::string& jsonl) {
  std::vector<std::string> parts;
  const double first_start = static_cast<double>(span.min_start_ns) / 1e9;
  const double last_end = static_cast<double>(span.max_end_ns) / 1e9;
  if (reported.start_unix &&
      std::abs(*reported.start_unix - first_start) > kAggregateStampToleranceS) {
    parts.push_back(fmt::format("start_time is {:.3f} s from the first request's start ({:.3f})",
                                *reported.start_unix - first_start, first_start));
  }
  if (reported.end_unix && std::abs(*reported.end_unix - last_end) > kAggregateStampToleranceS) {
    parts.push_back(fmt::format("end_time is {:.3f} s from the last reply ({:.3f})",
                                *reported.end_unix - last_end, last_end));
  }
  if (const auto count = metric(agg, "request_count")) {
    const double records = static_cast<double>(span.profiling);
    const double allowed = std::max(1.0, kAggregateCountTolerance * records);
    if (std::abs(*count - records) > allowed) {
      parts.push_back(
          fmt::format("request_count {} where the records hold {} successful profiling requests",
                      *count, span.profiling));
    }
  }
  if (parts.empty()) return "";
  return fmt::format(
      "{} does not match the records of {}: {} (tolerance {:g} s on the stamps, {:g} % of the "
      "records, at least 1, on the count); the window comes from the records, its tokens, TPOT "
      "and reported timing from the aggregate, which may be another run's",
      agg_path, jsonl, fmt::join(parts, "; "), kAggregateStampToleranceS,
      kAggregateCountTolerance * 100);
}

// The aggregate and aiperf's own account of the window in it, its naive stamps read in the
// run's recorded offset; an error for a stamp that is there but is no time.
Result<Aggregate> read_aggregate(const std::string& path) {
  auto doc = read_json_file(path);
  if (!doc) return Error{doc.error()};
  if (!doc->is_object()) return Error{path + ": not a JSON object"};
  const auto offset = recorded_utc_offset(fs::path(path).parent_path().string());
  if (!offset) return Error{offset.error()};
  Aggregate out{std::move(*doc), {}, std::nullopt};
  const Json& agg = out.doc;
  const std::optional<double> duration = metric(agg, "benchmark_duration");
  if (const auto bd = agg.find("benchmark_duration"); duration && bd->is_object()) {
    const Json unit = bd->value("unit", Json("sec"));
    const std::string u = unit.is_string() ? unit.get<std::string>() : "";
    if (u == "sec" || u == "s" || u == "seconds") out.cut_s = *duration;
    if (u == "ms") out.cut_s = *duration * 1e-3;
  }
  ReportedTiming& r = out.reported;
  const std::pair<const char*, std::optional<double>*> stamps[] = {{"start_time", &r.start_unix},
                                                                   {"end_time", &r.end_unix}};
  for (const auto& [key, slot] : stamps) {
    const auto it = agg.find(key);
    if (it == agg.end() || it->is_null()) continue;
    const std::string shown = it->dump(-1, ' ', false, Json::error_handler_t::replace);
    if (!it->is_string()) return Error{fmt::format("{}: {} {}: not a string", path, key, shown)};
    const auto unix = iso_to_unix(it->get_ref<const std::string&>(), *offset);
    if (!unix) return Error{fmt::format("{}: {} {}: {}", path, key, shown, unix.error())};
    *slot = *unix;
  }
  r.duration_seconds = duration;
  if (!r.start_unix && !r.end_unix && !r.duration_seconds) return out;
  r.source = "aiperf-json";
  r.note = *offset ? "start/end are aiperf's naive local ISO stamps converted in the run's "
                     "recorded timezone offset"
                   : "start/end are aiperf's naive local ISO stamps converted in this host's "
                     "timezone";
  return out;
}

void read_tpot(const Json& agg, Window& w) {
  const auto itl = agg.find("inter_token_latency");
  if (itl == agg.end() || !itl->is_object()) return;
  w.tpot_p50_ms = json_member_number(*itl, "p50");
  w.tpot_p90_ms = json_member_number(*itl, "p90");
}

// total_osl.avg / total_isl.avg; an error text when either is missing.
std::string read_tokens(const Json& agg, const std::string& path, Window& w) {
  for (const char* key : {"total_osl", "total_isl"}) {
    const auto it = agg.find(key);
    if (it == agg.end() || !it->is_object() || !it->contains("avg")) {
      return fmt::format("{}: missing required field '{}'", path, key);
    }
  }
  w.output_tokens_json = agg["total_osl"]["avg"];
  w.input_tokens_json = agg["total_isl"]["avg"];
  const auto output = json_token_count(w.output_tokens_json, path, "total_osl.avg");
  if (!output) return output.error();
  const auto input = json_token_count(w.input_tokens_json, path, "total_isl.avg");
  if (!input) return input.error();
  w.output_tokens = *output;
  w.input_tokens = *input;
  return "";
}

void set_window(Window& w, double start, double last_end, const std::optional<double>& cut_s) {
  w.start_unix = start;
  w.end_unix = last_end;
  // The window ends when the benchmark stops issuing requests (start + benchmark_duration),
  // not when the last reply drains; the drain is kept beside it.
  if (cut_s) w.end_unix = std::min(start + *cut_s, last_end);
  if (last_end > w.end_unix) w.drain_end_unix = last_end;
  w.start_json = w.start_unix;
  w.end_json = w.end_unix;
}

}  // namespace

Window load_aiperf_records_window(const std::string& jsonl, long long concurrency,
                                  const std::string& benchmark_out) {
  Window w("aiperf", jsonl, concurrency);
  const auto span = scan_records(jsonl);
  if (!span) return w.error = span.error(), w;
  if (span->profiling == 0) return w.error = jsonl + ": no successful profiling-phase records", w;
  const fs::path dir = fs::path(jsonl).parent_path();
  const std::string agg_path = (dir / "profile_export_aiperf.json").string();
  if (!is_file(agg_path)) {
    w.error = fmt::format("{}: not found (expected alongside {})", agg_path, jsonl);
    return w;
  }
  const auto agg = read_aggregate(agg_path);
  if (!agg) return w.error = agg.error(), w;
  if (w.error = read_tokens(agg->doc, agg_path, w); !w.error.empty()) return w;
  set_window(w, static_cast<double>(span->min_start_ns) / 1e9,
             static_cast<double>(span->max_end_ns) / 1e9, agg->cut_s);
  if (span->warmup_start_ns) {
    w.warmup_start_unix = static_cast<double>(*span->warmup_start_ns) / 1e9;
    w.warmup_end_unix = static_cast<double>(*span->warmup_end_ns) / 1e9;
  }
  read_tpot(agg->doc, w);
  w.reported = agg->reported;
  if (auto mismatch = aggregate_mismatch(agg->doc, agg_path, agg->reported, *span, jsonl);
      !mismatch.empty()) {
    w.warnings.push_back(std::move(mismatch));
  }
  if (w.reported.source == "unavailable") w.reported = phase_log_timing(benchmark_out);
  return w;
}

Window load_aiperf_aggregate_window(const std::string& aggregate, long long concurrency,
                                    const std::string& benchmark_out) {
  Window w("aiperf", aggregate, concurrency);
  const auto agg = read_aggregate(aggregate);
  if (!agg) return w.error = agg.error(), w;
  w.reported = agg->reported;
  if (!w.reported.start_unix || !w.reported.end_unix) {
    w.error = aggregate + ": no start_time/end_time to derive a window from";
    return w;
  }
  if (w.error = read_tokens(agg->doc, aggregate, w); !w.error.empty()) return w;
  set_window(w, *w.reported.start_unix, *w.reported.end_unix, agg->cut_s);
  const std::string start_time = agg->doc["start_time"].get<std::string>();
  const std::string hms = start_time.size() > 11 ? start_time.substr(11, 8) : "";
  const auto warmup = warmup_span_from_log(benchmark_out, hms, w.start_unix);
  if (warmup) {
    w.warmup_start_unix = warmup->first;
    w.warmup_end_unix = warmup->second;
  }
  read_tpot(agg->doc, w);
  return w;
}

}  // namespace cpupower::report
