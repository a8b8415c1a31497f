#include "config/yaml_walk.hpp"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <limits>
#include <map>
#include <regex>

#include "common/text.hpp"

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

// The text as construct_yaml_int and construct_yaml_float hand it to Python: underscores
// dropped, trimmed, and its sign (-1 or 1) taken off.
std::pair<int, std::string> unsigned_text(std::string v) {
  v.erase(std::remove(v.begin(), v.end(), '_'), v.end());
  v = std::string(common::trim(v));
  const int sign = !v.empty() && v[0] == '-' ? -1 : 1;
  if (!v.empty() && (v[0] == '-' || v[0] == '+')) v.erase(0, 1);
  return {sign, v};
}

// construct_yaml_int: nullopt where Python's int() would raise.
std::optional<std::int64_t> py_int(const std::string& text) {
  const auto [sign, v] = unsigned_text(text);
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
std::optional<double> py_float_value(const std::string& text) {
  auto [sign, v] = unsigned_text(text);
  v = common::to_lower(v);
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

bool is_merge_key(const YAML::Node& k) {
  return k.IsScalar() && k.Tag() == "?" && k.Scalar() == "<<";
}

}  // namespace

PyScalar py_scalar(const YAML::Node& n) {
  using Kind = PyScalar::Kind;
  const auto make = [](Kind kind, std::string other = {}) {
    PyScalar out;
    out.kind = kind;
    out.other = std::move(other);
    return out;
  };
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
    return numeric ? make(Kind::other, "a number too long to hold") : make(Kind::string);
  }
  if (tag == "?") {  // plain: PyYAML's implicit resolvers, in their order; a tag or what it is
    static const std::pair<std::regex, std::string> kResolvers[] = {
        {std::regex("yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF"),
         "!!bool"},
        {std::regex("[-+]?(?:[0-9][0-9_]*)\\.[0-9_]*(?:[eE][-+][0-9]+)?"
                    "|\\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?"
                    "|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\\.[0-9_]*"
                    "|[-+]?\\.(?:inf|Inf|INF)"
                    "|\\.(?:nan|NaN|NAN)"),
         "!!float"},
        {std::regex("[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+"
                    "|[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+"),
         "!!int"},
        {std::regex("~|null|Null|NULL|"), "!!null"},
        {std::regex("[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]"
                    "|[0-9][0-9][0-9][0-9]-[0-9][0-9]?-[0-9][0-9]?(?:[Tt]|[ \t]+)[0-9][0-9]?"
                    ":[0-9][0-9]:[0-9][0-9](?:\\.[0-9]*)?"
                    "(?:[ \t]*(?:Z|[-+][0-9][0-9]?(?::[0-9][0-9])?))?"),
         "a timestamp"},
        {std::regex("="), "a value key"}};
    tag = "!!str";
    for (const auto& [re, resolved] : kResolvers) {
      if (std::regex_match(text, re)) {
        tag = resolved;
        break;
      }
    }
    if (tag.rfind("!!", 0) != 0) return make(Kind::other, tag);
  }
  if (tag == "!!str" || tag == "!") return make(Kind::string);  // "!": quoted
  if (tag == "!!null") return make(Kind::null);
  if (tag == "!!bool") {
    const std::string lower = common::to_lower(text);
    PyScalar out = make(Kind::boolean);
    out.boolean = lower == "yes" || lower == "true" || lower == "on";
    if (out.boolean || lower == "no" || lower == "false" || lower == "off") return out;
    return make(Kind::other, "not a boolean");
  }
  if (tag == "!!int") {
    const auto v = py_int(text);
    if (!v) return make(Kind::other, "not an integer (or one out of range)");
    PyScalar out = make(Kind::integer);
    out.integer = *v;
    return out;
  }
  if (tag == "!!float") {
    const auto v = py_float_value(text);
    if (!v) return make(Kind::other, "not a number");
    PyScalar out = make(Kind::real);
    out.real = *v;
    return out;
  }
  return make(Kind::other,
              "tagged " + common::escape_untrusted(n.Tag()) + ", which a safe loader refuses");
}

YamlWalker::YamlWalker(std::string file, YamlDialect dialect, Report report)
    : file_(std::move(file)), dialect_(std::move(dialect)), report_(std::move(report)) {}

Mark mark_of(const YAML::Mark& m) {
  if (m.is_null()) return {};
  return {m.line + 1, m.column + 1};
}

std::string YamlWalker::join(const std::string& path, const std::string& key) {
  return path.empty() ? key : path + "." + key;
}

std::string YamlWalker::kind(const YAML::Node& n) {
  if (n.IsMap()) return "a mapping";
  if (n.IsSequence()) return "a sequence";
  if (n.IsNull()) return "null";
  return "\"" + common::escape_untrusted(n.Scalar()) + "\"";  // printed on a terminal
}

void YamlWalker::fail(const YAML::Node& at, std::string message) {
  ++failures_;
  report_({file_, mark_of(at.Mark()), std::move(message)});
}

// The entries a merge key (`<<: *defaults`, `<<: [*a, *b]`) brings in, as PyYAML's
// flatten_mapping orders them: a list's mappings last to first, so that the first one
// listed wins, each mapping's own merges before its entries.
bool YamlWalker::merged_entries(const YAML::Node& v, const std::string& path,
                                std::vector<Entry>& out, int depth) {
  if (depth > 64) {
    fail(v, where(path) + ": merges nested too deep");
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
  fail(v, where(path) + ": a merge key (<<) takes a mapping or a list of mappings, got " + kind(v));
  return false;
}

void YamlWalker::entries(const YAML::Node& map, const std::string& path, const Visit& visit,
                         const std::vector<std::string>* known) {
  std::vector<Entry> merged, own;
  for (const auto entry : map) {  // by value: yaml-cpp's iterators hand out temporaries
    if (is_merge_key(entry.first)) {
      merged_entries(entry.second, path, merged);
    } else {
      own.emplace_back(entry.first, entry.second);
    }
  }
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
  std::set<std::string> seen;
  for (const auto& [k, v] : own) {
    if (!k.IsScalar()) {
      fail(k, where(path) + ": keys must be plain names");
      continue;
    }
    const std::string key = k.Scalar();
    if (const auto bad = first_control(key, true)) {
      fail(k, where(path) + ": a key contains " + describe_control(*bad));
      continue;
    }
    if (!seen.insert(key).second) {
      fail(k, join(path, key) + ": duplicate key");
      continue;
    }
    if (!visit(key, k, v) && known) {
      fail(k, "unknown key \"" + common::escape_untrusted(key) + "\" in " + path +
                  suggestion(key, *known));
    }
  }
}

bool YamlWalker::section(const std::string& path, const YAML::Node& v) {
  if (v.IsNull()) return false;
  if (!v.IsMap()) {
    fail(v, path + ": expected a mapping, got " + kind(v));
    return false;
  }
  return true;
}

bool YamlWalker::scalar(const std::string& path, const YAML::Node& v, const char* what) {
  if (v.IsScalar()) return true;
  fail(v, path + ": expected " + what + ", got " + kind(v));
  return false;
}

bool YamlWalker::text_ok(const std::string& path, const YAML::Node& v) {
  const bool is_path = dialect_.path_fields && dialect_.path_fields->count(path) > 0;
  if (const auto bad = first_control(v.Scalar(), !is_path)) {
    fail(v, path + ": " + describe_control(*bad) + " is not allowed in " +
                (is_path ? "a path or name" : "a string"));
    return false;
  }
  return true;
}

std::optional<PyScalar> YamlWalker::typed(const std::string& path, const YAML::Node& v,
                                          const char* what, PyScalar::Kind want) {
  if (!scalar(path, v, what)) return std::nullopt;
  const auto py = py_scalar(v);
  if (py.kind == want || (want == PyScalar::Kind::real && py.kind == PyScalar::Kind::integer)) {
    return py;
  }
  fail(v, path + ": expected " + what + ", got " + kind(v));
  return std::nullopt;
}

void YamlWalker::read(const std::string& path, const YAML::Node& v, bool& out) {
  if (const auto py = typed(path, v, "true or false", PyScalar::Kind::boolean)) out = py->boolean;
}

void YamlWalker::read(const std::string& path, const YAML::Node& v, std::int64_t& out) {
  if (const auto py = typed(path, v, "an integer", PyScalar::Kind::integer)) out = py->integer;
}

void YamlWalker::read(const std::string& path, const YAML::Node& v, double& out) {
  if (const auto py = typed(path, v, "a number", PyScalar::Kind::real)) {
    out = py->kind == PyScalar::Kind::real ? py->real : static_cast<double>(py->integer);
  }
}

void YamlWalker::read(const std::string& path, const YAML::Node& v, std::string& out) {
  if (dialect_.strings_as_written && v.IsNull()) return out.clear();
  if (!scalar(path, v, "a string")) return;
  if (!dialect_.strings_as_written && py_scalar(v).kind != PyScalar::Kind::string) {
    return fail(v, path + ": expected a string, got " + v.Scalar() + " (quote it to make it one)");
  }
  if (text_ok(path, v)) out = v.Scalar();
}

void YamlWalker::read(const std::string& path, const YAML::Node& v, std::vector<std::string>& out) {
  if (!v.IsSequence()) return fail(v, path + ": expected a list of strings, got " + kind(v));
  out.clear();
  for (std::size_t i = 0; i < v.size(); ++i) {
    std::string item;
    const auto before = failures_;
    read(path + "[" + std::to_string(i) + "]", v[i], item);
    if (failures_ == before) out.push_back(std::move(item));
  }
}

}  // namespace cpupower::config
