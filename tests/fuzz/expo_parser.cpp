// The Prometheus exposition parser (expo/parser), the collector's input from every exporter.
// Beyond not crashing: every body it accepts, written back with the writer's label escaping,
// parses again to the same samples, so nothing the exporter can publish is unreadable; and
// keeping only some names (what the collector's legs do) changes neither the verdict nor the
// error, only which samples are kept.

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "expo/parser.hpp"
#include "expo/writer.hpp"
#include "fuzz_util.hpp"

namespace {

using cpupower::expo::ParseResult;
using cpupower::expo::Sample;

std::string value_text(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

std::string write_back(const ParseResult& r) {
  std::string out;
  for (const Sample& s : r.samples) {
    out.append(s.name);
    out += '{';
    for (const auto& l : s.labels) {
      out.append(l.name);
      out += "=\"";
      out += cpupower::expo::escape_label_value(l.value);
      out += "\",";
    }
    out += "} ";
    out += value_text(s.value);
    if (s.timestamp_ms) out += " " + std::to_string(*s.timestamp_ms);
    out += '\n';
  }
  return out;
}

bool same_value(double a, double b) {
  return (std::isnan(a) && std::isnan(b)) || std::memcmp(&a, &b, sizeof a) == 0;
}

// What the legs do: parse_into a result reused from the previous input, keeping only some
// names. The verdict and the error must be parse()'s, and the samples parse()'s samples of
// those names, in order.
void check_only_names(std::string_view body, const ParseResult& whole) {
  static ParseResult reused;
  std::vector<std::string_view> names = {"zzz"};
  for (std::size_t i = 0; i < whole.samples.size() && names.size() < 3; i += 2) {
    names.push_back(whole.samples[i].name);
  }
  cpupower::expo::ParseOptions options;
  options.only_names = names;
  cpupower::expo::parse_into(body, reused, options);
  FUZZ_CHECK(reused.ok() == whole.ok(), "only_names changed the verdict");
  if (!whole.ok()) {
    FUZZ_CHECK(cpupower::expo::describe(*reused.error) == cpupower::expo::describe(*whole.error),
               "only_names changed the error");
    FUZZ_CHECK(reused.samples.empty());
    return;
  }
  std::size_t k = 0;
  for (const Sample& a : whole.samples) {
    if (std::find(names.begin(), names.end(), a.name) == names.end()) continue;
    FUZZ_CHECK(k < reused.samples.size(), "only_names lost a sample");
    const Sample& b = reused.samples[k++];
    FUZZ_CHECK(a.name == b.name && a.labels.size() == b.labels.size() &&
               same_value(a.value, b.value) && a.timestamp_ms == b.timestamp_ms);
    for (std::size_t j = 0; j < a.labels.size(); ++j) {
      FUZZ_CHECK(a.labels[j].name == b.labels[j].name && a.labels[j].value == b.labels[j].value,
                 "only_names changed label %zu", j);
    }
  }
  FUZZ_CHECK(k == reused.samples.size(), "only_names kept a sample of another name");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view body = cpupower::fuzz::as_text(data, size);
  const ParseResult r = cpupower::expo::parse(body);
  check_only_names(body, r);
  if (!r.ok()) {
    FUZZ_CHECK(r.samples.empty());
    (void)cpupower::expo::describe(*r.error);
    return 0;
  }
  for (const Sample& s : r.samples) {
    for (const auto& l : s.labels) {
      const auto v = s.label(l.name);
      FUZZ_CHECK(v.has_value() && *v == l.value, "label lookup of a listed label");
    }
  }
  const std::string again_text = write_back(r);
  const ParseResult again = cpupower::expo::parse(again_text);
  FUZZ_CHECK(again.ok(), "written back, the body no longer parses: %s\n%s",
             cpupower::expo::describe(*again.error).c_str(), again_text.c_str());
  FUZZ_CHECK(again.samples.size() == r.samples.size());
  for (std::size_t i = 0; i < r.samples.size(); ++i) {
    const Sample& a = r.samples[i];
    const Sample& b = again.samples[i];
    FUZZ_CHECK(a.name == b.name && a.labels.size() == b.labels.size() &&
               same_value(a.value, b.value) && a.timestamp_ms == b.timestamp_ms);
    for (std::size_t j = 0; j < a.labels.size(); ++j) {
      FUZZ_CHECK(a.labels[j].name == b.labels[j].name && a.labels[j].value == b.labels[j].value,
                 "label %zu of sample %zu changed on the way back", j, i);
    }
  }
  return 0;
}
