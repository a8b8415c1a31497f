#pragma once
// Finds the ACPI power_meter channels under a hwmon class directory, on both kernel layouts:
// >= 6.15 registers with info (name and power1_* on hwmonN/), <= 6.14 registers without
// (no name on the class node; the attributes live under hwmonN/device/).

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "rails/rails.hpp"

namespace cpupower::sources {

struct AcpiChannel {
  std::string sensor;      // "<hwmon node>/<channel>", e.g. "hwmon2/power1": unique per rail
  std::string hwmon;       // "hwmon2"
  std::string channel;     // "power1"
  std::string value_path;  // the file that is read: <root>/<hwmon>[/device]/power1_average
  std::string oem_info;    // OEM label, else the channel's _label, else the channel name
  bool has_metadata = false;
  // The firmware's averaging window: power*_average is the mean power over the interval
  // before it was published. From power*_average_interval (ms); nullopt where the channel
  // has no such file or it does not hold a positive number (power*_input channels).
  std::optional<std::chrono::milliseconds> average_interval;
  std::string interval_path;  // <dir>/power1_average_interval, whether or not it exists
  std::string device;         // real path of <hwmon>/device: the ACPI device, which stays
                              // when the hwmon device re-registers under a new number
  rails::Classification cls;
  std::string label_text;  // escaped exposition labels, built once
};

struct AcpiDiscovery {
  std::vector<AcpiChannel> channels;  // ordered numerically by (hwmon node, channel)
  std::vector<std::string> warnings;  // unreadable directories and entries
  std::string error;                  // non-empty when the root itself could not be listed
};

AcpiDiscovery discover_acpi(const std::string& hwmon_root);

// The interval a power*_average_interval file holds (decimal ms); nullopt when it cannot be
// read or holds no positive number.
std::optional<std::chrono::milliseconds> read_average_interval(const std::string& path);

// The identity a channel keeps across re-registration, unique within `channels`: its OEM
// label when it has one that no other channel shares, else its ACPI device and channel name.
std::vector<std::string> stable_keys(const std::vector<AcpiChannel>& channels);

// --set-average-interval-ms: writes `interval` to every channel's power*_average_interval
// (a sysfs store; Grace's _PAI takes 50 or 1000 and the kernel answers anything else with
// EINVAL), then waits up to `settle` for the channels whose hwmon device re-registers
// (kernels >= 6.15, modern layout) to come back under their new numbers. Channels that
// already hold the interval are left alone. Returns one line per failed write.
struct IntervalChange {
  std::size_t written = 0;
  std::size_t unchanged = 0;
  std::vector<std::string> failures;
  bool settled = true;  // every re-registering channel was found again in time
  // When not settled, the sensors (as discovered before the write) whose old node was still
  // there at the deadline, and those whose old node went and that were not found again.
  std::vector<std::string> not_moved;
  std::vector<std::string> not_back;
};
IntervalChange set_average_interval(const std::string& hwmon_root,
                                    std::chrono::milliseconds interval,
                                    std::chrono::milliseconds settle);

}  // namespace cpupower::sources
