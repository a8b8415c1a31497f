#pragma once
// A simulated Grace node: writes a Linux hwmon tree shaped like a real node's
// /sys/class/hwmon (ACPI power meters plus unrelated distractor devices) and keeps its
// power1_average values moving, so an exporter pointed at the root with --hwmon-root reads it
// through the same code path as on hardware.
//
// Like Grace's firmware, each channel publishes the mean of its underlying power over its
// averaging interval (power1_average_interval, 50 or 1000 ms) ending at the moment of
// publication. The update thread polls every channel's power1_average_interval file: a
// write of 50 or 1000 changes the interval and, on the modern layout (kernel >= 6.15, where
// the ACPI CONFIG notify that _PAI raises unregisters and re-registers the hwmon device),
// moves the channel to a new hwmonN: the old class entry and directory disappear, a new
// number is allocated, the OEM label stays. Any other content is put back (and logged): a
// real kernel fails such a write with EINVAL, which a plain file cannot do.

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "rails/rails.hpp"
#include "sim/faults.hpp"
#include "sim/power_model.hpp"
#include "sim/profiles.hpp"

namespace cpupower::sim {

struct SimOptions {
  std::string root;  // stands for /sys/class/hwmon (x86: /sys/class/powercap); created if missing
  Profile profile = Profile::gb200;
  Layout layout = Layout::modern;
  Model model = Model::load;
  std::string trace_path;  // Model::trace
  double load = 0.0;       // constant model utilisation 0..1; also trace channels without a column
  // How often power1_average gets a new value (each the mean over the averaging interval
  // ending at that moment).
  std::chrono::milliseconds update_interval{50};
  // The firmware's averaging interval every channel starts with: 50 or 1000, the only
  // values Grace's _PAI accepts. A write to power1_average_interval changes it later.
  std::chrono::milliseconds average_interval{50};
  // How often the load model's underlying power is sampled (and /proc/stat read). Trace and
  // constant models are integrated exactly and need no sampling.
  std::chrono::milliseconds sample_step{10};
  std::map<std::string, Fault> faults;  // by channel key
  std::string proc_stat = "/proc/stat";
  std::uint64_t seed = 1;
  bool noise = true;  // load model only
  // Write the tree and the values at t = 0, start no thread, and leave every file as it is on
  // stop() (a hang FIFO stays). Slow faults need the writer thread and are refused.
  bool once = false;
  // The x86 profiles only (SimRaplNode, sim_rapl.hpp): each counter's max_energy_range_uj (0:
  // the hardware's for the profile; a small one makes counters wrap within a test), the value
  // every counter starts from, and energy_uj readable by root only (mode 0400, as current
  // kernels have it).
  std::uint64_t max_energy_range_uj = 0;
  std::uint64_t energy_start_uj = 0;
  bool root_only = false;
};

// A channel of the profile where the tree has it.
struct ChannelInfo : ChannelSpec {
  std::string hwmon;       // "hwmon10"; a new number after each re-registration (modern layout)
  std::string value_path;  // absolute, symlinks resolved: the file holding power1_average
};

class SimNode {
 public:
  explicit SimNode(SimOptions options);
  ~SimNode();  // stops

  // Writes the whole tree and the first values, then starts the update thread (and a writer
  // thread per slow channel). Returns once the first values are on disk. An error for bad
  // options, an unknown fault key, an unreadable proc_stat for the load model, a bad trace
  // file, or a root that holds something other than an earlier sim tree.
  Status start();

  // Idempotent. Joins every thread, releases readers blocked on slow or hang FIFOs and turns
  // those channels back into regular files holding the last value. Never blocks on readers.
  void stop();

  // Valid from construction, final once start() succeeded until a channel re-registers:
  // on the modern layout a new averaging interval moves it to a new hwmonN (a copy, so it
  // can be taken while the update thread moves channels).
  std::vector<ChannelInfo> channels() const;

  // The channel's current averaging interval; nullopt for an unknown key.
  std::optional<std::chrono::milliseconds> average_interval(const std::string& key) const;

  // Forces a channel's value (W) from the next update on; nullopt returns it to the model.
  // Unknown keys are ignored. Faults still decide what the file shows.
  void set_override(const std::string& key, std::optional<double> watts);

  // The value (W, as rounded to µW on disk) a reader currently gets; nullopt for an unknown
  // key, before start(), or while a fault leaves no number to read (invalid, empty,
  // unreadable, hang). Zero reads 0; slow reads the value its writer delivers.
  std::optional<double> current_watts(const std::string& key) const;
  // When the node started, on the system clock (Unix seconds): a trace's time 0.
  double started_unix() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace cpupower::sim
