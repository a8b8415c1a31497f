#include "sim/faults.hpp"

#include "common/text.hpp"
#include "rails/rails.hpp"
#include "sim/profiles.hpp"

namespace cpupower::sim {
namespace {

std::optional<Fault::Kind> parse_kind(std::string_view name) {
  if (name == "invalid") return Fault::Kind::invalid;
  if (name == "empty") return Fault::Kind::empty;
  if (name == "zero") return Fault::Kind::zero;
  if (name == "unreadable") return Fault::Kind::unreadable;
  if (name == "slow") return Fault::Kind::slow;
  if (name == "hang") return Fault::Kind::hang;
  return std::nullopt;
}

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
  switch (kind) {
    case Fault::Kind::invalid:
      return "invalid";
    case Fault::Kind::empty:
      return "empty";
    case Fault::Kind::zero:
      return "zero";
    case Fault::Kind::unreadable:
      return "unreadable";
    case Fault::Kind::slow:
      return "slow";
    case Fault::Kind::hang:
      return "hang";
  }
  return "unknown";
}

std::optional<std::pair<std::string, Fault>> parse_fault(std::string_view spec,
                                                         std::string* error) {
  const auto eq = spec.find('=');
  if (eq == std::string_view::npos) {
    fail(error, spec, "expected KEY=KIND[:ARG][@FROM_MS[-TO_MS]]");
    return std::nullopt;
  }
  const std::string_view key_text = spec.substr(0, eq);
  std::string_view rest = spec.substr(eq + 1);

  const auto colon = key_text.find(':');
  const auto rail = rails::parse_kind(key_text.substr(0, colon));
  const auto socket = colon == std::string_view::npos
                          ? std::nullopt
                          : rails::socket_index(key_text.substr(colon + 1));
  if (!rail || !socket) {
    fail(error, spec, "key '" + std::string(key_text) + "' is not <kind>:<socket>, e.g. total:0");
    return std::nullopt;
  }

  Fault fault;
  std::string why;
  if (!take_fault_window(rest, fault, &why)) {
    fail(error, spec, why);
    return std::nullopt;
  }

  const auto arg_at = rest.find(':');
  const std::string_view kind_text = rest.substr(0, arg_at);
  const auto kind = parse_kind(kind_text);
  if (!kind) {
    fail(error, spec,
         "unknown fault '" + std::string(kind_text) +
             "' (expected invalid, empty, zero, unreadable, slow:MS or hang)");
    return std::nullopt;
  }
  fault.kind = *kind;
  if (fault.kind == Fault::Kind::slow) {
    const auto delay =
        arg_at == std::string_view::npos ? std::nullopt : parse_fault_ms(rest.substr(arg_at + 1));
    if (!delay || delay->count() == 0) {
      fail(error, spec, "slow needs a delay in milliseconds > 0, e.g. slow:150");
      return std::nullopt;
    }
    fault.delay = *delay;
  } else if (arg_at != std::string_view::npos) {
    fail(error, spec, std::string(kind_text) + " takes no argument");
    return std::nullopt;
  }
  return std::make_pair(channel_key(*rail, *socket), fault);
}

}  // namespace cpupower::sim
