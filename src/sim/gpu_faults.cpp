#include "sim/gpu_faults.hpp"

#include "common/text.hpp"

namespace cpupower::sim {
namespace {

std::optional<GpuFault::Kind> parse_kind(std::string_view name) {
  if (name == "slow") return GpuFault::Kind::slow;
  if (name == "hang") return GpuFault::Kind::hang;
  if (name == "garbage") return GpuFault::Kind::garbage;
  if (name == "http500") return GpuFault::Kind::http500;
  if (name == "vanish") return GpuFault::Kind::vanish;
  if (name == "uuid-change") return GpuFault::Kind::uuid_change;
  return std::nullopt;
}

std::nullopt_t fail(std::string* error, std::string_view spec, const std::string& why) {
  if (error) *error = "fault '" + std::string(spec) + "': " + why;
  return std::nullopt;
}

}  // namespace

std::string_view gpu_fault_kind_name(GpuFault::Kind kind) {
  switch (kind) {
    case GpuFault::Kind::slow:
      return "slow";
    case GpuFault::Kind::hang:
      return "hang";
    case GpuFault::Kind::garbage:
      return "garbage";
    case GpuFault::Kind::http500:
      return "http500";
    case GpuFault::Kind::vanish:
      return "vanish";
    case GpuFault::Kind::uuid_change:
      return "uuid-change";
  }
  return "unknown";
}

std::optional<GpuFault> parse_gpu_fault(std::string_view spec, std::string* error) {
  std::string_view rest = spec;
  GpuFault fault;
  if (std::string why; !take_fault_window(rest, fault, &why)) return fail(error, spec, why);

  const auto arg_at = rest.find(':');
  const std::string_view kind_text = rest.substr(0, arg_at);
  const auto kind = parse_kind(kind_text);
  if (!kind) {
    return fail(error, spec,
                "unknown fault '" + std::string(kind_text) +
                    "' (expected slow:MS, hang, garbage, http500, vanish:GPU or uuid-change:GPU)");
  }
  fault.kind = *kind;
  const std::optional<std::string_view> arg =
      arg_at == std::string_view::npos ? std::nullopt
                                       : std::optional<std::string_view>(rest.substr(arg_at + 1));
  switch (fault.kind) {
    case GpuFault::Kind::slow: {
      const auto delay = arg ? parse_fault_ms(*arg) : std::nullopt;
      if (!delay || delay->count() == 0) {
        return fail(error, spec, "slow needs a delay in milliseconds > 0, e.g. slow:250");
      }
      fault.delay = *delay;
      break;
    }
    case GpuFault::Kind::vanish:
    case GpuFault::Kind::uuid_change: {
      const auto gpu = arg ? common::parse_u64(*arg) : std::nullopt;
      if (!gpu || *gpu >= UINT32_MAX) {
        return fail(
            error, spec,
            std::string(kind_text) + " needs a GPU index, e.g. " + std::string(kind_text) + ":1");
      }
      fault.gpu = static_cast<std::uint32_t>(*gpu);
      break;
    }
    case GpuFault::Kind::hang:
    case GpuFault::Kind::garbage:
    case GpuFault::Kind::http500:
      if (arg) return fail(error, spec, std::string(kind_text) + " takes no argument");
      break;
  }
  return fault;
}

GpuFaultState gpu_fault_state_at(std::span<const GpuFault> faults,
                                 std::chrono::milliseconds elapsed) {
  GpuFaultState state;
  for (const auto& f : faults) {
    if (!f.active_at(elapsed)) continue;
    switch (f.kind) {
      case GpuFault::Kind::slow:
        state.delay = std::max(state.delay, f.delay);
        break;
      case GpuFault::Kind::hang:
        // Overlapping hangs hold the request until the last of them ends.
        if (!state.hang) {
          state.hang_until = f.to;
        } else if (state.hang_until) {
          state.hang_until =
              f.to ? std::optional(std::max(*state.hang_until, *f.to)) : std::nullopt;
        }
        state.hang = true;
        break;
      case GpuFault::Kind::garbage:
        state.garbage = true;
        break;
      case GpuFault::Kind::http500:
        state.http500 = true;
        break;
      case GpuFault::Kind::vanish:
        state.vanished.insert(f.gpu);
        break;
      case GpuFault::Kind::uuid_change:
        ++state.uuid_generation[f.gpu];
        break;
    }
  }
  return state;
}

std::string_view garbage_body() {
  static constexpr char kBody[] =
      "<html><head><title>502 Bad Gateway</title></head>\n"
      "\x01\xfe\xff binary noise \x7f\n"
      "DCGM_FI_DEV_POWER_USAGE{gpu=\"0\",UUID=\"GPU-\n";
  return std::string_view(kBody, sizeof kBody - 1);
}

}  // namespace cpupower::sim
