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
                                                   {Profile::gh200_quad, "gh200-quad"}};
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

std::uint32_t profile_sockets(Profile profile) {
  return profile == Profile::gh200 ? 1 : profile == Profile::gh200_quad ? 4 : 2;
}

std::vector<ChannelSpec> profile_channels(Profile profile) {
  std::vector<ChannelSpec> out;
  for (std::uint32_t socket = 0; socket < profile_sockets(profile); ++socket) {
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
