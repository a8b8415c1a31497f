#include "config/validate.hpp"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "common/text.hpp"

namespace cpupower::config {
namespace {

constexpr std::int64_t kMaxGapMs = static_cast<std::int64_t>(kMaxSampleGapS * 1000.0);

bool finite_positive(double v) {
  return std::isfinite(v) && v > 0.0;
}

bool port_in_range(std::int64_t port) {
  return port >= 1 && port <= 65535;
}

// Python's repr of a float ("5.0", "0.25"): recipe messages print numbers as upstream's do.
std::string py_float(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  std::string s = fmt::format("{}", v);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

// The mark of `path`, else of its nearest ancestor that the file gives.
Mark mark_of(const std::map<std::string, Mark>& marks, std::string path) {
  while (!path.empty()) {
    if (const auto it = marks.find(path); it != marks.end()) return it->second;
    const auto dot = path.rfind('.');
    path = dot == std::string::npos ? std::string() : path.substr(0, dot);
  }
  return {};
}

bool is_name(std::string_view s, bool colon) {
  if (s.empty()) return false;
  const auto head = [&](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (colon && c == ':');
  };
  if (!head(s.front())) return false;
  return std::all_of(s.begin() + 1, s.end(),
                     [&](char c) { return head(c) || (c >= '0' && c <= '9'); });
}

}  // namespace

bool is_prometheus_metric_name(std::string_view name) {
  return is_name(name, true);
}

bool is_prometheus_label_name(std::string_view name) {
  return is_name(name, false);
}

bool is_environment_name(std::string_view name) {
  return is_name(name, false);
}

std::vector<ConfigError> validate_gpu_exporter(const DcgmExporterConfig& d, const std::string& p,
                                               const std::string& file,
                                               const std::map<std::string, Mark>& marks) {
  std::vector<ConfigError> out;
  const auto fail = [&](const std::string& path, std::string message) {
    out.push_back({file, mark_of(marks, path), std::move(message)});
  };
  if (common::trim(d.container_image).empty()) {
    fail(p + ".container_image", p + ".container_image must not be empty");
  }
  if (!port_in_range(d.port)) fail(p + ".port", p + ".port must be in 1..65535");
  if (d.kind != "dcgm" && d.kind != "custom") {
    fail(p + ".kind", p + ".kind must be one of: \"dcgm\", \"custom\" (got \"" +
                          common::escape_untrusted(d.kind) + "\")");
  } else if (d.kind == "custom") {
    std::vector<std::string> missing;
    if (!d.command) missing.emplace_back("command");
    if (!d.gpu_labels) missing.emplace_back("gpu_labels");
    if (!d.gpu_metrics) missing.emplace_back("gpu_metrics");
    if (!missing.empty()) {
      fail(p + ".kind",
           fmt::format("{}.kind: custom must set command, gpu_labels and gpu_metrics; {} "
                       "missing (the names of another exporter cannot be guessed)",
                       p, fmt::join(missing, ", ")));
    }
  }
  if (const auto& l = d.gpu_labels) {
    const std::string q = p + ".gpu_labels";
    // A label name, or false with the error at `field` naming `at`.
    const auto label = [&](const std::string& field, const std::string& at, const std::string& v) {
      if (is_prometheus_label_name(v)) return true;
      fail(field, fmt::format("{} must be a Prometheus label name ([a-zA-Z_][a-zA-Z0-9_]*), got "
                              "\"{}\"",
                              at, common::escape_untrusted(v)));
      return false;
    };
    label(q + ".index", q + ".index", l->index);
    label(q + ".identity", q + ".identity", l->identity);
    if (l->index == l->identity && !l->index.empty()) {
      fail(q + ".identity",
           q + ".identity must differ from " + q +
               ".index: it fills gpu_uuid, which must name the physical GPU, not its index");
    }
    for (std::size_t i = 0; i < l->instance.size(); ++i) {
      const auto& name = l->instance[i];
      const std::string at = fmt::format("{}.instance[{}]", q, i);
      if (label(q + ".instance", at, name) && (name == l->index || name == l->identity)) {
        fail(q + ".instance", fmt::format("{} (\"{}\") names the {} label: every sample carries "
                                          "it, so every sample would be dropped",
                                          at, name, name == l->index ? "index" : "identity"));
      }
    }
  }
  if (const auto& m = d.gpu_metrics) {
    const std::string q = p + ".gpu_metrics";
    std::vector<std::pair<std::string, const std::string*>> families = {
        {"power", &m->power_metric}};
    if (m->gpu_util_metric) families.emplace_back("gpu_util", &*m->gpu_util_metric);
    if (m->sm_active_metric) families.emplace_back("sm_active", &*m->sm_active_metric);
    if (m->temperature_metric) families.emplace_back("temperature", &*m->temperature_metric);
    for (std::size_t i = 0; i < families.size(); ++i) {
      const auto& [key, name] = families[i];
      const std::string at = q + "." + key + ".metric";
      if (!is_prometheus_metric_name(*name)) {
        fail(at, fmt::format("{} must be a Prometheus metric name ([a-zA-Z_:][a-zA-Z0-9_:]*), "
                             "got \"{}\"",
                             at, common::escape_untrusted(*name)));
        continue;
      }
      for (std::size_t j = 0; j < i; ++j) {
        if (*families[j].second == *name) {
          fail(at, fmt::format("{} (\"{}\") is also {}.{}.metric; each family fills one column", at,
                               *name, q, families[j].first));
          break;
        }
      }
    }
    if (common::trim(m->power_scope).empty()) {
      fail(q + ".power.scope", q + ".power.scope must not be empty (it is the manifest's "
                                   "power_scope: what the watts measure)");
    }
  }
  return out;
}

std::vector<ConfigError> validate_cluster(const ClusterConfig& c) {
  std::vector<ConfigError> out;
  if (!is_environment_name(c.visible_devices_env)) {
    out.push_back({c.file, mark_of(c.marks, "visible_devices_env"),
                   fmt::format("visible_devices_env must be an environment variable name "
                               "([A-Za-z_][A-Za-z0-9_]*), got \"{}\"",
                               common::escape_untrusted(c.visible_devices_env))});
  }
  if (c.default_gpu_exporter) {
    auto more =
        validate_gpu_exporter(*c.default_gpu_exporter, "default_gpu_exporter", c.file, c.marks);
    out.insert(out.end(), more.begin(), more.end());
  }
  return out;
}

namespace {

class Rules {
 public:
  explicit Rules(const Recipe& r) : r_(r), t_(r.telemetry) {}

  std::vector<ConfigError> run() {
    // A Literal field in srtctl's schema: refused at load, whatever else is set.
    source_is_known("telemetry.cpu_power.source", t_.cpu_power.source);
    if (!t_.enabled) {
      disabled();
      return std::move(errors_);
    }
    always_checked();
    if (t_.cpu_power.enabled) {
      host_leg();
    } else {
      inert_demand();
    }
    if (t_.dcgm_exporter) gpu_leg();
    if (!t_.dcgm_exporter && !t_.cpu_power_exporter && !t_.cpu_power.enabled) {
      fail("telemetry.enabled",
           "telemetry.enabled requires telemetry.dcgm_exporter, telemetry.cpu_power_exporter, or "
           "telemetry.cpu_power.enabled; otherwise there is nothing to collect");
    }
    collector_budget();
    if (t_.cpu_power_exporter) exporter_leg();
    path_lengths();
    return std::move(errors_);
  }

 private:
  void fail(const std::string& path, std::string message) {
    errors_.push_back({r_.file, mark_of(r_.marks, path), std::move(message)});
  }

  void source_is_known(const std::string& path, const std::string& source) {
    if (source != "auto" && source != "acpi" && source != "rapl" && source != "dcgm") {
      fail(path, path + " must be one of: \"auto\", \"acpi\", \"rapl\", \"dcgm\"");
    }
  }

  void safe_subpath(const std::string& path, const std::string& value) {
    if (!is_safe_relative_subpath(value)) {
      fail(path, path + " must be a safe relative path below the run log directory");
    }
    fits(path, value, kBelowSubdirBytes);
  }

  // A path the kernel cannot take would fail every open below it, and the run would lose
  // every row without a word: refused here, with the field named.
  void fits(const std::string& path, std::string_view value, std::size_t reserve = 0) {
    if (auto problem = path_length_problem(path, value, reserve); !problem.empty()) {
      fail(path, std::move(problem));
    }
  }

  // The other fields that name a file or an interface, when given.
  void path_lengths() {
    if (const auto& d = t_.dcgm_exporter) {
      fits("telemetry.dcgm_exporter.container_image", d->container_image);
      if (d->binary) fits("telemetry.dcgm_exporter.binary", *d->binary);
    }
    if (const auto& c = t_.cpu_power_exporter) {
      const std::string p = "telemetry.cpu_power_exporter";
      if (c->web_config_file) fits(p + ".web_config_file", *c->web_config_file);
      if (const auto& t = c->tls_config) {
        if (t->ca_file) fits(p + ".tls_config.ca_file", *t->ca_file);
        if (t->cert_file) fits(p + ".tls_config.cert_file", *t->cert_file);
        if (t->key_file) fits(p + ".tls_config.key_file", *t->key_file);
      }
      if (c->basic_auth) fits(p + ".basic_auth.password_file", c->basic_auth->password_file);
    }
    if (const auto& i = r_.runtime.network_interface; i && i->size() > kInterfaceNameMaxBytes) {
      fail("runtime.network_interface",
           fmt::format("runtime.network_interface is {} bytes, longer than the {}-byte limit on "
                       "an interface name (IFNAMSIZ)",
                       i->size(), kInterfaceNameMaxBytes));
    }
  }

  // With telemetry off nothing runs, so only a demand that can never be met is an error;
  // cpu_power_exporter is not looked at: it configures nothing that runs, and upstream's
  // checks accept it silently too.
  void disabled() {
    if (t_.cpu_power.enabled) {
      fail("telemetry.cpu_power.enabled", "telemetry.cpu_power.enabled requires telemetry.enabled");
      return;
    }
    inert_demand();
  }

  void inert_demand() {
    const auto& c = t_.cpu_power;
    if (c.required) {
      fail("telemetry.cpu_power.required",
           "telemetry.cpu_power.required has no effect unless telemetry.cpu_power.enabled");
    }
    if (c.source == "acpi" || c.source == "rapl" || c.source == "dcgm") {
      fail("telemetry.cpu_power.source",
           "telemetry.cpu_power.source: \"" + c.source +
               "\" has no effect unless telemetry.cpu_power.enabled; it names a mandatory "
               "provider for a leg that will not run");
    }
  }

  // Checked in every enabled configuration, not only with the GPU leg: every leg samples at
  // collect_interval_ms and writes below storage_subdir.
  // An interval of the bound or more is refused: rows come the interval apart on average and
  // jitter moves each one, so some gaps always exceed it (interval_gap).
  void always_checked() {
    if (t_.collect_interval_ms <= 0 || t_.collect_interval_ms >= kMaxGapMs) {
      fail("telemetry.collect_interval_ms",
           fmt::format("telemetry.collect_interval_ms={} must be > 0 and < {} (the {}s max "
                       "sample gap: rows come the interval apart on average and jitter moves "
                       "each one, so some gaps would exceed it)",
                       t_.collect_interval_ms, kMaxGapMs, py_float(kMaxSampleGapS)));
    }
    safe_subpath("telemetry.storage_subdir", t_.storage_subdir);
  }

  void host_leg() {
    const auto& c = t_.cpu_power;
    for (const auto& [name, value] :
         {std::pair{"sample_interval_seconds", c.sample_interval_seconds},
          std::pair{"startup_timeout_seconds", c.startup_timeout_seconds}}) {
      if (!finite_positive(value)) {
        fail(std::string("telemetry.cpu_power.") + name,
             std::string("telemetry.cpu_power.") + name + " must be finite and positive");
      }
    }
    if (finite_positive(c.sample_interval_seconds) && c.sample_interval_seconds > kMaxSampleGapS) {
      fail("telemetry.cpu_power.sample_interval_seconds",
           "telemetry.cpu_power.sample_interval_seconds=" + py_float(c.sample_interval_seconds) +
               " exceeds the " + py_float(kMaxSampleGapS) +
               "s max sample gap; every window would fail sample_gap_exceeded");
    }
    safe_subpath("telemetry.cpu_power.storage_subdir", c.storage_subdir);
    if (c.storage_subdir == t_.storage_subdir) {
      fail("telemetry.cpu_power.storage_subdir",
           "telemetry.cpu_power.storage_subdir must differ from telemetry.storage_subdir; the "
           "two legs write their own samples and manifest");
    } else if (t_.cpu_power_exporter && c.storage_subdir == t_.storage_subdir + "/cpu") {
      // The exporter leg writes <storage_subdir>/cpu/samples.csv: the same file.
      fail("telemetry.cpu_power.storage_subdir",
           "telemetry.cpu_power.storage_subdir must differ from telemetry.storage_subdir + "
           "\"/cpu\", where the exporter leg writes its samples.csv");
    }
  }

  void gpu_leg() {
    // An inherited block was judged where it was written (the cluster configuration).
    if (!r_.gpu_exporter_inherited) {
      auto block =
          validate_gpu_exporter(*t_.dcgm_exporter, "telemetry.dcgm_exporter", r_.file, r_.marks);
      errors_.insert(errors_.end(), block.begin(), block.end());
    }
    if (!finite_positive(t_.startup_timeout_seconds)) {
      fail("telemetry.startup_timeout_seconds",
           "telemetry.startup_timeout_seconds must be finite and positive");
    }
    static const char* const kTypes[] = {"sa-bench", "agentic", "agentx", "custom", "manual"};
    if (r_.benchmark_type) {
      bool known = false;
      for (const char* type : kTypes) known = known || *r_.benchmark_type == type;
      if (!known) {
        fail("benchmark.type",
             "telemetry.dcgm_exporter requires benchmark.type to be one of: \"sa-bench\", "
             "\"agentic\", \"agentx\", \"custom\", \"manual\" (got \"" +
                 *r_.benchmark_type + "\")");
      }
    }
  }

  // stop_and_finalize must be able to wait out two full cycles, or a cycle in flight at
  // shutdown would be cut off and its rows lost.
  void collector_budget() {
    if (!finite_positive(t_.request_timeout_seconds)) {
      fail("telemetry.request_timeout_seconds",
           "telemetry.request_timeout_seconds must be finite and positive");
      return;
    }
    const double join = resolved_join_timeout_s(t_);
    const double two_cycles = 2.0 * collector_cycle_s(t_);
    if (!finite_positive(join)) {
      fail("telemetry.collector_join_timeout_seconds",
           "telemetry.collector_join_timeout_seconds must be finite and positive");
    } else if (!(join > two_cycles)) {
      fail("telemetry.collector_join_timeout_seconds",
           "telemetry.collector_join_timeout_seconds=" + py_float(join) +
               " must be greater than two full collector cycles (2 x (2 x "
               "request_timeout_seconds + " +
               py_float(kCollectCycleGraceS) + ") = " + py_float(two_cycles) + "s)");
    }
  }

  void exporter_leg() {
    const auto& c = *t_.cpu_power_exporter;
    const std::string p = "telemetry.cpu_power_exporter";
    if (!port_in_range(c.port)) fail(p + ".port", p + ".port must be in 1..65535");
    source_is_known(p + ".source", c.source);
    if (c.web_config_file && c.web_config_file->empty()) {
      fail(p + ".web_config_file", p + ".web_config_file must not be empty");
    }
    if (c.tls_config) {
      const auto& t = *c.tls_config;
      for (const auto& [key, value] :
           {std::pair{"ca_file", &t.ca_file}, std::pair{"cert_file", &t.cert_file},
            std::pair{"key_file", &t.key_file}}) {
        if (*value && (*value)->empty()) {
          fail(p + ".tls_config." + key, p + ".tls_config." + key + " must not be empty");
        }
      }
      if (t.cert_file.has_value() != t.key_file.has_value()) {
        const std::string missing = t.cert_file ? "key_file" : "cert_file";
        fail(p + ".tls_config." + (t.cert_file ? "cert_file" : "key_file"),
             p + ".tls_config: a client certificate needs both cert_file and key_file (" + missing +
                 " is missing)");
      }
    }
    if (c.basic_auth) {
      const auto& b = *c.basic_auth;
      if (b.username.empty()) {
        fail(p + ".basic_auth.username", p + ".basic_auth.username must not be empty");
      } else if (b.username.find(':') != std::string::npos) {
        fail(p + ".basic_auth.username",
             p + ".basic_auth.username cannot hold ':' (Basic authentication splits on it)");
      }
      if (b.password_file.empty()) {
        fail(p + ".basic_auth.password_file", p + ".basic_auth.password_file must not be empty");
      }
    }
    // Everything else that listens on every worker node.
    std::vector<std::pair<std::string, std::int64_t>> others;
    if (t_.dcgm_exporter) others.emplace_back("telemetry.dcgm_exporter", t_.dcgm_exporter->port);
    if (r_.tachometer.is_enabled()) {
      others.emplace_back("observability.tachometer.dcgm_exporter",
                          r_.tachometer.dcgm_exporter_port);
      others.emplace_back("observability.tachometer.node_exporter",
                          r_.tachometer.node_exporter_port);
    }
    for (const auto& [name, port] : others) {
      if (port == c.port) {
        fail(p + ".port", fmt::format("{}.port={} collides with {}.port; both run on every worker "
                                      "node",
                                      p, c.port, name));
      }
    }
  }

  const Recipe& r_;
  const TelemetryConfig& t_;
  std::vector<ConfigError> errors_;
};

}  // namespace

IntervalGap interval_gap(std::int64_t interval_ms, double request_timeout_s) {
  if (interval_ms >= kMaxGapMs) return IntervalGap::refused;
  const double interval = static_cast<double>(interval_ms);
  const double bound = static_cast<double>(kMaxGapMs);
  // A timeout that is not finite (refused by the rules anyway) promises nothing.
  const bool jitter = interval + static_cast<double>(kGapJitterMarginMs) > bound;
  const bool slow = !(interval + request_timeout_s * 1000.0 <= bound);
  return jitter || slow ? IntervalGap::at_risk : IntervalGap::ok;
}

std::int64_t max_safe_interval_ms(double request_timeout_s) {
  const double room = std::min(static_cast<double>(kMaxGapMs - kGapJitterMarginMs),
                               static_cast<double>(kMaxGapMs) - request_timeout_s * 1000.0);
  if (!(room >= 1.0)) return 0;
  return static_cast<std::int64_t>(std::floor(room));
}

std::string interval_gap_reason(std::int64_t interval_ms, double request_timeout_s,
                                const std::string& interval_name, const std::string& timeout_name) {
  const IntervalGap gap = interval_gap(interval_ms, request_timeout_s);
  if (gap == IntervalGap::ok) return {};
  const std::int64_t safe = max_safe_interval_ms(request_timeout_s);
  const std::string remedy =
      safe > 0 ? fmt::format("at most {} ms stays within it with {}", safe, timeout_name)
               : fmt::format("no interval stays within it with {}; lower it", timeout_name);
  const std::string bound = py_float(kMaxSampleGapS) + "s max sample gap";
  if (gap == IntervalGap::refused) {
    return fmt::format(
        "{} puts sample gaps over the {}: rows come the interval apart on average and jitter "
        "moves each one, so some gaps exceed it and energy windows over them fail "
        "(sample_gap_exceeded); {}",
        interval_name, bound, remedy);
  }
  std::vector<std::string> why;
  const double interval = static_cast<double>(interval_ms);
  if (interval + static_cast<double>(kGapJitterMarginMs) > static_cast<double>(kMaxGapMs)) {
    why.push_back(
        fmt::format("scheduling jitter and the sensors' read age move a row's time by "
                    "up to {}s",
                    py_float(static_cast<double>(kGapJitterMarginMs) / 1000.0)));
  }
  if (!(interval + request_timeout_s * 1000.0 <= static_cast<double>(kMaxGapMs))) {
    why.push_back("a response that takes up to the request timeout (" + timeout_name +
                  ") delays its row by up to that much");
  }
  return fmt::format("{} can put sample gaps over the {}: {}; {}", interval_name, bound,
                     fmt::join(why, ", and "), remedy);
}

std::vector<ConfigError> recipe_warnings(const Recipe& recipe) {
  const auto& t = recipe.telemetry;
  std::vector<ConfigError> out;
  // The legs that scrape at collect_interval_ms: ours, and srtctl's GPU leg.
  if (!t.enabled || (!t.cpu_power_exporter && !t.dcgm_exporter)) return out;
  if (interval_gap(t.collect_interval_ms, t.request_timeout_seconds) != IntervalGap::at_risk) {
    return out;
  }
  out.push_back({recipe.file, mark_of(recipe.marks, "telemetry.collect_interval_ms"),
                 interval_gap_reason(
                     t.collect_interval_ms, t.request_timeout_seconds,
                     fmt::format("telemetry.collect_interval_ms={}", t.collect_interval_ms),
                     "telemetry.request_timeout_seconds=" + py_float(t.request_timeout_seconds))});
  return out;
}

bool is_safe_relative_subpath(std::string_view path) {
  if (path.empty() || path.front() == '/' || path.front() == '~') return false;
  for (const auto& part : common::split(path, '/')) {
    // "." parts too: "." alone is the log directory itself, not a directory below it, and
    // without them two spellings of one directory ("power", "./power") cannot slip past the
    // rule that the legs write to different directories.
    if (part.empty() || part == "." || part == "..") return false;
  }
  return true;
}

std::string path_length_problem(const std::string& field, std::string_view path,
                                std::size_t reserve) {
  std::size_t index = 0;
  for (const auto& part : common::split(path, '/')) {
    ++index;
    if (part.size() > kNameMaxBytes) {
      return fmt::format(
          "{}: part {} (\"{}...\") is {} bytes, longer than the {}-byte limit on a "
          "file name (NAME_MAX)",
          field, index, part.substr(0, 16), part.size(), kNameMaxBytes);
    }
  }
  if (path.size() + reserve > kPathMaxBytes) {
    return reserve == 0
               ? fmt::format("{} is {} bytes, longer than the {}-byte limit on a path (PATH_MAX)",
                             field, path.size(), kPathMaxBytes)
               : fmt::format(
                     "{} is {} bytes; with the {} bytes kept for what is written below "
                     "it, longer than the {}-byte limit on a path (PATH_MAX)",
                     field, path.size(), reserve, kPathMaxBytes);
  }
  return {};
}

std::vector<ConfigError> validate_recipe(const Recipe& recipe) {
  return Rules(recipe).run();
}

}  // namespace cpupower::config
