#pragma once
// Fault injection: the ways a real hwmon power channel misbehaves, so consumers can be tested
// against them without hardware. A fault applies to one channel for a window of time measured
// from SimNode::start().

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "common/enum_names.hpp"
#include "common/result.hpp"

namespace cpupower::sim {

// When a fault applies, measured from the simulator's start: [from, to), or from `from` until
// the simulator stops when `to` is nullopt.
struct FaultWindow {
  std::chrono::milliseconds from{0};
  std::optional<std::chrono::milliseconds> to;

  bool active_at(std::chrono::milliseconds elapsed) const {
    return elapsed >= from && (!to || elapsed < *to);
  }
};

// A fault's milliseconds: a whole number up to a year (so that adding it to a time point can
// never overflow); nullopt otherwise.
std::optional<std::chrono::milliseconds> parse_fault_ms(std::string_view text);

// Takes the window "@FROM_MS[-TO_MS]" off the end of a fault spec's `rest` into `window`
// (left as it is when `rest` has no '@'). An error when the window is malformed: a bound that
// is not a number of milliseconds (up to a year), or an end not after its start.
Status take_fault_window(std::string_view& rest, FaultWindow& window);

// The grammar every fault spec shares, KIND[:ARG][@FROM_MS[-TO_MS]]: the window taken off the
// end, KIND one of `kinds`, ARG the text after the first ':' (nullopt without one). An error
// for a malformed window or an unknown kind ("... (expected <expected>)").
template <class Kind>
struct FaultSpec {
  FaultWindow window;
  Kind kind{};
  std::string_view kind_text;
  std::optional<std::string_view> arg;
};
template <class Kind, std::size_t N>
Result<FaultSpec<Kind>> parse_fault_spec(std::string_view text,
                                         const common::EnumName<Kind> (&kinds)[N],
                                         std::string_view expected) {
  FaultSpec<Kind> out;
  if (Status window = take_fault_window(text, out.window); !window) return Error{window.error()};
  const auto colon = text.find(':');
  out.kind_text = text.substr(0, colon);
  const auto kind = common::parse(kinds, out.kind_text);
  if (!kind) {
    return Error{"unknown fault '" + std::string(out.kind_text) + "' (expected " +
                 std::string(expected) + ")"};
  }
  out.kind = *kind;
  if (colon != std::string_view::npos) out.arg = text.substr(colon + 1);
  return out;
}

struct Fault : FaultWindow {
  enum class Kind {
    invalid,     // 4294967295000: firmware's 0xFFFFFFFF mW "unknown", printed by older kernels
    empty,       // empty file
    zero,        // "0", as on the first poll after boot
    unreadable,  // exists for stat(), open() fails (socket inode: ENXIO)
    slow,        // every read takes `delay` (FIFO fed by a writer thread)
    hang,        // open() blocks until the window ends or the node stops (FIFO, no writer)
  };
  Kind kind = Kind::invalid;
  std::chrono::milliseconds delay{0};  // slow only
};

std::string_view fault_kind_name(Fault::Kind kind);

// Parses KEY=KIND[:ARG][@FROM_MS[-TO_MS]], e.g. "total:1=slow:150@0-2000" or
// "total:0=zero@0-1500". KEY is <kind>:<socket> (rail aliases such as grace:0 are normalised
// to total:0); only slow takes an ARG (milliseconds, > 0). Returns the key and the fault, or
// an error saying what is wrong.
Result<std::pair<std::string, Fault>> parse_fault(std::string_view spec);

}  // namespace cpupower::sim
