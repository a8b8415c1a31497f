#include "sim/gpu_faults.hpp"

#include "common/text.hpp"

namespace cpupower::sim {
namespace {

constexpr common::EnumName<GpuFault::Kind> kKinds[] = {
    {GpuFault::Kind::slow, "slow"},       {GpuFault::Kind::hang, "hang"},
    {GpuFault::Kind::garbage, "garbage"}, {GpuFault::Kind::http500, "http500"},
    {GpuFault::Kind::vanish, "vanish"},   {GpuFault::Kind::uuid_change, "uuid-change"}};

}  // namespace

std::string_view gpu_fault_kind_name(GpuFault::Kind kind) {
  return common::name_of(kKinds, kind);
}

Result<GpuFault> parse_gpu_fault(std::string_view spec) {
  const auto p = parse_fault_spec<GpuFault>(
      spec, spec, kKinds, "slow:MS, hang, garbage, http500, vanish:GPU or uuid-change:GPU", "250",
      {GpuFault::Kind::vanish, GpuFault::Kind::uuid_change});
  if (!p) return Error{p.error()};
  auto [fault, arg] = *p;
  if (fault.kind == GpuFault::Kind::vanish || fault.kind == GpuFault::Kind::uuid_change) {
    const auto gpu = arg ? common::parse_u64(*arg) : std::nullopt;
    if (!gpu || *gpu >= UINT32_MAX) {
      const std::string kind(gpu_fault_kind_name(fault.kind));
      return fault_error(spec, kind + " needs a GPU index, e.g. " + kind + ":1");
    }
    fault.gpu = static_cast<std::uint32_t>(*gpu);
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
