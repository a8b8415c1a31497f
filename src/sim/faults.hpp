#pragma once
// Fault injection: the ways a real hwmon power channel misbehaves, so consumers can be tested
// against them without hardware. A fault applies to one channel for a window of time measured
// from SimNode::start().

#include <algorithm>
#include <chrono>
#include <initializer_list>
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

// "fault '<spec>': <why>": every fault error names the spec it refuses.
Error fault_error(std::string_view spec, const std::string& why);

// Takes the window "@FROM_MS[-TO_MS]" off the end of a fault spec's `rest` into `window`
// (left as it is when `rest` has no '@'). An error when the window is malformed: a bound that
// is not a number of milliseconds (up to a year, so that adding it to a time point can never
// overflow), or an end not after its start.
Status take_fault_window(std::string_view& rest, FaultWindow& window);
// A fault's milliseconds: a whole number up to a year; nullopt otherwise.
std::optional<std::chrono::milliseconds> parse_fault_ms(std::string_view text);

// The grammar every fault spec shares, KIND[:ARG][@FROM_MS[-TO_MS]] (`text`, the end of
// `spec`), parsed into F (a FaultWindow with its `kind` and a slow fault's `delay`): the window
// taken off the end; KIND one of `kinds` ("unknown fault ... (expected <expected>)"
// otherwise); slow's ARG its delay, milliseconds > 0, e.g. slow:<slow_example>; the ARG of a
// kind in `with_arg` returned beside the fault for the caller to read; any other kind takes
// no ARG. Errors are fault_error(spec, ...).
template <class F, std::size_t N>
Result<std::pair<F, std::optional<std::string_view>>> parse_fault_spec(
    std::string_view spec, std::string_view text,
    const common::EnumName<typename F::Kind> (&kinds)[N], std::string_view expected,
    std::string_view slow_example, std::initializer_list<typename F::Kind> with_arg = {}) {
  F fault;
  if (Status window = take_fault_window(text, fault); !window) {
    return fault_error(spec, window.error());
  }
  const auto colon = text.find(':');
  const std::string kind_text(text.substr(0, colon));
  const auto kind = common::parse(kinds, kind_text);
  if (!kind) {
    return fault_error(
        spec, "unknown fault '" + kind_text + "' (expected " + std::string(expected) + ")");
  }
  fault.kind = *kind;
  std::optional<std::string_view> arg;
  if (colon != std::string_view::npos) arg = text.substr(colon + 1);
  if (fault.kind == F::Kind::slow) {
    const auto delay = arg ? parse_fault_ms(*arg) : std::nullopt;
    if (!delay || delay->count() == 0) {
      return fault_error(
          spec, "slow needs a delay in milliseconds > 0, e.g. slow:" + std::string(slow_example));
    }
    fault.delay = *delay;
  } else if (arg && std::find(with_arg.begin(), with_arg.end(), fault.kind) == with_arg.end()) {
    return fault_error(spec, kind_text + " takes no argument");
  }
  return std::pair(fault, arg);
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

// Parses KEY=KIND[:ARG][@FROM_MS[-TO_MS]], e.g. "total:1=slow:150@0-2000" or
// "total:0=zero@0-1500". KEY is <kind>:<socket> (rail aliases such as grace:0 are normalised
// to total:0); only slow takes an ARG (milliseconds, > 0). Returns the key and the fault, or
// an error saying what is wrong.
Result<std::pair<std::string, Fault>> parse_fault(std::string_view spec);

}  // namespace cpupower::sim
