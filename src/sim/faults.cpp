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

bool fail(std::string* error, std::string_view spec, const std::string& why) {
  if (error) *error = "fault '" + std::string(spec) + "': " + why;
  return false;
}

}  // namespace

std::optional<std::chrono::milliseconds> parse_fault_ms(std::string_view text) {
  const auto v = common::parse_u64(text);
  // Bounded so that adding it to a time point can never overflow.
  if (!v || *v > 1000ULL * 3600 * 24 * 365) return std::nullopt;
  return std::chrono::milliseconds(static_cast<std::int64_t>(*v));
}

bool take_fault_window(std::string_view& rest, FaultWindow& window, std::string* why) {
  const auto at = rest.find('@');
  if (at == std::string_view::npos) return true;
  const std::string_view text = rest.substr(at + 1);
  rest = rest.substr(0, at);
  const auto dash = text.find('-');
  const auto from = parse_fault_ms(text.substr(0, dash));
  if (!from) {
    *why =
        "window start '" + std::string(text.substr(0, dash)) + "' is not a number of milliseconds";
    return false;
  }
  window.from = *from;
  if (dash != std::string_view::npos) {
    const auto to = parse_fault_ms(text.substr(dash + 1));
    if (!to) {
      *why =
          "window end '" + std::string(text.substr(dash + 1)) + "' is not a number of milliseconds";
      return false;
    }
    if (*to <= *from) {
      *why = "window end must be after its start";
      return false;
    }
    window.to = *to;
  }
  return true;
}

std::string_view fault_kind_name(Fault::Kind kind) {
  return common::name_of(kKinds, kind);
}

std::optional<std::pair<std::string, Fault>> parse_fault(std::string_view spec,
                                                         std::string* error) {
  const auto eq = spec.find('=');
  if (eq == std::string_view::npos) {
    fail(error, spec, "expected KEY=KIND[:ARG][@FROM_MS[-TO_MS]]");
    return std::nullopt;
  }
  const std::string_view key_text = spec.substr(0, eq);
  const std::string_view rest = spec.substr(eq + 1);

  const auto colon = key_text.find(':');
  const auto rail = rails::parse_kind(key_text.substr(0, colon));
  const auto socket = colon == std::string_view::npos
                          ? std::nullopt
                          : rails::socket_index(key_text.substr(colon + 1));
  if (!rail || !socket) {
    fail(error, spec, "key '" + std::string(key_text) + "' is not <kind>:<socket>, e.g. total:0");
    return std::nullopt;
  }

  std::string why;
  const auto p =
      parse_fault_spec(rest, kKinds, "invalid, empty, zero, unreadable, slow:MS or hang", &why);
  if (!p) {
    fail(error, spec, why);
    return std::nullopt;
  }
  Fault fault;
  static_cast<FaultWindow&>(fault) = p->window;
  fault.kind = p->kind;
  if (fault.kind == Fault::Kind::slow) {
    const auto delay = p->arg ? parse_fault_ms(*p->arg) : std::nullopt;
    if (!delay || delay->count() == 0) {
      fail(error, spec, "slow needs a delay in milliseconds > 0, e.g. slow:150");
      return std::nullopt;
    }
    fault.delay = *delay;
  } else if (p->arg) {
    fail(error, spec, std::string(p->kind_text) + " takes no argument");
    return std::nullopt;
  }
  return std::make_pair(channel_key(*rail, *socket), fault);
}

}  // namespace cpupower::sim
