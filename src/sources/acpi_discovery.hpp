#pragma once
// Finds the ACPI power_meter channels under a hwmon class directory, on both kernel layouts:
// >= 6.15 registers with info (name and power1_* on hwmonN/), <= 6.14 registers without
// (no name on the class node; the attributes live under hwmonN/device/).

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
  rails::Classification cls;
  std::string label_text;  // escaped exposition labels, built once
};

struct AcpiDiscovery {
  std::vector<AcpiChannel> channels;  // ordered numerically by (hwmon node, channel)
  std::vector<std::string> warnings;  // unreadable directories and entries
  std::string error;                  // non-empty when the root itself could not be listed
};

AcpiDiscovery discover_acpi(const std::string& hwmon_root);

}  // namespace cpupower::sources
