#pragma once
// PromQL selectors as the store report writes them: `--match`'s label matchers read and
// written back, node name alternations, and range selectors over a window.

#include <string>
#include <string_view>
#include <vector>

#include "common/result.hpp"

namespace cpupower::store {

struct Matcher {
  std::string label;
  std::string op;  // =, !=, =~, !~
  std::string value;

  bool operator==(const Matcher&) const = default;
};

// A selector's matchers as PromQL writes them, `{job="cpu_power", node=~"n1|n2"}`: label
// names [a-zA-Z_][a-zA-Z0-9_]*, values in double or single quotes (with \\, \", \', \n, \r,
// \t escapes) or back quotes (raw); blanks between tokens; a trailing comma. `{}` is no
// matcher. The metric name is the report's to choose: a name in front or a __name__ matcher
// is refused, as is anything else that is not a matcher, with the place and the reason.
Result<std::vector<Matcher>> parse_matchers(std::string_view selector);

// A PromQL string literal: double quotes, with \\, \", \n, \r, \t and \xHH for other controls.
std::string promql_string(std::string_view s);

// `label op "value", ...`, the way they go between a selector's braces.
std::string render_matchers(const std::vector<Matcher>& matchers);

// A regular expression (RE2, which Prometheus anchors at both ends) matching exactly these
// names: each name's metacharacters escaped, joined by |.
std::string alternation(const std::vector<std::string>& names);

// `node=~"n1|n2"`; with `allow_domain`, also each name followed by a domain
// (`Hostname=~"(n1|n2)(\\..+)?"`: dcgm-exporter's Hostname may be the full name).
Matcher names_matcher(std::string label, const std::vector<std::string>& names,
                      bool allow_domain = false);

// `metric{matchers}[<range>ms]`, the range in whole milliseconds rounded up (Prometheus and
// VictoriaMetrics both read ms). An empty `metric` gives `{matchers}[...]`, for a __name__
// matcher among them.
std::string range_selector(std::string_view metric, const std::vector<Matcher>& matchers,
                           double range_s);

}  // namespace cpupower::store
