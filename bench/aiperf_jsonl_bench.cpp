// Reading aiperf's per-record export (profile_export.jsonl), to choose its JSON parser: the
// report's own load_aiperf_records_window (simdjson On-Demand, with its aggregate beside the
// file), and the same minimum - each record's "error" and metadata.request_start_ns - with
// simdjson On-Demand, with nlohmann's DOM (ordered_json as the report uses it, and plain json)
// and with nlohmann's SAX interface. Each is timed REPEATS times over the file in memory (the
// report's own load reads the file each time, from the page cache).
// Usage: aiperf_jsonl_bench PROFILE_EXPORT_JSONL [REPEATS]; bench/make_aiperf_run.py writes one.
#include <simdjson.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "report/json_value.hpp"
#include "report/window.hpp"

namespace {

using Clock = std::chrono::steady_clock;

template <class F>
void each_line(std::string_view all, F&& f) {
  std::size_t pos = 0;
  while (pos < all.size()) {
    std::size_t nl = all.find('\n', pos);
    if (nl == std::string_view::npos) nl = all.size();
    f(all.substr(pos, nl - pos), pos);
    pos = nl + 1;
  }
}

long long with_simdjson(const simdjson::padded_string& text) {
  simdjson::ondemand::parser parser;
  long long first = LLONG_MAX;
  each_line(std::string_view(text.data(), text.size()), [&](std::string_view line, std::size_t at) {
    simdjson::ondemand::document doc;
    const std::size_t capacity = text.size() + simdjson::SIMDJSON_PADDING - at;
    if (parser.iterate(line.data(), line.size(), capacity).get(doc)) return;
    simdjson::ondemand::object record;
    if (doc.get_object().get(record)) return;
    simdjson::ondemand::value error;
    bool null = false;
    if (!record.find_field_unordered("error").get(error) && !error.is_null().get(null) && !null) {
      return;
    }
    int64_t start = 0;
    if (!record.find_field_unordered("metadata")
             .find_field_unordered("request_start_ns")
             .get_int64()
             .get(start)) {
      first = std::min<long long>(first, start);
    }
  });
  return first;
}

template <class J>
long long with_dom(std::string_view text) {
  long long first = LLONG_MAX;
  each_line(text, [&](std::string_view line, std::size_t) {
    const J record = J::parse(line, nullptr, false);
    if (record.is_discarded() || !record.is_object()) return;
    const auto error = record.find("error");
    if (error != record.end() && !error->is_null()) return;
    const auto meta = record.find("metadata");
    if (meta == record.end() || !meta->contains("request_start_ns")) return;
    first = std::min(first, meta->at("request_start_ns").template get<long long>());
  });
  return first;
}

// Keeps the two fields and builds nothing else.
class StartSax final : public nlohmann::json_sax<cpupower::report::Json> {
 public:
  long long start = 0;
  bool failed = false;
  bool null() override { return true; }
  bool boolean(bool b) override {
    if (depth_ == 1 && key_ == "error") failed = b;
    return true;
  }
  bool number_integer(number_integer_t v) override { return take(v); }
  bool number_unsigned(number_unsigned_t v) override { return take(static_cast<long long>(v)); }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override {
    if (depth_ == 1 && key_ == "metadata") in_meta_ = true;
    if (depth_ == 1 && key_ == "error") failed = true;
    ++depth_;
    return true;
  }
  bool key(string_t& k) override {
    if (depth_ <= 2) key_ = k;
    return true;
  }
  bool end_object() override {
    if (--depth_ == 1) in_meta_ = false;
    return true;
  }
  bool start_array(std::size_t) override {
    ++depth_;
    return true;
  }
  bool end_array() override {
    --depth_;
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::json::exception&) override {
    return false;
  }

 private:
  bool take(long long v) {
    if (in_meta_ && depth_ == 2 && key_ == "request_start_ns") start = v;
    return true;
  }
  int depth_ = 0;
  bool in_meta_ = false;
  std::string key_;
};

long long with_sax(std::string_view text) {
  long long first = LLONG_MAX;
  each_line(text, [&](std::string_view line, std::size_t) {
    StartSax sax;
    cpupower::report::Json::sax_parse(line, &sax);
    if (!sax.failed) first = std::min(first, sax.start);
  });
  return first;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s PROFILE_EXPORT_JSONL [REPEATS]\n", argv[0]);
    return 2;
  }
  const std::string path = argv[1];
  const int repeats = argc > 2 ? std::max(1, std::atoi(argv[2])) : 3;
  const auto text = cpupower::report::read_text_file(path);
  if (!text) {
    std::fprintf(stderr, "%s: cannot be read\n", path.c_str());
    return 1;
  }
  const simdjson::padded_string padded(*text);
  std::printf("%s: %.0f MB, simdjson kernel %s\n", path.c_str(), text->size() / 1e6,
              simdjson::get_active_implementation()->name().c_str());
  const auto time = [&](const char* name, auto&& f) {
    std::vector<double> s;
    long long result = 0;
    for (int i = 0; i < repeats; ++i) {
      const auto t0 = Clock::now();
      result = f();
      s.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
    }
    std::sort(s.begin(), s.end());
    std::printf("%-44s min %7.3f s  median %7.3f s  (%4.0f MB/s)  [%lld]\n", name, s.front(),
                s[s.size() / 2], static_cast<double>(text->size()) / 1e6 / s.front(), result);
  };
  time("load_aiperf_records_window (the report)", [&] {
    const auto w = cpupower::report::load_aiperf_records_window(path, 64, "/dev/null");
    if (!w.error.empty()) std::fprintf(stderr, "%s\n", w.error.c_str());
    return static_cast<long long>(w.start_unix * 1e9);
  });
  time("simdjson On-Demand, two fields", [&] { return with_simdjson(padded); });
  time("nlohmann SAX, two fields", [&] { return with_sax(*text); });
  time("nlohmann DOM (ordered_json), two fields",
       [&] { return with_dom<cpupower::report::Json>(*text); });
  time("nlohmann DOM (json), two fields", [&] { return with_dom<nlohmann::json>(*text); });
  return 0;
}
