#pragma once
// The simulated node's shape: which platform it imitates (a Grace node's ACPI power meter
// channels and their OEM labels, or an x86 node's RAPL powercap zones), which kernel
// generation's hwmon layout it writes, and how its values are produced.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rails/rails.hpp"

namespace cpupower::sim {

// gb200, gh200: the "Grace Power / CPU Power / SysIO Power Socket N" firmware labels.
// platform_uw: the newer "... Power in uW socket N" labels, which add a DRAM rail.
// gh200_quad: a four-socket GH200 node, whose firmware also has a "Module Power Socket N"
// meter before the three Grace labels of each socket (unclassified by the rails: module
// power comes from NVML alone).
// x86_intel, x86_amd: two-socket x86 hosts with no Grace meters, whose CPU power is RAPL: an
// Intel host's packages with core, uncore and DRAM subzones, an AMD host's packages with a
// core subzone (sim_rapl.hpp writes them as a powercap tree).
enum class Profile { gb200, gh200, platform_uw, gh200_quad, x86_intel, x86_amd };

// The x86 profiles: a powercap tree of RAPL zones instead of hwmon power meters.
bool is_rapl_profile(Profile profile);

// modern: kernel >= 6.15, `name` and power1_* live in the hwmon class directory.
// legacy: kernel <= 6.14, acpi_power_meter puts them on the ACPI device instead.
enum class Layout { modern, legacy };

enum class Model { load, trace, constant };

// "gb200" "gh200" "platform-uw" "gh200-quad" "x86-intel" "x86-amd"; nullopt for anything
// else.
std::optional<Profile> parse_profile(std::string_view text);
// "modern" "legacy"
std::optional<Layout> parse_layout(std::string_view text);
// "load" "trace" "constant"
std::optional<Model> parse_model(std::string_view text);

// The inverse of the parsers, for messages and the ready line.
std::string_view profile_name(Profile profile);
std::string_view layout_name(Layout layout);
std::string_view model_name(Model model);

struct ChannelSpec {
  // "<kind>:<socket>", e.g. "total:0"; for a RAPL zone "<zone>:<socket>" ("package:0",
  // "core:0", "uncore:0", "dram:0").
  std::string key;
  // What the meter measures, for the power model and the fault keys: a "Module Power
  // Socket N" meter is module here although the rails leave its label unclassified.
  rails::Kind kind = rails::Kind::other;
  std::uint32_t socket = 0;
  std::string oem_info;  // the firmware label, without the trailing newline; a RAPL zone's name
};

// Every power meter channel of a profile, in ACPI device order (socket by socket); for an x86
// profile every RAPL zone, each package before its subzones.
std::vector<ChannelSpec> profile_channels(Profile profile);

std::uint32_t profile_sockets(Profile profile);

// "total:1" for (total, 1).
std::string channel_key(rails::Kind kind, std::uint32_t socket);

}  // namespace cpupower::sim
