#pragma once
// The telemetry rules of srtctl's SrtConfig._validate_telemetry, with its message texts,
// plus the checks it forgets: collect_interval_ms and storage_subdir are checked in every
// enabled configuration, not only with the GPU leg (a 0 ms interval is a busy loop, and the
// exporter leg writes below storage_subdir too). Not checked: Dynamo system ports (they need the
// backend's process layout) and the GPU leg's placement and concurrency rules.

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "config/error.hpp"
#include "config/recipe.hpp"

namespace cpupower::config {

// The exporter block's rules (telemetry.dcgm_exporter, or the cluster's default_gpu_exporter
// when `prefix` is "default_gpu_exporter"): container_image and port, kind one of dcgm and
// custom, custom with command, gpu_labels and gpu_metrics, names Prometheus would accept, each
// family read once. Errors in `file`, at the marks given.
std::vector<ConfigError> validate_gpu_exporter(const DcgmExporterConfig& exporter,
                                               const std::string& prefix, const std::string& file,
                                               const std::map<std::string, Mark>& marks);

// The cluster configuration's rules: visible_devices_env an environment variable name, and
// default_gpu_exporter's block as above.
std::vector<ConfigError> validate_cluster(const ClusterConfig& cluster);

bool is_prometheus_metric_name(std::string_view name);  // [a-zA-Z_:][a-zA-Z0-9_:]*
bool is_prometheus_label_name(std::string_view name);   // [a-zA-Z_][a-zA-Z0-9_]*
bool is_environment_name(std::string_view name);        // [A-Za-z_][A-Za-z0-9_]*

// Every rule that fails, in the order upstream's checks report them. Each error points at the
// field it names (or, for a default, at the nearest enclosing block given in the file).
std::vector<ConfigError> validate_recipe(const Recipe& recipe);

// Settings that are valid but can put sample gaps over kMaxSampleGapS: a collect interval
// at_risk (below) with a leg that scrapes at it. Said by check-config and run, never refused.
// For a recipe validate_recipe accepts.
std::vector<ConfigError> recipe_warnings(const Recipe& recipe);

// How far scheduling jitter of the collector and the spread of the sensors' read age can
// move a row's time from its slot in healthy operation, with room to spare over the largest
// excess of a gap over the interval measured against simulated exporters (docs/reliability.md).
inline constexpr std::int64_t kGapJitterMarginMs = 500;

// The collect-interval rule of the recipe (telemetry.collect_interval_ms) and of
// `cpu-power scrape --interval-ms`. A row's time is its request's midpoint minus the sensors'
// age, so consecutive rows are the interval apart on average, each moved by jitter; a
// response that takes up to the request timeout delays its row by less than the timeout
// (half of it, plus any slots it made the node skip):
//  - refused: interval >= kMaxSampleGapS: gaps straddle the bound, some always over it;
//  - at_risk: interval + kGapJitterMarginMs > kMaxSampleGapS (jitter alone can cross it), or
//    interval + request timeout > kMaxSampleGapS (one slow response alone can);
//  - ok otherwise. A failed scrape (a gap of two intervals or more) is not covered: the
//    report and consumers see it, and the manifest says why.
enum class IntervalGap { ok, at_risk, refused };
IntervalGap interval_gap(std::int64_t interval_ms, double request_timeout_s);

// The largest interval that is `ok` with this request timeout; 0 when none is.
std::int64_t max_safe_interval_ms(double request_timeout_s);

// Why the interval is refused or at risk, for a message naming the two settings as the
// caller spells them (e.g. "telemetry.collect_interval_ms=2000", "request_timeout_seconds=2.0"
// or "--interval-ms 2000", "--request-timeout-s 2"); "" when it is ok.
std::string interval_gap_reason(std::int64_t interval_ms, double request_timeout_s,
                                const std::string& interval_name, const std::string& timeout_name);

// Non-empty, not starting with '/' or '~', and no "..", "." or empty parts: a directory that
// stays strictly below the run's log directory, spelt one way only. (Control characters are
// refused when the recipe is read, config/load.cpp.)
bool is_safe_relative_subpath(std::string_view path);

// What the kernel takes in a path (Linux): parts of at most NAME_MAX (255) bytes, and a whole of
// less than PATH_MAX (4096) bytes, its NUL included.
inline constexpr std::size_t kNameMaxBytes = 255;
inline constexpr std::size_t kPathMaxBytes = 4095;
// Room a storage_subdir leaves below it for what the legs write there: one directory (cpu/,
// windows/, nodes/, ready/, aiperf/) and one file name of up to NAME_MAX bytes.
inline constexpr std::size_t kBelowSubdirBytes = 1 + 16 + 1 + kNameMaxBytes;
// The longest interface name Linux takes (IFNAMSIZ less its NUL).
inline constexpr std::size_t kInterfaceNameMaxBytes = 15;

// Why `path` (the value of `field`) cannot be opened however it is spelt: a part longer than
// kNameMaxBytes, or the whole, with `reserve` bytes more below it, longer than kPathMaxBytes.
// "" when it fits. The message starts with `field`.
std::string path_length_problem(const std::string& field, std::string_view path,
                                std::size_t reserve = 0);

}  // namespace cpupower::config
