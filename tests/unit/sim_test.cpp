// The simulated node must look like a real Grace node's hwmon tree to a consumer and behave
// like its firmware, faults included: these tests read it only through the filesystem.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <set>
#include <thread>

#include "common/text.hpp"
#include "rails/rails.hpp"
#include "sim/sim_node.hpp"
#include "sim/tree_writer.hpp"

namespace cpupower::sim {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "sim_test.XXXXXX").string();
    path_ = ::mkdtemp(tmpl.data()) ? tmpl : std::string();
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& rel) const { return path_ + "/" + rel; }

 private:
  std::string path_;
};

std::string read_text(const std::string& path) {
  const auto text = common::read_small_file(path);
  return text ? *text : "<unreadable>";
}

std::string link_target(const std::string& path) {
  std::error_code ec;
  const auto target = fs::read_symlink(path, ec);
  return ec ? "<not a link>" : target.string();
}

std::optional<std::int64_t> read_microwatts(const std::string& path) {
  const auto text = common::read_small_file(path);
  if (!text) return std::nullopt;
  return common::parse_i64(common::trim(*text));
}

double read_watts(const std::string& path) {
  const auto uw = read_microwatts(path);
  return uw ? static_cast<double>(*uw) / 1e6 : -1.0;
}

ChannelInfo channel(const SimNode& node, const std::string& key) {
  for (const auto& c : node.channels()) {
    if (c.key == key) return c;
  }
  throw std::runtime_error("no channel " + key);
}

// Polls until pred() holds or the deadline passes; returns the time it took, or nullopt.
template <typename Pred>
std::optional<milliseconds> wait_for(Pred pred, milliseconds limit) {
  const auto start = Clock::now();
  while (Clock::now() - start < limit) {
    if (pred()) return std::chrono::duration_cast<milliseconds>(Clock::now() - start);
    std::this_thread::sleep_for(milliseconds(5));
  }
  return std::nullopt;
}

// A read of a possibly blocking file on a helper thread. If the test gives up on it, the
// FIFO gets a writer of ours so that the helper (and the test binary) never hangs.
class BlockingRead {
 public:
  explicit BlockingRead(std::string path) : path_(std::move(path)) {
    thread_ = std::thread([this] {
      const auto start = Clock::now();
      const auto text = common::read_small_file(path_);
      took_ = std::chrono::duration_cast<milliseconds>(Clock::now() - start);
      text_ = text ? *text : "<error>";
      done_ = true;
    });
  }
  ~BlockingRead() {
    if (!done_) {
      const int fd = ::open(path_.c_str(), O_RDWR | O_NONBLOCK);
      if (fd >= 0) ::close(fd);
    }
    thread_.join();
  }
  bool done() const { return done_; }
  bool wait(milliseconds limit) {
    return wait_for([this] { return done(); }, limit).has_value();
  }
  const std::string& text() const { return text_; }
  milliseconds took() const { return took_; }

 private:
  std::string path_;
  std::atomic<bool> done_{false};
  std::string text_;
  milliseconds took_{0};
  std::thread thread_;
};

SimOptions constant_options(const std::string& root, Profile profile = Profile::gb200,
                            Layout layout = Layout::modern) {
  SimOptions o;
  o.root = root;
  o.profile = profile;
  o.layout = layout;
  o.model = Model::constant;
  o.load = 0.5;
  o.update_interval = milliseconds(20);
  return o;
}

// ---------------------------------------------------------------------------------------
// Profiles and parsing

TEST(SimProfiles, ParseNames) {
  EXPECT_EQ(parse_profile("gb200"), Profile::gb200);
  EXPECT_EQ(parse_profile("gh200"), Profile::gh200);
  EXPECT_EQ(parse_profile("platform-uw"), Profile::platform_uw);
  EXPECT_FALSE(parse_profile("platform_uw"));
  EXPECT_FALSE(parse_profile("GB200"));
  EXPECT_EQ(parse_layout("modern"), Layout::modern);
  EXPECT_EQ(parse_layout("legacy"), Layout::legacy);
  EXPECT_FALSE(parse_layout(""));
  EXPECT_EQ(parse_model("trace"), Model::trace);
  EXPECT_FALSE(parse_model("loads"));
}

TEST(SimProfiles, ChannelsInAcpiOrderAndClassifiable) {
  const auto gb = profile_channels(Profile::gb200);
  ASSERT_EQ(gb.size(), 6u);
  const std::vector<std::string> gb_labels = {"Grace Power Socket 0", "CPU Power Socket 0",
                                              "SysIO Power Socket 0", "Grace Power Socket 1",
                                              "CPU Power Socket 1",   "SysIO Power Socket 1"};
  const std::vector<std::string> gb_keys = {"total:0", "cpu_rail:0", "soc:0",
                                            "total:1", "cpu_rail:1", "soc:1"};
  for (std::size_t i = 0; i < gb.size(); ++i) {
    EXPECT_EQ(gb[i].oem_info, gb_labels[i]);
    EXPECT_EQ(gb[i].key, gb_keys[i]);
  }
  EXPECT_EQ(profile_channels(Profile::gh200).size(), 3u);

  const auto uw = profile_channels(Profile::platform_uw);
  ASSERT_EQ(uw.size(), 8u);
  EXPECT_EQ(uw[3].oem_info, "DRAM Power in uW socket 0");
  EXPECT_EQ(uw[3].key, "dram:0");
  EXPECT_EQ(uw[4].oem_info, "Total Power in uW socket 1");

  // A four-socket GH200 node: Module, Grace, CPU and SysIO Power Socket 0-3, the module
  // meter first in each socket.
  const auto quad = profile_channels(Profile::gh200_quad);
  ASSERT_EQ(quad.size(), 16u);
  EXPECT_EQ(profile_sockets(Profile::gh200_quad), 4u);
  EXPECT_EQ(parse_profile("gh200-quad"), Profile::gh200_quad);
  EXPECT_EQ(profile_name(Profile::gh200_quad), "gh200-quad");
  const std::vector<std::string> quad_s3 = {"Module Power Socket 3", "Grace Power Socket 3",
                                            "CPU Power Socket 3", "SysIO Power Socket 3"};
  for (std::size_t i = 0; i < 4; ++i) EXPECT_EQ(quad[12 + i].oem_info, quad_s3[i]);
  EXPECT_EQ(quad[0].key, "module:0");
  EXPECT_GT(model_watts(Profile::gh200_quad, rails::Kind::module, 0.0),
            model_watts(Profile::gh200_quad, rails::Kind::total, 0.0));

  // The labels must mean to the shared classifier what the profile says they mean; a module
  // meter's label is unclassified (module power is NVML's alone).
  for (const auto profile :
       {Profile::gb200, Profile::gh200, Profile::platform_uw, Profile::gh200_quad}) {
    for (const auto& c : profile_channels(profile)) {
      const auto cls = rails::classify_oem(c.oem_info);
      if (c.kind == rails::Kind::module) {
        EXPECT_EQ(cls.kind, rails::Kind::other) << c.oem_info;
        EXPECT_EQ(c.key, channel_key(c.kind, c.socket));
        continue;
      }
      EXPECT_EQ(cls.kind, c.kind) << c.oem_info;
      EXPECT_EQ(rails::socket_index(cls.socket), c.socket) << c.oem_info;
      EXPECT_EQ(c.key, channel_key(c.kind, c.socket));
    }
  }
}

TEST(SimFaults, ParsesGoodSpecs) {
  auto f = parse_fault("total:1=slow:150@0-2000");
  ASSERT_TRUE(f) << f.error();
  EXPECT_EQ(f->first, "total:1");
  EXPECT_EQ(f->second.kind, Fault::Kind::slow);
  EXPECT_EQ(f->second.delay, milliseconds(150));
  EXPECT_EQ(f->second.from, milliseconds(0));
  EXPECT_EQ(f->second.to, milliseconds(2000));

  f = parse_fault("total:0=zero@0-1500");
  ASSERT_TRUE(f) << f.error();
  EXPECT_EQ(f->second.kind, Fault::Kind::zero);
  EXPECT_TRUE(f->second.active_at(milliseconds(1499)));
  EXPECT_FALSE(f->second.active_at(milliseconds(1500)));

  f = parse_fault("soc:1=hang@500");
  ASSERT_TRUE(f) << f.error();
  EXPECT_EQ(f->second.kind, Fault::Kind::hang);
  EXPECT_EQ(f->second.from, milliseconds(500));
  EXPECT_FALSE(f->second.to);
  EXPECT_FALSE(f->second.active_at(milliseconds(499)));
  EXPECT_TRUE(f->second.active_at(milliseconds(100000)));

  f = parse_fault("dram:0=unreadable");
  ASSERT_TRUE(f) << f.error();
  EXPECT_EQ(f->second.kind, Fault::Kind::unreadable);
  EXPECT_TRUE(f->second.active_at(milliseconds(0)));

  f = parse_fault("grace:0=invalid");  // legacy alias normalised
  ASSERT_TRUE(f) << f.error();
  EXPECT_EQ(f->first, "total:0");
  EXPECT_EQ(parse_fault("cpu_rail:1=empty")->second.kind, Fault::Kind::empty);
}

TEST(SimFaults, RejectsBadSpecs) {
  for (const std::string spec :
       {"total:0", "total=zero", "total:x=zero", "bogus:0=zero", "total:0=", "total:0=bogus",
        "total:0=slow", "total:0=slow:0", "total:0=slow:abc", "total:0=zero:5", "total:0=zero@5-5",
        "total:0=zero@10-5", "total:0=zero@a", "total:0=zero@5-", "total:0=zero@-5", "=zero"}) {
    const auto parsed = parse_fault(spec);
    EXPECT_FALSE(parsed) << spec;
    EXPECT_NE(parsed.error().find(spec), std::string::npos) << spec << " -> " << parsed.error();
  }
}

TEST(SimPowerModel, RailCoefficients) {
  EXPECT_DOUBLE_EQ(model_watts(Profile::gb200, rails::Kind::cpu_rail, 0.0), 41.0);
  EXPECT_DOUBLE_EQ(model_watts(Profile::gb200, rails::Kind::cpu_rail, 1.0), 203.0);
  EXPECT_DOUBLE_EQ(model_watts(Profile::gb200, rails::Kind::total, 0.0), 96.0);
  EXPECT_DOUBLE_EQ(model_watts(Profile::platform_uw, rails::Kind::total, 0.0), 96.0);
  EXPECT_DOUBLE_EQ(model_watts(Profile::platform_uw, rails::Kind::dram, 1.0), 20.0);
  EXPECT_DOUBLE_EQ(model_watts(Profile::gb200, rails::Kind::cpu_rail, 7.0), 203.0);  // clamped
}

TEST(SimPowerModel, ParsesProcStat) {
  const auto cpus = parse_proc_stat(
      "cpu  10 0 10 100 0 0 0 0 0 0\n"
      "cpu0 1 2 3 40 5 6 7 8 100 100\n"
      "cpu1 1 1 1 1\n"
      "cpu2 garbage\n"
      "intr 1 2 3\n");
  ASSERT_EQ(cpus.size(), 2u);
  EXPECT_EQ(cpus[0].cpu, 0u);
  EXPECT_EQ(cpus[0].busy, 1u + 2 + 3 + 6 + 7 + 8);  // guest already inside user/nice
  EXPECT_EQ(cpus[0].total, cpus[0].busy + 40 + 5);
  EXPECT_EQ(cpus[1].busy, 3u);
  EXPECT_EQ(cpus[1].total, 4u);
}

// ---------------------------------------------------------------------------------------
// Tree shape

struct ShapeCase {
  Profile profile;
  Layout layout;
};

class SimTreeShape : public ::testing::TestWithParam<ShapeCase> {};

TEST_P(SimTreeShape, LooksLikeSysClassHwmon) {
  const auto [profile, layout] = GetParam();
  const bool legacy = layout == Layout::legacy;
  TempDir tmp;
  const std::string root = tmp / "hwmon";
  auto options = constant_options(root, profile, layout);
  options.once = true;
  SimNode node(options);
  ASSERT_EQ(node.start().error(), "");

  const auto specs = profile_channels(profile);
  ASSERT_EQ(node.channels().size(), specs.size());

  // String order puts hwmon10 before hwmon2; both exist, so only numeric order is right.
  EXPECT_TRUE(fs::is_directory(root + "/hwmon2"));
  EXPECT_TRUE(fs::is_directory(root + "/hwmon10"));

  // Distractors.
  EXPECT_EQ(read_text(root + "/hwmon0/name"), "acpitz\n");
  EXPECT_EQ(read_text(root + "/hwmon0/temp1_input"), "45000\n");
  const std::string nvme_attrs = legacy ? root + "/hwmon1/device" : root + "/hwmon1";
  EXPECT_EQ(read_text(nvme_attrs + "/name"), "nvme\n");
  EXPECT_EQ(read_text(nvme_attrs + "/power1_average"), "5000000\n");
  EXPECT_EQ(fs::exists(root + "/hwmon1/name"), !legacy);
  for (const auto& c : node.channels()) {
    EXPECT_NE(c.hwmon, "hwmon0");
    EXPECT_NE(c.hwmon, "hwmon1");
  }

  for (std::size_t i = 0; i < specs.size(); ++i) {
    const auto c = node.channels()[i];
    SCOPED_TRACE(c.key);
    EXPECT_EQ(c.key, specs[i].key);
    EXPECT_EQ(c.oem_info, specs[i].oem_info);
    EXPECT_EQ(c.kind, specs[i].kind);
    EXPECT_EQ(c.socket, specs[i].socket);
    const std::string expect_hwmon = i == 0   ? "hwmon2"
                                     : i == 1 ? "hwmon3"
                                              : "hwmon" + std::to_string(8 + i);
    EXPECT_EQ(c.hwmon, expect_hwmon);

    char acpi[32];
    std::snprintf(acpi, sizeof acpi, "ACPI000D:%02zu", i);
    const std::string device_rel = std::string("devices/platform/") + acpi;
    const std::string cls = root + "/" + c.hwmon;
    EXPECT_EQ(link_target(cls), device_rel + "/hwmon/" + c.hwmon);  // relative
    EXPECT_EQ(link_target(cls + "/device"), "../../");
    EXPECT_EQ(fs::canonical(cls + "/device"), fs::canonical(root + "/" + device_rel));

    const std::string attrs = legacy ? cls + "/device" : cls;
    EXPECT_EQ(read_text(attrs + "/name"), "power_meter\n");
    EXPECT_EQ(fs::exists(cls + "/name"), !legacy);
    EXPECT_EQ(read_text(attrs + "/power1_oem_info"), specs[i].oem_info + "\n");
    EXPECT_EQ(read_text(attrs + "/power1_average_interval"), "50\n");  // the firmware default
    EXPECT_EQ(read_text(attrs + "/power1_average_interval_min"), "50\n");
    EXPECT_EQ(read_text(attrs + "/power1_average_interval_max"), "1000\n");
    EXPECT_EQ(read_text(attrs + "/power1_accuracy"), "95.0%\n");
    EXPECT_EQ(read_text(attrs + "/power1_is_battery"), "0\n");
    EXPECT_EQ(read_text(attrs + "/power1_model_number"), "\n");

    if (legacy) {
      EXPECT_EQ(link_target(cls + "/power1_average"), "device/power1_average");
    } else {
      EXPECT_EQ(link_target(cls + "/power1_average"), "<not a link>");
    }
    // Both spellings reach the one file, and value_path is its real path.
    EXPECT_EQ(fs::canonical(cls + "/power1_average").string(), c.value_path);
    EXPECT_EQ(fs::canonical(attrs + "/power1_average").string(), c.value_path);
    const auto expect_uw = std::llround(model_watts(profile, specs[i].kind, options.load) * 1e6);
    EXPECT_EQ(read_text(c.value_path), std::to_string(expect_uw) + "\n");
  }

  // Relative links keep working when the tree is seen somewhere else (a bind mount onto
  // /sys/class/hwmon); a rename stands in for the mount.
  const std::string moved = tmp / "moved";
  fs::rename(root, moved);
  EXPECT_EQ(read_text(moved + "/hwmon2/" + (legacy ? "device/" : "") + "name"), "power_meter\n");
  EXPECT_EQ(fs::exists(moved + "/hwmon10/power1_oem_info"), !legacy);
  EXPECT_EQ(read_text(moved + "/hwmon10/" + (legacy ? "device/" : "") + "power1_oem_info"),
            specs[2].oem_info + "\n");
  EXPECT_TRUE(read_microwatts(moved + "/hwmon10/power1_average"));
  EXPECT_TRUE(read_microwatts(moved + "/hwmon1/power1_average"));
}

INSTANTIATE_TEST_SUITE_P(AllProfilesAndLayouts, SimTreeShape,
                         ::testing::Values(ShapeCase{Profile::gb200, Layout::modern},
                                           ShapeCase{Profile::gb200, Layout::legacy},
                                           ShapeCase{Profile::gh200, Layout::modern},
                                           ShapeCase{Profile::gh200, Layout::legacy},
                                           ShapeCase{Profile::platform_uw, Layout::modern},
                                           ShapeCase{Profile::platform_uw, Layout::legacy}),
                         [](const auto& info) {
                           return std::string(profile_name(info.param.profile) == "platform-uw"
                                                  ? "platform_uw"
                                                  : profile_name(info.param.profile)) +
                                  "_" + std::string(layout_name(info.param.layout));
                         });

TEST(SimTree, RefusesForeignRootAndReusesItsOwn) {
  TempDir tmp;
  std::ofstream(tmp / "precious.txt") << "keep me\n";
  {
    SimNode node(constant_options(tmp.path()));
    const Status started = node.start();
    EXPECT_FALSE(started);
    EXPECT_NE(started.error().find("not empty"), std::string::npos) << started.error();
  }
  EXPECT_EQ(read_text(tmp / "precious.txt"), "keep me\n");

  const std::string root = tmp / "root";
  {
    auto o = constant_options(root, Profile::platform_uw);
    o.once = true;
    SimNode node(o);
    ASSERT_EQ(node.start().error(), "");
    EXPECT_TRUE(fs::exists(root + "/hwmon15"));
  }
  {
    auto o = constant_options(root, Profile::gh200);
    o.once = true;
    SimNode node(o);
    ASSERT_EQ(node.start().error(), "");
    EXPECT_FALSE(fs::exists(root + "/hwmon11"));  // the earlier profile's nodes are gone
    EXPECT_TRUE(fs::exists(root + "/hwmon10"));
  }
}

TEST(SimTree, UpdatesAreAtomicWithDotTemporaries) {
  TempDir tmp;
  auto o = constant_options(tmp.path());
  o.update_interval = milliseconds(1);
  SimNode node(o);
  ASSERT_EQ(node.start().error(), "");
  const auto dir = fs::path(channel(node, "total:0").value_path).parent_path();
  const std::string expect = read_text(channel(node, "total:0").value_path);
  int reads = 0;
  const auto until = Clock::now() + milliseconds(300);
  while (Clock::now() < until) {
    for (const auto& entry : fs::directory_iterator(dir)) {
      const std::string name = entry.path().filename().string();
      const bool known = name == "device" || name == "name" || name.rfind("power1_", 0) == 0;
      EXPECT_TRUE(name.front() == '.' || known) << name;
      if (name.rfind("power1_average", 0) == 0 && name.find("tmp") != std::string::npos) {
        ADD_FAILURE() << "temporary visible to power*_average globs: " << name;
      }
    }
    // Never a torn or empty read while the file is replaced 1000 times a second.
    ASSERT_EQ(read_text(channel(node, "total:0").value_path), expect);
    ++reads;
  }
  EXPECT_GT(reads, 10);
}

// ---------------------------------------------------------------------------------------
// Models

TEST(SimModel, ConstantIsExact) {
  TempDir tmp;
  auto o = constant_options(tmp.path(), Profile::platform_uw);
  o.load = 0.5;  // noise stays on: the constant model ignores it
  SimNode node(o);
  ASSERT_EQ(node.start().error(), "");
  std::this_thread::sleep_for(milliseconds(60));  // a few updates
  EXPECT_EQ(read_text(channel(node, "cpu_rail:1").value_path), "122000000\n");
  EXPECT_EQ(read_text(channel(node, "soc:0").value_path), "6250000\n");
  EXPECT_EQ(read_text(channel(node, "dram:0").value_path), "14000000\n");
  EXPECT_EQ(read_text(channel(node, "total:1").value_path), "183250000\n");  // 122+6.25+14+41
  EXPECT_EQ(node.current_watts("total:1"), 183.25);
  EXPECT_FALSE(node.current_watts("total:7"));
}

class FakeProcStat {
 public:
  FakeProcStat(std::string path, int cpus) : path_(std::move(path)), cpus_(cpus) {
    busy_.assign(cpus, 1000);
    idle_.assign(cpus, 100000);
    write();
  }
  ~FakeProcStat() { stop(); }
  // Every 10 ms each CPU gains 10 jiffies, busy ones in user time, the rest idle.
  void run(std::function<bool(int cpu)> busy) {
    busy_fn_ = std::move(busy);
    thread_ = std::thread([this] {
      while (!stop_) {
        {
          std::lock_guard lock(mutex_);
          for (int c = 0; c < cpus_; ++c) (busy_fn_(c) ? busy_ : idle_)[c] += 10;
        }
        write();
        std::this_thread::sleep_for(milliseconds(10));
      }
    });
  }
  void set_busy(std::function<bool(int cpu)> busy) {
    std::lock_guard lock(mutex_);
    busy_fn_ = std::move(busy);
  }
  void stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }

 private:
  void write() {
    std::string text = "cpu  0 0 0 0 0 0 0 0 0 0\n";
    for (int c = 0; c < cpus_; ++c) {
      text += "cpu" + std::to_string(c) + " " + std::to_string(busy_[c]) + " 0 0 " +
              std::to_string(idle_[c]) + " 0 0 0 0 0 0\n";
    }
    text += "intr 0\nctxt 0\n";
    (void)common::write_file_atomic(path_, text);
  }
  std::string path_;
  int cpus_;
  std::vector<std::uint64_t> busy_, idle_;
  std::function<bool(int)> busy_fn_;
  std::mutex mutex_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

TEST(SimModel, LoadFollowsProcStat) {
  TempDir tmp;
  FakeProcStat stat(tmp / "stat", 4);
  stat.run([](int) { return false; });
  SimOptions o;
  o.root = tmp / "root";
  o.proc_stat = tmp / "stat";
  o.update_interval = milliseconds(20);
  SimNode node(o);
  ASSERT_EQ(node.start().error(), "");

  std::this_thread::sleep_for(milliseconds(150));
  const auto& total0 = channel(node, "total:0").value_path;
  const auto& total1 = channel(node, "total:1").value_path;
  const auto& rail0 = channel(node, "cpu_rail:0").value_path;
  EXPECT_NEAR(read_watts(total0), 96.0, 0.31);  // idle, within the noise
  EXPECT_NEAR(read_watts(total1), 96.0, 0.31);
  EXPECT_NEAR(read_watts(rail0), 41.0, 0.31);

  // Socket 0 owns the even CPUs; make them busy.
  stat.set_busy([](int cpu) { return cpu % 2 == 0; });
  const auto rose = wait_for([&] { return read_watts(rail0) > 195.0; }, milliseconds(3000));
  ASSERT_TRUE(rose) << "cpu_rail:0 = " << read_watts(rail0);
  EXPECT_GT(*rose, milliseconds(40));  // smoothed: not a step on the first update
  EXPECT_GT(read_watts(total0), 240.0);
  EXPECT_LT(read_watts(total0), 259.5);
  EXPECT_NEAR(read_watts(total1), 96.0, 0.31);
  EXPECT_NEAR(read_watts(channel(node, "cpu_rail:1").value_path), 41.0, 0.31);
  node.stop();
}

TEST(SimModel, NoiseIsSeeded) {
  TempDir tmp;
  FakeProcStat stat(tmp / "stat", 2);
  auto first_values = [&](const std::string& name, std::uint64_t seed) {
    SimOptions o;
    o.root = tmp / name;
    o.proc_stat = tmp / "stat";
    o.seed = seed;
    o.once = true;
    SimNode node(o);
    EXPECT_EQ(node.start().error(), "");
    std::vector<std::string> values;
    for (const auto& c : node.channels()) values.push_back(read_text(c.value_path));
    return values;
  };
  const auto a = first_values("a", 7), b = first_values("b", 7), c = first_values("c", 8);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_NE(a[0], "96000000\n");  // noisy
}

TEST(SimModel, TraceStepHold) {
  TempDir tmp;
  std::ofstream(tmp / "trace.csv") << "time_s,total:0,cpu_rail:0\n"
                                      "# comment\n"
                                      "0,100,50\n"
                                      "0.3,200,150.5\n"
                                      "0.6,150,90\n";
  auto o = constant_options(tmp / "root");
  o.model = Model::trace;
  o.trace_path = tmp / "trace.csv";
  o.load = 0.0;
  o.update_interval = milliseconds(10);
  const auto started = Clock::now();
  SimNode node(o);
  ASSERT_EQ(node.start().error(), "");
  const auto& total0 = channel(node, "total:0").value_path;
  EXPECT_EQ(read_text(total0), "100000000\n");
  EXPECT_EQ(read_text(channel(node, "soc:0").value_path), "6000000\n");  // not in the trace
  EXPECT_EQ(read_text(channel(node, "total:1").value_path), "96000000\n");

  // Each value is the mean over the 50 ms before it was published: the trace's values in
  // trace order, with the means of a window straddling a step in between, never early. A
  // busy machine may show them late; a reader held off for a whole step may miss some (the
  // wait ends at the last value, or after 30 s).
  std::vector<std::pair<milliseconds, std::string>> seen;
  while (Clock::now() - started < std::chrono::seconds(30)) {
    const auto v = read_text(total0);
    if (seen.empty() || seen.back().second != v) {
      seen.emplace_back(std::chrono::duration_cast<milliseconds>(Clock::now() - started), v);
    }
    if (v == "150000000\n") break;
    std::this_thread::sleep_for(milliseconds(3));
  }
  ASSERT_GE(seen.size(), 2u);
  EXPECT_EQ(seen.front().second, "100000000\n");
  EXPECT_EQ(seen.back().second, "150000000\n");
  EXPECT_GE(seen.back().first, milliseconds(600));
  bool rising = true;  // 100 -> 200 until the first fall, then 200 -> 150
  double previous = 100.0;
  for (const auto& [at, text] : seen) {
    const double w = static_cast<double>(common::parse_i64(common::trim(text)).value_or(-1)) / 1e6;
    SCOPED_TRACE(text);
    EXPECT_GE(w, 100.0);
    EXPECT_LE(w, 200.0);
    if (w != 100.0) {
      EXPECT_GE(at, milliseconds(300));  // never before the step
    }
    if (w == 200.0) {
      EXPECT_GE(at, milliseconds(350));  // a whole window after it
    }
    if (w < 200.0 && w != 100.0 && !rising) {
      EXPECT_GE(at, milliseconds(600));
    }
    if (w < previous) rising = false;
    previous = w;
  }
  // The same step's other channel (written just after this one) holds its value at the end.
  const auto& rail0 = channel(node, "cpu_rail:0").value_path;
  EXPECT_TRUE(
      wait_for([&] { return read_text(rail0) == "90000000\n"; }, milliseconds(5000)).has_value())
      << read_text(rail0);
}

TEST(SimModel, BadTraceNamesFileAndLine) {
  TempDir tmp;
  auto try_trace = [&](const std::string& content) {
    const std::string path = tmp / "bad.csv";
    std::ofstream(path) << content;
    auto o = constant_options(tmp / "root");
    o.model = Model::trace;
    o.trace_path = path;
    SimNode node(o);
    const Status started = node.start();
    EXPECT_FALSE(started);
    return started.error();
  };
  auto error = try_trace("time_s,total:0\n0,100\n0.5,lots\n");
  EXPECT_NE(error.find(tmp / "bad.csv:3"), std::string::npos) << error;
  error = try_trace("time_s,total:0,dram:0\n0,1,2\n");  // gb200 has no dram rail
  EXPECT_NE(error.find("bad.csv:1"), std::string::npos) << error;
  EXPECT_NE(error.find("dram:0"), std::string::npos) << error;
  error = try_trace("time_s,total:0\n1,100\n0.5,100\n");
  EXPECT_NE(error.find("bad.csv:3"), std::string::npos) << error;
  error = try_trace("time_s,total:0\n0,100,7\n");
  EXPECT_NE(error.find("bad.csv:2"), std::string::npos) << error;
  error = try_trace("time_s,total:0\n");
  EXPECT_NE(error.find("no data"), std::string::npos) << error;
  // Two rows at one time are refused, as the GPU simulator's traces (one reader for both).
  error = try_trace("time_s,total:0\n0,100\n0.5,100\n0.5,120\n");
  EXPECT_NE(error.find("bad.csv:4: time_s must increase from row to row"), std::string::npos)
      << error;
}

TEST(SimModel, OverrideWinsAndReleases) {
  TempDir tmp;
  SimNode node(constant_options(tmp.path()));
  ASSERT_EQ(node.start().error(), "");
  const auto& path = channel(node, "total:0").value_path;
  EXPECT_EQ(read_text(path), "177250000\n");
  node.set_override("total:0", 123.456);
  node.set_override("nope:0", 1.0);  // ignored
  EXPECT_TRUE(wait_for([&] { return read_text(path) == "123456000\n"; }, milliseconds(1000)));
  EXPECT_EQ(node.current_watts("total:0"), 123.456);
  EXPECT_EQ(read_text(channel(node, "total:1").value_path), "177250000\n");
  node.set_override("total:0", std::nullopt);
  EXPECT_TRUE(wait_for([&] { return read_text(path) == "177250000\n"; }, milliseconds(1000)));
}

// ---------------------------------------------------------------------------------------
// Firmware averaging

TEST(SimAveraging, StepTraceMeansOver50And1000Ms) {
  TempDir tmp;
  std::ofstream(tmp / "step.csv") << "time_s,total:0\n0,100\n1,200\n";
  const auto trace = Trace::load(tmp / "step.csv", profile_channels(Profile::gb200));
  ASSERT_TRUE(trace) << trace.error();
  PowerHistory h;
  h.set(0.0, *trace->value_at("total:0", 0.0));
  for (const auto& [t, w] : trace->steps("total:0", 0.0, 5.0)) h.set(t, w);
  auto mean_ms = [&](double end_s, int window_ms) {
    return h.mean(end_s - window_ms / 1e3, end_s);
  };
  // 50 ms: the window straddles the step for 50 ms only.
  EXPECT_NEAR(mean_ms(1.0, 50), 100.0, 1e-9);
  EXPECT_NEAR(mean_ms(1.025, 50), 150.0, 1e-9);
  EXPECT_NEAR(mean_ms(1.040, 50), 180.0, 1e-9);  // 10 ms at 100 W, 40 ms at 200 W
  EXPECT_NEAR(mean_ms(1.050, 50), 200.0, 1e-9);
  // 1000 ms: the same step takes a whole second to show.
  EXPECT_NEAR(mean_ms(1.0, 1000), 100.0, 1e-9);
  EXPECT_NEAR(mean_ms(1.2, 1000), 120.0, 1e-9);  // 800 ms at 100 W, 200 ms at 200 W
  EXPECT_NEAR(mean_ms(1.5, 1000), 150.0, 1e-9);
  EXPECT_NEAR(mean_ms(1.040, 1000), 104.0, 1e-9);
  EXPECT_NEAR(mean_ms(2.0, 1000), 200.0, 1e-9);
  // Before the trace begins its first value holds; after its end, the last one.
  EXPECT_NEAR(mean_ms(0.5, 1000), 100.0, 1e-9);
  EXPECT_NEAR(mean_ms(9.0, 1000), 200.0, 1e-9);
  // A zero-length window is the value at that moment.
  EXPECT_EQ(h.mean(1.0, 1.0), 200.0);
  EXPECT_EQ(h.mean(0.999, 0.999), 100.0);
}

TEST(SimAveraging, HistoryForgetsOnlyWhatNoWindowNeeds) {
  PowerHistory h(1.5);
  for (int k = 0; k <= 400; ++k) h.set(k * 0.01, k % 2 ? 300.0 : 100.0);  // 10 ms steps, 4 s
  // The last second alternates 100/300 W every 10 ms: exactly 200 W on average.
  EXPECT_NEAR(h.mean(3.0, 4.0), 200.0, 1e-9);
  EXPECT_NEAR(h.mean(2.6, 2.7), 200.0, 1e-9);
  h.set(4.0, 100.0);  // same value as the latest step: no new step
  h.set(4.0, 500.0);  // same time: replaces it
  EXPECT_EQ(h.mean(4.0, 4.0), 500.0);
}

// A 100 ms square wave (20 ms at 500 W, 80 ms at 100 W) for `seconds`.
std::string square_wave(int seconds) {
  std::string csv = "time_s,total:0\n";
  for (int p = 0; p < seconds * 10; ++p) {
    csv += std::to_string(p * 0.1) + ",500\n" + std::to_string(p * 0.1 + 0.02) + ",100\n";
  }
  return csv;
}

TEST(SimAveraging, PublishedValueIsTheMeanOverTheInterval) {
  TempDir tmp;
  std::ofstream(tmp / "square.csv") << square_wave(30);
  for (const int interval_ms : {1000, 50}) {
    SCOPED_TRACE(interval_ms);
    auto o = constant_options(tmp / ("root" + std::to_string(interval_ms)));
    o.model = Model::trace;
    o.trace_path = tmp / "square.csv";
    o.update_interval = milliseconds(7);  // publications land at every phase of the wave
    o.average_interval = milliseconds(interval_ms);
    SimNode node(o);
    ASSERT_EQ(node.start().error(), "");
    const auto started = Clock::now();  // the node's time 0 was earlier: never later
    EXPECT_EQ(node.average_interval("total:0"), milliseconds(interval_ms));
    const auto path = channel(node, "total:0").value_path;
    // The whole first window must lie inside the trace (before it, 500 W holds).
    std::this_thread::sleep_for(milliseconds(interval_ms + 100) - (Clock::now() - started));
    std::set<std::string> values;
    const auto until = Clock::now() + milliseconds(600);
    while (Clock::now() < until) {
      values.insert(read_text(path));
      std::this_thread::sleep_for(milliseconds(2));
    }
    if (interval_ms == 1000) {
      // Ten whole periods in every window: exactly 0.2 * 500 + 0.8 * 100 W at any phase.
      EXPECT_EQ(values, std::set<std::string>{"180000000\n"});
    } else {
      // Half a period: from 100 W (all low) to 260 W (the whole pulse and 30 ms low).
      EXPECT_GE(values.size(), 3u);
      for (const auto& v : values) {
        const auto uw = common::parse_i64(common::trim(v));
        ASSERT_TRUE(uw) << v;
        EXPECT_GE(*uw, 100000000);
        EXPECT_LE(*uw, 260000000);
      }
    }
  }
}

// Writes `content` the way a sysfs store does: truncate, one write.
void store(const std::string& path, const std::string& content) {
  std::ofstream out(path, std::ios::trunc);
  out << content;
}

TEST(SimInterval, WriteReRegistersUnderANewNumberOnTheModernLayout) {
  TempDir tmp;
  const std::string root = tmp / "root";
  SimNode node(constant_options(root));
  ASSERT_EQ(node.start().error(), "");
  ASSERT_EQ(channel(node, "total:0").hwmon, "hwmon2");
  const auto before_total1 = channel(node, "total:1");

  store(root + "/hwmon2/power1_average_interval", "1000\n");
  ASSERT_TRUE(
      wait_for([&] { return channel(node, "total:0").hwmon != "hwmon2"; }, milliseconds(5000)));
  const auto moved = channel(node, "total:0");
  EXPECT_EQ(moved.hwmon, "hwmon14");  // gb200 meters are 2, 3, 10..13: the next number
  EXPECT_EQ(node.average_interval("total:0"), milliseconds(1000));
  // The old node is gone entirely; the new one has the same device and labels.
  EXPECT_FALSE(fs::exists(root + "/hwmon2"));
  EXPECT_FALSE(fs::is_symlink(root + "/hwmon2"));
  EXPECT_FALSE(fs::exists(root + "/devices/platform/ACPI000D:00/hwmon/hwmon2"));
  EXPECT_EQ(link_target(root + "/hwmon14"), "devices/platform/ACPI000D:00/hwmon/hwmon14");
  EXPECT_EQ(read_text(root + "/hwmon14/name"), "power_meter\n");
  EXPECT_EQ(read_text(root + "/hwmon14/power1_oem_info"), "Grace Power Socket 0\n");
  EXPECT_EQ(read_text(root + "/hwmon14/power1_average_interval"), "1000\n");
  EXPECT_EQ(read_text(root + "/hwmon14/power1_average_interval_min"), "50\n");
  EXPECT_EQ(read_text(root + "/hwmon14/power1_average_interval_max"), "1000\n");
  EXPECT_EQ(moved.value_path, fs::canonical(root + "/hwmon14/power1_average").string());
  EXPECT_TRUE(
      wait_for([&] { return read_text(moved.value_path) == "177250000\n"; }, milliseconds(2000)));
  // The other channels stay where they were.
  const auto total1 = channel(node, "total:1");
  EXPECT_EQ(total1.hwmon, before_total1.hwmon);
  EXPECT_EQ(total1.value_path, before_total1.value_path);
  EXPECT_EQ(node.average_interval("total:1"), milliseconds(50));

  // Back to 50: another new number. Writing the interval it already has changes nothing.
  store(root + "/hwmon14/power1_average_interval", "50");
  ASSERT_TRUE(
      wait_for([&] { return channel(node, "total:0").hwmon != "hwmon14"; }, milliseconds(5000)));
  EXPECT_EQ(channel(node, "total:0").hwmon, "hwmon15");
  EXPECT_EQ(read_text(root + "/hwmon15/power1_average_interval"), "50\n");
  store(root + "/hwmon3/power1_average_interval", "50\n");
  std::this_thread::sleep_for(milliseconds(200));
  EXPECT_EQ(channel(node, "cpu_rail:0").hwmon, "hwmon3");
  node.stop();
  EXPECT_EQ(read_text(root + "/hwmon15/power1_average"), "177250000\n");
}

TEST(SimInterval, RefusedValuesArePutBack) {
  TempDir tmp;
  const std::string root = tmp / "root";
  SimNode node(constant_options(root));
  ASSERT_EQ(node.start().error(), "");
  for (const std::string bad : {"70\n", "abc\n", "0\n", ""}) {
    SCOPED_TRACE(bad);
    store(root + "/hwmon10/power1_average_interval", bad);
    EXPECT_TRUE(
        wait_for([&] { return read_text(root + "/hwmon10/power1_average_interval") == "50\n"; },
                 milliseconds(3000)));
    EXPECT_EQ(channel(node, "soc:0").hwmon, "hwmon10");
    EXPECT_EQ(node.average_interval("soc:0"), milliseconds(50));
  }
}

TEST(SimInterval, LegacyLayoutChangesInPlace) {
  TempDir tmp;
  const std::string root = tmp / "root";
  auto o = constant_options(root, Profile::gh200, Layout::legacy);
  o.average_interval = milliseconds(1000);
  SimNode node(o);
  ASSERT_EQ(node.start().error(), "");
  const std::string file = root + "/hwmon2/device/power1_average_interval";
  EXPECT_EQ(read_text(file), "1000\n");
  store(file, "50\n");
  EXPECT_TRUE(wait_for([&] { return node.average_interval("total:0") == milliseconds(50); },
                       milliseconds(3000)));
  EXPECT_EQ(channel(node, "total:0").hwmon, "hwmon2");  // kernels <= 6.14 keep the device
  EXPECT_TRUE(fs::is_directory(root + "/hwmon2"));
  EXPECT_EQ(read_text(file), "50\n");
}

TEST(SimInterval, OnlyFirmwareIntervalsAtStart) {
  TempDir tmp;
  auto o = constant_options(tmp / "root");
  o.average_interval = milliseconds(70);
  SimNode node(o);
  const Status started = node.start();
  EXPECT_FALSE(started);
  EXPECT_NE(started.error().find("50 or 1000"), std::string::npos) << started.error();
}

// ---------------------------------------------------------------------------------------
// Faults

SimOptions with_fault(SimOptions o, const std::string& spec) {
  auto f = parse_fault(spec);
  EXPECT_TRUE(f) << f.error();
  if (f) o.faults[f->first] = f->second;
  return o;
}

TEST(SimFaultInjection, BadContentKinds) {
  TempDir tmp;
  auto o = constant_options(tmp.path());
  o = with_fault(o, "total:0=invalid");
  o = with_fault(o, "cpu_rail:0=empty");
  o = with_fault(o, "soc:0=zero@0-300");
  SimNode node(o);
  ASSERT_EQ(node.start().error(), "");
  EXPECT_EQ(read_text(channel(node, "total:0").value_path), "4294967295000\n");
  EXPECT_EQ(read_text(channel(node, "cpu_rail:0").value_path), "");
  const auto& soc = channel(node, "soc:0").value_path;
  EXPECT_EQ(read_text(soc), "0\n");
  EXPECT_FALSE(node.current_watts("total:0"));
  EXPECT_FALSE(node.current_watts("cpu_rail:0"));
  EXPECT_EQ(node.current_watts("soc:0"), 0.0);
  const auto recovered =
      wait_for([&] { return read_text(soc) == "6250000\n"; }, milliseconds(2000));
  ASSERT_TRUE(recovered);
  EXPECT_GE(*recovered, milliseconds(200));
  EXPECT_EQ(node.current_watts("soc:0"), 6.25);
  EXPECT_EQ(read_text(channel(node, "total:0").value_path), "4294967295000\n");  // no window
}

TEST(SimFaultInjection, UnreadableExistsButCannotBeOpened) {
  TempDir tmp;
  SimNode node(with_fault(constant_options(tmp.path()), "total:1=unreadable@0-300"));
  ASSERT_EQ(node.start().error(), "");
  const auto& path = channel(node, "total:1").value_path;
  struct stat st {};
  ASSERT_EQ(::stat((tmp / "hwmon11/power1_average").c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  errno = 0;
  const int fd = ::open(path.c_str(), O_RDONLY);
  EXPECT_LT(fd, 0);
  EXPECT_EQ(errno, ENXIO);
  if (fd >= 0) ::close(fd);
  EXPECT_FALSE(node.current_watts("total:1"));
  EXPECT_TRUE(wait_for([&] { return read_text(path) == "177250000\n"; }, milliseconds(2000)));
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
}

TEST(SimFaultInjection, SlowReadTakesTheDelay) {
  TempDir tmp;
  // The window leaves room for two reads on a busy machine.
  SimNode node(with_fault(constant_options(tmp.path()), "total:1=slow:150@0-3000"));
  ASSERT_EQ(node.start().error(), "");
  const auto& path = channel(node, "total:1").value_path;
  for (int i = 0; i < 2; ++i) {
    BlockingRead read(path);
    ASSERT_TRUE(read.wait(milliseconds(3000))) << "slow read never completed";
    EXPECT_EQ(read.text(), "177250000\n");
    EXPECT_GE(read.took(), milliseconds(i == 0 ? 150 : 140));
    EXPECT_LT(read.took(), milliseconds(1500));
  }
  EXPECT_EQ(node.current_watts("total:1"), 177.25);
  // After the window: an ordinary file again.
  struct stat st {};
  ASSERT_TRUE(wait_for([&] { return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode); },
                       milliseconds(5000)));
  EXPECT_EQ(read_text(path), "177250000\n");
}

TEST(SimFaultInjection, SlowReaderThatLingersGetsOneValue) {
  TempDir tmp;
  SimNode node(with_fault(constant_options(tmp.path()), "soc:0=slow:100"));
  ASSERT_EQ(node.start().error(), "");
  const auto& path = channel(node, "soc:0").value_path;
  std::atomic<bool> got_value{false};
  std::string lingering;
  std::thread reader([&] {
    const int fd = ::open(path.c_str(), O_RDONLY);
    if (fd < 0) return;
    char buf[64];
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n > 0) lingering.append(buf, static_cast<std::size_t>(n));
    got_value = true;
    // Slow to come back for EOF: the writer must not start serving it a second value.
    std::this_thread::sleep_for(milliseconds(250));
    while ((n = ::read(fd, buf, sizeof buf)) > 0)
      lingering.append(buf, static_cast<std::size_t>(n));
    ::close(fd);
  });
  ASSERT_TRUE(wait_for([&] { return got_value.load(); }, milliseconds(1500)));
  {
    BlockingRead next(path);  // a second reader meanwhile is served on its own
    ASSERT_TRUE(next.wait(milliseconds(1500)));
    EXPECT_EQ(next.text(), "6250000\n");
    EXPECT_GE(next.took(), milliseconds(100));
  }
  reader.join();
  EXPECT_EQ(lingering, "6250000\n");
}

TEST(SimFaultInjection, HangBlocksUntilTheWindowEnds) {
  TempDir tmp;
  const auto started = Clock::now();
  SimNode node(with_fault(constant_options(tmp.path()), "soc:1=hang@0-1500"));
  ASSERT_EQ(node.start().error(), "");
  const auto& path = channel(node, "soc:1").value_path;
  EXPECT_FALSE(node.current_watts("soc:1"));
  BlockingRead read(path);
  std::this_thread::sleep_for(milliseconds(200));
  EXPECT_FALSE(read.done()) << "open() of a hung channel returned";
  ASSERT_TRUE(read.wait(milliseconds(4000))) << "the end of the window did not release it";
  EXPECT_GE(Clock::now() - started, milliseconds(1450));
  EXPECT_EQ(read.text(), "6250000\n");
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
  EXPECT_EQ(read_text(path), "6250000\n");
}

TEST(SimFaultInjection, StopReleasesHangAndSlowReaders) {
  TempDir tmp;
  auto o = with_fault(constant_options(tmp.path()), "total:0=hang");
  o = with_fault(o, "total:1=slow:5000");
  SimNode node(o);
  ASSERT_EQ(node.start().error(), "");
  BlockingRead hung(channel(node, "total:0").value_path);
  BlockingRead slow(channel(node, "total:1").value_path);
  std::this_thread::sleep_for(milliseconds(200));
  EXPECT_FALSE(hung.done());
  EXPECT_FALSE(slow.done());
  const auto before = Clock::now();
  node.stop();
  EXPECT_LT(Clock::now() - before, milliseconds(2000));  // never waits on its readers
  EXPECT_TRUE(hung.wait(milliseconds(3000)));            // returns as soon as the read ends
  EXPECT_TRUE(slow.wait(milliseconds(3000)));
  EXPECT_EQ(hung.text(), "177250000\n");
  EXPECT_EQ(slow.text(), "177250000\n");
  // Readers arriving after stop() find ordinary files.
  EXPECT_EQ(read_text(channel(node, "total:0").value_path), "177250000\n");
}

// ---------------------------------------------------------------------------------------
// Lifecycle

TEST(SimLifecycle, StopIsIdempotentAndQuick) {
  TempDir tmp;
  auto o = constant_options(tmp.path());
  o.update_interval = milliseconds(5000);  // stop must not wait for the next update
  SimNode node(o);
  node.stop();  // before start: nothing to do
  ASSERT_EQ(node.start().error(), "");
  EXPECT_FALSE(node.start());
  const auto before = Clock::now();
  node.stop();
  node.stop();
  EXPECT_LT(Clock::now() - before, milliseconds(2500));  // not the 5 s to the next update
  // No more updates after stop.
  node.set_override("total:0", 1.0);
  std::this_thread::sleep_for(milliseconds(50));
  EXPECT_EQ(read_text(channel(node, "total:0").value_path), "177250000\n");
}

TEST(SimLifecycle, StartErrors) {
  TempDir tmp;
  {
    SimNode node(with_fault(constant_options(tmp / "a"), "dram:0=zero"));  // gb200: no DRAM
    const Status started = node.start();
    EXPECT_FALSE(started);
    EXPECT_NE(started.error().find("dram:0"), std::string::npos) << started.error();
  }
  {
    SimOptions o;
    o.root = tmp / "b";
    o.proc_stat = tmp / "missing-stat";
    SimNode node(o);
    const Status started = node.start();
    EXPECT_FALSE(started);
    EXPECT_NE(started.error().find("missing-stat"), std::string::npos) << started.error();
  }
  {
    auto o = with_fault(constant_options(tmp / "c"), "total:0=slow:10");
    o.once = true;
    SimNode node(o);
    const Status started = node.start();
    EXPECT_FALSE(started);
    EXPECT_NE(started.error().find("slow"), std::string::npos) << started.error();
  }
}

}  // namespace
}  // namespace cpupower::sim
