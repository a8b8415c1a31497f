#include "sim/profiles.hpp"

#include <array>
#include <span>

#include "common/enum_names.hpp"

namespace cpupower::sim {
namespace {

struct Label {
  rails::Kind kind;
  std::string_view prefix;  // the socket number is appended
};

// Firmware label order within a socket, as the ACPI devices enumerate on real nodes.
constexpr std::array kGraceLabels = {
    Label{rails::Kind::total, "Grace Power Socket "},
    Label{rails::Kind::cpu_rail, "CPU Power Socket "},
    Label{rails::Kind::soc, "SysIO Power Socket "},
};

// A four-socket GH200 node's firmware: the module meter enumerates first.
constexpr std::array kModuleLabel = {Label{rails::Kind::module, "Module Power Socket "}};

constexpr std::array kMicrowattLabels = {
    Label{rails::Kind::total, "Total Power in uW socket "},
    Label{rails::Kind::cpu_rail, "CPU Rail Power in uW socket "},
    Label{rails::Kind::soc, "SoC Rail Power in uW socket "},
    Label{rails::Kind::dram, "DRAM Power in uW socket "},
};

// RAPL zones: the package (kind total), then its subzones in the kernel's order.
struct Zone {
  rails::Kind kind;
  std::string_view key;   // the key's zone part
  std::string_view name;  // the zone's `name`; a package's gets its id appended
};
constexpr std::array kIntelZones = {
    Zone{rails::Kind::total, "package", "package-"},
    Zone{rails::Kind::cpu_rail, "core", "core"},
    Zone{rails::Kind::soc, "uncore", "uncore"},
    Zone{rails::Kind::dram, "dram", "dram"},
};
constexpr std::array kAmdZones = {
    Zone{rails::Kind::total, "package", "package-"},
    Zone{rails::Kind::cpu_rail, "core", "core"},
};

void append_zones(std::vector<ChannelSpec>& out, std::span<const Zone> zones,
                  std::uint32_t socket) {
  for (const auto& z : zones) {
    const std::string suffix = z.kind == rails::Kind::total ? std::to_string(socket) : "";
    out.push_back(ChannelSpec{std::string(z.key) + ":" + std::to_string(socket), z.kind, socket,
                              std::string(z.name) + suffix});
  }
}

void append_socket(std::vector<ChannelSpec>& out, std::span<const Label> labels,
                   std::uint32_t socket) {
  for (const auto& label : labels) {
    out.push_back(ChannelSpec{channel_key(label.kind, socket), label.kind, socket,
                              std::string(label.prefix) + std::to_string(socket)});
  }
}

}  // namespace

constexpr common::EnumName<Profile> kProfiles[] = {{Profile::gb200, "gb200"},
                                                   {Profile::gh200, "gh200"},
                                                   {Profile::platform_uw, "platform-uw"},
                                                   {Profile::gh200_quad, "gh200-quad"},
                                                   {Profile::x86_intel, "x86-intel"},
                                                   {Profile::x86_amd, "x86-amd"}};
constexpr common::EnumName<Layout> kLayouts[] = {{Layout::modern, "modern"},
                                                 {Layout::legacy, "legacy"}};
constexpr common::EnumName<Model> kModels[] = {
    {Model::load, "load"}, {Model::trace, "trace"}, {Model::constant, "constant"}};

std::optional<Profile> parse_profile(std::string_view text) {
  return common::parse(kProfiles, text);
}
std::optional<Layout> parse_layout(std::string_view text) {
  return common::parse(kLayouts, text);
}
std::optional<Model> parse_model(std::string_view text) {
  return common::parse(kModels, text);
}
std::string_view profile_name(Profile profile) {
  return common::name_of(kProfiles, profile);
}
std::string_view layout_name(Layout layout) {
  return common::name_of(kLayouts, layout);
}
std::string_view model_name(Model model) {
  return common::name_of(kModels, model);
}

bool is_rapl_profile(Profile profile) {
  return profile == Profile::x86_intel || profile == Profile::x86_amd;
}

std::uint32_t profile_sockets(Profile profile) {
  return profile == Profile::gh200 ? 1 : profile == Profile::gh200_quad ? 4 : 2;
}

std::vector<ChannelSpec> profile_channels(Profile profile) {
  std::vector<ChannelSpec> out;
  for (std::uint32_t socket = 0; socket < profile_sockets(profile); ++socket) {
    if (is_rapl_profile(profile)) {
      append_zones(out,
                   profile == Profile::x86_intel ? std::span<const Zone>(kIntelZones) : kAmdZones,
                   socket);
      continue;
    }
    if (profile == Profile::gh200_quad) append_socket(out, kModuleLabel, socket);
    append_socket(
        out,
        profile == Profile::platform_uw ? std::span<const Label>(kMicrowattLabels) : kGraceLabels,
        socket);
  }
  return out;
}

std::string channel_key(rails::Kind kind, std::uint32_t socket) {
  return std::string(rails::kind_name(kind)) + ":" + std::to_string(socket);
}

}  // namespace cpupower::sim
