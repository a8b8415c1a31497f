#include "config/load.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <regex>
#include <set>
#include <sstream>

#include "common/text.hpp"
#include "config/validate.hpp"

namespace cpupower::config {
namespace {

// Levenshtein distance, for "did you mean" on unknown keys.
std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

std::string suggestion(const std::string& key, const std::vector<std::string>& known) {
  std::string best;
  std::size_t best_d = 3;  // farther than this is a different word, not a typo
  for (const auto& k : known) {
    const auto d = edit_distance(common::to_lower(key), k);
    if (d < best_d) best_d = d, best = k;
  }
  return best.empty() ? std::string() : " (did you mean \"" + best + "\"?)";
}

std::string node_kind(const YAML::Node& n) {
  if (n.IsMap()) return "a mapping";
  if (n.IsSequence()) return "a sequence";
  if (n.IsNull()) return "null";
  return "\"" + common::escape_untrusted(n.Scalar()) + "\"";  // printed on a terminal
}

// A scalar as PyYAML's safe_load constructs it (YAML 1.1): a plain scalar's type from the
// implicit resolvers (resolver.py, in their order), a tagged one's from its !!tag, the value
// by the constructors' rules (constructor.py: underscores dropped, 0b/0x/0 prefixes,
// base-60 with ':', .inf/.nan); quoted scalars are strings.
struct PyScalar {
  enum class Kind { null, boolean, integer, real, string, other };
  Kind kind = Kind::string;
  bool boolean = false;
  std::int64_t integer = 0;
  double real = 0;
  std::string other;  // what PyYAML would make of it (for messages), or why it refuses it
};

const std::regex& py_re(int which) {
  static const std::regex res[] = {
      std::regex("yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF"),
      std::regex("[-+]?(?:[0-9][0-9_]*)\\.[0-9_]*(?:[eE][-+][0-9]+)?"
                 "|\\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?"
                 "|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\\.[0-9_]*"
                 "|[-+]?\\.(?:inf|Inf|INF)"
                 "|\\.(?:nan|NaN|NAN)"),
      std::regex("[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+"
                 "|[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+"),
      std::regex("~|null|Null|NULL|"),
      std::regex(
          "[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]"
          "|[0-9][0-9][0-9][0-9]-[0-9][0-9]?-[0-9][0-9]?(?:[Tt]|[ \t]+)[0-9][0-9]?"
          ":[0-9][0-9]:[0-9][0-9](?:\\.[0-9]*)?(?:[ \t]*(?:Z|[-+][0-9][0-9]?(?::[0-9][0-9])?))?"),
      std::regex("=")};
  return res[which];
}
enum { kReBool, kReFloat, kReInt, kReNull, kReTimestamp, kReValue };

// construct_yaml_int: nullopt where Python's int() would raise.
std::optional<std::int64_t> py_int(std::string v) {
  v.erase(std::remove(v.begin(), v.end(), '_'), v.end());
  v = std::string(common::trim(v));
  if (v.empty()) return std::nullopt;
  std::int64_t sign = 1;
  if (v[0] == '-') sign = -1;
  if (v[0] == '-' || v[0] == '+') v.erase(0, 1);
  const auto digits = [](std::string_view d, int base) -> std::optional<std::int64_t> {
    std::int64_t out = 0;
    if (d.empty()) return std::nullopt;
    const auto [p, ec] = std::from_chars(d.data(), d.data() + d.size(), out, base);
    if (ec != std::errc() || p != d.data() + d.size()) return std::nullopt;
    return out;
  };
  std::optional<std::int64_t> n;
  if (v == "0") {
    n = 0;
  } else if (v.rfind("0b", 0) == 0) {
    n = digits(std::string_view(v).substr(2), 2);
  } else if (v.rfind("0x", 0) == 0) {
    n = digits(std::string_view(v).substr(2), 16);
  } else if (!v.empty() && v[0] == '0') {
    n = digits(v, 8);
  } else if (v.find(':') != std::string::npos) {
    std::int64_t total = 0;
    for (const auto& part : common::split(v, ':')) {
      const auto d = digits(part, 10);
      if (!d || total > (std::numeric_limits<std::int64_t>::max() - *d) / 60) return std::nullopt;
      total = total * 60 + *d;
    }
    n = total;
  } else {
    n = digits(v, 10);
  }
  if (!n) return std::nullopt;
  return sign * *n;
}

// construct_yaml_float: nullopt where Python's float() would raise.
std::optional<double> py_float_value(std::string v) {
  v.erase(std::remove(v.begin(), v.end(), '_'), v.end());
  v = common::to_lower(common::trim(v));
  if (v.empty()) return std::nullopt;
  double sign = 1;
  if (v[0] == '-') sign = -1;
  if (v[0] == '-' || v[0] == '+') v.erase(0, 1);
  if (v == ".inf") return sign * std::numeric_limits<double>::infinity();
  if (v == ".nan") return std::numeric_limits<double>::quiet_NaN();
  if (v.find(':') != std::string::npos) {
    double total = 0;
    for (const auto& part : common::split(v, ':')) {
      const auto d = common::parse_double(part);
      if (!d) return std::nullopt;
      total = total * 60 + *d;
    }
    return sign * total;
  }
  const auto d = common::parse_double(v);
  if (!d) return std::nullopt;
  return sign * *d;
}

// Longer plain scalars skip the resolvers' patterns (see py_scalar).
constexpr std::size_t kMaxResolvedBytes = 256;

PyScalar py_scalar(const YAML::Node& n) {
  PyScalar out;
  const std::string& text = n.Scalar();
  std::string tag = n.Tag();
  static const std::string kCore = "tag:yaml.org,2002:";
  if (tag.rfind(kCore, 0) == 0) tag = "!!" + tag.substr(kCore.size());
  if (tag == "?" && text.size() > kMaxResolvedBytes) {
    // Longer than any bool, null, date or number this file can hold (and std::regex recurses
    // per character): a string, unless it is made of number characters only, which PyYAML
    // would read as a number too long to hold here.
    const bool numeric =
        std::string_view("-+0123456789.").find(text.front()) != std::string_view::npos &&
        text.find_first_not_of("0123456789abcdefABCDEFxXoO_+-.:") == std::string::npos;
    if (numeric) {
      out.kind = PyScalar::Kind::other;
      out.other = "a number too long to hold";
      return out;
    }
    return out;  // a string
  }
  if (tag == "?") {  // plain: PyYAML's implicit resolvers
    if (std::regex_match(text, py_re(kReBool))) {
      tag = "!!bool";
    } else if (std::regex_match(text, py_re(kReFloat))) {
      tag = "!!float";
    } else if (std::regex_match(text, py_re(kReInt))) {
      tag = "!!int";
    } else if (std::regex_match(text, py_re(kReNull))) {
      tag = "!!null";
    } else if (std::regex_match(text, py_re(kReTimestamp))) {
      out.kind = PyScalar::Kind::other;
      out.other = "a timestamp";
      return out;
    } else if (std::regex_match(text, py_re(kReValue))) {
      out.kind = PyScalar::Kind::other;
      out.other = "a value key";
      return out;
    } else {
      tag = "!!str";
    }
  } else if (tag == "!") {  // quoted
    tag = "!!str";
  }
  if (tag == "!!str") {
    out.kind = PyScalar::Kind::string;
  } else if (tag == "!!null") {
    out.kind = PyScalar::Kind::null;
  } else if (tag == "!!bool") {
    const std::string lower = common::to_lower(text);
    if (lower == "yes" || lower == "true" || lower == "on") {
      out.kind = PyScalar::Kind::boolean;
      out.boolean = true;
    } else if (lower == "no" || lower == "false" || lower == "off") {
      out.kind = PyScalar::Kind::boolean;
    } else {
      out.kind = PyScalar::Kind::other;
      out.other = "not a boolean";
    }
  } else if (tag == "!!int") {
    if (const auto v = py_int(text)) {
      out.kind = PyScalar::Kind::integer;
      out.integer = *v;
    } else {
      out.kind = PyScalar::Kind::other;
      out.other = "not an integer (or one out of range)";
    }
  } else if (tag == "!!float") {
    if (const auto v = py_float_value(text)) {
      out.kind = PyScalar::Kind::real;
      out.real = *v;
    } else {
      out.kind = PyScalar::Kind::other;
      out.other = "not a number";
    }
  } else {
    out.kind = PyScalar::Kind::other;
    out.other = "tagged " + common::escape_untrusted(n.Tag()) + ", which a safe loader refuses";
  }
  return out;
}

// What PyYAML would have made of a scalar that is not a string.
bool plain_non_string(const YAML::Node& n) {
  return py_scalar(n).kind != PyScalar::Kind::string;
}

// The string fields that name a file, a directory or an interface: no control character at
// all (a NUL would cut the path short where the C library takes it over, a newline or an
// escape sequence would corrupt every log line that prints it).
bool path_like(const std::string& path) {
  static const std::set<std::string> fields = {
      "telemetry.storage_subdir",
      "telemetry.cpu_power.storage_subdir",
      "telemetry.dcgm_exporter.container_image",
      "telemetry.dcgm_exporter.binary",
      "default_gpu_exporter.container_image",
      "default_gpu_exporter.binary",
      "runtime.network_interface",
      "telemetry.cpu_power_exporter.web_config_file",
      "telemetry.cpu_power_exporter.tls_config.ca_file",
      "telemetry.cpu_power_exporter.tls_config.cert_file",
      "telemetry.cpu_power_exporter.tls_config.key_file",
      "telemetry.cpu_power_exporter.basic_auth.username",
      "telemetry.cpu_power_exporter.basic_auth.password_file"};
  return fields.count(path) > 0;
}

// The first control character in `s`: C0 (U+0000 to U+001F), DEL, or C1 (U+0080 to U+009F,
// in UTF-8 0xC2 0x80..0x9F). Its code point and byte offset, or nullopt.
std::optional<std::pair<unsigned, std::size_t>> first_control(std::string_view s, bool nul_only) {
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == 0) return std::pair{0u, i};
    if (nul_only) continue;
    if (c < 0x20 || c == 0x7f) return std::pair{unsigned{c}, i};
    if (c == 0xc2 && i + 1 < s.size()) {
      const auto next = static_cast<unsigned char>(s[i + 1]);
      if (next >= 0x80 && next <= 0x9f) return std::pair{unsigned{next}, i};
    }
  }
  return std::nullopt;
}

std::string describe_control(std::pair<unsigned, std::size_t> found) {
  char code[8];
  std::snprintf(code, sizeof code, "U+%04X", found.first);
  return std::string(found.first == 0 ? "a NUL byte (" : "a control character (") + code +
         ") at byte " + std::to_string(found.second);
}

class Loader {
 public:
  Loader(const std::string& file, Recipe& recipe, std::vector<ConfigError>& errors)
      : file_(file), recipe_(recipe), errors_(errors) {}

  // srtslurm.yaml: only visible_devices_env and default_gpu_exporter are read; every other
  // key is srtctl's to judge. Marks go to the recipe being filled (copied out by the caller).
  void cluster(const YAML::Node& root, ClusterConfig& c) {
    if (!root || root.IsNull()) return;
    if (!root.IsMap()) {
      return fail(root, "a cluster configuration must be a mapping, got " + node_kind(root));
    }
    entries(root, "", false, [&](const std::string& key, const YAML::Node& k, const YAML::Node& v) {
      if (key == "visible_devices_env") {
        note(key, k, v);
        required(key, v, c.visible_devices_env);
      } else if (key == "default_gpu_exporter") {
        note(key, k, v);
        if (is_section(key, v)) {
          exporter_block(key, v, c.default_gpu_exporter.emplace());
        } else {
          c.default_gpu_exporter.reset();  // null: no GPU default
        }
      }
      return true;
    });
  }

  void load(const YAML::Node& root) {
    if (!root || root.IsNull()) return;  // an empty recipe: every default
    if (!root.IsMap()) return fail(root, "a recipe must be a mapping, got " + node_kind(root));
    // Only the sections read here; the rest of an srtctl recipe is not ours to judge.
    entries(root, "", false, [&](const std::string& key, const YAML::Node& k, const YAML::Node& v) {
      if (key == "telemetry") return telemetry(k, v), true;
      if (key == "runtime") return runtime(k, v), true;
      if (key == "observability") return observability(k, v), true;
      if (key == "benchmark") return benchmark(k, v), true;
      if (key == "name" && v.IsScalar() && !plain_non_string(v)) recipe_.name = v.Scalar();
      return true;
    });
  }

 private:
  using Field =
      std::function<bool(const std::string& key, const YAML::Node& k, const YAML::Node& v)>;

  static Mark mark_of(const YAML::Node& n) {
    const auto m = n.Mark();
    if (m.is_null()) return {};
    return {m.line + 1, m.column + 1};
  }

  void fail(const YAML::Node& n, const std::string& message) {
    errors_.push_back({file_, mark_of(n), message});
  }

  static std::string join(const std::string& path, const std::string& key) {
    return path.empty() ? key : path + "." + key;
  }

  // Records where a field sits: its value when that is a scalar, else its key.
  void note(const std::string& path, const YAML::Node& k, const YAML::Node& v) {
    recipe_.marks[path] = mark_of(v.IsScalar() ? v : k);
  }

  using Entry = std::pair<YAML::Node, YAML::Node>;

  static bool is_merge_key(const YAML::Node& k) {
    return k.IsScalar() && k.Tag() == "?" && k.Scalar() == "<<";
  }

  // The entries a merge key (`<<: *defaults`, `<<: [*a, *b]`) brings in, as PyYAML's
  // flatten_mapping orders them: a list's mappings last to first, so that the first one
  // listed wins, each mapping's own merges before its entries.
  bool merged_entries(const YAML::Node& v, const std::string& path, std::vector<Entry>& out,
                      int depth = 0) {
    if (depth > 64) {
      fail(v, (path.empty() ? std::string("recipe") : path) + ": merges nested too deep");
      return false;
    }
    if (v.IsMap()) {
      std::vector<Entry> own;
      for (const auto entry : v) {
        if (is_merge_key(entry.first)) {
          if (!merged_entries(entry.second, path, out, depth + 1)) return false;
        } else {
          own.emplace_back(entry.first, entry.second);
        }
      }
      out.insert(out.end(), own.begin(), own.end());
      return true;
    }
    if (v.IsSequence()) {
      std::vector<std::vector<Entry>> each;
      for (const auto item : v) {
        if (!item.IsMap()) break;
        each.emplace_back();
        if (!merged_entries(item, path, each.back(), depth + 1)) return false;
      }
      if (each.size() == v.size()) {
        for (auto it = each.rbegin(); it != each.rend(); ++it) {
          out.insert(out.end(), it->begin(), it->end());
        }
        return true;
      }
    }
    fail(v, (path.empty() ? std::string("recipe") : path) +
                ": a merge key (<<) takes a mapping or a list of mappings, got " + node_kind(v));
    return false;
  }

  // Visits each entry of `map`; duplicate keys are errors everywhere, unknown keys (the
  // visitor returns false) only where `strict`. Merge keys are resolved as PyYAML does: the
  // merged entries come first, and an entry of the map itself (or a merged one later in
  // PyYAML's order) wins over one of the same key, at the place the key first appeared.
  void entries(const YAML::Node& map, const std::string& path, bool strict, const Field& field,
               const std::vector<std::string>& known = {}) {
    std::vector<Entry> merged, own;
    for (const auto entry : map) {  // by value: yaml-cpp's iterators hand out temporaries
      if (is_merge_key(entry.first)) {
        merged_entries(entry.second, path, merged);
      } else {
        own.emplace_back(entry.first, entry.second);
      }
    }
    std::set<std::string> seen;
    if (!merged.empty()) {
      // Only the map's own keys can be duplicates; a merged key is overridden, as in PyYAML.
      std::vector<Entry> all = merged;
      all.insert(all.end(), own.begin(), own.end());
      std::vector<Entry> resolved;
      std::map<std::string, std::size_t> at;
      std::set<std::string> own_keys;
      for (std::size_t i = 0; i < all.size(); ++i) {
        const auto& k = all[i].first;
        const bool is_own = i >= merged.size();
        if (!k.IsScalar()) {
          resolved.push_back(all[i]);
          continue;
        }
        if (is_own && !own_keys.insert(k.Scalar()).second) {
          resolved.push_back(all[i]);  // a true duplicate: reported below
          continue;
        }
        if (const auto it = at.find(k.Scalar()); it != at.end()) {
          resolved[it->second].second = all[i].second;
          if (is_own) resolved[it->second].first = k;
          continue;
        }
        at.emplace(k.Scalar(), resolved.size());
        resolved.push_back(all[i]);
      }
      own = std::move(resolved);
    }
    for (const auto& [k, v] : own) {
      if (!k.IsScalar()) {
        fail(k, (path.empty() ? std::string("recipe") : path) + ": keys must be plain names");
        continue;
      }
      const std::string key = k.Scalar();
      if (const auto bad = first_control(key, true)) {
        fail(k, (path.empty() ? std::string("recipe") : path) + ": a key contains " +
                    describe_control(*bad));
        continue;
      }
      if (!seen.insert(key).second) {
        fail(k, join(path, key) + ": duplicate key");
        continue;
      }
      if (!field(key, k, v) && strict) {
        fail(k, "unknown key \"" + common::escape_untrusted(key) + "\" in " + path +
                    suggestion(key, known));
      }
    }
  }

  // A mapping section: null is "not given" (nullopt), anything else but a map is an error.
  bool is_section(const std::string& path, const YAML::Node& v) {
    if (v.IsNull()) return false;
    if (!v.IsMap()) {
      fail(v, path + ": expected a mapping, got " + node_kind(v));
      return false;
    }
    return true;
  }

  bool scalar(const std::string& path, const YAML::Node& v, const char* what) {
    if (v.IsScalar()) return true;
    fail(v, path + ": expected " + what + ", got " + node_kind(v));
    return false;
  }

  // Types as PyYAML's safe_load gives them (py_scalar): a bool field takes a YAML 1.1 boolean,
  // an int field an integer (1_000, 0x1F4, !!int "500"), a float field an integer or a float
  // (!!float 1, 1.5e+3).
  void read(const std::string& path, const YAML::Node& v, bool& out) {
    if (!scalar(path, v, "true or false")) return;
    const auto py = py_scalar(v);
    if (py.kind == PyScalar::Kind::boolean) {
      out = py.boolean;
    } else {
      fail(v, path + ": expected true or false, got " + node_kind(v));
    }
  }

  void read(const std::string& path, const YAML::Node& v, std::int64_t& out) {
    if (!scalar(path, v, "an integer")) return;
    if (const auto py = py_scalar(v); py.kind == PyScalar::Kind::integer) {
      out = py.integer;
    } else {
      fail(v, path + ": expected an integer, got " + node_kind(v));
    }
  }

  void read(const std::string& path, const YAML::Node& v, double& out) {
    if (!scalar(path, v, "a number")) return;
    const auto py = py_scalar(v);
    if (py.kind == PyScalar::Kind::real) {
      out = py.real;
    } else if (py.kind == PyScalar::Kind::integer) {
      out = static_cast<double>(py.integer);
    } else {
      fail(v, path + ": expected a number, got " + node_kind(v));
    }
  }

  void read(const std::string& path, const YAML::Node& v, std::string& out) {
    if (!scalar(path, v, "a string")) return;
    if (plain_non_string(v)) {
      fail(v, path + ": expected a string, got " + v.Scalar() + " (quote it to make it one)");
      return;
    }
    if (!text_ok(path, v)) return;
    out = v.Scalar();
  }

  // No string may hold a NUL (every consumer is a C string in the end); a path-like field
  // (path_like) no control character at all.
  bool text_ok(const std::string& path, const YAML::Node& v) {
    const bool is_path = path_like(path);
    if (const auto bad = first_control(v.Scalar(), !is_path)) {
      fail(v, path + ": " + describe_control(*bad) + " is not allowed in " +
                  (is_path ? "a path or name" : "a string"));
      return false;
    }
    return true;
  }

  // A list of strings (gpu_labels.instance).
  void read(const std::string& path, const YAML::Node& v, std::vector<std::string>& out) {
    if (!v.IsSequence()) {
      fail(v, path + ": expected a list of strings, got " + node_kind(v));
      return;
    }
    out.clear();
    for (std::size_t i = 0; i < v.size(); ++i) {
      std::string item;
      const auto before = errors_.size();
      read(path + "[" + std::to_string(i) + "]", v[i], item);
      if (errors_.size() == before) out.push_back(std::move(item));
    }
  }

  // Optional fields: null leaves them unset.
  template <typename T>
  void read(const std::string& path, const YAML::Node& v, std::optional<T>& out) {
    if (v.IsNull()) return out.reset();
    T value{};
    const auto before = errors_.size();
    read(path, v, value);
    if (errors_.size() == before) out = std::move(value);
  }

  // Required (non-nullable) fields: null is an error, as srtctl's schema has it.
  template <typename T>
  void required(const std::string& path, const YAML::Node& v, T& out) {
    if (v.IsNull()) return fail(v, path + ": may not be null");
    read(path, v, out);
  }

  void telemetry(const YAML::Node& k, const YAML::Node& v) {
    const std::string p = "telemetry";
    note(p, k, v);
    if (!is_section(p, v)) return;
    auto& t = recipe_.telemetry;
    static const std::vector<std::string> known = {"enabled",
                                                   "dcgm_exporter",
                                                   "collect_interval_ms",
                                                   "storage_subdir",
                                                   "required",
                                                   "startup_timeout_seconds",
                                                   "clock_sync_check",
                                                   "request_timeout_seconds",
                                                   "collector_join_timeout_seconds",
                                                   "cpu_power_exporter",
                                                   "cpu_power"};
    entries(
        v, p, true,
        [&](const std::string& key, const YAML::Node& fk, const YAML::Node& fv) {
          const std::string path = join(p, key);
          note(path, fk, fv);
          if (key == "enabled") return required(path, fv, t.enabled), true;
          if (key == "collect_interval_ms") return required(path, fv, t.collect_interval_ms), true;
          if (key == "storage_subdir") return required(path, fv, t.storage_subdir), true;
          if (key == "required") return required(path, fv, t.required), true;
          if (key == "startup_timeout_seconds")
            return required(path, fv, t.startup_timeout_seconds), true;
          if (key == "request_timeout_seconds")
            return required(path, fv, t.request_timeout_seconds), true;
          if (key == "collector_join_timeout_seconds")
            return read(path, fv, t.collector_join_timeout_seconds), true;
          if (key == "clock_sync_check") return required(path, fv, t.clock_sync_check), true;
          if (key == "dcgm_exporter") return dcgm_exporter(path, fv), true;
          if (key == "cpu_power_exporter") return cpu_power_exporter(path, fv), true;
          if (key == "cpu_power") return cpu_power(path, fv), true;
          return false;
        },
        known);
  }

  void dcgm_exporter(const std::string& p, const YAML::Node& v) {
    if (!is_section(p, v)) return recipe_.telemetry.dcgm_exporter.reset();
    exporter_block(p, v, recipe_.telemetry.dcgm_exporter.emplace());
  }

  // telemetry.dcgm_exporter, or the cluster's default_gpu_exporter: the same block.
  void exporter_block(const std::string& p, const YAML::Node& v, DcgmExporterConfig& d) {
    bool image = false, port = false;
    entries(v, p, true,
            [&](const std::string& key, const YAML::Node& fk, const YAML::Node& fv) {
              const std::string path = join(p, key);
              note(path, fk, fv);
              if (key == "container_image")
                return image = true, required(path, fv, d.container_image), true;
              if (key == "port") return port = true, required(path, fv, d.port), true;
              if (key == "command") return read(path, fv, d.command), true;
              if (key == "binary") return read(path, fv, d.binary), true;
              if (key == "kind") return required(path, fv, d.kind), true;
              if (key == "gpu_labels") return gpu_labels(path, fv, d.gpu_labels), true;
              if (key == "gpu_metrics") return gpu_metrics(path, fv, d.gpu_metrics), true;
              return false;
            },
            {"container_image", "port", "command", "binary", "kind", "gpu_labels", "gpu_metrics"});
    if (!image) fail(v, p + ".container_image: missing required field");
    if (!port) fail(v, p + ".port: missing required field");
  }

  void gpu_labels(const std::string& p, const YAML::Node& v, std::optional<GpuLabelsConfig>& out) {
    if (!is_section(p, v)) return out.reset();
    auto& l = out.emplace();
    bool index = false, identity = false;
    entries(v, p, true,
            [&](const std::string& key, const YAML::Node& fk, const YAML::Node& fv) {
              const std::string path = join(p, key);
              note(path, fk, fv);
              if (key == "index") return index = true, required(path, fv, l.index), true;
              if (key == "identity") return identity = true, required(path, fv, l.identity), true;
              if (key == "instance") return required(path, fv, l.instance), true;
              return false;
            },
            {"index", "identity", "instance"});
    if (!index) fail(v, p + ".index: missing required field");
    if (!identity) fail(v, p + ".identity: missing required field");
  }

  // One `{metric: NAME}` (with `scope` for power). Returns false when the block is null.
  bool gpu_metric(const std::string& p, const YAML::Node& v, std::string& metric,
                  std::string* scope) {
    if (!is_section(p, v)) return false;
    bool have_metric = false, have_scope = false;
    std::vector<std::string> known = {"metric"};
    if (scope) known.push_back("scope");
    entries(
        v, p, true,
        [&](const std::string& key, const YAML::Node& fk, const YAML::Node& fv) {
          const std::string path = join(p, key);
          note(path, fk, fv);
          if (key == "metric") return have_metric = true, required(path, fv, metric), true;
          if (key == "scope" && scope) return have_scope = true, required(path, fv, *scope), true;
          return false;
        },
        known);
    if (!have_metric) fail(v, p + ".metric: missing required field");
    if (scope && !have_scope) fail(v, p + ".scope: missing required field");
    return true;
  }

  void gpu_metrics(const std::string& p, const YAML::Node& v,
                   std::optional<GpuMetricsConfig>& out) {
    if (!is_section(p, v)) return out.reset();
    auto& m = out.emplace();
    bool power = false;
    const auto optional_metric = [&](const std::string& path, const YAML::Node& fv,
                                     std::optional<std::string>& field) {
      std::string name;
      if (gpu_metric(path, fv, name, nullptr)) {
        field = name;
      } else {
        field.reset();
      }
    };
    entries(v, p, true,
            [&](const std::string& key, const YAML::Node& fk, const YAML::Node& fv) {
              const std::string path = join(p, key);
              note(path, fk, fv);
              if (key == "power") {
                power = true;
                if (fv.IsNull()) return fail(fv, path + ": may not be null"), true;
                return gpu_metric(path, fv, m.power_metric, &m.power_scope), true;
              }
              if (key == "gpu_util") return optional_metric(path, fv, m.gpu_util_metric), true;
              if (key == "sm_active") return optional_metric(path, fv, m.sm_active_metric), true;
              if (key == "temperature")
                return optional_metric(path, fv, m.temperature_metric), true;
              return false;
            },
            {"power", "gpu_util", "sm_active", "temperature"});
    if (!power) fail(v, p + ".power: missing required field");
  }

  void cpu_power_exporter(const std::string& p, const YAML::Node& v) {
    // `cpu_power_exporter: {}` turns the leg on with the defaults; null leaves it off.
    if (!is_section(p, v)) return recipe_.telemetry.cpu_power_exporter.reset();
    auto& c = recipe_.telemetry.cpu_power_exporter.emplace();
    entries(v, p, true,
            [&](const std::string& key, const YAML::Node& fk, const YAML::Node& fv) {
              const std::string path = join(p, key);
              note(path, fk, fv);
              if (key == "port") return required(path, fv, c.port), true;
              if (key == "source") return required(path, fv, c.source), true;
              if (key == "web_config_file") return read(path, fv, c.web_config_file), true;
              if (key == "tls_config") return scrape_tls(path, fv, c.tls_config), true;
              if (key == "basic_auth") return scrape_basic_auth(path, fv, c.basic_auth), true;
              return false;
            },
            {"port", "source", "web_config_file", "tls_config", "basic_auth"});
  }

  // `tls_config: {}` means https with the system's trust store; null leaves TLS off.
  void scrape_tls(const std::string& p, const YAML::Node& v, std::optional<ScrapeTlsConfig>& out) {
    if (!is_section(p, v)) return out.reset();
    auto& t = out.emplace();
    entries(v, p, true,
            [&](const std::string& key, const YAML::Node& fk, const YAML::Node& fv) {
              const std::string path = join(p, key);
              note(path, fk, fv);
              if (key == "ca_file") return read(path, fv, t.ca_file), true;
              if (key == "cert_file") return read(path, fv, t.cert_file), true;
              if (key == "key_file") return read(path, fv, t.key_file), true;
              return false;
            },
            {"ca_file", "cert_file", "key_file"});
  }

  void scrape_basic_auth(const std::string& p, const YAML::Node& v,
                         std::optional<ScrapeBasicAuth>& out) {
    if (!is_section(p, v)) return out.reset();
    auto& b = out.emplace();
    bool user = false, file = false;
    entries(v, p, true,
            [&](const std::string& key, const YAML::Node& fk, const YAML::Node& fv) {
              const std::string path = join(p, key);
              note(path, fk, fv);
              if (key == "username") return user = true, required(path, fv, b.username), true;
              if (key == "password_file")
                return file = true, required(path, fv, b.password_file), true;
              if (key == "password") {
                fail(fk, path +
                             ": a password is not written in the recipe; put it in a file "
                             "readable only by you and name it in password_file");
                return true;
              }
              return false;
            },
            {"username", "password_file"});
    if (!user) fail(v, p + ".username: missing required field");
    if (!file) fail(v, p + ".password_file: missing required field");
  }

  void cpu_power(const std::string& p, const YAML::Node& v) {
    if (!is_section(p, v)) return;
    auto& c = recipe_.telemetry.cpu_power;
    entries(v, p, true,
            [&](const std::string& key, const YAML::Node& fk, const YAML::Node& fv) {
              const std::string path = join(p, key);
              note(path, fk, fv);
              if (key == "enabled") return required(path, fv, c.enabled), true;
              if (key == "source") return required(path, fv, c.source), true;
              if (key == "sample_interval_seconds")
                return required(path, fv, c.sample_interval_seconds), true;
              if (key == "startup_timeout_seconds")
                return required(path, fv, c.startup_timeout_seconds), true;
              if (key == "required") return required(path, fv, c.required), true;
              if (key == "storage_subdir") return required(path, fv, c.storage_subdir), true;
              return false;
            },
            {"enabled", "source", "sample_interval_seconds", "startup_timeout_seconds", "required",
             "storage_subdir"});
  }

  void runtime(const YAML::Node& k, const YAML::Node& v) {
    const std::string p = "runtime";
    note(p, k, v);
    if (!is_section(p, v)) return;
    entries(v, p, false, [&](const std::string& key, const YAML::Node& fk, const YAML::Node& fv) {
      const std::string path = join(p, key);
      if (key == "network_interface") {
        note(path, fk, fv);
        read(path, fv, recipe_.runtime.network_interface);
      } else if (key == "srun_options") {
        note(path, fk, fv);
        srun_options(path, fv);
      }
      return true;
    });
  }

  void srun_options(const std::string& p, const YAML::Node& v) {
    if (!is_section(p, v)) return;
    entries(v, p, false, [&](const std::string& key, const YAML::Node&, const YAML::Node& fv) {
      const std::string path = join(p, key);
      if (fv.IsNull()) {
        recipe_.runtime.srun_options.emplace_back(key, std::nullopt);
      } else if (scalar(path, fv, "a value or null")) {
        const auto py = py_scalar(fv);
        if (py.kind == PyScalar::Kind::boolean && py.boolean) {
          recipe_.runtime.srun_options.emplace_back(key, std::nullopt);  // a bare flag
        } else if (py.kind == PyScalar::Kind::boolean || py.kind == PyScalar::Kind::null) {
          // A flag switched off (or a tagged null): not passed.
          if (py.kind == PyScalar::Kind::null) {
            recipe_.runtime.srun_options.emplace_back(key, std::nullopt);
          }
        } else if (py.kind == PyScalar::Kind::integer) {
          // As Python prints the number PyYAML read (--time=1000 for 1_000, 500 for 0x1F4).
          recipe_.runtime.srun_options.emplace_back(key, std::to_string(py.integer));
        } else if (text_ok(path, fv)) {
          recipe_.runtime.srun_options.emplace_back(key, fv.Scalar());
        }
      }
      return true;
    });
  }

  void observability(const YAML::Node& k, const YAML::Node& v) {
    note("observability", k, v);
    if (!is_section("observability", v)) return;
    entries(v, "observability", false,
            [&](const std::string& key, const YAML::Node& fk, const YAML::Node& fv) {
              if (key == "tachometer") tachometer(fk, fv);
              return true;
            });
  }

  void tachometer(const YAML::Node& k, const YAML::Node& v) {
    const std::string p = "observability.tachometer";
    note(p, k, v);
    if (!is_section(p, v)) return;
    auto& t = recipe_.tachometer;
    entries(v, p, false, [&](const std::string& key, const YAML::Node& fk, const YAML::Node& fv) {
      const std::string path = join(p, key);
      if (key == "enabled") {
        note(path, fk, fv);
        read(path, fv, t.enabled);
      } else if (key == "dcgm_exporter" || key == "node_exporter") {
        note(path, fk, fv);
        auto& port = key == "dcgm_exporter" ? t.dcgm_exporter_port : t.node_exporter_port;
        if (!is_section(path, fv)) return true;
        entries(fv, path, false,
                [&](const std::string& sub, const YAML::Node& sk, const YAML::Node& sv) {
                  if (sub == "port") {
                    note(path + ".port", sk, sv);
                    if (!sv.IsNull()) read(path + ".port", sv, port);  // null: built-in default
                  }
                  return true;
                });
      }
      return true;
    });
  }

  void benchmark(const YAML::Node& k, const YAML::Node& v) {
    note("benchmark", k, v);
    if (!is_section("benchmark", v)) return;
    entries(v, "benchmark", false,
            [&](const std::string& key, const YAML::Node& fk, const YAML::Node& fv) {
              if (key == "type") {
                note("benchmark.type", fk, fv);
                read("benchmark.type", fv, recipe_.benchmark_type);
              }
              return true;
            });
  }

  const std::string& file_;
  Recipe& recipe_;
  std::vector<ConfigError>& errors_;
};

// Notes where each document starts, without building any.
class DocumentStarts : public YAML::EventHandler {
 public:
  void OnDocumentStart(const YAML::Mark& mark) override { starts.push_back(mark); }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t,
                const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}

  std::vector<YAML::Mark> starts;
};

// Where the second document starts (its `---`), or nullopt when the text holds one document
// or none. A syntax error inside the second document does not hide it: the second document
// is the mistake to report. A syntax error before it throws.
std::optional<Mark> second_document(std::string_view text) {
  std::istringstream in{std::string(text)};
  YAML::Parser parser(in);
  DocumentStarts handler;
  try {
    if (parser.HandleNextDocument(handler)) parser.HandleNextDocument(handler);
  } catch (const YAML::Exception&) {
    if (handler.starts.size() < 2) throw;
  }
  if (handler.starts.size() < 2) return std::nullopt;
  const YAML::Mark& m = handler.starts[1];
  if (m.is_null()) return Mark{};
  return Mark{m.line + 1, m.column + 1};
}

// The whole file, or nullopt with the message in `error`. The size is checked before any
// parsing, twice: fstat on the open file refuses a regular file that is too large without
// reading it, and the read stops after cap + 1 bytes, so a file that grows meanwhile, a FIFO
// or a character device cannot get past the cap either.
std::optional<std::string> read_capped(const std::string& path, std::size_t cap,
                                       std::string* error) {
  const auto too_large = [&](const std::string& size) {
    *error = "recipe is " + size + ", larger than the " + std::to_string(cap) + "-byte limit (" +
             std::to_string(cap >> 20) + " MiB) on recipe files";
  };
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    *error = std::string("cannot read recipe: ") + std::strerror(errno);
    return std::nullopt;
  }
  struct stat st {};
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
      static_cast<std::uint64_t>(st.st_size) > cap) {
    ::close(fd);
    too_large(std::to_string(st.st_size) + " bytes");
    return std::nullopt;
  }
  std::string out;
  char buf[65536];
  while (out.size() <= cap) {
    const std::size_t want = std::min(sizeof buf, cap + 1 - out.size());
    const ssize_t n = ::read(fd, buf, want);
    if (n < 0) {
      if (errno == EINTR) continue;
      *error = std::string("cannot read recipe: ") + std::strerror(errno);
      ::close(fd);
      return std::nullopt;
    }
    if (n == 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  if (out.size() > cap) {
    too_large("more than " + std::to_string(cap) + " bytes");
    return std::nullopt;
  }
  return out;
}

}  // namespace

namespace {

// The one YAML document of `text`, or nullopt with the error appended.
std::optional<YAML::Node> load_document(std::string_view text, const std::string& file,
                                        const char* what, std::vector<ConfigError>& errors) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    Mark mark;
    if (!e.mark.is_null()) mark = {e.mark.line + 1, e.mark.column + 1};
    errors.push_back({file, mark, "invalid YAML: " + e.msg});
    return std::nullopt;
  }
  // YAML::Load reads the first document only; whatever follows a second `---` would be
  // dropped without a word, so a second document is an error at the line that starts it.
  try {
    if (const auto second = second_document(text)) {
      errors.push_back({file, *second,
                        std::string("a ") + what +
                            " is one YAML document; a second one starts here (remove the "
                            "`---` line and what follows it, or merge the two)"});
      return std::nullopt;
    }
  } catch (const YAML::Exception& e) {  // not expected: YAML::Load read the first one
    Mark mark;
    if (!e.mark.is_null()) mark = {e.mark.line + 1, e.mark.column + 1};
    errors.push_back({file, mark, "invalid YAML: " + e.msg});
    return std::nullopt;
  }
  return root;
}

// srtctl's inheritance: a recipe that enables telemetry without a GPU exporter and without a
// CPU leg takes the cluster's default_gpu_exporter. Recipe settings win otherwise.
void inherit_cluster(Recipe& recipe, const ClusterConfig& cluster) {
  recipe.cluster = cluster;
  auto& t = recipe.telemetry;
  if (t.enabled && !t.dcgm_exporter && !t.cpu_power_exporter && !t.cpu_power.enabled &&
      cluster.default_gpu_exporter) {
    t.dcgm_exporter = cluster.default_gpu_exporter;
    recipe.gpu_exporter_inherited = true;
  }
}

}  // namespace

Recipe parse_recipe_text(std::string_view text, const std::string& file,
                         std::vector<ConfigError>& errors) {
  Recipe recipe;
  recipe.file = file;
  const auto root = load_document(text, file, "recipe", errors);
  if (!root) return recipe;
  try {
    Loader(file, recipe, errors).load(*root);
  } catch (const YAML::Exception& e) {  // yaml-cpp's own conversions; not expected
    errors.push_back({file, {}, std::string("invalid recipe: ") + e.what()});
  }
  return recipe;
}

LoadResult load_recipe_text(std::string_view text, const std::string& file,
                            const ClusterConfig* cluster) {
  LoadResult result;
  Recipe recipe = parse_recipe_text(text, file, result.errors);
  if (!result.errors.empty()) return result;  // rules on half-read fields would only add noise
  if (cluster) inherit_cluster(recipe, *cluster);
  result.errors = validate_recipe(recipe);
  if (!result.errors.empty()) return result;
  result.warnings = recipe_warnings(recipe);
  result.recipe = std::move(recipe);
  return result;
}

LoadResult load_recipe_file(const std::string& path, const ClusterConfig* cluster) {
  LoadResult result;
  std::string error;
  std::optional<std::string> text = read_capped(path, kMaxRecipeBytes, &error);
  if (!text) {
    result.errors.push_back({path, {}, error});
    return result;
  }
  return load_recipe_text(*text, path, cluster);
}

ClusterLoadResult load_cluster_text(std::string_view text, const std::string& file) {
  ClusterLoadResult result;
  ClusterConfig cluster;
  cluster.file = file;
  if (const auto root = load_document(text, file, "cluster configuration", result.errors)) {
    Recipe scratch;  // the loader notes marks in a recipe; they are the cluster file's here
    try {
      Loader(file, scratch, result.errors).cluster(*root, cluster);
    } catch (const YAML::Exception& e) {
      result.errors.push_back(
          {file, {}, std::string("invalid cluster configuration: ") + e.what()});
    }
    cluster.marks = std::move(scratch.marks);
  }
  if (!result.errors.empty()) return result;
  result.errors = validate_cluster(cluster);
  if (result.errors.empty()) result.cluster = std::move(cluster);
  return result;
}

ClusterLoadResult load_cluster_file(const std::string& path) {
  ClusterLoadResult result;
  std::string error;
  std::optional<std::string> text = read_capped(path, kMaxRecipeBytes, &error);
  if (!text) {
    // read_capped speaks of a recipe; this is the cluster configuration.
    const auto at = error.find("recipe");
    if (at != std::string::npos) error.replace(at, 6, "cluster configuration");
    result.errors.push_back({path, {}, error});
    return result;
  }
  return load_cluster_text(*text, path);
}

}  // namespace cpupower::config
