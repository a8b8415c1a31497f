// The recipe: loading (syntax, types, unknown keys, places in errors) and every telemetry
// validation rule with its exact message.

#include <fmt/core.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "config/describe.hpp"
#include "config/load.hpp"
#include "config/validate.hpp"

namespace cpupower::config {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

const std::string kRecipes = std::string(CPUPOWER_FIXTURES) + "/recipes/";

std::vector<std::string> errors_of(const std::string& text) {
  std::vector<std::string> out;
  for (const auto& e : load_recipe_text(text, "r.yaml").errors) out.push_back(format_error(e));
  return out;
}

// Only the messages, for rules whose place is tested elsewhere.
std::vector<std::string> messages_of(const std::string& text) {
  std::vector<std::string> out;
  for (const auto& e : load_recipe_text(text, "r.yaml").errors) out.push_back(e.message);
  return out;
}

Recipe loaded(const std::string& text) {
  auto result = load_recipe_text(text, "r.yaml");
  EXPECT_THAT(result.errors, IsEmpty())
      << (result.errors.empty() ? "" : format_error(result.errors[0]));
  return result.recipe.value_or(Recipe{});
}

// A valid CPU-only recipe plus `extra` lines inside telemetry.
std::string cpu_only(const std::string& extra) {
  return "telemetry:\n  enabled: true\n  cpu_power_exporter: {}\n" + extra;
}

TEST(ConfigLoad, EmptyRecipeIsEveryDefaultWithTelemetryOff) {
  const Recipe r = loaded("");
  EXPECT_FALSE(r.telemetry.enabled);
  EXPECT_EQ(r.telemetry.collect_interval_ms, 1000);
  EXPECT_EQ(r.telemetry.storage_subdir, "power");
  EXPECT_FALSE(r.telemetry.required);
  EXPECT_EQ(r.telemetry.startup_timeout_seconds, 30.0);
  EXPECT_EQ(r.telemetry.request_timeout_seconds, 2.0);
  EXPECT_FALSE(r.telemetry.collector_join_timeout_seconds.has_value());
  EXPECT_DOUBLE_EQ(resolved_join_timeout_s(r.telemetry), 12.0);
  EXPECT_FALSE(r.telemetry.dcgm_exporter.has_value());
  EXPECT_FALSE(r.telemetry.cpu_power_exporter.has_value());
  EXPECT_FALSE(r.telemetry.cpu_power.enabled);
  EXPECT_EQ(r.telemetry.cpu_power.source, "auto");
  EXPECT_EQ(r.telemetry.cpu_power.sample_interval_seconds, 0.1);
  EXPECT_EQ(r.telemetry.cpu_power.storage_subdir, "cpu_power");
  EXPECT_FALSE(r.runtime.network_interface.has_value());
  EXPECT_TRUE(r.tachometer.is_enabled());
  EXPECT_FALSE(exporter_leg_enabled(r.telemetry));
}

TEST(ConfigLoad, AFullSrtctlRecipeLoads) {
  const auto result = load_recipe_file(kRecipes + "srtctl_full.yaml");
  ASSERT_THAT(result.errors, IsEmpty()) << format_error(result.errors.at(0));
  const Recipe& r = *result.recipe;
  const auto& t = r.telemetry;
  EXPECT_TRUE(t.enabled);
  EXPECT_EQ(t.collect_interval_ms, 500);
  EXPECT_EQ(t.startup_timeout_seconds, 45.0);
  EXPECT_FALSE(t.collector_join_timeout_seconds.has_value());
  ASSERT_TRUE(t.dcgm_exporter.has_value());
  EXPECT_EQ(t.dcgm_exporter->container_image, "/containers/dcgm-exporter-4.2.3.sqsh");
  EXPECT_EQ(t.dcgm_exporter->port, 9400);
  ASSERT_TRUE(t.cpu_power_exporter.has_value());
  EXPECT_EQ(t.cpu_power_exporter->port, 9405);
  EXPECT_EQ(t.cpu_power_exporter->source, "auto");
  EXPECT_TRUE(t.cpu_power.enabled);
  EXPECT_EQ(t.cpu_power.source, "acpi");
  EXPECT_EQ(r.runtime.network_interface, "ib0");
  EXPECT_EQ(r.name, "gb200-fp4-1p2d-dsr1");
  using Opt = std::pair<std::string, std::optional<std::string>>;
  EXPECT_THAT(r.runtime.srun_options, ElementsAre(Opt{"mpi", "pmix"}, Opt{"cpu-bind", "none"},
                                                  Opt{"exclusive", std::nullopt}));
  EXPECT_EQ(r.benchmark_type, "sa-bench");
  EXPECT_TRUE(exporter_leg_enabled(t));
}

TEST(ConfigLoad, TheReferenceExamplesLoad) {
  for (const char* name : {"cpu_only.yaml", "all_legs.yaml"}) {
    const auto result = load_recipe_file(kRecipes + name);
    EXPECT_THAT(result.errors, IsEmpty()) << name;
  }
}

TEST(ConfigLoad, UnknownKeyInsideTelemetryIsAnErrorNamingItWithItsPlace) {
  const auto result = load_recipe_file(kRecipes + "typo.yaml");
  ASSERT_EQ(result.errors.size(), 1u);
  EXPECT_EQ(format_error(result.errors[0]),
            kRecipes +
                "typo.yaml:3:3: unknown key \"colect_interval_ms\" in telemetry (did you mean "
                "\"collect_interval_ms\"?)");
  EXPECT_FALSE(result.recipe.has_value());
}

TEST(ConfigLoad, UnknownKeysInNestedTelemetryBlocksAreErrors) {
  EXPECT_THAT(errors_of("telemetry:\n  enabled: true\n  cpu_power_exporter:\n    prot: 9405\n"),
              ElementsAre("r.yaml:4:5: unknown key \"prot\" in telemetry.cpu_power_exporter (did "
                          "you mean \"port\"?)"));
  EXPECT_THAT(errors_of("telemetry:\n  cpu_power:\n    prometheus_port: 9401\n"),
              ElementsAre("r.yaml:3:5: unknown key \"prometheus_port\" in telemetry.cpu_power"));
  EXPECT_THAT(errors_of("telemetry:\n  dcgm_exporter: {container_image: x, port: 1, img: y}\n"),
              ElementsAre(HasSubstr("unknown key \"img\" in telemetry.dcgm_exporter")));
}

TEST(ConfigLoad, OtherSectionsAndUnknownKeysOutsideTelemetryAreIgnored) {
  const Recipe r = loaded(
      "name: x\nfrontend: {type: dynamo, whatever: [1, 2]}\nruntime: {nodes: 3, "
      "network_interface: eth1}\nobservability: {prometheus: {port: 1}}\n" +
      cpu_only(""));
  EXPECT_EQ(r.runtime.network_interface, "eth1");
}

TEST(ConfigLoad, TypeErrorsNameTheFieldTheValueAndThePlace) {
  EXPECT_THAT(errors_of(cpu_only("  collect_interval_ms: fast\n")),
              ElementsAre("r.yaml:4:24: telemetry.collect_interval_ms: expected an integer, got "
                          "\"fast\""));
  EXPECT_THAT(errors_of("telemetry:\n  enabled: maybe\n"),
              ElementsAre("r.yaml:2:12: telemetry.enabled: expected true or false, got \"maybe\""));
  EXPECT_THAT(errors_of(cpu_only("  storage_subdir: 123\n")),
              ElementsAre("r.yaml:4:19: telemetry.storage_subdir: expected a string, got 123 "
                          "(quote it to make it one)"));
  EXPECT_THAT(errors_of(cpu_only("  request_timeout_seconds: [1]\n")),
              ElementsAre("r.yaml:4:28: telemetry.request_timeout_seconds: expected a number, got "
                          "a sequence"));
  EXPECT_THAT(errors_of("telemetry: [1, 2]\n"),
              ElementsAre("r.yaml:1:12: telemetry: expected a mapping, got a sequence"));
  EXPECT_THAT(errors_of("telemetry:\n  cpu_power_exporter: {port: \"9405\"}\n"),
              ElementsAre(HasSubstr("telemetry.cpu_power_exporter.port: expected an integer")));
  EXPECT_THAT(errors_of("telemetry:\n  collect_interval_ms: null\n"),
              ElementsAre("r.yaml:2:24: telemetry.collect_interval_ms: may not be null"));
  EXPECT_THAT(errors_of("- a\n- b\n"),
              ElementsAre("r.yaml:1:1: a recipe must be a mapping, got a sequence"));
}

TEST(ConfigLoad, YamlSyntaxErrorsCarryTheirPlace) {
  const auto errors = errors_of("telemetry:\n  enabled: true\n  port: [1, 2\n");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_THAT(errors[0], ::testing::StartsWith("r.yaml:"));
  EXPECT_THAT(errors[0], HasSubstr("invalid YAML"));
}

TEST(ConfigLoad, DuplicateKeysAreErrors) {
  EXPECT_THAT(errors_of("telemetry:\n  enabled: true\n  enabled: false\n"),
              ElementsAre("r.yaml:3:3: telemetry.enabled: duplicate key"));
}

TEST(ConfigLoad, MissingRequiredDcgmFields) {
  EXPECT_THAT(messages_of("telemetry:\n  dcgm_exporter: {command: x}\n"),
              ElementsAre("telemetry.dcgm_exporter.container_image: missing required field",
                          "telemetry.dcgm_exporter.port: missing required field"));
}

TEST(ConfigLoad, NullBlocksAreAbsentAndEmptyBlocksArePresent) {
  EXPECT_FALSE(loaded("telemetry:\n  cpu_power_exporter:\n").telemetry.cpu_power_exporter);
  const Recipe r = loaded(cpu_only(""));
  ASSERT_TRUE(r.telemetry.cpu_power_exporter.has_value());
  EXPECT_EQ(r.telemetry.cpu_power_exporter->port, 9405);
  EXPECT_EQ(r.telemetry.cpu_power_exporter->source, "auto");
}

TEST(ConfigLoad, YamlBooleansAndSpecialFloats) {
  EXPECT_TRUE(loaded("telemetry: {enabled: yes, cpu_power_exporter: {}}").telemetry.enabled);
  EXPECT_THAT(messages_of(cpu_only("  request_timeout_seconds: .inf\n")),
              ElementsAre("telemetry.request_timeout_seconds must be finite and positive"));
}

TEST(ConfigLoad, ClockSyncCheckIsKeptOnByDefaultAndOffWhenTheRecipeSaysSo) {
  EXPECT_TRUE(loaded(cpu_only("")).telemetry.clock_sync_check);
  EXPECT_FALSE(loaded(cpu_only("  clock_sync_check: false\n")).telemetry.clock_sync_check);
  EXPECT_FALSE(loaded(cpu_only("  clock_sync_check: off\n")).telemetry.clock_sync_check);
  EXPECT_THAT(messages_of(cpu_only("  clock_sync_check: 3\n")), Not(IsEmpty()));
}

TEST(ConfigLoad, UnreadableFile) {
  const auto result = load_recipe_file(kRecipes + "does-not-exist.yaml");
  ASSERT_EQ(result.errors.size(), 1u);
  EXPECT_THAT(format_error(result.errors[0]), HasSubstr("does-not-exist.yaml: cannot read recipe"));
}

// A file whose content is `text`, removed at the end of the test.
class RecipeFile {
 public:
  explicit RecipeFile(const std::string& text)
      : path_(::testing::TempDir() + "config_test_" + std::to_string(::getpid()) + "_" +
              ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".yaml") {
    std::ofstream(path_, std::ios::binary) << text;
  }
  ~RecipeFile() { std::remove(path_.c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

TEST(ConfigLoad, ARecipeAtTheSizeCapLoads) {
  std::string text = cpu_only("");
  text += std::string(kMaxRecipeBytes - text.size() - 1, '#') + "\n";  // one long comment
  ASSERT_EQ(text.size(), kMaxRecipeBytes);
  const RecipeFile file(text);
  const auto result = load_recipe_file(file.path());
  EXPECT_THAT(result.errors, IsEmpty());
}

TEST(ConfigLoad, ARecipeOverTheSizeCapIsRefusedBeforeParsing) {
  // One byte over, and not YAML at all: the size is the error, not the syntax.
  const RecipeFile file(std::string(kMaxRecipeBytes + 1, '['));
  const auto result = load_recipe_file(file.path());
  ASSERT_EQ(result.errors.size(), 1u);
  EXPECT_EQ(format_error(result.errors[0]),
            file.path() +
                ": recipe is 1048577 bytes, larger than the 1048576-byte limit (1 MiB) "
                "on recipe files");
}

TEST(ConfigLoad, TheSizeCapHoldsForAFifo) {
  // fstat cannot size a FIFO: the read itself stops after cap + 1 bytes.
  const std::string path = ::testing::TempDir() + "config_test_fifo_" + std::to_string(::getpid());
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0) << std::strerror(errno);
  std::thread writer([&] {
    const int fd = ::open(path.c_str(), O_WRONLY);
    if (fd < 0) return;
    const std::string chunk(65536, '#');
    for (int i = 0; i < 64; ++i) {  // 4 MiB, or until the reader has gone
      if (::write(fd, chunk.data(), chunk.size()) < 0) break;
    }
    ::close(fd);
  });
  ::signal(SIGPIPE, SIG_IGN);
  const auto result = load_recipe_file(path);
  writer.join();
  ::unlink(path.c_str());
  ASSERT_EQ(result.errors.size(), 1u);
  EXPECT_THAT(result.errors[0].message,
              ::testing::StartsWith("recipe is more than 1048576 bytes, larger than the"));
}

TEST(ConfigLoad, ASecondYamlDocumentIsAnErrorAtItsStart) {
  EXPECT_THAT(errors_of(cpu_only("---\ntelemetry:\n  enabled: false\n")),
              ElementsAre("r.yaml:4:1: a recipe is one YAML document; a second one starts here "
                          "(remove the `---` line and what follows it, or merge the two)"));
  // Even an empty one: the line says what was meant to follow.
  EXPECT_THAT(messages_of(cpu_only("---\n")),
              ElementsAre(::testing::StartsWith("a recipe is one YAML document")));
  EXPECT_THAT(errors_of(cpu_only("...\n---\nx: [\n")),  // what follows is not even read
              ElementsAre(::testing::StartsWith("r.yaml:5:1: a recipe is one YAML document")));
  // A leading `---` and a closing `...` are one document.
  EXPECT_THAT(errors_of("---\n" + cpu_only("") + "...\n"), IsEmpty());
  EXPECT_THAT(errors_of("# comment\n---\n" + cpu_only("")), IsEmpty());
}

TEST(ConfigLoad, ControlCharactersInPathsAreErrorsNamingTheField) {
  // YAML's "\0" escape puts a NUL in the string: the path would end there for the C library.
  EXPECT_THAT(errors_of(cpu_only("  storage_subdir: \"pw\\0/x\"\n")),
              ElementsAre("r.yaml:4:19: telemetry.storage_subdir: a NUL byte (U+0000) at byte 2 "
                          "is not allowed in a path or name"));
  EXPECT_THAT(
      messages_of("telemetry:\n  enabled: true\n  cpu_power:\n    enabled: true\n"
                  "    storage_subdir: \"cpu\\npower\"\n"),
      ElementsAre("telemetry.cpu_power.storage_subdir: a control character (U+000A) at byte 3 "
                  "is not allowed in a path or name"));
  EXPECT_THAT(messages_of("runtime:\n  network_interface: \"eth0\\e[31m\"\n"),
              ElementsAre("runtime.network_interface: a control character (U+001B) at byte 4 is "
                          "not allowed in a path or name"));
  EXPECT_THAT(messages_of(cpu_only("  storage_subdir: \"a\\x7f\"\n")),
              ElementsAre("telemetry.storage_subdir: a control character (U+007F) at byte 1 is "
                          "not allowed in a path or name"));
  EXPECT_THAT(messages_of(cpu_only("  storage_subdir: \"a\\x85\"\n")),  // C1 NEL
              ElementsAre("telemetry.storage_subdir: a control character (U+0085) at byte 1 is "
                          "not allowed in a path or name"));
  EXPECT_THAT(messages_of(cpu_only("  dcgm_exporter: {container_image: \"/c/x\\t.sqsh\", port: "
                                   "9401}\n")),
              ElementsAre("telemetry.dcgm_exporter.container_image: a control character "
                          "(U+0009) at byte 4 is not allowed in a path or name"));
  // Not a path: a tab is fine, a NUL is not.
  EXPECT_THAT(messages_of("benchmark:\n  type: \"a\\tb\"\n"), IsEmpty());
  EXPECT_THAT(messages_of("benchmark:\n  type: \"a\\0b\"\n"),
              ElementsAre("benchmark.type: a NUL byte (U+0000) at byte 1 is not allowed in a "
                          "string"));
  // srun options become srun's argv: a NUL would cut the argument short.
  EXPECT_THAT(messages_of("runtime:\n  srun_options:\n    mpi: \"pmi\\0x\"\n"),
              ElementsAre("runtime.srun_options.mpi: a NUL byte (U+0000) at byte 3 is not "
                          "allowed in a string"));
  EXPECT_THAT(messages_of("runtime:\n  srun_options:\n    \"m\\0pi\": x\n"),
              ElementsAre("runtime.srun_options: a key contains a NUL byte (U+0000) at byte 1"));
  // What an error quotes from the file is escaped: it is printed on a terminal.
  EXPECT_THAT(messages_of(cpu_only("  \"colect\\e[2J\": 1\n")),
              ElementsAre("unknown key \"colect\\x1b[2J\" in telemetry"));
  EXPECT_THAT(messages_of(cpu_only("  required: \"\\e[2J\"\n")),
              ElementsAre("telemetry.required: expected true or false, got \"\\x1b[2J\""));
  // UTF-8 beyond the C1 block stays allowed.
  EXPECT_THAT(messages_of(cpu_only("  storage_subdir: \"p\u00e9\u00a0w\"\n")), IsEmpty());
}

// --- rule 1: telemetry disabled -----------------------------------------------------------

TEST(ConfigRules, HostLegWithoutTelemetry) {
  EXPECT_THAT(errors_of("telemetry:\n  cpu_power:\n    enabled: true\n"),
              ElementsAre("r.yaml:3:14: telemetry.cpu_power.enabled requires telemetry.enabled"));
}

TEST(ConfigRules, InertDemandWithTelemetryOff) {
  EXPECT_THAT(messages_of("telemetry:\n  cpu_power: {required: true}\n"),
              ElementsAre("telemetry.cpu_power.required has no effect unless "
                          "telemetry.cpu_power.enabled"));
  for (const char* source : {"acpi", "rapl", "dcgm"}) {
    EXPECT_THAT(messages_of(std::string("telemetry:\n  cpu_power: {source: ") + source + "}\n"),
                ElementsAre(std::string("telemetry.cpu_power.source: \"") + source +
                            "\" has no effect unless telemetry.cpu_power.enabled; it names a "
                            "mandatory provider for a leg that will not run"));
  }
}

TEST(ConfigRules, ScraperBlockIsNotValidatedWithTelemetryOff) {
  EXPECT_THAT(errors_of("telemetry:\n  cpu_power_exporter: {port: 0, source: nvml}\n"), IsEmpty());
}

// --- rule 2: host leg ---------------------------------------------------------------------

// A path the kernel refuses (a part over NAME_MAX, the whole over PATH_MAX) is refused at
// validation, field named: run would otherwise fail every open below it and keep no row.
TEST(ConfigRules, PathsTheKernelCannotOpenAreRefused) {
  const std::string part(256, 'p');
  EXPECT_THAT(
      errors_of(cpu_only("  storage_subdir: power/" + part + "\n")),
      ElementsAre("r.yaml:4:19: telemetry.storage_subdir: part 2 (\"pppppppppppppppp...\") "
                  "is 256 bytes, longer than the 255-byte limit on a file name (NAME_MAX)"));
  EXPECT_THAT(messages_of(cpu_only("  storage_subdir: " + std::string(255, 'p') + "\n")),
              IsEmpty());
  std::string deep;
  while (deep.size() < 200000) deep += (deep.empty() ? "" : "/") + std::string(200, 'd');
  EXPECT_THAT(messages_of(cpu_only("  storage_subdir: " + deep + "\n")),
              ElementsAre(fmt::format("telemetry.storage_subdir is {} bytes; with the 273 bytes "
                                      "kept for what is written below it, longer than the "
                                      "4095-byte limit on a path (PATH_MAX)",
                                      deep.size())));
  EXPECT_THAT(messages_of("telemetry:\n  enabled: true\n  cpu_power:\n    enabled: true\n"
                          "    storage_subdir: x/" +
                          part + "\n"),
              ElementsAre(HasSubstr("telemetry.cpu_power.storage_subdir: part 2 (")));
  // The other fields that name a file, and the interface name.
  const std::string gpu =
      "telemetry:\n  enabled: true\n  dcgm_exporter:\n    container_image: img\n    port: 9400\n";
  EXPECT_THAT(messages_of(gpu + "    binary: /opt/" + part + "/dcgm-exporter\n"),
              ElementsAre(HasSubstr("telemetry.dcgm_exporter.binary: part 3 (")));
  EXPECT_THAT(messages_of("telemetry:\n  enabled: true\n  cpu_power_exporter:\n    tls_config:\n"
                          "      ca_file: /" +
                          std::string(5000, 'c') + "\n"),
              ElementsAre(HasSubstr("telemetry.cpu_power_exporter.tls_config.ca_file: part 2")));
  EXPECT_THAT(messages_of(cpu_only("") + "runtime:\n  network_interface: a-very-long-ifname0\n"),
              ElementsAre("runtime.network_interface is 19 bytes, longer than the 15-byte limit "
                          "on an interface name (IFNAMSIZ)"));
  EXPECT_EQ(path_length_problem("f", std::string(4095, 'a') + "", 0),
            "f: part 1 (\"aaaaaaaaaaaaaaaa...\") is 4095 bytes, longer than the 255-byte limit on "
            "a file name (NAME_MAX)");
  std::string exact;
  while (exact.size() < 4095) exact += exact.empty() ? "a" : "/a";
  EXPECT_EQ(path_length_problem("f", exact.substr(0, 4095)), "");
  EXPECT_THAT(path_length_problem("f", exact.substr(0, 4095) + "/"), HasSubstr("4096 bytes"));
}

// YAML 1.1 as PyYAML's safe_load reads it: the values it gives, and its strings stay strings.
TEST(ConfigLoad, ScalarsAndMergeKeysAsPyYamlReadsThem) {
  Recipe r = loaded(
      "d: &d {enabled: yes, collect_interval_ms: 1_000, request_timeout_seconds: !!float 1}\n"
      "telemetry:\n  <<: *d\n  collect_interval_ms: 16:40\n"
      "  cpu_power_exporter: {port: !!int \"0x1F4\"}\n");
  EXPECT_TRUE(r.telemetry.enabled);
  EXPECT_EQ(r.telemetry.collect_interval_ms, 1000);  // base 60; the map's own entry wins
  EXPECT_EQ(r.telemetry.request_timeout_seconds, 1.0);
  EXPECT_EQ(r.telemetry.cpu_power_exporter->port, 500);
  r = loaded(
      "a: &a {collect_interval_ms: 0b111110100}\nb: &b {collect_interval_ms: 999, required: On}\n"
      "telemetry: {<<: [*a, *b], enabled: TRUE, startup_timeout_seconds: 1:30.5,"
      " cpu_power_exporter: {port: 01750}}\n");
  EXPECT_EQ(r.telemetry.collect_interval_ms, 500);  // the first mapping listed wins
  EXPECT_TRUE(r.telemetry.required);
  EXPECT_EQ(r.telemetry.startup_timeout_seconds, 90.5);
  EXPECT_EQ(r.telemetry.cpu_power_exporter->port, 1000);  // octal
  // Strings to PyYAML, so not numbers or booleans here either.
  EXPECT_THAT(messages_of(cpu_only("  request_timeout_seconds: 1e3\n")),
              ElementsAre("telemetry.request_timeout_seconds: expected a number, got \"1e3\""));
  EXPECT_THAT(messages_of(cpu_only("  required: tRuE\n")),
              ElementsAre("telemetry.required: expected true or false, got \"tRuE\""));
  EXPECT_THAT(messages_of(cpu_only("  collect_interval_ms: !!int \"12abc\"\n")),
              ElementsAre("telemetry.collect_interval_ms: expected an integer, got \"12abc\""));
  EXPECT_EQ(loaded(cpu_only("  storage_subdir: !!str 123\n")).telemetry.storage_subdir, "123");
  // Only a map's own keys can be duplicates; a merged one is overridden.
  EXPECT_THAT(messages_of("d: &d {enabled: true}\ntelemetry:\n  <<: *d\n  enabled: true\n"
                          "  enabled: false\n  cpu_power_exporter: {}\n"),
              ElementsAre("telemetry.enabled: duplicate key"));
  // Long plain scalars are classified without the resolvers' patterns (which recurse per
  // character): 300,000 digits are a number too long to hold, not a crash.
  EXPECT_THAT(messages_of(cpu_only("  collect_interval_ms: " + std::string(300000, '1') + "\n")),
              ElementsAre(HasSubstr("telemetry.collect_interval_ms: expected an integer, got")));
  EXPECT_THAT(messages_of(cpu_only("  storage_subdir: " + std::string(300000, '1') + "\n")),
              ElementsAre(HasSubstr("telemetry.storage_subdir: expected a string, got 111")));
  EXPECT_THAT(messages_of(cpu_only("  storage_subdir: " + std::string(300000, 'x') + "\n")),
              ElementsAre(HasSubstr("telemetry.storage_subdir: part 1 (")));
  EXPECT_THAT(messages_of("telemetry:\n  <<: 5\n"),
              ElementsAre("telemetry: a merge key (<<) takes a mapping or a list of mappings, "
                          "got \"5\""));
}

TEST(ConfigRules, HostLegIntervals) {
  const std::string base = "telemetry:\n  enabled: true\n  cpu_power:\n    enabled: true\n";
  EXPECT_THAT(messages_of(base + "    sample_interval_seconds: 0\n"),
              ElementsAre("telemetry.cpu_power.sample_interval_seconds must be finite and "
                          "positive"));
  EXPECT_THAT(messages_of(base + "    startup_timeout_seconds: -1\n"),
              ElementsAre("telemetry.cpu_power.startup_timeout_seconds must be finite and "
                          "positive"));
  EXPECT_THAT(messages_of(base + "    sample_interval_seconds: .nan\n"),
              ElementsAre("telemetry.cpu_power.sample_interval_seconds must be finite and "
                          "positive"));
  EXPECT_THAT(messages_of(base + "    sample_interval_seconds: 5\n"),
              ElementsAre("telemetry.cpu_power.sample_interval_seconds=5.0 exceeds the 3.0s max "
                          "sample gap; every window would fail sample_gap_exceeded"));
}

TEST(ConfigRules, HostLegStorage) {
  const std::string base = "telemetry:\n  enabled: true\n  cpu_power:\n    enabled: true\n";
  EXPECT_THAT(messages_of(base + "    storage_subdir: ../up\n"),
              ElementsAre("telemetry.cpu_power.storage_subdir must be a safe relative path below "
                          "the run log directory"));
  EXPECT_THAT(messages_of(base + "    storage_subdir: power\n"),
              ElementsAre("telemetry.cpu_power.storage_subdir must differ from "
                          "telemetry.storage_subdir; the two legs write their own samples and "
                          "manifest"));
  EXPECT_THAT(messages_of(base + "    source: nvml\n"),
              ElementsAre("telemetry.cpu_power.source must be one of: \"auto\", \"acpi\", "
                          "\"rapl\", \"dcgm\""));
  EXPECT_THAT(messages_of(base), IsEmpty());  // the host leg alone is something to collect
}

TEST(ConfigRules, InertDemandWithTelemetryOnAndHostLegOff) {
  EXPECT_THAT(messages_of(cpu_only("  cpu_power: {required: true}\n")),
              ElementsAre("telemetry.cpu_power.required has no effect unless "
                          "telemetry.cpu_power.enabled"));
}

// --- rule 4: GPU leg ----------------------------------------------------------------------

TEST(ConfigRules, GpuLeg) {
  const std::string base = "telemetry:\n  enabled: true\n";
  EXPECT_THAT(messages_of(base + "  dcgm_exporter: {container_image: ' ', port: 9400}\n"),
              ElementsAre("telemetry.dcgm_exporter.container_image must not be empty"));
  EXPECT_THAT(messages_of(base + "  dcgm_exporter: {container_image: x, port: 0}\n"),
              ElementsAre("telemetry.dcgm_exporter.port must be in 1..65535"));
  EXPECT_THAT(messages_of(base + "  startup_timeout_seconds: 0\n  dcgm_exporter: "
                                 "{container_image: x, port: 9400}\n"),
              ElementsAre("telemetry.startup_timeout_seconds must be finite and positive"));
  EXPECT_THAT(messages_of("benchmark: {type: mmlu}\n" + base +
                          "  dcgm_exporter: {container_image: x, port: 9400}\n"),
              ElementsAre("telemetry.dcgm_exporter requires benchmark.type to be one of: "
                          "\"sa-bench\", \"agentic\", \"agentx\", \"custom\", \"manual\" (got "
                          "\"mmlu\")"));
  EXPECT_THAT(messages_of("benchmark: {type: manual}\n" + base +
                          "  dcgm_exporter: {container_image: x, port: 9400}\n"),
              IsEmpty());
}

// --- rule 5: nothing to collect -----------------------------------------------------------

TEST(ConfigRules, NothingToCollect) {
  EXPECT_THAT(errors_of("telemetry:\n  enabled: true\n"),
              ElementsAre("r.yaml:2:12: telemetry.enabled requires telemetry.dcgm_exporter, "
                          "telemetry.cpu_power_exporter, or telemetry.cpu_power.enabled; "
                          "otherwise there is nothing to collect"));
  EXPECT_THAT(errors_of(cpu_only("")), IsEmpty());  // the exporter leg alone is enough
}

// --- rule 6: collector budget -------------------------------------------------------------

TEST(ConfigRules, CollectorBudget) {
  EXPECT_THAT(messages_of(cpu_only("  request_timeout_seconds: 0\n")),
              ElementsAre("telemetry.request_timeout_seconds must be finite and positive"));
  EXPECT_THAT(messages_of(cpu_only("  collector_join_timeout_seconds: 10\n")),
              ElementsAre("telemetry.collector_join_timeout_seconds=10.0 must be greater than "
                          "two full collector cycles (2 x (2 x request_timeout_seconds + 1.0) = "
                          "10.0s)"));
  EXPECT_THAT(messages_of(cpu_only("  collector_join_timeout_seconds: -1\n")),
              ElementsAre("telemetry.collector_join_timeout_seconds must be finite and positive"));
  EXPECT_THAT(messages_of(cpu_only("  collector_join_timeout_seconds: 10.5\n")), IsEmpty());
  // Derived budgets always clear the bar.
  const Recipe r = loaded(cpu_only("  request_timeout_seconds: 4\n"));
  EXPECT_DOUBLE_EQ(resolved_join_timeout_s(r.telemetry), 20.0);
}

// --- rule 7: exporter leg -----------------------------------------------------------------

TEST(ConfigRules, ScraperPortAndSource) {
  for (const char* port : {"0", "65536", "-5"}) {
    EXPECT_THAT(messages_of(std::string("telemetry:\n  enabled: true\n  cpu_power_exporter: "
                                        "{port: ") +
                            port + "}\n"),
                ElementsAre("telemetry.cpu_power_exporter.port must be in 1..65535"))
        << port;
  }
  EXPECT_THAT(errors_of("telemetry:\n  enabled: true\n  cpu_power_exporter:\n    source: nvml\n"),
              ElementsAre("r.yaml:4:13: telemetry.cpu_power_exporter.source must be one of: "
                          "\"auto\", \"acpi\", \"rapl\", \"dcgm\""));
  for (const char* source : {"auto", "acpi", "rapl", "dcgm"}) {
    EXPECT_THAT(messages_of(std::string("telemetry:\n  enabled: true\n  cpu_power_exporter: "
                                        "{source: ") +
                            source + "}\n"),
                IsEmpty());
  }
}

TEST(ConfigRules, ScraperPortCollisions) {
  EXPECT_THAT(
      messages_of("telemetry:\n  enabled: true\n  dcgm_exporter: {container_image: x, port: "
                  "9402}\n  cpu_power_exporter: {port: 9402}\n"),
      ElementsAre("telemetry.cpu_power_exporter.port=9402 collides with "
                  "telemetry.dcgm_exporter.port; both run on every worker node"));
  EXPECT_THAT(messages_of("telemetry:\n  enabled: true\n  cpu_power_exporter: {port: 9401}\n"),
              ElementsAre("telemetry.cpu_power_exporter.port=9401 collides with "
                          "observability.tachometer.dcgm_exporter.port; both run on every worker "
                          "node"));
  EXPECT_THAT(messages_of("telemetry:\n  enabled: true\n  cpu_power_exporter: {port: 9101}\n"),
              ElementsAre("telemetry.cpu_power_exporter.port=9101 collides with "
                          "observability.tachometer.node_exporter.port; both run on every worker "
                          "node"));
  EXPECT_THAT(messages_of("observability: {tachometer: {dcgm_exporter: {port: 9411}}}\n"
                          "telemetry:\n  enabled: true\n  cpu_power_exporter: {port: 9411}\n"),
              ElementsAre(HasSubstr("collides with observability.tachometer.dcgm_exporter.port")));
  // A configured port moves the default out of the way; a disabled tachometer has none.
  EXPECT_THAT(messages_of("observability: {tachometer: {dcgm_exporter: {port: 9411}}}\n"
                          "telemetry:\n  enabled: true\n  cpu_power_exporter: {port: 9401}\n"),
              IsEmpty());
  EXPECT_THAT(messages_of("observability: {tachometer: {enabled: false}}\n"
                          "telemetry:\n  enabled: true\n  cpu_power_exporter: {port: 9101}\n"),
              IsEmpty());
}

TEST(ConfigRules, CollisionErrorPointsAtThePortGiven) {
  EXPECT_THAT(errors_of("telemetry:\n  enabled: true\n  cpu_power_exporter:\n    port: 9101\n"),
              ElementsAre(::testing::StartsWith("r.yaml:4:11: ")));
}

// --- the checks the reference forgets -----------------------------------------------------

TEST(ConfigRules, CollectIntervalIsCheckedWithoutTheGpuLeg) {
  // 3000 too: rows come the interval apart on average, so jitter puts some gaps over 3.0 s
  // (3.004 s seen downstream).
  for (const char* ms : {"0", "-1", "3000", "60000"}) {
    EXPECT_THAT(messages_of(cpu_only(std::string("  collect_interval_ms: ") + ms + "\n")),
                ElementsAre(std::string("telemetry.collect_interval_ms=") + ms +
                            " must be > 0 and < 3000 (the 3.0s max sample gap: rows come the "
                            "interval apart on average and jitter moves each one, so some gaps "
                            "would exceed it)"));
  }
  EXPECT_THAT(messages_of(cpu_only("  collect_interval_ms: 2999\n")), IsEmpty());
  EXPECT_THAT(messages_of(cpu_only("  collect_interval_ms: 1\n")), IsEmpty());
}

// --- warnings: valid intervals that can still put gaps over the bound ---------------------

std::vector<std::string> warnings_of(const std::string& text) {
  const auto result = load_recipe_text(text, "r.yaml");
  EXPECT_THAT(result.errors, IsEmpty());
  std::vector<std::string> out;
  for (const auto& w : result.warnings) out.push_back(format_warning(w));
  return out;
}

TEST(ConfigWarnings, IntervalGapRule) {
  // refused from the bound on; at risk when jitter (500 ms) or a whole request timeout added
  // to the interval passes it.
  EXPECT_EQ(interval_gap(1000, 2.0), IntervalGap::ok);  // the defaults
  EXPECT_EQ(interval_gap(1001, 2.0), IntervalGap::at_risk);
  EXPECT_EQ(interval_gap(2500, 0.5), IntervalGap::ok);
  EXPECT_EQ(interval_gap(2501, 0.1), IntervalGap::at_risk);
  EXPECT_EQ(interval_gap(2999, 0.1), IntervalGap::at_risk);
  EXPECT_EQ(interval_gap(3000, 0.1), IntervalGap::refused);
  EXPECT_EQ(interval_gap(60000, 2.0), IntervalGap::refused);
  EXPECT_EQ(interval_gap(100, 2.9), IntervalGap::ok);
  EXPECT_EQ(interval_gap(100, 3.0), IntervalGap::at_risk);
  EXPECT_EQ(interval_gap(1, std::nan("")), IntervalGap::at_risk);
  EXPECT_EQ(max_safe_interval_ms(2.0), 1000);
  EXPECT_EQ(max_safe_interval_ms(0.5), 2500);
  EXPECT_EQ(max_safe_interval_ms(0.001), 2500);
  EXPECT_EQ(max_safe_interval_ms(2.9), 100);
  EXPECT_EQ(max_safe_interval_ms(3.0), 0);
  EXPECT_EQ(interval_gap_reason(1000, 2.0, "x", "y"), "");
  for (const std::int64_t ms : {1, 100, 1000, 2500}) {
    EXPECT_EQ(interval_gap(ms, 0.5), IntervalGap::ok) << ms;
    EXPECT_LE(ms, max_safe_interval_ms(0.5));
  }
}

TEST(ConfigWarnings, DefaultsAndShortIntervalsSayNothing) {
  EXPECT_THAT(warnings_of(cpu_only("")), IsEmpty());
  EXPECT_THAT(warnings_of(cpu_only("  collect_interval_ms: 250\n")), IsEmpty());
  EXPECT_THAT(
      warnings_of(cpu_only("  collect_interval_ms: 2500\n  request_timeout_seconds: 0.5\n")),
      IsEmpty());
}

TEST(ConfigWarnings, ASlowResponseCanCrossTheBound) {
  EXPECT_THAT(
      warnings_of(cpu_only("  collect_interval_ms: 2000\n")),
      ElementsAre("r.yaml:4:24: warning: telemetry.collect_interval_ms=2000 can put sample gaps "
                  "over the 3.0s max sample gap: a response that takes up to the request timeout "
                  "(telemetry.request_timeout_seconds=2.0) delays its row by up to that much; at "
                  "most 1000 ms stays within it with telemetry.request_timeout_seconds=2.0"));
}

TEST(ConfigWarnings, JitterCanCrossTheBound) {
  EXPECT_THAT(
      warnings_of(cpu_only("  request_timeout_seconds: 0.25\n  collect_interval_ms: 2600\n")),
      ElementsAre("r.yaml:5:24: warning: telemetry.collect_interval_ms=2600 can put sample gaps "
                  "over the 3.0s max sample gap: scheduling jitter and the sensors' read age move "
                  "a row's time by up to 0.5s; at most 2500 ms stays within it with "
                  "telemetry.request_timeout_seconds=0.25"));
  // Both reasons at once.
  EXPECT_THAT(
      warnings_of(cpu_only("  request_timeout_seconds: 0.5\n  collect_interval_ms: 2600\n")),
      ElementsAre(HasSubstr("by up to 0.5s, and a response that takes up to the request timeout "
                            "(telemetry.request_timeout_seconds=0.5) delays its row by up to that "
                            "much; at most 2500 ms stays within it")));
}

TEST(ConfigWarnings, OnlyWithALegThatScrapesAtTheInterval) {
  // The host leg samples at its own sample_interval_seconds.
  EXPECT_THAT(warnings_of("telemetry:\n  enabled: true\n  collect_interval_ms: 2000\n"
                          "  cpu_power:\n    enabled: true\n"),
              IsEmpty());
  EXPECT_THAT(warnings_of("telemetry:\n  enabled: false\n  collect_interval_ms: 2000\n"),
              IsEmpty());
  // A defaulted interval with a long timeout: the warning points at the telemetry block.
  EXPECT_THAT(warnings_of(cpu_only("  request_timeout_seconds: 2.5\n")),
              ElementsAre(::testing::StartsWith("r.yaml:1:1: warning: "
                                                "telemetry.collect_interval_ms=1000 can put")));
}

TEST(ConfigRules, StorageSubdirIsCheckedWithoutTheGpuLeg) {
  for (const char* dir : {"/abs", "~/x", "a/../b", "a//b", "a/", "''", "..", "../x", ".", "./power",
                          "power/.", "/"}) {
    EXPECT_THAT(messages_of(cpu_only(std::string("  storage_subdir: ") + dir + "\n")),
                ElementsAre("telemetry.storage_subdir must be a safe relative path below the run "
                            "log directory"))
        << dir;
  }
}

TEST(ConfigRules, ADefaultedFieldIsReportedAtItsBlock) {
  // collect_interval_ms is not in the file; the error points at the telemetry block.
  Recipe r;
  r.file = "x.yaml";
  r.telemetry.enabled = true;
  r.telemetry.cpu_power_exporter.emplace();
  r.telemetry.collect_interval_ms = 0;
  r.marks["telemetry"] = {3, 1};
  const auto errors = validate_recipe(r);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_THAT(format_error(errors[0]), ::testing::StartsWith("x.yaml:3:1: "));
}

TEST(ConfigRules, EveryFailingRuleIsReported) {
  EXPECT_EQ(messages_of(cpu_only("  collect_interval_ms: 0\n  storage_subdir: /x\n  "
                                 "request_timeout_seconds: 0\n"))
                .size(),
            3u);
}

TEST(ConfigRules, SafeRelativeSubpath) {
  EXPECT_TRUE(is_safe_relative_subpath("power"));
  EXPECT_TRUE(is_safe_relative_subpath("a/b/c"));
  EXPECT_TRUE(is_safe_relative_subpath("a.b/..c"));
  EXPECT_FALSE(is_safe_relative_subpath(""));
  EXPECT_FALSE(is_safe_relative_subpath("/power"));
  EXPECT_FALSE(is_safe_relative_subpath("~power"));
  EXPECT_FALSE(is_safe_relative_subpath(".."));
  EXPECT_FALSE(is_safe_relative_subpath("a/../b"));
  EXPECT_FALSE(is_safe_relative_subpath("a//b"));
  EXPECT_FALSE(is_safe_relative_subpath("."));
  EXPECT_FALSE(is_safe_relative_subpath("./a"));
  EXPECT_FALSE(is_safe_relative_subpath("a/./b"));
  EXPECT_TRUE(is_safe_relative_subpath(".a/b."));
}

TEST(ConfigRules, HostLegMayNotShareTheExporterLegsDirectory) {
  // The exporter leg writes <storage_subdir>/cpu/samples.csv, the host leg
  // <cpu_power.storage_subdir>/samples.csv: one file for both.
  const std::string both =
      "telemetry:\n  enabled: true\n  cpu_power_exporter: {}\n  cpu_power:\n    enabled: true\n";
  EXPECT_THAT(messages_of(both + "    storage_subdir: power/cpu\n"),
              ElementsAre("telemetry.cpu_power.storage_subdir must differ from "
                          "telemetry.storage_subdir + \"/cpu\", where the exporter leg writes its "
                          "samples.csv"));
  EXPECT_THAT(messages_of(both + "    storage_subdir: power/cpu/host\n"), IsEmpty());
  // Without the exporter leg nothing is written there.
  EXPECT_THAT(messages_of("telemetry:\n  enabled: true\n  cpu_power:\n    enabled: true\n"
                          "    storage_subdir: power/cpu\n"),
              IsEmpty());
}

TEST(ConfigDescribe, ShowsResolvedAndDerivedValues) {
  const std::string text = describe_recipe(loaded(cpu_only("  collect_interval_ms: 250\n")));
  EXPECT_THAT(text, HasSubstr("telemetry.collect_interval_ms: 250\n"));
  EXPECT_THAT(text, HasSubstr("telemetry.storage_subdir: power  (default)\n"));
  EXPECT_THAT(text, HasSubstr("telemetry.collector_join_timeout_seconds: 12  (derived"));
  EXPECT_THAT(text, HasSubstr("telemetry.cpu_power_exporter.port: 9405  (default)\n"));
  EXPECT_THAT(text, HasSubstr("legs: CPU exporter scrape -> <log_dir>/power/cpu/\n"));
}

TEST(ConfigLoad, TheRecipeNameIsReadLenientlyForTheRunNameLabel) {
  std::vector<ConfigError> errors;
  EXPECT_EQ(parse_recipe_text("name: \"r1\"\n", "t.yaml", errors).name, "r1");
  // Not a string: no name and no error (srtctl judges the field, not cpu-power).
  EXPECT_FALSE(parse_recipe_text("name: 12\n", "t.yaml", errors).name.has_value());
  EXPECT_FALSE(parse_recipe_text("name: [a]\n", "t.yaml", errors).name.has_value());
  EXPECT_FALSE(parse_recipe_text("telemetry: {}\n", "t.yaml", errors).name.has_value());
  EXPECT_THAT(errors, IsEmpty());
}

// --- the GPU exporter abstraction (kind, gpu_labels, gpu_metrics) and the cluster
// configuration (visible_devices_env, default_gpu_exporter) ---------------------------------

TEST(ConfigGpuExporter, TheReferenceExamplesPass) {
  // A DCGM recipe with kind: dcgm and the defaults written out, and the AMD custom exporter.
  const auto dcgm = load_recipe_file(kRecipes + "gpu_dcgm_kind.yaml");
  ASSERT_THAT(dcgm.errors, IsEmpty()) << format_error(dcgm.errors.front());
  const auto& d = *dcgm.recipe->telemetry.dcgm_exporter;
  EXPECT_EQ(d.kind, "dcgm");
  ASSERT_TRUE(d.gpu_labels && d.gpu_metrics);
  EXPECT_THAT(d.gpu_labels->instance, ElementsAre("GPU_I_ID", "GPU_I_PROFILE"));
  EXPECT_EQ(d.gpu_metrics->sm_active_metric, "DCGM_FI_PROF_SM_ACTIVE");

  const auto amd = load_recipe_file(kRecipes + "gpu_amd_custom.yaml");
  ASSERT_THAT(amd.errors, IsEmpty()) << format_error(amd.errors.front());
  const auto& a = *amd.recipe->telemetry.dcgm_exporter;
  EXPECT_EQ(a.kind, "custom");
  EXPECT_EQ(a.command, "/home/amd/tools/entrypoint.sh");
  EXPECT_EQ(a.port, 5000);
  EXPECT_EQ(a.gpu_labels->index, "gpu_id");
  EXPECT_EQ(a.gpu_labels->identity, "serial_number");
  EXPECT_THAT(a.gpu_labels->instance, IsEmpty());
  EXPECT_EQ(a.gpu_metrics->power_metric, "gpu_power_usage");
  EXPECT_EQ(a.gpu_metrics->power_scope, "amd_device_metrics_exporter_gpu_power_usage");
  EXPECT_EQ(a.gpu_metrics->gpu_util_metric, "gpu_gfx_activity");
  EXPECT_FALSE(a.gpu_metrics->sm_active_metric.has_value());
  EXPECT_EQ(a.gpu_metrics->temperature_metric, "gpu_junction_temperature");
}

TEST(ConfigGpuExporter, DefaultsToDcgmAndADcgmRecipeDescribesAsBefore) {
  const auto r = loaded(
      "telemetry:\n  enabled: true\n  dcgm_exporter: {container_image: x, "
      "port: 9400}\n");
  EXPECT_EQ(r.telemetry.dcgm_exporter->kind, "dcgm");
  EXPECT_FALSE(r.telemetry.dcgm_exporter->gpu_labels.has_value());
  const auto text = describe_recipe(r);
  EXPECT_THAT(text, ::testing::Not(HasSubstr("kind")));
  EXPECT_THAT(text, HasSubstr("legs: GPU DCGM scrape -> <log_dir>/power/\n"));
  const auto amd = load_recipe_file(kRecipes + "gpu_amd_custom.yaml");
  const auto custom = describe_recipe(*amd.recipe);
  EXPECT_THAT(custom, HasSubstr("telemetry.dcgm_exporter.kind: custom\n"));
  EXPECT_THAT(custom, HasSubstr("telemetry.dcgm_exporter.gpu_labels: index=gpu_id "
                                "identity=serial_number instance=(none)\n"));
  EXPECT_THAT(custom, HasSubstr("legs: GPU custom exporter scrape -> <log_dir>/power/\n"));
}

TEST(ConfigGpuExporter, BadValuesGetTheirMessages) {
  const std::string base =
      "telemetry:\n  enabled: true\n  dcgm_exporter:\n"
      "    container_image: x\n    port: 9400\n";
  EXPECT_THAT(messages_of(base + "    kind: amd\n"),
              ElementsAre("telemetry.dcgm_exporter.kind must be one of: \"dcgm\", \"custom\" "
                          "(got \"amd\")"));
  EXPECT_THAT(messages_of(base + "    kind: custom\n"),
              ElementsAre("telemetry.dcgm_exporter.kind: custom must set command, gpu_labels "
                          "and gpu_metrics; command, gpu_labels, gpu_metrics missing (the names "
                          "of another exporter cannot be guessed)"));
  EXPECT_THAT(messages_of(base + "    kind: custom\n    command: e\n"
                                 "    gpu_labels: {index: gpu_id, identity: serial_number}\n"),
              ElementsAre("telemetry.dcgm_exporter.kind: custom must set command, gpu_labels "
                          "and gpu_metrics; gpu_metrics missing (the names of another exporter "
                          "cannot be guessed)"));
  // Missing and null required fields, as every block of the recipe says them.
  EXPECT_THAT(messages_of(base + "    gpu_labels: {index: gpu}\n"),
              ElementsAre("telemetry.dcgm_exporter.gpu_labels.identity: missing required field"));
  EXPECT_THAT(messages_of(base + "    gpu_labels: {index: gpu, identity: ~}\n"),
              ElementsAre("telemetry.dcgm_exporter.gpu_labels.identity: may not be null"));
  EXPECT_THAT(messages_of(base + "    gpu_labels: {index: gpu, identity: UUID, instance: x}\n"),
              ElementsAre("telemetry.dcgm_exporter.gpu_labels.instance: expected a list of "
                          "strings, got \"x\""));
  EXPECT_THAT(messages_of(base + "    gpu_metrics: {gpu_util: {metric: u}}\n"),
              ElementsAre("telemetry.dcgm_exporter.gpu_metrics.power: missing required field"));
  EXPECT_THAT(messages_of(base + "    gpu_metrics: {power: {metric: p}}\n"),
              ElementsAre("telemetry.dcgm_exporter.gpu_metrics.power.scope: missing required "
                          "field"));
  EXPECT_THAT(messages_of(base + "    gpu_metrics: {power: {metric: p, scope: s, unit: W}}\n"),
              ElementsAre("unknown key \"unit\" in telemetry.dcgm_exporter.gpu_metrics.power"));
  EXPECT_THAT(messages_of(base + "    gpu_metrics: {power: {metric: p, scope: s}, temperatur: "
                                 "{}}\n"),
              ElementsAre("unknown key \"temperatur\" in telemetry.dcgm_exporter.gpu_metrics (did "
                          "you mean \"temperature\"?)"));
  // Names Prometheus would not serve, one family for two columns, a blank scope.
  EXPECT_THAT(messages_of(base + "    gpu_labels: {index: gpu-id, identity: UUID}\n"),
              ElementsAre("telemetry.dcgm_exporter.gpu_labels.index must be a Prometheus label "
                          "name ([a-zA-Z_][a-zA-Z0-9_]*), got \"gpu-id\""));
  EXPECT_THAT(messages_of(base + "    gpu_labels: {index: gpu, identity: gpu}\n"),
              ElementsAre(HasSubstr("telemetry.dcgm_exporter.gpu_labels.identity must differ "
                                    "from telemetry.dcgm_exporter.gpu_labels.index")));
  EXPECT_THAT(
      messages_of(base + "    gpu_labels: {index: gpu, identity: UUID, instance: [UUID]}\n"),
      ElementsAre("telemetry.dcgm_exporter.gpu_labels.instance[0] (\"UUID\") names the "
                  "identity label: every sample carries it, so every sample would be "
                  "dropped"));
  EXPECT_THAT(messages_of(base + "    gpu_metrics: {power: {metric: 'gpu power', scope: s}}\n"),
              ElementsAre("telemetry.dcgm_exporter.gpu_metrics.power.metric must be a Prometheus "
                          "metric name ([a-zA-Z_:][a-zA-Z0-9_:]*), got \"gpu power\""));
  EXPECT_THAT(messages_of(base + "    gpu_metrics: {power: {metric: p, scope: s}, temperature: "
                                 "{metric: p}}\n"),
              ElementsAre("telemetry.dcgm_exporter.gpu_metrics.temperature.metric (\"p\") is also "
                          "telemetry.dcgm_exporter.gpu_metrics.power.metric; each family fills "
                          "one column"));
  EXPECT_THAT(messages_of(base + "    gpu_metrics: {power: {metric: p, scope: ' '}}\n"),
              ElementsAre(HasSubstr("telemetry.dcgm_exporter.gpu_metrics.power.scope must not "
                                    "be empty")));
}

TEST(ConfigGpuExporter, ErrorsPointAtTheField) {
  const auto errors = errors_of(
      "telemetry:\n  enabled: true\n  dcgm_exporter:\n    container_image: x\n    port: 9400\n"
      "    kind: custom\n    command: e\n    gpu_labels: {index: gpu_id, identity: serial}\n"
      "    gpu_metrics:\n      power: {metric: 'p w', scope: s}\n");
  EXPECT_THAT(errors, ElementsAre(HasSubstr("r.yaml:10:23: telemetry.dcgm_exporter.gpu_metrics."
                                            "power.metric must be")));
}

TEST(ConfigCluster, TheReferenceClusterExampleLoadsAndIsInherited) {
  const auto cluster = load_cluster_file(kRecipes + "srtslurm_amd.yaml");
  ASSERT_THAT(cluster.errors, IsEmpty()) << format_error(cluster.errors.front());
  EXPECT_EQ(cluster.cluster->visible_devices_env, "ROCR_VISIBLE_DEVICES");
  ASSERT_TRUE(cluster.cluster->default_gpu_exporter.has_value());
  EXPECT_EQ(cluster.cluster->default_gpu_exporter->kind, "custom");

  // Telemetry on with nothing to collect: the cluster's exporter is inherited.
  const auto inherit = load_recipe_file(kRecipes + "gpu_inherit.yaml", &*cluster.cluster);
  ASSERT_THAT(inherit.errors, IsEmpty()) << format_error(inherit.errors.front());
  EXPECT_TRUE(inherit.recipe->gpu_exporter_inherited);
  EXPECT_EQ(inherit.recipe->telemetry.dcgm_exporter->gpu_metrics->power_metric, "gpu_power_usage");
  EXPECT_THAT(describe_recipe(*inherit.recipe),
              HasSubstr("cluster.visible_devices_env: ROCR_VISIBLE_DEVICES\n"));
  // Without the cluster configuration the same recipe has nothing to collect.
  EXPECT_THAT(load_recipe_file(kRecipes + "gpu_inherit.yaml").errors,
              ElementsAre(::testing::Field(&ConfigError::message,
                                           HasSubstr("otherwise there is nothing to collect"))));
  // A recipe's own exporter wins, and a CPU leg keeps the GPU default out.
  const auto own = load_recipe_file(kRecipes + "gpu_dcgm_kind.yaml", &*cluster.cluster);
  ASSERT_THAT(own.errors, IsEmpty());
  EXPECT_EQ(own.recipe->telemetry.dcgm_exporter->kind, "dcgm");
  EXPECT_FALSE(own.recipe->gpu_exporter_inherited);
  const auto cpu = load_recipe_file(kRecipes + "cpu_only.yaml", &*cluster.cluster);
  ASSERT_THAT(cpu.errors, IsEmpty());
  EXPECT_FALSE(cpu.recipe->telemetry.dcgm_exporter.has_value());
}

TEST(ConfigCluster, DefaultsAndExplicitNull) {
  const auto empty = load_cluster_text("default_account: a\n", "c.yaml");
  ASSERT_THAT(empty.errors, IsEmpty());
  EXPECT_EQ(empty.cluster->visible_devices_env, "CUDA_VISIBLE_DEVICES");
  EXPECT_FALSE(empty.cluster->default_gpu_exporter.has_value());
  const auto off = load_cluster_text("default_gpu_exporter: null\n", "c.yaml");
  ASSERT_THAT(off.errors, IsEmpty());
  EXPECT_FALSE(off.cluster->default_gpu_exporter.has_value());
}

TEST(ConfigCluster, BadValuesNameTheClusterFileAndPlace) {
  std::vector<std::string> out;
  for (const auto& e :
       load_cluster_text("visible_devices_env: ROCR-VISIBLE\n"
                         "default_gpu_exporter:\n  container_image: i\n  port: 70000\n"
                         "  kind: custom\n",
                         "srtslurm.yaml")
           .errors) {
    out.push_back(format_error(e));
  }
  EXPECT_THAT(out, ElementsAre("srtslurm.yaml:1:22: visible_devices_env must be an environment "
                               "variable name ([A-Za-z_][A-Za-z0-9_]*), got \"ROCR-VISIBLE\"",
                               "srtslurm.yaml:4:9: default_gpu_exporter.port must be in 1..65535",
                               "srtslurm.yaml:5:9: default_gpu_exporter.kind: custom must set "
                               "command, gpu_labels and gpu_metrics; command, gpu_labels, "
                               "gpu_metrics missing (the names of another exporter cannot be "
                               "guessed)"));
  EXPECT_THAT(
      load_cluster_text("visible_devices_env: ~\n", "c.yaml").errors,
      ElementsAre(::testing::Field(&ConfigError::message, "visible_devices_env: may not be null")));
  EXPECT_THAT(
      load_cluster_text("default_gpu_exporter: {port: 1, container_image: i, knd: x}\n", "c.yaml")
          .errors,
      ElementsAre(::testing::Field(&ConfigError::message,
                                   "unknown key \"knd\" in default_gpu_exporter (did you "
                                   "mean \"kind\"?)")));
  EXPECT_THAT(load_cluster_text("- a\n", "c.yaml").errors,
              ElementsAre(::testing::Field(
                  &ConfigError::message, HasSubstr("a cluster configuration must be a mapping"))));
  const auto missing = load_cluster_file(::testing::TempDir() + "no-such-cluster.yaml");
  ASSERT_EQ(missing.errors.size(), 1u);
  EXPECT_THAT(missing.errors[0].message, HasSubstr("cannot read cluster configuration"));
}

}  // namespace
}  // namespace cpupower::config
