#include "config/load.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <functional>
#include <set>
#include <sstream>

#include "common/result.hpp"
#include "config/validate.hpp"
#include "config/yaml_walk.hpp"

namespace cpupower::config {
namespace {

// The string fields that name a file, a directory or an interface: no control character at
// all (a NUL would cut the path short where the C library takes it over, a newline or an
// escape sequence would corrupt every log line that prints it).
const std::set<std::string> kPathFields = {"telemetry.storage_subdir",
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

class Loader {
 public:
  Loader(const std::string& file, Recipe& recipe, std::vector<ConfigError>& errors)
      : recipe_(recipe), w_(file, {"recipe", false, &kPathFields}, [&errors](ConfigError e) {
          errors.push_back(std::move(e));
        }) {}

  // srtslurm.yaml: only visible_devices_env and default_gpu_exporter are read; every other
  // key is srtctl's to judge. Marks go to the recipe being filled (copied out by the caller).
  void cluster(const YAML::Node& root, ClusterConfig& c) {
    if (!root || root.IsNull()) return;
    if (!root.IsMap()) {
      return w_.fail(root,
                     "a cluster configuration must be a mapping, got " + YamlWalker::kind(root));
    }
    const auto gpu_default = [&](const std::string& path, const YAML::Node&, const YAML::Node& v) {
      if (!w_.section(path, v)) return c.default_gpu_exporter.reset();  // null: no GPU default
      exporter_block(path, v, c.default_gpu_exporter.emplace());
    };
    fields("", root,
           {{"visible_devices_env", req(c.visible_devices_env)},
            {"default_gpu_exporter", gpu_default}},
           false);
  }

  void load(const YAML::Node& root) {
    if (!root || root.IsNull()) return;  // an empty recipe: every default
    if (!root.IsMap()) {
      return w_.fail(root, "a recipe must be a mapping, got " + YamlWalker::kind(root));
    }
    const auto name = [&](const std::string&, const YAML::Node&, const YAML::Node& v) {
      if (v.IsScalar() && py_scalar(v).kind == PyScalar::Kind::string) recipe_.name = v.Scalar();
    };
    // Only the sections read here; the rest of an srtctl recipe is not ours to judge.
    fields("", root,
           {{"telemetry", sub(&Loader::telemetry)},
            {"runtime", sub(&Loader::runtime)},
            {"observability", sub(&Loader::observability)},
            {"benchmark", sub(&Loader::benchmark)},
            {"name", name}},
           false);
  }

 private:
  // Records where a field sits: its value when that is a scalar, else its key.
  void note(const std::string& path, const YAML::Node& k, const YAML::Node& v) {
    recipe_.marks[path] = mark_of((v.IsScalar() ? v : k).Mark());
  }

  // One field of a section whose every key must be known (a misspelt key would otherwise
  // run with the default): how it is read, whether it must be given, and whether a misspelt
  // key may be told to mean it.
  using Read =
      std::function<void(const std::string& path, const YAML::Node& k, const YAML::Node& v)>;
  struct Field {
    std::string key;
    Read read;
    bool must = false;
    bool suggested = true;
  };

  template <typename T>
  Read req(T& out) {
    return [this, to = &out](const std::string& path, const YAML::Node&, const YAML::Node& v) {
      w_.required(path, v, *to);
    };
  }
  template <typename T>
  Read opt(T& out) {
    return [this, to = &out](const std::string& path, const YAML::Node&, const YAML::Node& v) {
      w_.read(path, v, *to);
    };
  }
  Read sub(void (Loader::*section)(const std::string&, const YAML::Node&)) {
    return [this, section](const std::string& path, const YAML::Node&, const YAML::Node& v) {
      (this->*section)(path, v);
    };
  }

  // The mapping `v` at `p`, by its table of fields: each field's place noted, then read. A
  // field that must be given and is not is an error, and so is a key not in the table where
  // `strict` (inside `telemetry:`; elsewhere the rest of an srtctl file is not ours to judge).
  void fields(const std::string& p, const YAML::Node& v, const std::vector<Field>& table,
              bool strict = true) {
    std::vector<std::string> known;
    for (const auto& f : table) {
      if (f.suggested) known.push_back(f.key);
    }
    std::set<std::string> given;
    w_.entries(
        v, p,
        [&](const std::string& key, const YAML::Node& k, const YAML::Node& fv) {
          const std::string path = YamlWalker::join(p, key);
          for (const auto& f : table) {
            if (f.key != key) continue;
            note(path, k, fv);
            return given.insert(key), f.read(path, k, fv), true;
          }
          return false;
        },
        strict ? &known : nullptr);
    for (const auto& f : table) {
      if (f.must && !given.count(f.key)) w_.fail(v, p + "." + f.key + ": missing required field");
    }
  }

  void telemetry(const std::string& p, const YAML::Node& v) {
    if (!w_.section(p, v)) return;
    auto& t = recipe_.telemetry;
    fields(p, v,
           {{"enabled", req(t.enabled)},
            {"dcgm_exporter", sub(&Loader::dcgm_exporter)},
            {"collect_interval_ms", req(t.collect_interval_ms)},
            {"storage_subdir", req(t.storage_subdir)},
            {"required", req(t.required)},
            {"startup_timeout_seconds", req(t.startup_timeout_seconds)},
            {"clock_sync_check", req(t.clock_sync_check)},
            {"request_timeout_seconds", req(t.request_timeout_seconds)},
            {"collector_join_timeout_seconds", opt(t.collector_join_timeout_seconds)},
            {"cpu_power_exporter", sub(&Loader::cpu_power_exporter)},
            {"cpu_power", sub(&Loader::cpu_power)}});
  }

  void dcgm_exporter(const std::string& p, const YAML::Node& v) {
    if (!w_.section(p, v)) return recipe_.telemetry.dcgm_exporter.reset();
    exporter_block(p, v, recipe_.telemetry.dcgm_exporter.emplace());
  }

  // telemetry.dcgm_exporter, or the cluster's default_gpu_exporter: the same block.
  void exporter_block(const std::string& p, const YAML::Node& v, DcgmExporterConfig& d) {
    fields(p, v,
           {{"container_image", req(d.container_image), true},
            {"port", req(d.port), true},
            {"command", opt(d.command)},
            {"binary", opt(d.binary)},
            {"kind", req(d.kind)},
            {"gpu_labels", [&](const std::string& path, const YAML::Node&,
                               const YAML::Node& fv) { gpu_labels(path, fv, d.gpu_labels); }},
            {"gpu_metrics", [&](const std::string& path, const YAML::Node&, const YAML::Node& fv) {
               gpu_metrics(path, fv, d.gpu_metrics);
             }}});
  }

  void gpu_labels(const std::string& p, const YAML::Node& v, std::optional<GpuLabelsConfig>& out) {
    if (!w_.section(p, v)) return out.reset();
    auto& l = out.emplace();
    fields(p, v,
           {{"index", req(l.index), true},
            {"identity", req(l.identity), true},
            {"instance", req(l.instance)}});
  }

  // One `{metric: NAME}` (with `scope` for power). Returns false when the block is null.
  bool gpu_metric(const std::string& p, const YAML::Node& v, std::string& metric,
                  std::string* scope) {
    if (!w_.section(p, v)) return false;
    std::vector<Field> table = {{"metric", req(metric), true}};
    if (scope) table.push_back({"scope", req(*scope), true});
    fields(p, v, table);
    return true;
  }

  void gpu_metrics(const std::string& p, const YAML::Node& v,
                   std::optional<GpuMetricsConfig>& out) {
    if (!w_.section(p, v)) return out.reset();
    auto& m = out.emplace();
    const auto optional_metric = [this](std::optional<std::string>& field) -> Read {
      return [this, to = &field](const std::string& path, const YAML::Node&, const YAML::Node& fv) {
        std::string name;
        if (gpu_metric(path, fv, name, nullptr)) {
          *to = name;
        } else {
          to->reset();
        }
      };
    };
    const auto power = [&](const std::string& path, const YAML::Node&, const YAML::Node& fv) {
      if (fv.IsNull()) return w_.fail(fv, path + ": may not be null");
      gpu_metric(path, fv, m.power_metric, &m.power_scope);
    };
    fields(p, v,
           {{"power", power, true},
            {"gpu_util", optional_metric(m.gpu_util_metric)},
            {"sm_active", optional_metric(m.sm_active_metric)},
            {"temperature", optional_metric(m.temperature_metric)}});
  }

  void cpu_power_exporter(const std::string& p, const YAML::Node& v) {
    // `cpu_power_exporter: {}` turns the leg on with the defaults; null leaves it off.
    if (!w_.section(p, v)) return recipe_.telemetry.cpu_power_exporter.reset();
    auto& c = recipe_.telemetry.cpu_power_exporter.emplace();
    fields(p, v,
           {{"port", req(c.port)},
            {"source", req(c.source)},
            {"web_config_file", opt(c.web_config_file)},
            {"tls_config", sub(&Loader::scrape_tls)},
            {"basic_auth", sub(&Loader::scrape_basic_auth)}});
  }

  // `tls_config: {}` means https with the system's trust store; null leaves TLS off.
  void scrape_tls(const std::string& p, const YAML::Node& v) {
    auto& out = recipe_.telemetry.cpu_power_exporter->tls_config;
    if (!w_.section(p, v)) return out.reset();
    auto& t = out.emplace();
    fields(p, v,
           {{"ca_file", opt(t.ca_file)},
            {"cert_file", opt(t.cert_file)},
            {"key_file", opt(t.key_file)}});
  }

  void scrape_basic_auth(const std::string& p, const YAML::Node& v) {
    auto& out = recipe_.telemetry.cpu_power_exporter->basic_auth;
    if (!w_.section(p, v)) return out.reset();
    auto& b = out.emplace();
    const auto password = [&](const std::string& path, const YAML::Node& k, const YAML::Node&) {
      w_.fail(k, path +
                     ": a password is not written in the recipe; put it in a file readable only "
                     "by you and name it in password_file");
    };
    fields(p, v,
           {{"username", req(b.username), true},
            {"password_file", req(b.password_file), true},
            {"password", password, false, false}});
  }

  void cpu_power(const std::string& p, const YAML::Node& v) {
    if (!w_.section(p, v)) return;
    auto& c = recipe_.telemetry.cpu_power;
    fields(p, v,
           {{"enabled", req(c.enabled)},
            {"source", req(c.source)},
            {"sample_interval_seconds", req(c.sample_interval_seconds)},
            {"startup_timeout_seconds", req(c.startup_timeout_seconds)},
            {"required", req(c.required)},
            {"storage_subdir", req(c.storage_subdir)}});
  }

  void runtime(const std::string& p, const YAML::Node& v) {
    if (!w_.section(p, v)) return;
    fields(p, v,
           {{"network_interface", opt(recipe_.runtime.network_interface)},
            {"srun_options", sub(&Loader::srun_options)}},
           false);
  }

  void srun_options(const std::string& p, const YAML::Node& v) {
    if (!w_.section(p, v)) return;
    auto& out = recipe_.runtime.srun_options;
    w_.entries(v, p, [&](const std::string& key, const YAML::Node&, const YAML::Node& fv) {
      const std::string path = YamlWalker::join(p, key);
      if (fv.IsNull()) {
        out.emplace_back(key, std::nullopt);
      } else if (w_.scalar(path, fv, "a value or null")) {
        const auto py = py_scalar(fv);
        if (py.kind == PyScalar::Kind::null || (py.kind == PyScalar::Kind::boolean && py.boolean)) {
          out.emplace_back(key, std::nullopt);  // a bare flag (or a tagged null)
        } else if (py.kind == PyScalar::Kind::boolean) {
          // A flag switched off: not passed.
        } else if (py.kind == PyScalar::Kind::integer) {
          // As Python prints the number PyYAML read (--time=1000 for 1_000, 500 for 0x1F4).
          out.emplace_back(key, std::to_string(py.integer));
        } else if (w_.text_ok(path, fv)) {
          out.emplace_back(key, fv.Scalar());
        }
      }
      return true;
    });
  }

  void observability(const std::string& p, const YAML::Node& v) {
    if (w_.section(p, v)) fields(p, v, {{"tachometer", sub(&Loader::tachometer)}}, false);
  }

  void tachometer(const std::string& p, const YAML::Node& v) {
    if (!w_.section(p, v)) return;
    auto& t = recipe_.tachometer;
    const auto exporter = [this](std::int64_t& port) -> Read {
      return [this, to = &port](const std::string& path, const YAML::Node&, const YAML::Node& fv) {
        if (!w_.section(path, fv)) return;
        const auto read = [&](const std::string& at, const YAML::Node&, const YAML::Node& pv) {
          if (!pv.IsNull()) w_.read(at, pv, *to);  // null: built-in default
        };
        fields(path, fv, {{"port", read}}, false);
      };
    };
    fields(p, v,
           {{"enabled", opt(t.enabled)},
            {"dcgm_exporter", exporter(t.dcgm_exporter_port)},
            {"node_exporter", exporter(t.node_exporter_port)}},
           false);
  }

  void benchmark(const std::string& p, const YAML::Node& v) {
    if (w_.section(p, v)) fields(p, v, {{"type", opt(recipe_.benchmark_type)}}, false);
  }

  Recipe& recipe_;
  YamlWalker w_;
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
  return mark_of(handler.starts[1]);
}

// The whole file, or the error naming `what` (the recipe, the cluster configuration). The size
// is checked before any parsing, twice: fstat on the open file refuses a regular file that is
// too large without reading it, and the read stops after cap + 1 bytes, so a file that grows
// meanwhile, a FIFO or a character device cannot get past the cap either.
Result<std::string> read_capped(const std::string& path, std::size_t cap, const std::string& what) {
  const auto too_large = [&](const std::string& size) {
    return Error{what + " is " + size + ", larger than the " + std::to_string(cap) +
                 "-byte limit (" + std::to_string(cap >> 20) + " MiB) on " + what + " files"};
  };
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Error{"cannot read " + what + ": " + std::strerror(errno)};
  struct stat st {};
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
      static_cast<std::uint64_t>(st.st_size) > cap) {
    ::close(fd);
    return too_large(std::to_string(st.st_size) + " bytes");
  }
  std::string out;
  char buf[65536];
  while (out.size() <= cap) {
    const std::size_t want = std::min(sizeof buf, cap + 1 - out.size());
    const ssize_t n = ::read(fd, buf, want);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd);
      return Error{"cannot read " + what + ": " + std::strerror(err)};
    }
    if (n == 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  if (out.size() > cap) return too_large("more than " + std::to_string(cap) + " bytes");
  return out;
}

// The one YAML document of `text`, or nullopt with the error appended.
std::optional<YAML::Node> load_document(std::string_view text, const std::string& file,
                                        const char* what, std::vector<ConfigError>& errors) {
  try {
    YAML::Node root = YAML::Load(std::string(text));
    // YAML::Load reads the first document only; whatever follows a second `---` would be
    // dropped without a word, so a second document is an error at the line that starts it.
    if (const auto second = second_document(text)) {
      errors.push_back({file, *second,
                        std::string("a ") + what +
                            " is one YAML document; a second one starts here (remove the "
                            "`---` line and what follows it, or merge the two)"});
      return std::nullopt;
    }
    return root;
  } catch (const YAML::Exception& e) {
    errors.push_back({file, mark_of(e.mark), "invalid YAML: " + e.msg});
    return std::nullopt;
  }
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
  const auto text = read_capped(path, kMaxRecipeBytes, "recipe");
  if (!text) return {std::nullopt, {{path, {}, text.error()}}, {}};
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
  const auto text = read_capped(path, kMaxRecipeBytes, "cluster configuration");
  if (!text) return {std::nullopt, {{path, {}, text.error()}}};
  return load_cluster_text(*text, path);
}

}  // namespace cpupower::config
