#pragma once
// The simulated node's shape: which Grace platform it imitates (the set of ACPI power meter
// channels and their OEM labels), which kernel generation's hwmon layout it writes, and how
// its values are produced.

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
enum class Profile { gb200, gh200, platform_uw, gh200_quad };

// modern: kernel >= 6.15, `name` and power1_* live in the hwmon class directory.
// legacy: kernel <= 6.14, acpi_power_meter puts them on the ACPI device instead.
enum class Layout { modern, legacy };

enum class Model { load, trace, constant };

// "gb200" "gh200" "platform-uw" "gh200-quad"; nullopt for anything else.
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
  std::string key;  // "<kind>:<socket>", e.g. "total:0"
  // What the meter measures, for the power model and the fault keys: a "Module Power
  // Socket N" meter is module here although the rails leave its label unclassified.
  rails::Kind kind = rails::Kind::other;
  std::uint32_t socket = 0;
  std::string oem_info;  // the firmware label, without the trailing newline
};

// Every power meter channel of a profile, in ACPI device order (socket by socket).
std::vector<ChannelSpec> profile_channels(Profile profile);

std::uint32_t profile_sockets(Profile profile);

// "total:1" for (total, 1).
std::string channel_key(rails::Kind kind, std::uint32_t socket);

}  // namespace cpupower::sim
