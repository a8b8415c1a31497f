// The launch module: the exact srun argv, het grouping, exporter binary resolution order,
// node addresses (IPv6 bracketing included), the plan per mode, processes and session.json.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <cstdlib>

#include <cerrno>
#include <chrono>
#include <fstream>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "launch/clock_check.hpp"
#include "launch/exporter_binary.hpp"
#include "launch/node_address.hpp"
#include "launch/node_set.hpp"
#include "launch/process.hpp"
#include "launch/prometheus_sd.hpp"
#include "launch/readiness.hpp"
#include "launch/session.hpp"
#include "launch/session_plan.hpp"
#include "launch/session_record.hpp"
#include "launch/srun_argv.hpp"
#include "scrape/endpoint.hpp"
#include "test_tree.hpp"

namespace cpupower::launch {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using Argv = std::vector<std::string>;

// Expands "n[1-3]"-style ranges without Slurm, and records what it was asked.
HostlistExpander fake_expander(std::vector<std::string>* asked = nullptr) {
  return [asked](const std::string& expr) -> Result<std::vector<std::string>> {
    if (asked) asked->push_back(expr);
    const auto open = expr.find('['), dash = expr.find('-'), close = expr.find(']');
    if (open == std::string::npos || dash == std::string::npos || close == std::string::npos) {
      return Error{"bad range " + expr};
    }
    std::vector<std::string> out;
    const int from = std::stoi(expr.substr(open + 1, dash - open - 1));
    const int to = std::stoi(expr.substr(dash + 1, close - dash - 1));
    for (int i = from; i <= to; ++i) out.push_back(expr.substr(0, open) + std::to_string(i));
    return out;
  };
}

ExporterChoice native(const std::string& path = "/opt/bin/cpu-power-exporter") {
  return {ExporterKind::native, path, "beside cpu-power", {}};
}

PlanRequest request(Env env = {}) {
  PlanRequest r;
  r.recipe.telemetry.enabled = true;
  r.recipe.telemetry.cpu_power_exporter.emplace();
  r.log_dir = "/logs/run 1";
  r.command = {"bench", "--fast"};
  r.env = std::move(env);
  r.exporter = native();
  r.self_exe = "/opt/bin/cpu-power";
  r.local_hostname = "head";
  r.expand = fake_expander();
  return r;
}

// --- srun argv ---------------------------------------------------------------------------

TEST(SrunArgv, ExactlyAsTheReferenceBuildsIt) {
  SrunStep step;
  step.job_id = "4242";
  step.group = {-1, {"n1", "n2"}};
  step.output = exporter_log_pattern("/logs", -1, false);
  step.command = {"/opt/bin/cpu-power-exporter", "--port", "9405", "--source", "auto"};
  EXPECT_THAT(
      srun_argv(step),
      ElementsAre("srun", "--jobid", "4242", "--overlap", "--nodes", "2", "--ntasks", "2",
                  "--nodelist", "n1,n2", "--output", "/logs/telemetry_cpu_power_exporter.%N.out",
                  "/opt/bin/cpu-power-exporter", "--port", "9405", "--source", "auto"));
}

TEST(SrunArgv, NoJobIdOutsideAnAllocation) {
  SrunStep step;
  step.group = {-1, {"n1"}};
  step.command = {"x"};
  EXPECT_THAT(srun_argv(step), ElementsAre("srun", "--overlap", "--nodes", "1", "--ntasks", "1",
                                           "--nodelist", "n1", "x"));
}

TEST(SrunArgv, HetGroupAndSrunOptions) {
  SrunStep step;
  step.job_id = "7";
  step.group = {1, {"b1", "b2", "b3"}};
  step.output = exporter_log_pattern("/l", 1, true);
  step.srun_options = {{"mpi", "pmix"}, {"exclusive", std::nullopt}};
  step.command = {"e"};
  EXPECT_THAT(
      srun_argv(step),
      ElementsAre("srun", "--jobid", "7", "--overlap", "--nodes", "3", "--ntasks", "3",
                  "--nodelist", "b1,b2,b3", "--het-group=1", "--output",
                  "/l/telemetry_cpu_power_exporter.g1.%N.out", "--mpi=pmix", "--exclusive", "e"));
}

TEST(SrunArgv, NamesAndLogsPerGroup) {
  EXPECT_EQ(exporter_process_name(-1, false), "telemetry_cpu_power_exporter");
  EXPECT_EQ(exporter_process_name(2, true), "telemetry_cpu_power_exporter_g2");
  EXPECT_EQ(exporter_log_for_node("/l", 0, true, "n$1"),
            "/l/telemetry_cpu_power_exporter.g0.n$1.out");
  EXPECT_EQ(exporter_log_for_node("/l", -1, false, "n1"), "/l/telemetry_cpu_power_exporter.n1.out");
  // srun would expand a '%' in the directory; "%%" is its literal percent sign.
  EXPECT_EQ(exporter_log_pattern("/l/50%", -1, false),
            "/l/50%%/telemetry_cpu_power_exporter.%N.out");
}

// --- node set and het grouping -----------------------------------------------------------

TEST(NodeSet, ParseNodeListExpandsRangesOnlyAndKeepsMetacharacters) {
  std::vector<std::string> asked;
  const auto nodes = parse_node_list("n[1-2], m$(id);x ,n2,,a b'c", fake_expander(&asked));
  ASSERT_TRUE(nodes) << nodes.error();
  EXPECT_THAT(*nodes, ElementsAre("n1", "n2", "m$(id);x", "a b'c"));
  EXPECT_THAT(asked, ElementsAre("n[1-2]"));
}

TEST(NodeSet, CommasInsideBracketsDoNotSplit) {
  std::vector<std::string> asked;
  const auto nodes = parse_node_list("x[1-2,5],y", [&](const std::string& e) {
    asked.push_back(e);
    return Result<std::vector<std::string>>({"x1", "x2", "x5"});
  });
  ASSERT_TRUE(nodes) << nodes.error();
  EXPECT_THAT(*nodes, ElementsAre("x1", "x2", "x5", "y"));
  EXPECT_THAT(asked, ElementsAre("x[1-2,5]"));
}

TEST(NodeSet, AllocationFromEnv) {
  const auto none = allocation_from_env({}, fake_expander());
  ASSERT_TRUE(none) << none.error();
  EXPECT_FALSE(*none);
  const auto plain = allocation_from_env({{"SLURM_JOB_ID", "9"}, {"SLURM_JOB_NODELIST", "n[1-3]"}},
                                         fake_expander());
  ASSERT_TRUE(plain && *plain) << plain.error();
  EXPECT_EQ((*plain)->job_id, "9");
  EXPECT_THAT((*plain)->groups, ElementsAre(NodeGroup{-1, {"n1", "n2", "n3"}}));
  const auto het = allocation_from_env({{"SLURM_JOB_ID", "4"},
                                        {"SLURM_HET_SIZE", "2"},
                                        {"SLURM_JOB_NODELIST_HET_GROUP_0", "n1"},
                                        {"SLURM_JOB_NODELIST_HET_GROUP_1", "n[2-3]"}},
                                       fake_expander());
  ASSERT_TRUE(het && *het) << het.error();
  EXPECT_THAT((*het)->groups, ElementsAre(NodeGroup{0, {"n1"}}, NodeGroup{1, {"n2", "n3"}}));
}

TEST(NodeSet, HetGroupingByComponent) {
  Allocation a{"4", {{0, {"p1"}}, {1, {"d1", "d2"}}, {2, {"s1"}}}};
  const auto grouped = group_nodes({"d2", "p1", "x9", "d1"}, a);
  EXPECT_THAT(grouped.groups, ElementsAre(NodeGroup{0, {"p1"}}, NodeGroup{1, {"d2", "d1"}}));
  EXPECT_THAT(grouped.errors, ElementsAre("node 'x9' not in any het component"));
  // Without a het allocation every node is one group, without --het-group.
  EXPECT_THAT(group_nodes({"a", "b"}, std::nullopt).groups, ElementsAre(NodeGroup{-1, {"a", "b"}}));
  EXPECT_THAT(group_nodes({"a"}, Allocation{"1", {{-1, {"a"}}}}).groups,
              ElementsAre(NodeGroup{-1, {"a"}}));
}

// --- the plan ----------------------------------------------------------------------------

TEST(SessionPlan, HetAllocationIsOneSrunPerGroup) {
  auto r = request({{"SLURM_JOB_ID", "4"},
                    {"SLURM_HET_SIZE", "2"},
                    {"SLURM_JOB_NODELIST_HET_GROUP_0", "n1"},
                    {"SLURM_JOB_NODELIST_HET_GROUP_1", "n[2-3]"}});
  r.recipe.runtime.network_interface = "ib0";
  const auto plan = make_plan(r);
  ASSERT_EQ(plan.error, "");
  EXPECT_EQ(plan.mode, LaunchMode::slurm);
  ASSERT_EQ(plan.groups.size(), 2u);
  EXPECT_THAT(plan.groups[0].exporter_srun,
              ElementsAre("srun", "--jobid", "4", "--overlap", "--nodes", "1", "--ntasks", "1",
                          "--nodelist", "n1", "--het-group=0", "--output",
                          "/logs/run 1/telemetry_cpu_power_exporter.g0.%N.out",
                          "/opt/bin/cpu-power-exporter", "--port", "9405", "--source", "auto"));
  EXPECT_THAT(plan.groups[1].exporter_srun,
              ElementsAre("srun", "--jobid", "4", "--overlap", "--nodes", "2", "--ntasks", "2",
                          "--nodelist", "n2,n3", "--het-group=1", "--output",
                          "/logs/run 1/telemetry_cpu_power_exporter.g1.%N.out",
                          "/opt/bin/cpu-power-exporter", "--port", "9405", "--source", "auto"));
  EXPECT_THAT(plan.groups[1].resolver.srun,
              ElementsAre("srun", "--jobid", "4", "--overlap", "--nodes", "2", "--ntasks", "2",
                          "--nodelist", "n2,n3", "--het-group=1", "/opt/bin/cpu-power",
                          "node-address", "--interface", "ib0"));
  EXPECT_EQ(plan.groups[1].resolver.log, "/logs/run 1/telemetry_cpu_power_resolver.g1.log");
  EXPECT_EQ(plan.groups[1].process_name, "telemetry_cpu_power_exporter_g1");
  EXPECT_THAT(plan.nodes, ElementsAre("n1", "n2", "n3"));
  EXPECT_EQ(plan.cpu_dir, "/logs/run 1/power/cpu");
}

TEST(SessionPlan, TheGpuLegResolvesNodeAddressesItselfOnlyWithoutTheCpuExporterLeg) {
  const Env env = {{"SLURM_JOB_ID", "4"}, {"SLURM_JOB_NODELIST", "n[1-2]"}};
  // Both legs: the CPU exporter leg's resolvers serve the GPU leg too.
  auto both = request(env);
  both.recipe.telemetry.dcgm_exporter.emplace();
  const auto with_cpu = make_plan(both);
  ASSERT_EQ(with_cpu.error, "");
  ASSERT_TRUE(with_cpu.gpu_leg);
  EXPECT_EQ(with_cpu.groups.size(), 1u);
  EXPECT_TRUE(with_cpu.gpu_leg->resolvers.empty());
  // The GPU leg alone (a dcgm-exporter already running on each node): its own resolver step,
  // by the recipe's network interface, as the CPU leg's would be.
  auto gpu_only = request(env);
  gpu_only.recipe.telemetry.cpu_power_exporter.reset();
  gpu_only.recipe.telemetry.dcgm_exporter.emplace();
  gpu_only.recipe.runtime.network_interface = "ib0";
  const auto plan = make_plan(gpu_only);
  ASSERT_EQ(plan.error, "");
  EXPECT_EQ(plan.mode, LaunchMode::slurm);
  EXPECT_TRUE(plan.groups.empty());
  ASSERT_TRUE(plan.gpu_leg);
  EXPECT_EQ(plan.gpu_leg->source, GpuExporterSource::running);
  ASSERT_EQ(plan.gpu_leg->resolvers.size(), 1u);
  EXPECT_THAT(plan.gpu_leg->resolvers[0].srun,
              ElementsAre("srun", "--jobid", "4", "--overlap", "--nodes", "2", "--ntasks", "2",
                          "--nodelist", "n1,n2", "/opt/bin/cpu-power", "node-address",
                          "--interface", "ib0"));
  EXPECT_EQ(plan.gpu_leg->resolvers[0].log, "/logs/run 1/telemetry_dcgm_exporter_resolver.log");
  EXPECT_THAT(describe_plan(plan), HasSubstr("resolver:  srun --jobid 4"));
}

TEST(SessionPlan, HostLegIsOneCollectorSrunPerGroup) {
  auto r = request({{"SLURM_JOB_ID", "4"},
                    {"SLURM_HET_SIZE", "2"},
                    {"SLURM_JOB_NODELIST_HET_GROUP_0", "n1"},
                    {"SLURM_JOB_NODELIST_HET_GROUP_1", "n[2-3]"}});
  r.recipe.telemetry.cpu_power.enabled = true;
  r.recipe.telemetry.cpu_power.sample_interval_seconds = 0.25;
  auto plan = make_plan(r);
  ASSERT_TRUE(plan.host_leg);
  EXPECT_EQ(plan.host_leg->cpu_dir, "/logs/run 1/cpu_power");
  ASSERT_EQ(plan.host_leg->groups.size(), 2u);
  EXPECT_EQ(plan.host_leg->groups[1].process_name, "telemetry_cpu_power_g1");
  EXPECT_THAT(
      plan.host_leg->groups[1].srun,
      ElementsAre("srun", "--jobid", "4", "--overlap", "--nodes", "2", "--ntasks", "2",
                  "--nodelist", "n2,n3", "--het-group=1", "--output",
                  "/logs/run 1/telemetry_cpu_power_g1.%N.out", "/opt/bin/cpu-power", "host-collect",
                  "--output-dir", "/logs/run 1/cpu_power/nodes", "--ready-dir",
                  "/logs/run 1/cpu_power/ready", "--source", "auto", "--interval-seconds", "0.25"));
  EXPECT_EQ(plan.groups.size(), 2u);  // the exporter leg runs beside it

  // The host leg alone: same nodes and groups, no exporter.
  r.recipe.telemetry.cpu_power_exporter.reset();
  plan = make_plan(r);
  EXPECT_FALSE(plan.exporter_leg);
  EXPECT_TRUE(plan.groups.empty());
  EXPECT_TRUE(plan.exporter_command.empty());
  ASSERT_TRUE(plan.host_leg);
  EXPECT_EQ(plan.host_leg->groups.size(), 2u);
  EXPECT_THAT(plan.nodes, ElementsAre("n1", "n2", "n3"));
  EXPECT_THAT(describe_plan(plan), HasSubstr("collector: srun --jobid 4"));

  // Off unless enabled, even when the block is there.
  r.recipe.telemetry.cpu_power.enabled = false;
  EXPECT_FALSE(make_plan(r).host_leg);
}

TEST(SessionPlan, NodesOutsideTheHetComponentsAreLeftOutWithAWarning) {
  auto r = request(
      {{"SLURM_JOB_ID", "4"}, {"SLURM_HET_SIZE", "1"}, {"SLURM_JOB_NODELIST_HET_GROUP_0", "n1"}});
  r.nodes = "n1,ghost";
  const auto plan = make_plan(r);
  ASSERT_EQ(plan.groups.size(), 1u);
  EXPECT_THAT(plan.nodes, ElementsAre("n1"));
  EXPECT_THAT(plan.warnings, ElementsAre(HasSubstr("node 'ghost' not in any het component")));
}

TEST(SessionPlan, ExplicitNodesWithoutAnAllocationUseSrunWithoutJobId) {
  auto r = request();
  r.nodes = "a,b";
  r.recipe.telemetry.cpu_power_exporter->port = 9500;
  r.recipe.telemetry.cpu_power_exporter->source = "acpi";
  const auto plan = make_plan(r);
  ASSERT_EQ(plan.groups.size(), 1u);
  EXPECT_THAT(plan.groups[0].exporter_srun,
              ElementsAre("srun", "--overlap", "--nodes", "2", "--ntasks", "2", "--nodelist", "a,b",
                          "--output", "/logs/run 1/telemetry_cpu_power_exporter.%N.out",
                          "/opt/bin/cpu-power-exporter", "--port", "9500", "--source", "acpi"));
}

TEST(SessionPlan, LocalAndSimulatedModes) {
  const auto local = make_plan(request());
  EXPECT_EQ(local.mode, LaunchMode::local);
  EXPECT_THAT(local.nodes, ElementsAre("head"));
  EXPECT_THAT(local.exporter_command,
              ElementsAre("/opt/bin/cpu-power-exporter", "--port", "9405", "--source", "auto"));
  auto r = request({{"SLURM_JOB_ID", "4"}, {"SLURM_JOB_NODELIST", "n1"}});
  r.simulate = "gh200";
  r.nodes = "s1,s2";
  const auto sim = make_plan(r);
  EXPECT_EQ(sim.mode, LaunchMode::simulate);  // even inside an allocation
  EXPECT_THAT(sim.nodes, ElementsAre("s1", "s2"));
  EXPECT_THAT(sim.exporter_command, ElementsAre("/opt/bin/cpu-power-exporter", "--port", "0",
                                                "--source", "auto", "--bind", "127.0.0.1"));
  r.nodes = "s[1-2]";
  EXPECT_THAT(make_plan(r).error, HasSubstr("plain node names"));
}

TEST(SessionPlan, PythonFallbackHasNoSourceAndWarns) {
  auto r = request();
  r.exporter = {
      ExporterKind::python_fallback, "/src/tools/cpu_power_exporter_fallback.py", "fallback", {}};
  r.recipe.telemetry.cpu_power_exporter->source = "dcgm";
  const auto plan = make_plan(r);
  EXPECT_THAT(
      plan.exporter_command,
      ElementsAre("python3", "/src/tools/cpu_power_exporter_fallback.py", "--port", "9405"));
  EXPECT_THAT(plan.warnings,
              ElementsAre("telemetry.cpu_power_exporter.source=dcgm requested, but the Python "
                          "fallback exporter is ACPI-only and has no --source flag; this request "
                          "cannot be honored"));
}

TEST(SessionPlan, TelemetryOffRunsTheCommandOnly) {
  auto r = request();
  r.recipe.telemetry.cpu_power_exporter.reset();
  const auto plan = make_plan(r);
  EXPECT_FALSE(plan.exporter_leg);
  EXPECT_EQ(plan.error, "");
  EXPECT_THAT(plan.warnings, ElementsAre(HasSubstr("running the command only")));
}

TEST(SessionPlan, UsageErrors) {
  auto r = request();
  r.command.clear();
  EXPECT_THAT(make_plan(r).error, HasSubstr("no command"));
  r = request();
  r.nodes = " , ";
  EXPECT_THAT(make_plan(r).error, HasSubstr("no node names"));
  // A node name names its files under the log directory: one with a '/' would escape it.
  r = request();
  r.simulate = "gh200";
  r.nodes = "s1,../../etc";
  EXPECT_EQ(make_plan(r).error,
            "node name '../../etc' cannot name the node's files: it is empty, '.', '..' or holds "
            "a '/'");
  r = request();
  r.local_hostname = "..";
  EXPECT_THAT(make_plan(r).error, HasSubstr("node name '..'"));
  // A storage directory that fits alone but not below this log directory: every open under
  // it would fail, so the run is refused before anything starts.
  r = request();
  r.log_dir = "/" + std::string(250, 'l');
  for (int i = 0; i < 15; ++i) r.log_dir += "/" + std::string(250, 'l');
  r.recipe.telemetry.storage_subdir = "power";
  EXPECT_THAT(make_plan(r).error,
              HasSubstr("--log-dir + telemetry.storage_subdir is 4022 bytes; with the 273 bytes "
                        "kept for what is written below it, longer than the 4095-byte limit on a "
                        "path (PATH_MAX)"));
}

TEST(SessionPlan, CarriesTheCpuSamplesSchema) {
  auto r = request({{"SLURM_JOB_ID", "4"}, {"SLURM_JOB_NODELIST", "n[1-2]"}});
  auto plan = make_plan(r);
  EXPECT_EQ(plan.cpu_samples_schema, 3);
  EXPECT_THAT(describe_plan(plan), HasSubstr("/cpu/samples.csv (schema v3) every 1000 ms"));
  r.cpu_samples_schema = 2;
  plan = make_plan(r);
  EXPECT_EQ(plan.cpu_samples_schema, 2);
  EXPECT_THAT(describe_plan(plan), HasSubstr("/cpu/samples.csv (schema v2) every 1000 ms"));
}

TEST(SessionPlan, DryRunDescriptionShowsEveryArgv) {
  auto r = request({{"SLURM_JOB_ID", "4"}, {"SLURM_JOB_NODELIST", "n[1-2]"}});
  const std::string text = describe_plan(make_plan(r));
  EXPECT_THAT(text, HasSubstr("mode:      slurm (job 4)"));
  EXPECT_THAT(text,
              HasSubstr("  exporter: srun --jobid 4 --overlap --nodes 2 --ntasks 2 --nodelist "
                        "n1,n2 --output '/logs/run 1/telemetry_cpu_power_exporter.%N.out' "
                        "/opt/bin/cpu-power-exporter --port 9405 --source auto\n"));
  EXPECT_THAT(text, HasSubstr("command:   bench --fast\n"));
}

// --- exporter binary resolution ----------------------------------------------------------

struct FakeMachine {
  std::set<std::string> executables;
  std::set<std::string> files;
  ExporterLookup lookup() const {
    ExporterLookup l;
    l.self_dir = "/opt/cpu-power/bin";
    l.path_env = "/usr/local/bin::/usr/bin";
    l.fallback_scripts = {"/opt/cpu-power/bin/cpu_power_exporter_fallback.py",
                          "/src/tools/cpu_power_exporter_fallback.py"};
    l.is_executable_file = [this](const std::string& p) { return executables.count(p) > 0; };
    l.is_readable_file = [this](const std::string& p) { return files.count(p) > 0; };
    return l;
  }
};

TEST(ExporterBinary, ResolutionOrder) {
  FakeMachine m;
  m.executables = {"/custom/exporter", "/opt/cpu-power/bin/cpu-power-exporter",
                   "/usr/bin/cpu-power-exporter"};
  m.files = {"/src/tools/cpu_power_exporter_fallback.py"};
  auto l = m.lookup();
  l.env_bin = "/custom/exporter";
  auto c = resolve_exporter(l);
  EXPECT_EQ(c.kind, ExporterKind::native);
  EXPECT_EQ(c.path, "/custom/exporter");
  EXPECT_EQ(c.origin, "CPU_POWER_EXPORTER_BIN");

  l.env_bin = "/missing/exporter";  // unusable: warned about, then the next candidate
  c = resolve_exporter(l);
  EXPECT_EQ(c.path, "/opt/cpu-power/bin/cpu-power-exporter");
  EXPECT_EQ(c.origin, "beside cpu-power");
  EXPECT_THAT(c.warnings, ElementsAre(HasSubstr("CPU_POWER_EXPORTER_BIN=/missing/exporter is not "
                                                "an executable file")));

  m.executables.erase("/opt/cpu-power/bin/cpu-power-exporter");
  c = resolve_exporter(m.lookup());
  EXPECT_EQ(c.path, "/usr/bin/cpu-power-exporter");
  EXPECT_EQ(c.origin, "PATH");

  m.executables.insert("./cpu-power-exporter");  // the empty PATH entry is the working directory
  EXPECT_EQ(resolve_exporter(m.lookup()).path, "./cpu-power-exporter");

  m.executables.clear();
  c = resolve_exporter(m.lookup());
  EXPECT_EQ(c.kind, ExporterKind::python_fallback);
  EXPECT_EQ(c.path, "/src/tools/cpu_power_exporter_fallback.py");

  m.files.insert("/opt/cpu-power/bin/cpu_power_exporter_fallback.py");  // installed beats source
  EXPECT_EQ(resolve_exporter(m.lookup()).path, "/opt/cpu-power/bin/cpu_power_exporter_fallback.py");

  m.files.clear();
  c = resolve_exporter(m.lookup());
  EXPECT_EQ(c.kind, ExporterKind::none);
  EXPECT_THAT(c.warnings, ElementsAre(HasSubstr("no cpu-power-exporter")));
}

TEST(ExporterBinary, ArgvPerKind) {
  EXPECT_THAT(exporter_argv(native("/e"), 9405, "acpi", {"--bind", "127.0.0.1"}),
              ElementsAre("/e", "--port", "9405", "--source", "acpi", "--bind", "127.0.0.1"));
  EXPECT_EQ(exporter_source_warning(native("/e"), "acpi"), "");
  const ExporterChoice py{ExporterKind::python_fallback, "/f.py", "fallback", {}};
  EXPECT_THAT(exporter_argv(py, 9405, "auto", {}),
              ElementsAre("python3", "/f.py", "--port", "9405"));
  EXPECT_EQ(exporter_source_warning(py, "auto"), "");  // auto is what the fallback does anyway
  EXPECT_THAT(exporter_argv(ExporterChoice{}, 9405, "auto", {}), IsEmpty());
}

TEST(ExporterBinary, TheRealProcessFindsTheFallbackInTheSourceTree) {
  const auto l = ExporterLookup::from_process();
  bool found = false;
  for (const auto& s : l.fallback_scripts) found = found || l.is_readable_file(s);
  EXPECT_TRUE(found);
}

// --- node addresses ----------------------------------------------------------------------

std::vector<InterfaceAddress> node_interfaces() {
  return {{"lo", "127.0.0.1", false, true, false, true},
          {"lo", "::1", true, true, false, true},
          {"eth0", "fe80::1", true, false, true, true},
          {"eth0", "fd00::7", true, false, false, true},
          {"eth0", "10.0.0.7", false, false, false, true},
          {"ib0", "fd01::7", true, false, false, true},
          {"ib1", "192.168.9.7", false, false, false, false}};
}

TEST(NodeAddress, Choice) {
  EXPECT_EQ(choose_node_address(node_interfaces(), "ib0", std::nullopt).value(), "fd01::7");
  EXPECT_EQ(choose_node_address(node_interfaces(), "eth0", "10.9.9.9").value(), "10.0.0.7");
  const auto down = choose_node_address(node_interfaces(), "ib1", std::nullopt);  // down
  EXPECT_FALSE(down);
  EXPECT_EQ(down.error(), "interface ib1 has no usable address");
  EXPECT_FALSE(choose_node_address(node_interfaces(), "ib9", std::nullopt));
  // No interface named: the route back to the launching host, else the first routable one.
  EXPECT_EQ(choose_node_address(node_interfaces(), std::nullopt, "fd00::7").value(), "fd00::7");
  EXPECT_EQ(choose_node_address(node_interfaces(), std::nullopt, "127.0.0.1").value(), "10.0.0.7");
  EXPECT_EQ(choose_node_address(node_interfaces(), std::nullopt, std::nullopt).value(), "10.0.0.7");
  EXPECT_FALSE(choose_node_address({{"lo", "127.0.0.1", false, true, false, true}}, std::nullopt,
                                   std::nullopt));
}

TEST(NodeAddress, ResolverOutputIgnoresNoise) {
  const std::string text = resolver_line("n$(id)1", "10.0.0.1") + "srun: warning: blah\n" +
                           resolver_line("n2", "fd00::2") +
                           "cpu-power-node-address\tn3\tnot-an-ip\n";
  EXPECT_THAT(parse_resolver_output(text),
              ElementsAre(std::pair<const std::string, std::string>{"n$(id)1", "10.0.0.1"},
                          std::pair<const std::string, std::string>{"n2", "fd00::2"}));
}

TEST(NodeAddress, ScrapesGoToLiteralAddressesWithIpv6Bracketed) {
  const scrape::Endpoint v6{"n1", "fd00::7", 9405};
  EXPECT_EQ(scrape::endpoint_url(v6), "http://[fd00::7]:9405/metrics");
  EXPECT_EQ(health_url(v6), "http://[fd00::7]:9405/health");
  EXPECT_EQ(health_url({"n2", "10.0.0.7", 9405}), "http://10.0.0.7:9405/health");
}

TEST(NodeAddress, RealLookups) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  EXPECT_EQ(resolve_name("127.0.0.1", deadline), "127.0.0.1");
  EXPECT_FALSE(resolve_name("no-such-host.invalid", deadline));
  EXPECT_EQ(route_source_address("127.0.0.1"), "127.0.0.1");
  EXPECT_FALSE(route_source_address("not-an-address"));
  EXPECT_TRUE(is_loopback_address("127.0.0.5"));
  EXPECT_TRUE(is_loopback_address("::1"));
  EXPECT_FALSE(is_loopback_address("10.0.0.1"));
}

// --- processes and the session record ----------------------------------------------------

SpawnOptions argv_only(Argv argv) {
  SpawnOptions o;
  o.argv = std::move(argv);
  return o;
}

TEST(Process, ExitCodesAsAShellReportsThem) {
  auto child = spawn_process(argv_only({"sh", "-c", "exit 7"}));
  ASSERT_TRUE(child) << child.error();
  const auto status = wait_for_exit(child->pid, std::chrono::seconds(10));
  ASSERT_TRUE(status);
  EXPECT_EQ(exit_code_from_status(*status), 7);
  EXPECT_EQ(describe_status(*status), "exit 7");
  child = spawn_process(argv_only({"sh", "-c", "kill -TERM $$"}));
  ASSERT_TRUE(child) << child.error();
  const auto killed = wait_for_exit(child->pid, std::chrono::seconds(10));
  ASSERT_TRUE(killed);
  EXPECT_EQ(exit_code_from_status(*killed), 128 + SIGTERM);
  EXPECT_EQ(describe_status(*killed), "killed by SIGTERM");
}

TEST(Process, ArgvIsNeverAShellCommand) {
  const auto result = run_capture({"printf", "%s|", "a b", "$(id)", "'q'"},
                                  std::chrono::steady_clock::now() + std::chrono::seconds(10));
  ASSERT_TRUE(result.status);
  EXPECT_EQ(result.output, "a b|$(id)|'q'|");
}

TEST(Process, MissingProgramIsReportedWithItsErrno) {
  int err = 0;
  if (std::getenv("CPUPOWER_EMULATED")) {
    // qemu-user runs posix_spawn's vfork-style clone as a plain fork, so the child's exec
    // error never reaches the parent (on aarch64 hardware it does, as above on x86): the
    // spawn "succeeds" and the child exits 127, as a shell reports a missing program.
    const auto child = spawn_process(argv_only({"/no/such/program"}), &err);
    ASSERT_TRUE(child) << child.error();
    const auto status = wait_for_exit(child->pid, std::chrono::seconds(10));
    ASSERT_TRUE(status);
    EXPECT_EQ(exit_code_from_status(*status), 127);
    return;
  }
  const auto child = spawn_process(argv_only({"/no/such/program"}), &err);
  EXPECT_FALSE(child);
  EXPECT_EQ(err, ENOENT);
  EXPECT_THAT(child.error(), HasSubstr("/no/such/program"));
}

TEST(Process, TerminateEscalatesToKillAfterTheGrace) {
  // Ignores SIGTERM: only SIGKILL ends it.
  auto child = spawn_process(argv_only({"sh", "-c", "trap '' TERM; while :; do sleep 0.05; done"}));
  ASSERT_TRUE(child) << child.error();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const auto t0 = std::chrono::steady_clock::now();
  const int status = terminate_process(child->pid, std::chrono::milliseconds(300), true);
  EXPECT_GE(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(300));
  EXPECT_EQ(describe_status(status), "killed by SIGKILL");
}

TEST(Process, CaptureStopsAtTheDeadline) {
  const auto t0 = std::chrono::steady_clock::now();
  const auto result =
      run_capture({"sh", "-c", "echo early; sleep 30"}, t0 + std::chrono::milliseconds(300));
  EXPECT_FALSE(result.status);
  EXPECT_EQ(result.output, "early\n");
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
}

// Helpers spawned with die_with_parent take the fork path: the same behaviour as the
// posix_spawn one, and a SIGTERM when the spawning thread ends (the kernel's unit for a
// parent's death; a SIGKILLed `cpu-power run` is integration.test_run_local's case).
std::string slurp(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

SpawnOptions with_parent_death(Argv argv) {
  auto o = argv_only(std::move(argv));
  o.die_with_parent = true;
  return o;
}

std::string read_all(int fd) {
  std::string out;
  char buf[256];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) out.append(buf, n);
  ::close(fd);
  return out;
}

TEST(Process, DescriptorsSignalsAndErrorsTheSameOnBothPaths) {
  for (const bool fork_path : {false, true}) {
    SCOPED_TRACE(fork_path ? "fork path" : "posix_spawn path");
    cpupower::testing::TestTree t;
    int err = 0;
    auto o = argv_only({"sh", "-c", "echo out; echo err >&2; read x || exit 9"});
    o.die_with_parent = fork_path;
    o.output_path = t.path("child.log");
    auto child = spawn_process(o, &err);
    ASSERT_TRUE(child) << child.error();
    // Its own process group. Under qemu-user, posix_spawn's child can still be on its way
    // there when the call returns (its vfork-style clone runs as a plain fork): wait for it.
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (::getpgid(child->pid) != child->pid && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    EXPECT_EQ(::getpgid(child->pid), child->pid);
    auto status = wait_for_exit(child->pid, std::chrono::seconds(10));
    ASSERT_TRUE(status);
    EXPECT_EQ(describe_status(*status), "exit 9");  // stdin is /dev/null
    EXPECT_EQ(slurp(t.path("child.log")), "out\nerr\n");

    o = argv_only({"sh", "-c", "echo captured; echo logged >&2; kill -TERM $$"});
    o.die_with_parent = fork_path;
    o.capture_stdout = true;
    o.output_path = t.path("stderr.log");
    child = spawn_process(o, &err);
    ASSERT_TRUE(child) << child.error();
    EXPECT_EQ(read_all(child->stdout_fd), "captured\n");
    status = wait_for_exit(child->pid, std::chrono::seconds(10));
    ASSERT_TRUE(status);
    EXPECT_EQ(slurp(t.path("stderr.log")), "logged\n");
    EXPECT_EQ(describe_status(*status), "killed by SIGTERM");  // default disposition

    // A log file that cannot be created is named as what failed, not the program.
    o = argv_only({"true"});
    o.die_with_parent = fork_path;
    o.output_path = t.path("no/such/dir/child.log");
    child = spawn_process(o, &err);
    EXPECT_FALSE(child);
    EXPECT_EQ(err, ENOENT);
    EXPECT_EQ(child.error(), t.path("no/such/dir/child.log") + ": No such file or directory");

    // With this process's stdin closed, the child's stdin is still /dev/null.
    const int saved = ::dup(0);
    ::close(0);
    o = argv_only({"readlink", "/proc/self/fd/0"});
    o.die_with_parent = fork_path;
    o.capture_stdout = true;
    child = spawn_process(o, &err);
    ::dup2(saved, 0);
    ::close(saved);
    ASSERT_TRUE(child) << child.error();
    EXPECT_EQ(read_all(child->stdout_fd), "/dev/null\n");
    wait_for_exit(child->pid);

    if (!fork_path) continue;  // posix_spawn's exec errors: MissingProgramIsReportedWithItsErrno
    child = spawn_process(with_parent_death({"/no/such/program"}), &err);
    EXPECT_FALSE(child);
    EXPECT_EQ(err, ENOENT);
    EXPECT_EQ(child.error(), "/no/such/program: No such file or directory");
    EXPECT_FALSE(spawn_process(with_parent_death({"no-such-program-on-path"}), &err));
    EXPECT_EQ(err, ENOENT);
    t.write("not-executable", "#!/bin/sh\n");
    EXPECT_FALSE(spawn_process(with_parent_death({t.path("not-executable")}), &err));
    EXPECT_EQ(err, EACCES);
  }
}

// `cpu-power run` and `scrape` ignore SIGPIPE (a closed stdout must not kill them); the
// processes they start, the benchmark command included, get it back at its default.
TEST(Process, ChildrenGetDefaultSigpipeWhileThisProcessIgnoresIt) {
  struct sigaction old {};
  struct sigaction ign {};
  ign.sa_handler = SIG_IGN;
  ASSERT_EQ(::sigaction(SIGPIPE, &ign, &old), 0);
  for (const bool fork_path : {false, true}) {
    SCOPED_TRACE(fork_path ? "fork path" : "posix_spawn path");
    auto o = argv_only({"cat", "/proc/self/status"});
    o.die_with_parent = fork_path;
    o.capture_stdout = true;
    auto child = spawn_process(o);
    ASSERT_TRUE(child) << child.error();
    const std::string status = read_all(child->stdout_fd);
    wait_for_exit(child->pid);
    const auto at = status.find("SigIgn:");
    ASSERT_NE(at, std::string::npos) << status;
    const unsigned long long ignored = std::stoull(status.substr(at + 7), nullptr, 16);
    EXPECT_EQ(ignored & (1ULL << (SIGPIPE - 1)), 0u) << "SIGPIPE ignored in the child";
  }
  ::sigaction(SIGPIPE, &old, nullptr);
}

TEST(ProcessDyingWithParent, GetsSigtermWhenTheSpawningThreadEnds) {
  Result<Child> kept = Error{}, dying = Error{};
  std::thread spawner([&] {
    kept = spawn_process(argv_only({"sleep", "30"}));
    dying = spawn_process(with_parent_death({"sleep", "30"}));
  });
  spawner.join();
  ASSERT_TRUE(kept && dying) << kept.error() << dying.error();
  const auto status = wait_for_exit(dying->pid, std::chrono::seconds(10));
  ASSERT_TRUE(status) << "the helper outlived its parent";
  EXPECT_EQ(describe_status(*status), "killed by SIGTERM");
  // Without the request, the child lives on.
  EXPECT_FALSE(wait_for_exit(kept->pid, std::chrono::milliseconds(100)));
  EXPECT_EQ(describe_status(terminate_process(kept->pid, std::chrono::seconds(1), true)),
            "killed by SIGTERM");
}

TEST(Process, ShellQuotingForDisplay) {
  EXPECT_EQ(shell_quote_argv({"srun", "--output", "/a b/x.%N.out", "it's", ""}),
            "srun --output '/a b/x.%N.out' 'it'\\''s' ''");
}

TEST(SessionRecord, Json) {
  SessionRecord r{
      {"sh", "-c", "exit 3"}, 1700000000.25, 1700000005.5, 3, 5.25, 100.5, 105.75, {}, ""};
  EXPECT_EQ(session_json(r),
            "{\n  \"schema_version\": 1,\n  \"command\": [\n    \"sh\",\n    \"-c\",\n    \"exit "
            "3\"\n  ],\n  \"start_unix\": 1700000000.25,\n  \"end_unix\": 1700000005.5,\n  "
            "\"exit_code\": 3,\n  \"benchmark_start_time_unix\": 1700000000.25,\n  "
            "\"benchmark_end_time_unix\": 1700000005.5,\n  \"duration\": 5.25,\n  "
            "\"start_monotonic\": 100.5,\n  \"end_monotonic\": 105.75,\n  \"clock_steps\": [],\n  "
            "\"job_id\": \"\"\n}\n");
  r.job_id = "local-20261203T105334Z-4242";
  EXPECT_THAT(session_json(r), HasSubstr("\"job_id\": \"local-20261203T105334Z-4242\"\n}"));
  r.clock_steps.push_back({1700000003.5, -3.0});
  EXPECT_NE(
      session_json(r).find("\"clock_steps\": [\n    {\n      \"at_unix\": 1700000003.5,\n      "
                           "\"step_s\": -3.0\n    }\n  ]"),
      std::string::npos)
      << session_json(r);
}

// A step of the wall clock against the monotonic one, recorded by what the session saw and,
// for what it missed between observations, by the start and end readings.
TEST(SessionRecord, ClockStepWatchSettlesWhatItDidNotSee) {
  ClockStepWatch watch;
  EXPECT_FALSE(watch.observe());             // no step on a quiet clock
  watch.settle(1000.0, 10.0, 1005.0, 18.0);  // 8 s on the monotonic clock, 5 s on the wall
  ASSERT_EQ(watch.steps().size(), 1u);
  EXPECT_DOUBLE_EQ(watch.steps()[0].step_s, -3.0);
  EXPECT_DOUBLE_EQ(watch.steps()[0].at_unix, 1005.0);
  watch.settle(1000.0, 10.0, 1005.0, 18.0);  // already accounted for
  EXPECT_EQ(watch.steps().size(), 1u);
  ClockStepWatch quiet;
  quiet.settle(1000.0, 10.0, 1008.1, 18.0);  // jitter, not a step
  EXPECT_TRUE(quiet.steps().empty());
}

TEST(SessionSummary, SaysWhatWentWrongWithSamplesCsv) {
  scrape::CollectorStats s;
  s.rows_written = 323;
  scrape::NodeStats n;
  n.hostname = "node-a";
  s.nodes.push_back(n);
  const auto summary = [&s] {
    SessionResult r;
    r.legs.push_back(
        {"complete",
         {},
         true,
         false,
         exporter_leg_summary(s, "power/cpu/samples.csv", "power/cpu/cpu_manifest.json")});
    return summary_text(r);
  };
  EXPECT_EQ(summary().find("samples.csv FAILING"), std::string::npos) << summary();
  EXPECT_EQ(summary().find("first error"), std::string::npos) << summary();

  s.rows_dropped = 2391;
  s.samples_failing = "No space left on device";
  s.write_error_log.push_back(
      {"write power/cpu/samples.csv: No space left on device", 40, 1.0, 9.0});
  const auto text = summary();
  EXPECT_NE(text.find("CPU power: 323 rows in power/cpu/samples.csv (2391 dropped)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("\n  samples.csv FAILING (No space left on device), rows dropped 2391; "
                      "first error: write power/cpu/samples.csv: No space left on device\n"),
            std::string::npos)
      << text;
  EXPECT_NE(summary_text(SessionResult{}).find("CPU power: no telemetry collected\n"),
            std::string::npos);
}

TEST(PrometheusSd, OneTargetGroupPerNodeWithItsLabels) {
  const std::vector<scrape::Endpoint> endpoints = {{"n1", "10.0.0.7", 9405},
                                                   {"n2", "fd00::8", 9405}};
  EXPECT_EQ(sd_target(endpoints[0]), "10.0.0.7:9405");
  EXPECT_EQ(sd_target(endpoints[1]), "[fd00::8]:9405");
  EXPECT_EQ(prometheus_sd_json(endpoints, std::string("4711"), "dsr1"),
            R"([
  {
    "targets": [
      "10.0.0.7:9405"
    ],
    "labels": {
      "node": "n1",
      "job_id": "4711",
      "run_name": "dsr1"
    }
  },
  {
    "targets": [
      "[fd00::8]:9405"
    ],
    "labels": {
      "node": "n2",
      "job_id": "4711",
      "run_name": "dsr1"
    }
  }
]
)");
  // Outside an allocation there is no job_id label; no endpoints is an empty list, which
  // makes Prometheus drop the targets.
  EXPECT_THAT(prometheus_sd_json({endpoints[0]}, std::nullopt, "r"),
              ::testing::Not(::testing::HasSubstr("job_id")));
  EXPECT_EQ(prometheus_sd_json({}, std::string("4711"), "r"), "[]\n");
}

TEST(PrometheusSd, RunNameIsTheRecipeNameElseTheLogDirectoryName) {
  SessionPlan plan;
  plan.log_dir = "/runs/2026-01-01/run-7";
  EXPECT_EQ(sd_run_name(plan), "run-7");
  plan.log_dir = "/runs/run-8/";
  EXPECT_EQ(sd_run_name(plan), "run-8");
  plan.recipe.name = "gb200-fp4-1p2d-dsr1";
  EXPECT_EQ(sd_run_name(plan), "gb200-fp4-1p2d-dsr1");
}

// --- the artifacts' job id, samples schemas and the consumer profile ---------------------

TEST(SessionPlan, ArtifactJobIdIsSlurmsElseGivenElseLocalAndNeverReachesSrun) {
  // Slurm's, also over a different --job-id (warned about).
  auto r = request({{"SLURM_JOB_ID", "4"}, {"SLURM_JOB_NODELIST", "n[1-2]"}});
  r.job_id = "mine";
  auto plan = make_plan(r);
  EXPECT_EQ(plan.artifact_job_id, "4");
  EXPECT_EQ(plan.job_id, "4");
  EXPECT_THAT(plan.warnings, Contains(HasSubstr("--job-id mine differs from the Slurm job id 4")));
  // The same --job-id as Slurm's: nothing to say.
  r.job_id = "4";
  EXPECT_THAT(make_plan(r).warnings, Not(Contains(HasSubstr("--job-id"))));
  // Outside Slurm: --job-id, else the generated one; srun (--nodes) never sees either.
  r = request();
  r.nodes = "a,b";
  r.job_id = "bench-7";
  plan = make_plan(r);
  EXPECT_EQ(plan.artifact_job_id, "bench-7");
  EXPECT_FALSE(plan.job_id);
  ASSERT_EQ(plan.groups.size(), 1u);
  EXPECT_THAT(plan.groups[0].exporter_srun, Not(Contains("--jobid")));
  EXPECT_THAT(plan.groups[0].exporter_srun, Not(Contains("bench-7")));
  r.job_id.reset();
  r.generated_job_id = local_job_id(1796295214, 4242);
  plan = make_plan(r);
  EXPECT_EQ(plan.artifact_job_id, "local-20261203T105334Z-4242");
  for (const auto& step : plan.clock_steps) EXPECT_THAT(step.srun, Not(Contains("--jobid")));
  EXPECT_THAT(describe_plan(plan), HasSubstr("job id:    local-20261203T105334Z-4242"));
  // Nothing given and nothing generated by the caller: one from this process.
  r.generated_job_id.clear();
  EXPECT_THAT(make_plan(r).artifact_job_id,
              ::testing::MatchesRegex("local-[0-9]{8}T[0-9]{6}Z-[0-9]+"));
  // Simulated inside an allocation: still that job's artifacts; telemetry off: still an id.
  r = request({{"SLURM_JOB_ID", "77"}});
  r.simulate = "gb200";
  EXPECT_EQ(make_plan(r).artifact_job_id, "77");
  r = request();
  r.recipe.telemetry.cpu_power_exporter.reset();
  r.generated_job_id = "local-x";
  EXPECT_EQ(make_plan(r).artifact_job_id, "local-x");
}

TEST(SessionPlan, ConsumerProfileAndExplicitSchemas) {
  const auto schemas = [](std::string_view profile, int cpu, int gpu) {
    const auto s = samples_schemas_for(profile, cpu, gpu);
    return s ? std::pair{s->cpu, s->gpu} : std::pair{-1, -1};
  };
  EXPECT_EQ(schemas("default", 0, 0), std::pair(3, 3));
  EXPECT_EQ(schemas("compat", 0, 0), std::pair(2, 2));
  // An explicit schema wins over the profile, each on its own.
  EXPECT_EQ(schemas("compat", 3, 0), std::pair(3, 2));
  EXPECT_EQ(schemas("compat", 0, 1), std::pair(2, 1));
  EXPECT_EQ(schemas("default", 2, 0), std::pair(2, 3));
  EXPECT_EQ(schemas("default", 0, 2), std::pair(3, 2));
  EXPECT_EQ(schemas("strict", 0, 0), std::pair(-1, -1));
  // The GPU leg carries its schema into the plan and the dry run.
  auto r = request({{"SLURM_JOB_ID", "4"}, {"SLURM_JOB_NODELIST", "n[1-2]"}});
  r.recipe.telemetry.dcgm_exporter.emplace();
  EXPECT_EQ(make_plan(r).gpu_leg->samples_schema, 3);
  r.gpu_samples_schema = 1;
  const auto plan = make_plan(r);
  EXPECT_EQ(plan.gpu_leg->samples_schema, 1);
  EXPECT_THAT(describe_plan(plan), HasSubstr("/power/samples.csv (schema v1) every"));
}

// --- the clock check -----------------------------------------------------------------------

TEST(SessionPlan, ClockCheckIsOneSrunStepPerGroupOverEveryNode) {
  auto r = request({{"SLURM_JOB_ID", "4"},
                    {"SLURM_HET_SIZE", "2"},
                    {"SLURM_JOB_NODELIST_HET_GROUP_0", "n1"},
                    {"SLURM_JOB_NODELIST_HET_GROUP_1", "n[2-3]"}});
  auto plan = make_plan(r);
  ASSERT_EQ(plan.clock_steps.size(), 2u);
  EXPECT_THAT(plan.clock_steps[1].srun,
              ElementsAre("srun", "--jobid", "4", "--overlap", "--nodes", "2", "--ntasks", "2",
                          "--nodelist", "n2,n3", "--het-group=1", "--output",
                          "/logs/run 1/clock_sync_%N.out", "/opt/bin/cpu-power", "clock-check"));
  EXPECT_EQ(plan.clock_steps[1].log, "/logs/run 1/clock_sync.g1.srun.log");
  EXPECT_THAT(describe_plan(plan), HasSubstr("clock:     srun --jobid 4"));
  // The GPU leg alone still probes every node.
  r.recipe.telemetry.cpu_power_exporter.reset();
  r.recipe.telemetry.dcgm_exporter.emplace();
  EXPECT_EQ(make_plan(r).clock_steps.size(), 2u);
  // telemetry.clock_sync_check: false.
  r.clock_sync_check = false;
  plan = make_plan(r);
  EXPECT_TRUE(plan.clock_steps.empty());
  EXPECT_FALSE(plan.clock_sync_check);
  EXPECT_THAT(describe_plan(plan), HasSubstr("clock:     not checked"));
  // Outside Slurm no step: the local probe.
  EXPECT_TRUE(make_plan(request()).clock_steps.empty());
  EXPECT_THAT(describe_plan(make_plan(request())), HasSubstr("clock:     this host's clock"));
}

std::string fixture(const std::string& name) {
  std::ifstream in(std::string(CPUPOWER_FIXTURES) + "/clock/" + name);
  EXPECT_TRUE(in) << name;
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(ClockCheck, TimedatectlEveryLayout) {
  for (const char* name :
       {"timedatectl_status.txt", "timedatectl_status_old.txt", "timedatectl_show.txt"}) {
    const auto f = parse_timedatectl(fixture(name));
    EXPECT_EQ(f.synced, ClockSynced::yes) << name;
    EXPECT_FALSE(f.offset_s) << name;
    EXPECT_EQ(f.tool, "timedatectl");
  }
  EXPECT_EQ(parse_timedatectl(fixture("timedatectl_status_unsynced.txt")).synced, ClockSynced::no);
  // What it prints in a container without systemd (exit 1; unknown if it were read at all).
  EXPECT_EQ(parse_timedatectl("System has not been booted with systemd as init system (PID 1). "
                              "Can't operate.\nFailed to connect to bus: Host is down\n")
                .synced,
            ClockSynced::unknown);
}

TEST(ClockCheck, ChronycTrackingWithItsOffset) {
  auto f = parse_chronyc_tracking(fixture("chronyc_tracking.txt"));
  EXPECT_EQ(f.synced, ClockSynced::yes);
  ASSERT_TRUE(f.offset_s);
  EXPECT_DOUBLE_EQ(*f.offset_s, 0.000012345);  // fast: the local clock is ahead
  f = parse_chronyc_tracking(fixture("chronyc_tracking_slow.txt"));
  EXPECT_EQ(f.synced, ClockSynced::yes);
  ASSERT_TRUE(f.offset_s);
  EXPECT_DOUBLE_EQ(*f.offset_s, -0.083201);
  f = parse_chronyc_tracking(fixture("chronyc_tracking_unsynced.txt"));
  EXPECT_EQ(f.synced, ClockSynced::no);
  EXPECT_EQ(parse_chronyc_tracking("506 Cannot talk to daemon\n").synced, ClockSynced::unknown);
}

TEST(ClockCheck, NtpqSelectedPeerAndItsOffset) {
  auto f = parse_ntpq_peers(fixture("ntpq_pn.txt"));
  EXPECT_EQ(f.synced, ClockSynced::yes);
  ASSERT_TRUE(f.offset_s);
  EXPECT_DOUBLE_EQ(*f.offset_s, -0.00125);  // the column is in milliseconds
  EXPECT_THAT(f.note, HasSubstr("*10.0.0.1"));
  f = parse_ntpq_peers(fixture("ntpq_pn_unselected.txt"));
  EXPECT_EQ(f.synced, ClockSynced::no);
  EXPECT_EQ(f.note, "2 peer(s), none selected");
  EXPECT_EQ(parse_ntpq_peers("ntpq: read: Connection refused\n").synced, ClockSynced::unknown);
}

TEST(ClockCheck, AdjtimexAndTheKernel) {
  auto f = parse_adjtimex(fixture("adjtimex_print.txt"));
  EXPECT_EQ(f.synced, ClockSynced::yes);  // 8193 = 0x2001: STA_PLL | STA_NANO
  EXPECT_FALSE(f.offset_s);               // the PLL's offset is not the clock's error
  EXPECT_EQ(parse_adjtimex(fixture("adjtimex_print_unsynced.txt")).synced, ClockSynced::no);
  EXPECT_EQ(parse_adjtimex("adjtimex: unrecognized option '--print'\n").synced,
            ClockSynced::unknown);
  // ntp_adjtime(2) as this build machine answers it (TIME_ERROR, STA_UNSYNC), and a synced one.
  f = kernel_clock_finding(5, 0x40, 16000000, 16000000);
  EXPECT_EQ(f.synced, ClockSynced::no);
  EXPECT_EQ(f.note, "state 5 status 0x40 maxerror 16000000us esterror 16000000us");
  EXPECT_EQ(kernel_clock_finding(0, 0x2001, 480, 0).synced, ClockSynced::yes);
  EXPECT_EQ(kernel_clock_finding(5, 0x2001, 480, 0).synced, ClockSynced::no);
}

TEST(ClockCheck, VerdictPrefersTheToolsWithAnOffset) {
  const std::vector<ClockFinding> findings = {{"timedatectl", ClockSynced::yes, std::nullopt, ""},
                                              {"chronyc", ClockSynced::unknown, std::nullopt, ""},
                                              {"ntpq", ClockSynced::yes, -0.002, ""},
                                              {"ntp_adjtime", ClockSynced::no, std::nullopt, ""}};
  auto v = clock_verdict(findings);
  EXPECT_EQ(v.synced, ClockSynced::yes);
  EXPECT_EQ(v.tool, "ntpq");
  EXPECT_EQ(v.offset_s, -0.002);
  v = clock_verdict({{"ntp_adjtime", ClockSynced::no, std::nullopt, ""}});
  EXPECT_EQ(v.synced, ClockSynced::no);
  EXPECT_EQ(v.tool, "ntp_adjtime");
  v = clock_verdict({});
  EXPECT_EQ(v.synced, ClockSynced::unknown);
  EXPECT_FALSE(v.tool);
  // The result line round-trips, and the last one of an output wins.
  const ClockProbe p{ClockSynced::yes, 1.2345e-05, "chronyc"};
  EXPECT_EQ(clock_result_line("n1", p),
            "clock_sync synchronized=yes offset_seconds=1.2345e-05 tool=chronyc hostname=n1\n");
  const auto back = parse_clock_output(
      "noise\nclock_sync synchronized=no offset_seconds=null "
      "tool=null hostname=n1\n" +
      clock_result_line("n1", p));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->synced, ClockSynced::yes);
  EXPECT_EQ(back->offset_s, 1.2345e-05);
  EXPECT_EQ(back->tool, "chronyc");
  EXPECT_FALSE(parse_clock_output("clock_sync is broken\n"));
}

TEST(ClockCheck, FailuresAreUnsyncedOverTheBoundOrUnchecked) {
  artifacts::ClockSyncCheck c;
  c.max_offset_seconds = kClockOffsetBoundS;
  c.nodes = {{"a", "yes", 0.001, "chronyc", "clock_sync_a.out"},
             {"b", "yes", -0.2, "chronyc", "clock_sync_b.out"},
             {"c", "no", std::nullopt, "ntp_adjtime", "clock_sync_c.out"},
             {"d", "unknown", std::nullopt, std::nullopt, std::nullopt},
             {"e", "yes", std::nullopt, "timedatectl", "clock_sync_e.out"}};
  EXPECT_THAT(clock_sync_failures(c), ElementsAre("b", "c", "d"));
}

// The local probe (simulate mode): this host's clock once, a file per node and the summary.
TEST(ClockCheck, SimulatedNodesShareOneLocalProbe) {
  cpupower::testing::TestTree t;
  auto r = request();
  r.simulate = "gb200";
  r.nodes = "s1,s2";
  r.log_dir = t.path("run");
  auto plan = make_plan(r);
  std::filesystem::create_directories(plan.log_dir);
  const auto check = check_session_clocks(plan, std::chrono::seconds(30));
  ASSERT_EQ(check.nodes.size(), 2u);
  const auto text = slurp(t.path("run/clock_sync_s1.out"));
  EXPECT_EQ(text, slurp(t.path("run/clock_sync_s2.out")));
  EXPECT_THAT(text, HasSubstr("== ntp_adjtime(2): state "));  // always there on Linux
  const auto probe = parse_clock_output(text);
  ASSERT_TRUE(probe);
  for (const auto& n : check.nodes) {
    EXPECT_EQ(n.synchronized, clock_synced_name(probe->synced));
    EXPECT_NE(n.synchronized, "unknown");  // the kernel always answers
    EXPECT_EQ(n.tool, probe->tool);
    EXPECT_EQ(n.output_file, "clock_sync_" + n.hostname + ".out");
  }
  const auto summary = nlohmann::json::parse(slurp(t.path("run/clock_sync.json")));
  EXPECT_EQ(summary["schema_version"], 1);
  EXPECT_EQ(summary["max_offset_seconds"], kClockOffsetBoundS);
  ASSERT_EQ(summary["nodes"].size(), 2u);
  EXPECT_EQ(summary["nodes"][1]["hostname"], "s2");
  EXPECT_EQ(summary["nodes"][1]["output_file"], "clock_sync_s2.out");
  EXPECT_EQ(summary.dump(), nlohmann::json::parse(artifacts::clock_sync_check_json(check)).dump());

  // Off: nothing probed, and the files say so.
  r.clock_sync_check = false;
  r.log_dir = t.path("off");
  plan = make_plan(r);
  std::filesystem::create_directories(plan.log_dir);
  const auto off = check_session_clocks(plan, std::chrono::seconds(30));
  EXPECT_FALSE(std::filesystem::exists(t.path("off/clock_sync_s1.out")));
  const auto doc = nlohmann::json::parse(slurp(t.path("off/clock_sync.json")));
  for (const auto& n : doc["nodes"]) {
    EXPECT_EQ(n["synchronized"], "unknown");
    EXPECT_TRUE(n["tool"].is_null());
    EXPECT_TRUE(n["output_file"].is_null());
  }
  EXPECT_THAT(clock_sync_failures(off), ElementsAre("s1", "s2"));
}

}  // namespace
}  // namespace cpupower::launch
