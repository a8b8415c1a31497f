// The Prometheus exposition parser (expo/parser), the collector's input from every exporter.
// Beyond not crashing: every body it accepts, written back with the writer's label escaping,
// parses again to the same samples, so nothing the exporter can publish is unreadable.

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>

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

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view body = cpupower::fuzz::as_text(data, size);
  const ParseResult r = cpupower::expo::parse(body);
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
