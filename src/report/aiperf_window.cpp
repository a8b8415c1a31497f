// aiperf windows: from the per-record export (profile_export.jsonl) when it exists, else
// from the aggregate (profile_export_aiperf.json) alone.

#include <fmt/core.h>

#include <simdjson.h>
#include <filesystem>
#include <limits>

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
  std::string error;
};

bool truthy(simdjson::ondemand::value value) {
  switch (value.type()) {
    case simdjson::ondemand::json_type::null:
      return false;
    case simdjson::ondemand::json_type::boolean:
      return value.get_bool().value_unsafe();
    case simdjson::ondemand::json_type::number:
      return value.get_double().value_unsafe() != 0;
    case simdjson::ondemand::json_type::string:
      return !value.get_string().value_unsafe().empty();
    case simdjson::ondemand::json_type::array:
      for (auto element : value.get_array()) {
        (void)element;
        return true;
      }
      return false;
    case simdjson::ondemand::json_type::object:
      for (auto field : value.get_object()) {
        (void)field;
        return true;
      }
      return false;
  }
  return true;
}

// One record: skipped when it has a truthy "error"; profiling records extend the span,
// warmup records the warmup span. Returns an error text for a record we cannot read.
std::string take_record(simdjson::ondemand::document& doc, RecordSpan& span) {
  simdjson::ondemand::object record;
  if (doc.get_object().get(record)) return "record is not a JSON object";
  simdjson::ondemand::value error;
  if (!record.find_field_unordered("error").get(error) && truthy(error)) return "";
  simdjson::ondemand::object meta;
  if (record.find_field_unordered("metadata").get_object().get(meta)) {
    return "record has no metadata object";
  }
  std::string_view phase;
  if (meta.find_field_unordered("benchmark_phase").get_string().get(phase)) {
    return "record has no metadata.benchmark_phase";
  }
  int64_t start = 0, end = 0;
  const bool has_start = !meta.find_field_unordered("request_start_ns").get_int64().get(start);
  const bool has_end = !meta.find_field_unordered("request_end_ns").get_int64().get(end);
  if (phase == "profiling") {
    if (!has_start || !has_end) return "profiling record without request_start_ns/request_end_ns";
    span.min_start_ns = std::min<long long>(span.min_start_ns, start);
    span.max_end_ns = std::max<long long>(span.max_end_ns, end);
    ++span.profiling;
  } else if (phase == "warmup" && has_start) {
    const long long last = (has_end && end != 0) ? end : start;
    span.warmup_start_ns = std::min<long long>(span.warmup_start_ns.value_or(start), start);
    span.warmup_end_ns = std::max<long long>(span.warmup_end_ns.value_or(last), last);
  }
  return "";
}

RecordSpan scan_records(const std::string& jsonl) {
  RecordSpan span;
  simdjson::padded_string text;
  if (simdjson::padded_string::load(jsonl).get(text)) {
    span.error = jsonl + ": cannot be read";
    return span;
  }
  simdjson::ondemand::parser parser;
  std::size_t line_no = 0;
  std::size_t pos = 0;
  const std::string_view all(text.data(), text.size());
  while (pos < all.size()) {
    std::size_t nl = all.find('\n', pos);
    if (nl == std::string_view::npos) nl = all.size();
    ++line_no;
    std::string_view line = all.substr(pos, nl - pos);
    const std::size_t begin = pos;
    pos = nl + 1;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    simdjson::ondemand::document doc;
    // The rest of the padded file lies behind the line, so simdjson may read past it.
    const std::size_t capacity = text.size() + simdjson::SIMDJSON_PADDING - begin;
    std::string problem;
    if (const auto code = parser.iterate(line.data(), line.size(), capacity).get(doc)) {
      problem = std::string("malformed JSON (") + simdjson::error_message(code) + ")";
    } else {
      problem = take_record(doc, span);
    }
    if (!problem.empty()) {
      span.error = fmt::format("{}:{}: {}", jsonl, line_no, problem);
      return span;
    }
  }
  return span;
}

struct AggregateTiming {
  ReportedTiming reported;
  std::optional<double> cut_s;  // benchmark_duration in seconds, when its unit is known
};

// aiperf's own account of the window; an error for a stamp that is there but is no time.
Result<AggregateTiming> aggregate_timing(const Json& agg, const std::string& path,
                                         std::optional<int> offset) {
  AggregateTiming out;
  std::optional<double> duration;
  const auto bd = agg.find("benchmark_duration");
  if (bd != agg.end()) {
    duration = bd->is_object() ? json_member_number(*bd, "avg") : json_number(*bd);
    if (bd->is_object() && duration) {
      const Json unit = bd->value("unit", Json("sec"));
      const std::string u = unit.is_string() ? unit.get<std::string>() : "";
      if (u == "sec" || u == "s" || u == "seconds") out.cut_s = *duration;
      if (u == "ms") out.cut_s = *duration * 1e-3;
    }
  }
  ReportedTiming& r = out.reported;
  const std::pair<const char*, std::optional<double>*> stamps[] = {{"start_time", &r.start_unix},
                                                                   {"end_time", &r.end_unix}};
  for (const auto& [key, slot] : stamps) {
    const auto it = agg.find(key);
    if (it == agg.end() || it->is_null()) continue;
    const std::string shown = it->dump(-1, ' ', false, Json::error_handler_t::replace);
    if (!it->is_string()) return Error{fmt::format("{}: {} {}: not a string", path, key, shown)};
    const auto unix = iso_to_unix(it->get_ref<const std::string&>(), offset);
    if (!unix) return Error{fmt::format("{}: {} {}: {}", path, key, shown, unix.error())};
    *slot = *unix;
  }
  r.duration_seconds = duration;
  if (!r.start_unix && !r.end_unix && !r.duration_seconds) return out;
  r.source = "aiperf-json";
  r.note = offset ? "start/end are aiperf's naive local ISO stamps converted in the run's "
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
  w.output_tokens = json_number(w.output_tokens_json);
  w.input_tokens = json_number(w.input_tokens_json);
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

// The aggregate's timing, its naive stamps read in the run's recorded offset.
Result<AggregateTiming> read_timing(const Json& agg, const std::string& path) {
  const auto offset = recorded_utc_offset(fs::path(path).parent_path().string());
  if (!offset) return Error{offset.error()};
  return aggregate_timing(agg, path, *offset);
}

Window base(const std::string& source, long long concurrency) {
  Window w;
  w.benchmark_type = "aiperf";
  w.source = source;
  w.concurrency = concurrency;
  return w;
}

}  // namespace

Window load_aiperf_records_window(const std::string& jsonl, long long concurrency,
                                  const std::string& benchmark_out) {
  Window w = base(jsonl, concurrency);
  const RecordSpan span = scan_records(jsonl);
  if (!span.error.empty()) return w.error = span.error, w;
  if (span.profiling == 0) return w.error = jsonl + ": no successful profiling-phase records", w;
  const fs::path dir = fs::path(jsonl).parent_path();
  const std::string agg_path = (dir / "profile_export_aiperf.json").string();
  if (!is_file(agg_path)) {
    w.error = fmt::format("{}: not found (expected alongside {})", agg_path, jsonl);
    return w;
  }
  const auto agg = read_json_file(agg_path, &w.error);
  if (!agg) return w;
  if (!agg->is_object()) return w.error = agg_path + ": not a JSON object", w;
  const auto timing = read_timing(*agg, agg_path);
  if (!timing) return w.error = timing.error(), w;
  if (w.error = read_tokens(*agg, agg_path, w); !w.error.empty()) return w;
  set_window(w, static_cast<double>(span.min_start_ns) / 1e9,
             static_cast<double>(span.max_end_ns) / 1e9, timing->cut_s);
  if (span.warmup_start_ns) {
    w.warmup_start_unix = static_cast<double>(*span.warmup_start_ns) / 1e9;
    w.warmup_end_unix = static_cast<double>(*span.warmup_end_ns) / 1e9;
  }
  read_tpot(*agg, w);
  w.reported = timing->reported;
  if (w.reported.source == "unavailable") w.reported = phase_log_timing(benchmark_out);
  return w;
}

Window load_aiperf_aggregate_window(const std::string& aggregate, long long concurrency,
                                    const std::string& benchmark_out) {
  Window w = base(aggregate, concurrency);
  const auto agg = read_json_file(aggregate, &w.error);
  if (!agg) return w;
  if (!agg->is_object()) return w.error = aggregate + ": not a JSON object", w;
  const auto timing = read_timing(*agg, aggregate);
  if (!timing) return w.error = timing.error(), w;
  w.reported = timing->reported;
  if (!w.reported.start_unix || !w.reported.end_unix) {
    w.error = aggregate + ": no start_time/end_time to derive a window from";
    return w;
  }
  if (w.error = read_tokens(*agg, aggregate, w); !w.error.empty()) return w;
  set_window(w, *w.reported.start_unix, *w.reported.end_unix, timing->cut_s);
  const std::string start_time = (*agg)["start_time"].get<std::string>();
  const std::string hms = start_time.size() > 11 ? start_time.substr(11, 8) : "";
  const auto warmup = warmup_span_from_log(benchmark_out, hms, w.start_unix);
  if (warmup) {
    w.warmup_start_unix = warmup->first;
    w.warmup_end_unix = warmup->second;
  }
  read_tpot(*agg, w);
  return w;
}

}  // namespace cpupower::report
