#include "sim/faults.hpp"

#include "common/text.hpp"
#include "rails/rails.hpp"
#include "sim/profiles.hpp"

namespace cpupower::sim {
namespace {

constexpr common::EnumName<Fault::Kind> kKinds[] = {
    {Fault::Kind::invalid, "invalid"}, {Fault::Kind::empty, "empty"},
    {Fault::Kind::zero, "zero"},       {Fault::Kind::unreadable, "unreadable"},
    {Fault::Kind::slow, "slow"},       {Fault::Kind::hang, "hang"}};

}  // namespace

Error fault_error(std::string_view spec, const std::string& why) {
  return Error{"fault '" + std::string(spec) + "': " + why};
}

std::optional<std::chrono::milliseconds> parse_fault_ms(std::string_view text) {
  const auto v = common::parse_u64(text);
  if (!v || *v > 1000ULL * 3600 * 24 * 365) return std::nullopt;
  return std::chrono::milliseconds(static_cast<std::int64_t>(*v));
}

Status take_fault_window(std::string_view& rest, FaultWindow& window) {
  const auto at = rest.find('@');
  if (at == std::string_view::npos) return Ok{};
  const std::string_view text = rest.substr(at + 1);
  rest = rest.substr(0, at);
  const auto dash = text.find('-');
  const auto from = parse_fault_ms(text.substr(0, dash));
  if (!from) {
    return Error{"window start '" + std::string(text.substr(0, dash)) +
                 "' is not a number of milliseconds"};
  }
  window.from = *from;
  if (dash != std::string_view::npos) {
    const auto to = parse_fault_ms(text.substr(dash + 1));
    if (!to) {
      return Error{"window end '" + std::string(text.substr(dash + 1)) +
                   "' is not a number of milliseconds"};
    }
    if (*to <= *from) return Error{"window end must be after its start"};
    window.to = *to;
  }
  return Ok{};
}

Result<std::pair<std::string, Fault>> parse_fault(std::string_view spec) {
  const auto eq = spec.find('=');
  if (eq == std::string_view::npos) {
    return fault_error(spec, "expected KEY=KIND[:ARG][@FROM_MS[-TO_MS]]");
  }
  const std::string_view key_text = spec.substr(0, eq);
  const auto colon = key_text.find(':');
  const auto rail = rails::parse_kind(key_text.substr(0, colon));
  const auto socket = colon == std::string_view::npos
                          ? std::nullopt
                          : rails::socket_index(key_text.substr(colon + 1));
  if (!rail || !socket) {
    return fault_error(spec,
                       "key '" + std::string(key_text) + "' is not <kind>:<socket>, e.g. total:0");
  }
  const auto p =
      parse_fault_spec<Fault>(spec, spec.substr(eq + 1), kKinds,
                              "invalid, empty, zero, unreadable, slow:MS or hang", "150");
  if (!p) return Error{p.error()};
  return std::make_pair(channel_key(*rail, *socket), p->first);
}

}  // namespace cpupower::sim
