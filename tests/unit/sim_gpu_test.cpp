// The simulated dcgm-exporter (cpu-power sim-gpu): the exact exposition it renders, its power
// model, its faults, and the running simulator answering requests.

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <optional>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/text.hpp"
#include "expo/parser.hpp"
#include "sim/gpu_exposition.hpp"
#include "sim/gpu_faults.hpp"
#include "sim/gpu_power.hpp"
#include "sim/sim_gpu.hpp"

namespace cpupower::sim {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

GpuSeries gpu(std::uint32_t index, double power_w = 123.456) {
  GpuSeries s;
  s.index = index;
  s.uuid = simulated_gpu_uuid("node1", index);
  s.pci_bus_id = simulated_pci_bus_id(index);
  s.model_name = "NVIDIA GH200 480GB";
  s.values = derive_gpu_readout(power_w, kGpuIdleWatts, kGpuMaxWatts);
  s.values.energy_mj = 1000000000 + index;
  return s;
}

ExpositionOptions options(bool profiling = false) {
  ExpositionOptions o;
  o.hostname = "node1";
  o.driver_version = "570.133.20";
  o.profiling = profiling;
  return o;
}

std::vector<std::string> lines_of(const std::string& body) {
  return common::split(body, '\n');
}

std::vector<std::string> family_order(const std::string& body) {
  std::vector<std::string> out;
  for (const auto& line : lines_of(body)) {
    if (line.starts_with("# HELP ")) out.push_back(line.substr(7, line.find(' ', 7) - 7));
  }
  return out;
}

std::string line_starting(const std::string& body, std::string_view prefix) {
  for (const auto& line : lines_of(body)) {
    if (line.starts_with(prefix)) return line;
  }
  return {};
}

// ---- rendering ---------------------------------------------------------------------------

TEST(SimGpuExposition, PowerFamilyIsExactlyWhatDcgmExporterPrints) {
  const std::vector<GpuSeries> gpus = {gpu(0), gpu(1, 300.0)};
  const auto body = render_dcgm_exposition(gpus, options());
  const std::string uuid0 = simulated_gpu_uuid("node1", 0);
  const std::string uuid1 = simulated_gpu_uuid("node1", 1);
  const std::string want =
      "# HELP DCGM_FI_DEV_POWER_USAGE Power draw (in W).\n"
      "# TYPE DCGM_FI_DEV_POWER_USAGE gauge\n"
      "DCGM_FI_DEV_POWER_USAGE{gpu=\"0\",UUID=\"" +
      uuid0 +
      "\",pci_bus_id=\"00000009:01:00.0\",device=\"nvidia0\",modelName=\"NVIDIA GH200 "
      "480GB\",Hostname=\"node1\",DCGM_FI_DRIVER_VERSION=\"570.133.20\"} 123.456000\n"
      "DCGM_FI_DEV_POWER_USAGE{gpu=\"1\",UUID=\"" +
      uuid1 +
      "\",pci_bus_id=\"00000019:01:00.0\",device=\"nvidia1\",modelName=\"NVIDIA GH200 "
      "480GB\",Hostname=\"node1\",DCGM_FI_DRIVER_VERSION=\"570.133.20\"} 300.000000\n"
      "# HELP DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION";
  EXPECT_NE(body.find(want), std::string::npos) << body;
}

TEST(SimGpuExposition, FamiliesInAscendingFieldIdWithHelpAndType) {
  const std::vector<GpuSeries> gpus = {gpu(0)};
  const auto body = render_dcgm_exposition(gpus, options());
  EXPECT_EQ(family_order(body),
            (std::vector<std::string>{
                "DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_DEV_MEM_CLOCK", "DCGM_FI_DEV_MEMORY_TEMP",
                "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_POWER_USAGE",
                "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "DCGM_FI_DEV_PCIE_REPLAY_COUNTER",
                "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_MEM_COPY_UTIL", "DCGM_FI_DEV_ENC_UTIL",
                "DCGM_FI_DEV_DEC_UTIL", "DCGM_FI_DEV_FB_FREE", "DCGM_FI_DEV_FB_USED"}));
  // HELP then TYPE, the texts of etc/default-counters.csv; no blank line anywhere.
  EXPECT_NE(body.find("# HELP DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION Total energy consumption "
                      "since boot (in mJ).\n# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter\n"),
            std::string::npos);
  EXPECT_NE(body.find("# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).\n"
                      "# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n"),
            std::string::npos);
  EXPECT_EQ(body.find("\n\n"), std::string::npos);
  EXPECT_TRUE(body.ends_with("\n"));
  EXPECT_EQ(body.find("DCGM_FI_PROF_"), std::string::npos) << "profiling fields are opt-in";
}

TEST(SimGpuExposition, ProfilingFieldsWhenEnabled) {
  const std::vector<GpuSeries> gpus = {gpu(0, 395.0)};
  const auto body = render_dcgm_exposition(gpus, options(true));
  const auto order = family_order(body);
  ASSERT_EQ(order.size(), 17u);
  EXPECT_EQ(order[13], "DCGM_FI_PROF_GR_ENGINE_ACTIVE");
  EXPECT_EQ(order[14], "DCGM_FI_PROF_SM_ACTIVE");
  EXPECT_NE(body.find("# HELP DCGM_FI_PROF_SM_ACTIVE The ratio of cycles an SM has at least 1 "
                      "warp assigned.\n# TYPE DCGM_FI_PROF_SM_ACTIVE gauge\n"),
            std::string::npos);
  // 395 W is half way between 90 and 700 W: SM activity 0.92 * 0.5, printed like Go's %f.
  const auto sm = line_starting(body, "DCGM_FI_PROF_SM_ACTIVE{");
  EXPECT_TRUE(sm.ends_with("} 0.460000")) << sm;
}

TEST(SimGpuExposition, IntegersAsIntegersFloatsWithSixDecimals) {
  const std::vector<GpuSeries> gpus = {gpu(0, 395.0)};
  const auto body = render_dcgm_exposition(gpus, options());
  EXPECT_TRUE(line_starting(body, "DCGM_FI_DEV_GPU_UTIL{").ends_with("} 50"));
  EXPECT_TRUE(line_starting(body, "DCGM_FI_DEV_POWER_USAGE{").ends_with("} 395.000000"));
  EXPECT_TRUE(
      line_starting(body, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{").ends_with("} 1000000000"));
  EXPECT_TRUE(line_starting(body, "DCGM_FI_DEV_GPU_TEMP{").ends_with("} 54"));  // 32 + 43 / 2
  EXPECT_EQ(format_go_float(1e20), "100000000000000000000.000000");
  EXPECT_EQ(format_go_float(0.1234567), "0.123457");
  EXPECT_EQ(format_go_float(-2.5), "-2.500000");
}

TEST(SimGpuExposition, MigInstancesCarryProfileThenIdAndNoUtil) {
  auto g = gpu(1);
  g.mig = {{1, "3g.48gb"}, {2, "4g.48gb"}};
  const std::vector<GpuSeries> gpus = {gpu(0), g};
  const auto body = render_dcgm_exposition(gpus, options());
  const std::string prefix = "DCGM_FI_DEV_POWER_USAGE{gpu=\"1\",UUID=\"" + g.uuid +
                             "\",pci_bus_id=\"00000019:01:00.0\",device=\"nvidia1\","
                             "modelName=\"NVIDIA GH200 480GB\",";
  EXPECT_NE(body.find(prefix + "GPU_I_PROFILE=\"3g.48gb\",GPU_I_ID=\"1\",Hostname=\"node1\","
                               "DCGM_FI_DRIVER_VERSION=\"570.133.20\"} 123.456000\n"),
            std::string::npos)
      << body;
  EXPECT_NE(body.find(prefix + "GPU_I_PROFILE=\"4g.48gb\",GPU_I_ID=\"2\","), std::string::npos);
  // GPU_UTIL is blank in MIG mode: only GPU 0 has it.
  int util = 0;
  for (const auto& line : lines_of(body)) util += line.starts_with("DCGM_FI_DEV_GPU_UTIL{");
  EXPECT_EQ(util, 1);
  EXPECT_TRUE(
      line_starting(body, "DCGM_FI_DEV_GPU_UTIL{").starts_with("DCGM_FI_DEV_GPU_UTIL{gpu=\"0\""));
}

TEST(SimGpuExposition, OptionalLabelsHostnameDriverKubernetes) {
  const std::vector<GpuSeries> gpus = {gpu(0), gpu(1)};
  ExpositionOptions o;  // no hostname (-n), no driver version
  o.pods = {{"main", "default", "job-0"}, {}};
  const auto body = render_dcgm_exposition(gpus, o);
  const auto p0 = line_starting(body, "DCGM_FI_DEV_POWER_USAGE{gpu=\"0\"");
  const auto p1 = line_starting(body, "DCGM_FI_DEV_POWER_USAGE{gpu=\"1\"");
  EXPECT_EQ(p0.find("Hostname"), std::string::npos);
  EXPECT_EQ(p0.find("DCGM_FI_DRIVER_VERSION"), std::string::npos);
  EXPECT_NE(p0.find("modelName=\"NVIDIA GH200 480GB\",container=\"main\",namespace=\"default\","
                    "pod=\"job-0\"} "),
            std::string::npos)
      << p0;
  EXPECT_EQ(p1.find("container="), std::string::npos);
}

TEST(SimGpuExposition, NoGpusNoFamilies) {
  EXPECT_EQ(render_dcgm_exposition({}, options(true)), "");
}

TEST(SimGpuExposition, TheProjectParserReadsEverySample) {
  auto mig = gpu(2);
  mig.mig = {{1, "3g.48gb"}, {2, "4g.48gb"}};
  const std::vector<GpuSeries> gpus = {gpu(0), gpu(1), mig, gpu(3)};
  const auto body = render_dcgm_exposition(gpus, options(true));
  const auto parsed = expo::parse(body);
  ASSERT_TRUE(parsed.ok()) << expo::describe(*parsed.error);
  // 17 families for 3 whole GPUs, 16 (no util) for 2 instances of the MIG GPU.
  EXPECT_EQ(parsed.samples.size(), 17u * 3 + 16u * 2);
  const auto& s = parsed.samples.front();
  EXPECT_EQ(s.name, "DCGM_FI_DEV_SM_CLOCK");
  ASSERT_EQ(s.labels.size(), 7u);
  const char* names[] = {
      "gpu", "UUID", "pci_bus_id", "device", "modelName", "Hostname", "DCGM_FI_DRIVER_VERSION"};
  for (std::size_t i = 0; i < 7; ++i) EXPECT_EQ(s.labels[i].name, names[i]);
}

TEST(SimGpuIdentity, UuidIsDeterministicAndShapedLikeNvidias) {
  const std::regex shape("GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}");
  const auto a = simulated_gpu_uuid("node1", 0);
  EXPECT_TRUE(std::regex_match(a, shape)) << a;
  EXPECT_EQ(a, simulated_gpu_uuid("node1", 0));
  EXPECT_EQ(a, simulated_gpu_uuid("node1", 0, 0));
  EXPECT_NE(a, simulated_gpu_uuid("node1", 1));
  EXPECT_NE(a, simulated_gpu_uuid("node2", 0));
  EXPECT_NE(a, simulated_gpu_uuid("node1", 0, 1));
  EXPECT_NE(simulated_gpu_uuid("node1", 0, 1), simulated_gpu_uuid("node1", 0, 2));
  // Stable across builds, runs and architectures: recorded values.
  EXPECT_EQ(simulated_gpu_uuid("demo", 0), "GPU-5ef3e58e-04b9-709a-8bc6-954c75b92fe2");
  EXPECT_EQ(simulated_gpu_uuid("demo", 1), "GPU-a0886340-8d7b-a406-a985-9810dc1190a5");
  for (std::uint32_t i = 0; i < 64; ++i) {
    EXPECT_TRUE(std::regex_match(simulated_gpu_uuid("gh200-node-17", i), shape));
  }
  EXPECT_EQ(simulated_pci_bus_id(0), "00000009:01:00.0");
  EXPECT_EQ(simulated_pci_bus_id(3), "00000039:01:00.0");
}

// ---- power model ---------------------------------------------------------------------------

TEST(SimGpuPower, PowerSpecs) {
  EXPECT_EQ(parse_gpu_power_spec("load")->mode, GpuPowerSpec::Mode::load);
  const auto c = parse_gpu_power_spec("constant:350.5");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->mode, GpuPowerSpec::Mode::constant);
  EXPECT_DOUBLE_EQ(c->constant_w, 350.5);
  const auto t = parse_gpu_power_spec("trace:/tmp/x.csv");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->trace_path, "/tmp/x.csv");
  for (const char* bad : {"", "loads", "constant", "constant:", "constant:-1", "constant:nan",
                          "constant:inf", "trace:", "burst:5"}) {
    const auto parsed = parse_gpu_power_spec(bad);
    EXPECT_FALSE(parsed) << bad;
    EXPECT_FALSE(parsed.error().empty()) << bad;
  }
}

TEST(SimGpuPower, LoadModelSpansIdleToMax) {
  EXPECT_DOUBLE_EQ(gpu_load_watts(0.0, 90, 700), 90);
  EXPECT_DOUBLE_EQ(gpu_load_watts(1.0, 90, 700), 700);
  EXPECT_DOUBLE_EQ(gpu_load_watts(0.5, 90, 700), 395);
  EXPECT_DOUBLE_EQ(gpu_load_watts(-1.0, 90, 700), 90);
  EXPECT_DOUBLE_EQ(gpu_load_watts(2.0, 90, 700), 700);
}

TEST(SimGpuPower, DerivedReadingsFollowTheLoadFraction) {
  const auto idle = derive_gpu_readout(90, 90, 700);
  EXPECT_EQ(idle.gpu_util_pct, 0);
  EXPECT_EQ(idle.sm_clock_mhz, 345);
  EXPECT_DOUBLE_EQ(idle.sm_active, 0.0);
  const auto full = derive_gpu_readout(700, 90, 700);
  EXPECT_EQ(full.gpu_util_pct, 100);
  EXPECT_EQ(full.sm_clock_mhz, 1980);
  EXPECT_DOUBLE_EQ(full.sm_active, 0.92);
  EXPECT_EQ(full.gpu_temp_c, 75);
  EXPECT_EQ(full.fb_free_mib + full.fb_used_mib, 97871 - 566);
  // Below idle and above max stay within the ranges a consumer accepts.
  EXPECT_EQ(derive_gpu_readout(10, 90, 700).gpu_util_pct, 0);
  EXPECT_EQ(derive_gpu_readout(900, 90, 700).gpu_util_pct, 100);
  EXPECT_DOUBLE_EQ(derive_gpu_readout(900, 90, 700).power_w, 900);
}

TEST(SimGpuPower, TraceInterpolatesPerGpuOrForAll) {
  const auto t = GpuTrace::parse(
      "# a comment\ntime_s,all,gpu1\n0,100,200\n\n1.0,300,200\n3,300,600\r\n", "t.csv", 3);
  ASSERT_TRUE(t) << t.error();
  EXPECT_DOUBLE_EQ(t->watts_at(0, -1.0), 100);  // before the first row: the first value
  EXPECT_DOUBLE_EQ(t->watts_at(0, 0.0), 100);
  EXPECT_DOUBLE_EQ(t->watts_at(0, 0.25), 150);
  EXPECT_DOUBLE_EQ(t->watts_at(2, 0.5), 200);  // gpu 2 has no column: `all`
  EXPECT_DOUBLE_EQ(t->watts_at(1, 0.5), 200);
  EXPECT_DOUBLE_EQ(t->watts_at(1, 2.0), 400);
  EXPECT_DOUBLE_EQ(t->watts_at(1, 99.0), 600);  // after the last row: the last value
  EXPECT_DOUBLE_EQ(t->watts_at(0, 99.0), 300);
}

TEST(SimGpuPower, TraceErrorsNameTheLine) {
  struct Case {
    const char* text;
    const char* want;
  };
  const Case cases[] = {
      {"t,all\n0,1\n", "t.csv:1: header must start with time_s"},
      {"time_s,gpu0\n0,1\n", "no column for gpu 1"},
      {"time_s,all,all\n0,1,1\n", "t.csv:1: column 'all' repeated"},
      {"time_s,watts\n0,1\n", "t.csv:1: column 'watts' is not all or gpu<N>"},
      {"time_s\n0\n", "t.csv:1: no power column"},
      {"time_s,all\n0,1\n1,2,3\n", "t.csv:3: expected 2 cells, found 3"},
      {"time_s,all\n0,1\n0,2\n", "t.csv:3: time_s must increase"},
      {"time_s,all\n0,-5\n", "t.csv:2: '-5' is not a number of watts >= 0"},
      {"time_s,all\nx,5\n", "t.csv:2: time_s is not a number"},
      {"time_s,all\n", "t.csv: no data rows"},
      {"# no header\n", "t.csv: no header"},
  };
  for (const auto& c : cases) {
    const auto t = GpuTrace::parse(c.text, "t.csv", 2);
    EXPECT_FALSE(t) << c.text;
    EXPECT_NE(t.error().find(c.want), std::string::npos) << c.text << " -> " << t.error();
  }
  const auto loaded = GpuTrace::load("/nonexistent/trace.csv", 1);
  EXPECT_FALSE(loaded);
  EXPECT_NE(loaded.error().find("cannot read trace /nonexistent/trace.csv"), std::string::npos);
}

// ---- faults --------------------------------------------------------------------------------

TEST(SimGpuFaults, ParsesKindsArgumentsAndWindows) {
  auto f = parse_gpu_fault("slow:250@100-2000");
  ASSERT_TRUE(f) << f.error();
  EXPECT_EQ(f->kind, GpuFault::Kind::slow);
  EXPECT_EQ(f->delay, milliseconds(250));
  EXPECT_EQ(f->from, milliseconds(100));
  EXPECT_EQ(f->to, milliseconds(2000));
  f = parse_gpu_fault("vanish:3@5000");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->kind, GpuFault::Kind::vanish);
  EXPECT_EQ(f->gpu, 3u);
  EXPECT_EQ(f->from, milliseconds(5000));
  EXPECT_FALSE(f->to);
  f = parse_gpu_fault("uuid-change:0");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->kind, GpuFault::Kind::uuid_change);
  EXPECT_EQ(f->from, milliseconds(0));
  for (const char* ok : {"hang", "hang@10", "garbage@0-1", "http500@5-6"}) {
    EXPECT_EQ(parse_gpu_fault(ok).error(), "") << ok;
  }
  struct Bad {
    const char* spec;
    const char* want;
  };
  const Bad bad[] = {
      {"melt", "unknown fault 'melt'"},
      {"slow", "slow needs a delay"},
      {"slow:0", "slow needs a delay"},
      {"vanish", "vanish needs a GPU index"},
      {"uuid-change:x", "uuid-change needs a GPU index"},
      {"hang:5", "hang takes no argument"},
      {"http500@x", "window start 'x'"},
      {"garbage@5-5", "window end must be after its start"},
      {"garbage@5-y", "window end 'y'"},
  };
  for (const auto& b : bad) {
    const auto parsed = parse_gpu_fault(b.spec);
    EXPECT_FALSE(parsed) << b.spec;
    EXPECT_NE(parsed.error().find(b.want), std::string::npos) << b.spec << " -> " << parsed.error();
    EXPECT_NE(parsed.error().find(std::string("fault '") + b.spec + "'"), std::string::npos)
        << parsed.error();
  }
}

TEST(SimGpuFaults, StateAtATime) {
  std::vector<GpuFault> faults;
  for (const char* spec : {"slow:100@0-1000", "slow:300@500-700", "vanish:1@200-400",
                           "uuid-change:2@300", "uuid-change:2@600", "http500@800-900",
                           "garbage@900", "hang@1000-1200", "hang@1100-1500"}) {
    faults.push_back(*parse_gpu_fault(spec));
  }
  auto s = gpu_fault_state_at(faults, milliseconds(0));
  EXPECT_EQ(s.delay, milliseconds(100));
  EXPECT_TRUE(s.vanished.empty());
  EXPECT_TRUE(s.uuid_generation.empty());
  s = gpu_fault_state_at(faults, milliseconds(250));
  EXPECT_EQ(s.vanished, (std::set<std::uint32_t>{1}));
  s = gpu_fault_state_at(faults, milliseconds(400));  // the window's end is exclusive
  EXPECT_TRUE(s.vanished.empty());
  EXPECT_EQ(s.uuid_generation.at(2), 1u);
  s = gpu_fault_state_at(faults, milliseconds(650));
  EXPECT_EQ(s.delay, milliseconds(300));
  EXPECT_EQ(s.uuid_generation.at(2), 2u);
  s = gpu_fault_state_at(faults, milliseconds(850));
  EXPECT_TRUE(s.http500);
  EXPECT_FALSE(s.garbage);
  s = gpu_fault_state_at(faults, milliseconds(1150));
  EXPECT_TRUE(s.garbage);
  EXPECT_TRUE(s.hang);
  EXPECT_EQ(s.hang_until, milliseconds(1500));
  EXPECT_EQ(s.delay, milliseconds(0));
  faults.push_back(*parse_gpu_fault("hang@1100"));
  s = gpu_fault_state_at(faults, milliseconds(1150));
  EXPECT_TRUE(s.hang);
  EXPECT_FALSE(s.hang_until) << "a hang without an end holds until the stop";
  EXPECT_EQ(gpu_fault_state_at(faults, milliseconds(1050)).hang_until, milliseconds(1200));
}

TEST(SimGpuFaults, GarbageIsNoExposition) {
  EXPECT_FALSE(expo::parse(garbage_body()).ok());
}

// ---- the running simulator -----------------------------------------------------------------

SimGpuOptions quick_options() {
  SimGpuOptions o;
  o.bind_ip = "127.0.0.1";
  o.port = 0;
  o.gpus = 2;
  o.hostname = "simhost";
  o.power = *parse_gpu_power_spec("constant:500");
  o.collect_interval = milliseconds(20);
  return o;
}

std::optional<double> sample_value(const std::string& body, std::string_view name,
                                   std::string_view gpu_index) {
  const auto parsed = expo::parse(body);
  if (!parsed.ok()) return std::nullopt;
  for (const auto& s : parsed.samples) {
    if (s.name == name && s.label("gpu") == std::optional(gpu_index)) return s.value;
  }
  return std::nullopt;
}

TEST(SimGpu, ServesConstantPowerAndIntegratesEnergy) {
  SimGpu sim(quick_options());
  const auto before_start = Clock::now();  // no collection can be older
  ASSERT_EQ(sim.start().error(), "");
  EXPECT_NE(sim.port(), 0);
  EXPECT_EQ(sim.address(), "127.0.0.1:" + std::to_string(sim.port()));
  const auto t0 = Clock::now();
  const auto body0 = sim.respond("GET", "/metrics").body;
  EXPECT_EQ(sample_value(body0, "DCGM_FI_DEV_POWER_USAGE", "0"), 500.0);
  const auto e0 = sample_value(body0, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "1");
  ASSERT_TRUE(e0);
  EXPECT_GE(*e0, 1.0e9);
  // The counter moves with the collections: wait for a few.
  std::optional<double> e1;
  while (Clock::now() - t0 < std::chrono::seconds(20)) {
    e1 = sample_value(sim.respond("GET", "/metrics").body, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
                      "1");
    if (e1 && *e1 >= *e0 + 500.0 * 100) break;  // 100 ms at 500 W, in mJ
    std::this_thread::sleep_for(milliseconds(10));
  }
  const double wall_s = std::chrono::duration<double>(Clock::now() - before_start).count();
  ASSERT_TRUE(e1);
  EXPECT_GE(*e1, *e0 + 500.0 * 100);
  // Never more than 500 W over the time both collections can span: since the start (the
  // first body's collection may be older than the body, on a busy or emulated machine by
  // more than an interval).
  EXPECT_LE(*e1 - *e0, 500.0 * 1000.0 * wall_s + 1);
  sim.stop();
  sim.stop();  // idempotent
}

TEST(SimGpu, RoutesAndEndpointFaults) {
  auto o = quick_options();
  o.faults = {*parse_gpu_fault("http500@0-3600000")};
  SimGpu sim(o);
  ASSERT_EQ(sim.start().error(), "");
  auto r = sim.respond("GET", "/metrics");
  EXPECT_EQ(r.status, 500u);
  EXPECT_EQ(r.body, "internal server error\n");
  EXPECT_EQ(r.content_type, "text/plain; charset=utf-8");
  r = sim.respond("GET", "/health");
  EXPECT_EQ(r.status, 200u);
  EXPECT_EQ(r.body, "OK");
  r = sim.respond("GET", "/nope");
  EXPECT_EQ(r.status, 404u);
  EXPECT_EQ(r.body, "404 page not found\n");
  EXPECT_EQ(sim.respond("GET", "/").status, 200u);

  auto g = quick_options();
  g.faults = {*parse_gpu_fault("garbage")};
  SimGpu garbage(g);
  ASSERT_EQ(garbage.start().error(), "");
  r = garbage.respond("GET", "/metrics");
  EXPECT_EQ(r.status, 200u);
  EXPECT_EQ(r.body, garbage_body());
}

TEST(SimGpu, GpuFaultsChangeTheExpositionOverTime) {
  auto o = quick_options();
  o.gpus = 3;
  o.faults = {*parse_gpu_fault("vanish:1@1000-2000"), *parse_gpu_fault("uuid-change:2@1500")};
  SimGpu sim(o);
  ASSERT_EQ(sim.start().error(), "");
  const auto uuid2 = simulated_gpu_uuid("simhost", 2);
  auto body = sim.exposition_at(milliseconds(0));
  EXPECT_NE(body.find("gpu=\"1\""), std::string::npos);
  EXPECT_NE(body.find(uuid2), std::string::npos);
  body = sim.exposition_at(milliseconds(1200));
  EXPECT_EQ(body.find("gpu=\"1\""), std::string::npos);
  EXPECT_NE(body.find("gpu=\"0\""), std::string::npos);
  body = sim.exposition_at(milliseconds(1700));
  EXPECT_EQ(body.find(uuid2), std::string::npos);
  EXPECT_NE(body.find(simulated_gpu_uuid("simhost", 2, 1)), std::string::npos);
  body = sim.exposition_at(milliseconds(2500));
  EXPECT_NE(body.find("gpu=\"1\""), std::string::npos);
  EXPECT_NE(body.find(simulated_gpu_uuid("simhost", 2, 1)), std::string::npos);
}

TEST(SimGpu, MigKubernetesAndLabelOptions) {
  auto o = quick_options();
  o.mig_gpus = {1};
  o.kubernetes = true;
  o.hostname_label = false;
  o.profiling = true;
  SimGpu sim(o);
  ASSERT_EQ(sim.start().error(), "");
  const auto body = sim.exposition_at(milliseconds(0));
  EXPECT_NE(body.find("gpu=\"1\",UUID=\"" + simulated_gpu_uuid("simhost", 1)), std::string::npos);
  EXPECT_NE(body.find("GPU_I_PROFILE=\"3g.48gb\",GPU_I_ID=\"1\""), std::string::npos);
  EXPECT_NE(body.find("pod=\"sim-workload-0\""), std::string::npos);
  EXPECT_EQ(body.find("Hostname="), std::string::npos);
  EXPECT_NE(body.find("DCGM_FI_PROF_SM_ACTIVE{"), std::string::npos);
}

TEST(SimGpu, SlowAndHangHoldTheResponseAndStopReleasesIt) {
  auto o = quick_options();
  o.faults = {*parse_gpu_fault("slow:150")};
  SimGpu slow(o);
  ASSERT_EQ(slow.start().error(), "");
  auto t0 = Clock::now();
  EXPECT_EQ(slow.respond("GET", "/metrics").status, 200u);
  EXPECT_GE(Clock::now() - t0, milliseconds(150));

  o.faults = {*parse_gpu_fault("hang@0-300")};
  SimGpu window(o);
  // The window counts from start(): the answer comes 300 ms after it at the earliest, however
  // late (on a busy machine) the request is sent.
  t0 = Clock::now();
  ASSERT_EQ(window.start().error(), "");
  const auto r = window.respond("GET", "/metrics");
  EXPECT_EQ(r.status, 200u) << "a hang window ends, and the request is answered then";
  EXPECT_GE(Clock::now() - t0, milliseconds(300));

  o.faults = {*parse_gpu_fault("hang")};
  SimGpu hung(o);
  ASSERT_EQ(hung.start().error(), "");
  std::atomic<unsigned> status{0};
  std::thread client([&] { status = hung.respond("GET", "/metrics").status; });
  std::this_thread::sleep_for(milliseconds(100));
  EXPECT_EQ(status.load(), 0u) << "answered while hung";
  hung.stop();
  client.join();
  EXPECT_EQ(status.load(), 503u);
}

TEST(SimGpu, StartFailures) {
  auto o = quick_options();
  o.faults = {*parse_gpu_fault("vanish:2")};
  Status started = SimGpu(o).start();
  EXPECT_FALSE(started);
  EXPECT_NE(started.error().find("names gpu 2, but there are 2 GPUs"), std::string::npos)
      << started.error();

  o = quick_options();
  o.power = *parse_gpu_power_spec("trace:/nonexistent.csv");
  started = SimGpu(o).start();
  EXPECT_FALSE(started);
  EXPECT_NE(started.error().find("cannot read trace /nonexistent.csv"), std::string::npos)
      << started.error();

  o = quick_options();
  o.power = GpuPowerSpec{};
  o.proc_stat = "/nonexistent/stat";
  started = SimGpu(o).start();
  EXPECT_FALSE(started);
  EXPECT_NE(started.error().find("/nonexistent/stat"), std::string::npos) << started.error();

  o = quick_options();
  o.mig_gpus = {5};
  started = SimGpu(o).start();
  EXPECT_FALSE(started);
  EXPECT_NE(started.error().find("MIG GPU 5"), std::string::npos) << started.error();

  o = quick_options();
  o.bind_ip = "not-an-ip";
  started = SimGpu(o).start();
  EXPECT_FALSE(started);
  EXPECT_NE(started.error().find("invalid bind address"), std::string::npos) << started.error();
}

TEST(SimGpu, LoadModelFollowsAFakeProcStat) {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("sim_gpu_stat." + std::to_string(::getpid())))
          .string();
  auto write_stat = [&](std::uint64_t busy, std::uint64_t idle) {
    std::string text = "cpu  0 0 0 0 0 0 0 0 0 0\n";
    text += "cpu0 " + std::to_string(busy) + " 0 0 " + std::to_string(idle) + " 0 0 0 0 0 0\n";
    ASSERT_TRUE(common::write_file_atomic(path, text));
  };
  write_stat(0, 0);
  auto o = quick_options();
  o.power = GpuPowerSpec{};
  o.proc_stat = path;
  o.noise = false;
  SimGpu sim(o);
  ASSERT_EQ(sim.start().error(), "");
  EXPECT_EQ(sample_value(sim.exposition_at(milliseconds(0)), "DCGM_FI_DEV_POWER_USAGE", "0"),
            kGpuIdleWatts);
  // Fully busy from now on: power climbs to the maximum (GPU 0's board offset is zero).
  std::uint64_t busy = 0;
  std::optional<double> w;
  const auto t0 = Clock::now();
  while (Clock::now() - t0 < std::chrono::seconds(20)) {
    busy += 1000;
    write_stat(busy, 0);
    std::this_thread::sleep_for(milliseconds(20));
    w = sample_value(sim.exposition_at(milliseconds(0)), "DCGM_FI_DEV_POWER_USAGE", "0");
    if (w && *w > kGpuMaxWatts - 1) break;
  }
  sim.stop();
  std::filesystem::remove(path);
  ASSERT_TRUE(w);
  EXPECT_GT(*w, kGpuMaxWatts - 1);
  EXPECT_LE(*w, kGpuMaxWatts);
}

// ---- another exporter's names (a kind: custom exporter) -----------------------------------

TEST(SimGpuExposition, RenamedFamiliesAndLabelsServeOnlyWhatTheLegReads) {
  const std::vector<GpuSeries> gpus = {gpu(0), gpu(1, 300.0)};
  auto o = options();
  o.names = ExporterNames::amd();
  const auto body = render_dcgm_exposition(gpus, o);
  // GPU temperature (field 150), power (155), utilization (203), in field order; no SM
  // activity in the AMD names, whatever --profiling says, and no DCGM family at all.
  EXPECT_EQ(family_order(body), (std::vector<std::string>{"gpu_junction_temperature",
                                                          "gpu_power_usage", "gpu_gfx_activity"}));
  EXPECT_EQ(body.find("DCGM_FI_DEV_"), std::string::npos) << body;
  const std::string uuid1 = simulated_gpu_uuid("node1", 1);
  EXPECT_EQ(line_starting(body, "gpu_power_usage{gpu_id=\"1\""),
            "gpu_power_usage{gpu_id=\"1\",serial_number=\"" + uuid1 +
                "\",pci_bus_id=\"00000019:01:00.0\",device=\"nvidia1\",modelName=\"NVIDIA GH200 "
                "480GB\",Hostname=\"node1\",DCGM_FI_DRIVER_VERSION=\"570.133.20\"} 300.000000");
  EXPECT_NE(body.find("# HELP gpu_power_usage Power draw (in W).\n# TYPE gpu_power_usage gauge\n"),
            std::string::npos);
  // Custom names, SM activity among them: served although profiling is off.
  ExporterNames mine;
  mine.power = "board_watts";
  mine.gpu_util.clear();
  mine.sm_active = "sm_busy";
  mine.temperature.clear();
  mine.index_label = "idx";
  mine.identity_label = "id";
  o.names = mine;
  const auto custom = render_dcgm_exposition(gpus, o);
  EXPECT_EQ(family_order(custom), (std::vector<std::string>{"board_watts", "sm_busy"}));
  EXPECT_FALSE(
      line_starting(custom, "sm_busy{idx=\"0\",id=\"" + simulated_gpu_uuid("node1", 0) + "\"")
          .empty())
      << custom;
}

TEST(SimGpuExposition, WithoutNamesTheExpositionIsDcgmExportersUnchanged) {
  const std::vector<GpuSeries> gpus = {gpu(0), gpu(1, 300.0)};
  auto renamed = options(true);
  renamed.names = ExporterNames{};  // dcgm-exporter's names, but only the four families
  const auto four = render_dcgm_exposition(gpus, renamed);
  EXPECT_EQ(family_order(four),
            (std::vector<std::string>{"DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_POWER_USAGE",
                                      "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_PROF_SM_ACTIVE"}));
  // Each of those families is byte for byte what the whole exposition has.
  const auto whole = render_dcgm_exposition(gpus, options(true));
  for (const auto& line : lines_of(four)) {
    if (!line.empty()) {
      EXPECT_NE(whole.find(line + "\n"), std::string::npos) << line;
    }
  }
}

TEST(SimGpu, ServesAnotherExportersNames) {
  auto o = quick_options();
  o.names = ExporterNames::amd();
  SimGpu sim(o);
  ASSERT_EQ(sim.start().error(), "");
  const auto body = sim.exposition_at(milliseconds(0));
  EXPECT_NE(body.find("gpu_power_usage{gpu_id=\"0\",serial_number=\"" +
                      simulated_gpu_uuid("simhost", 0) + "\""),
            std::string::npos)
      << body;
  EXPECT_EQ(body.find("DCGM_FI_DEV_"), std::string::npos);
}

}  // namespace
}  // namespace cpupower::sim
