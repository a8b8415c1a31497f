#pragma once
// Prometheus text exposition (format 0.0.4) writing: the one place that knows how labels are
// escaped and numbers printed, so every family the exporter serves reads the same.

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

#include "expo/families.hpp"

namespace cpupower::expo {

// Label value escaping: \ -> \\, " -> \", newline -> \n.
std::string escape_label_value(std::string_view value);

// The label text of one sample of `family`: its label names in order, each with its value
// from `values` (raw; escaped here), as name="value" pairs joined by commas.
std::string label_text(const Family& family, std::initializer_list<std::string_view> values);

// Fixed-point with six decimals, exactly like C's "%.6f" (never an exponent): every watt
// value is printed so, the same bytes upstream's exporter serves.
void append_fixed6(std::string& out, double value);
void append_uint(std::string& out, std::uint64_t value);

// "# HELP name help\n# TYPE name type\n".
void append_family_header(std::string& out, const Family& family);

// Appends `name{` + prebuilt, already escaped label text + `} `; callers that render the
// same label set on every scrape build the text once.
void append_sample_prefix(std::string& out, std::string_view name, std::string_view label_text);

}  // namespace cpupower::expo
