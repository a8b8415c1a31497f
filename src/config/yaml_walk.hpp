#pragma once
// The one walker over yaml-cpp nodes, for every YAML file we read: the recipe and srtctl's
// cluster configuration (config/load.cpp) and the exporter's web config
// (exporter/web_config.cpp). Mapping entries (merge keys, duplicate and unknown keys) and
// typed getters (string, bool, integer, number, string list), each problem reported with its
// place and a message that starts with the field's dotted path.
//
// Scalars resolve as YAML 1.1 does, the way PyYAML's safe_load reads a recipe and Go's yaml.v2
// reads exporter-toolkit's web config (py_scalar). So a boolean, in both files, is true, false,
// yes, no, on or off, each in lower case, Capitalised or UPPER case (yaml.v2's y and n are not);
// a quoted "true" is a string.

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "config/error.hpp"

namespace cpupower::config {

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
PyScalar py_scalar(const YAML::Node& n);

// yaml-cpp's 0-based place, 1-based; no place for a null mark.
Mark mark_of(const YAML::Mark& m);

// Where the two files differ.
struct YamlDialect {
  // Names the top level in messages about its keys ("recipe: keys must be plain names").
  std::string top;
  // A string field given a plain scalar of another type (`subdir: 123`): PyYAML's typed
  // fields (false) refuse it and ask for quotes; Go's yaml.v2 (true) takes the text as
  // written, and null as "".
  bool strings_as_written = false;
  // The fields (dotted paths) that name a file, a directory or an interface: no control
  // character at all in them (a newline or an escape sequence would corrupt every log line
  // that prints them). Every other string refuses only NUL (every consumer is a C string).
  const std::set<std::string>* path_fields = nullptr;
};

class YamlWalker {
 public:
  // Each problem goes to `report`, which may throw to stop at the first.
  using Report = std::function<void(ConfigError)>;
  YamlWalker(std::string file, YamlDialect dialect, Report report);

  static std::string join(const std::string& path, const std::string& key);
  // "a mapping", "a sequence", "null" or the scalar quoted and escaped, for "got ...".
  static std::string kind(const YAML::Node& n);

  void fail(const YAML::Node& at, std::string message);
  std::size_t failures() const { return failures_; }

  // Visits each entry of `map` (at dotted `path`, "" for the top level) with its key's text.
  // Keys must be scalars without NUL, and unique. Merge keys (`<<: *defaults`) are resolved
  // as PyYAML does: the merged entries come first, and an entry of the map itself (or a
  // merged one later in PyYAML's order) wins over one of the same key, at the place the key
  // first appeared. With `known`, a key the visitor does not take (returns false) is an
  // error that suggests the nearest known key.
  using Visit =
      std::function<bool(const std::string& key, const YAML::Node& k, const YAML::Node& v)>;
  void entries(const YAML::Node& map, const std::string& path, const Visit& visit,
               const std::vector<std::string>* known = nullptr);

  // A mapping section: false for null (not given) and, with an error, for anything else but
  // a mapping.
  bool section(const std::string& path, const YAML::Node& v);
  // A scalar, or false with "PATH: expected WHAT, got ...".
  bool scalar(const std::string& path, const YAML::Node& v, const char* what);
  // A string's control characters, by the dialect's path_fields rule.
  bool text_ok(const std::string& path, const YAML::Node& v);

  // The typed getters; on an error `out` keeps its value.
  void read(const std::string& path, const YAML::Node& v, bool& out);
  void read(const std::string& path, const YAML::Node& v, std::int64_t& out);
  void read(const std::string& path, const YAML::Node& v, double& out);  // integer or float
  void read(const std::string& path, const YAML::Node& v, std::string& out);
  void read(const std::string& path, const YAML::Node& v, std::vector<std::string>& out);

  // Optional fields: null leaves them unset.
  template <typename T>
  void read(const std::string& path, const YAML::Node& v, std::optional<T>& out) {
    if (v.IsNull()) return out.reset();
    T value{};
    const auto before = failures_;
    read(path, v, value);
    if (failures_ == before) out = std::move(value);
  }

  // Required (non-nullable) fields: null is an error, as srtctl's schema has it.
  template <typename T>
  void required(const std::string& path, const YAML::Node& v, T& out) {
    if (v.IsNull()) return fail(v, path + ": may not be null");
    read(path, v, out);
  }

 private:
  using Entry = std::pair<YAML::Node, YAML::Node>;
  bool merged_entries(const YAML::Node& v, const std::string& path, std::vector<Entry>& out,
                      int depth = 0);
  // A scalar of PyYAML's type `want` (a float field takes an integer too), or an error saying
  // what was expected.
  std::optional<PyScalar> typed(const std::string& path, const YAML::Node& v, const char* what,
                                PyScalar::Kind want);
  std::string where(const std::string& path) const { return path.empty() ? dialect_.top : path; }

  std::string file_;
  YamlDialect dialect_;
  Report report_;
  std::size_t failures_ = 0;
};

}  // namespace cpupower::config
