#include "rails/rails.hpp"

#include <array>
#include <charconv>

namespace cpupower::rails {
namespace {

struct Phrase {
  Kind kind;
  std::string_view needle;  // lower case, ends with the space before the socket digits
};

// Order matters: kinds are tried in this order and the first phrase followed by digits wins.
constexpr std::array kPhrases = {
    Phrase{Kind::total, "grace power socket "},
    Phrase{Kind::total, "total power socket "},
    Phrase{Kind::total, "total power in uw socket "},
    Phrase{Kind::total, "total input power socket "},
    Phrase{Kind::total, "total input power in uw socket "},
    Phrase{Kind::cpu_rail, "cpu rail power socket "},
    Phrase{Kind::cpu_rail, "cpu rail power in uw socket "},
    Phrase{Kind::cpu_rail, "cpu rail input power socket "},
    Phrase{Kind::cpu_rail, "cpu rail input power in uw socket "},
    Phrase{Kind::cpu_rail, "cpu power socket "},
    Phrase{Kind::cpu_rail, "cpu power in uw socket "},
    Phrase{Kind::cpu_rail, "cpu input power socket "},
    Phrase{Kind::cpu_rail, "cpu input power in uw socket "},
    Phrase{Kind::soc, "soc rail power socket "},
    Phrase{Kind::soc, "soc rail power in uw socket "},
    Phrase{Kind::soc, "soc rail input power socket "},
    Phrase{Kind::soc, "soc rail input power in uw socket "},
    Phrase{Kind::soc, "sysio power socket "},
    Phrase{Kind::dram, "dram power socket "},
    Phrase{Kind::dram, "dram power in uw socket "},
    Phrase{Kind::dram, "dram input power socket "},
    Phrase{Kind::dram, "dram input power in uw socket "},
    // No phrase gives Kind::module: a firmware "Module Power Socket N" meter stays
    // unclassified, and NVML is the only source of module power (docs/compatibility.md).
};

// The suffixes of the canonical sensor names, after "CPU<n>:"; RAPL's, then DCGM's last.
struct SensorSuffix {
  SensorName name;
  std::string_view text;
};
constexpr std::array kSensorSuffixes = {
    SensorSuffix{{Kind::total}, "cpuSidePowerUsageW"},
    SensorSuffix{{Kind::cpu_rail}, "cpuRailPowerUsageW"},
    SensorSuffix{{Kind::soc}, "socPowerUsageW"},
    SensorSuffix{{Kind::dram}, "dramPowerUsageW"},
    SensorSuffix{{Kind::module}, "modulePowerUsageW"},
    SensorSuffix{{Kind::total, false, true}, "packagePowerUsageW"},
    SensorSuffix{{Kind::cpu_rail, true}, "cpuPowerUsageW"},
};

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

}  // namespace

std::string_view kind_name(Kind kind) {
  static constexpr std::string_view kNames[] = {"total", "cpu_rail", "soc",
                                                "dram",  "module",   "other"};  // Kind order
  return kNames[static_cast<int>(kind)];
}

std::optional<Kind> parse_kind(std::string_view name) {
  if (name == "total" || name == "grace") return Kind::total;
  if (name == "cpu_rail" || name == "cpu") return Kind::cpu_rail;
  if (name == "soc" || name == "sysio") return Kind::soc;
  if (name == "dram") return Kind::dram;
  if (name == "module") return Kind::module;
  return std::nullopt;
}

Classification classify_oem(std::string_view oem_info) {
  const std::string text = lower(oem_info);
  for (const auto& phrase : kPhrases) {
    const auto at = text.find(phrase.needle);
    if (at == std::string::npos) continue;  // only the first occurrence is tried
    const auto digits_at = at + phrase.needle.size();
    auto end = digits_at;
    while (end < text.size() && text[end] >= '0' && text[end] <= '9') ++end;
    if (end > digits_at) return {phrase.kind, text.substr(digits_at, end - digits_at)};
  }
  return {};
}

std::optional<std::uint32_t> socket_index(std::string_view socket) {
  std::uint32_t v = 0;
  if (socket.empty()) return std::nullopt;
  auto [p, ec] = std::from_chars(socket.data(), socket.data() + socket.size(), v);
  if (ec != std::errc() || p != socket.data() + socket.size()) return std::nullopt;
  return v;
}

std::string acpi_sensor_name(Kind kind, std::uint32_t socket) {
  std::string_view suffix = "otherPowerUsageW";
  for (const auto& s : kSensorSuffixes) {
    if (s.name.kind == kind && !s.name.dcgm && !s.name.rapl) suffix = s.text;
  }
  return "CPU" + std::to_string(socket) + ":" + std::string(suffix);
}

std::string dcgm_sensor_name(std::uint32_t socket) {
  return "CPU" + std::to_string(socket) + ":" + std::string(kSensorSuffixes.back().text);
}

std::string rapl_sensor_name(std::uint32_t socket) {
  std::string_view suffix;
  for (const auto& s : kSensorSuffixes) {
    if (s.name.rapl) suffix = s.text;
  }
  return "CPU" + std::to_string(socket) + ":" + std::string(suffix);
}

std::optional<SensorName> parse_sensor_name(std::string_view name) {
  const auto colon = name.find(':');
  if (colon == std::string_view::npos) return std::nullopt;
  for (const auto& s : kSensorSuffixes) {
    if (name.substr(colon + 1) == s.text) return s.name;
  }
  return std::nullopt;
}

std::optional<Kind> dcgm_field_kind(std::uint16_t field_id) {
  if (field_id == kDcgmCpuPowerField) return Kind::cpu_rail;
  if (field_id == kDcgmSysioPowerField) return Kind::soc;
  return std::nullopt;
}

}  // namespace cpupower::rails
