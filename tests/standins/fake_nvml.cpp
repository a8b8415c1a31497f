// A stand-in libnvidia-ml exporting the C symbols the exporter uses, driven by the control
// file in $FAKE_NVML_CONTROL:
//   init=ok|fail|hang:MS     gpus=<count>
//   gpu.<i>.bus=0008:01:00.0 (PCI bus id, legacy form)
//   gpu.<i>.mw=<milliwatts>|fail|hang:MS   (module power, field 185 at module scope)
//   type=uint|double         value type reported

#include <cstdio>
#include <cstring>

#include "control.hpp"
#include "sources/nvidia_abi.hpp"

using namespace cpupower::nvidia;

namespace {
auto kv() {
  return standin::control("FAKE_NVML_CONTROL");
}
}  // namespace

extern "C" {
nvmlReturn_t nvmlInit_v2() {
  const auto v = standin::get(kv(), "init", "ok");
  standin::maybe_hang(v);
  return v == "fail" ? 9 /* DRIVER_NOT_LOADED */ : NVML_SUCCESS;
}
nvmlReturn_t nvmlShutdown() {
  return NVML_SUCCESS;
}
const char* nvmlErrorString(nvmlReturn_t) {
  return "stand-in error";
}
nvmlReturn_t nvmlDeviceGetCount_v2(unsigned* count) {
  *count = static_cast<unsigned>(std::atoi(standin::get(kv(), "gpus", "0").c_str()));
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned index, nvmlDevice_t* device) {
  *device = reinterpret_cast<nvmlDevice_t>(static_cast<std::uintptr_t>(index + 1));
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t* pci) {
  const auto i = reinterpret_cast<std::uintptr_t>(device) - 1;
  const auto bus = standin::get(kv(), "gpu." + std::to_string(i) + ".bus");
  if (bus.empty()) return 2;  // INVALID_ARGUMENT
  std::memset(pci, 0, sizeof *pci);
  std::snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, "%s", bus.c_str());
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t device, int count, nvmlFieldValue_t* values) {
  const auto c = kv();
  const auto i = reinterpret_cast<std::uintptr_t>(device) - 1;
  const auto spec = standin::get(c, "gpu." + std::to_string(i) + ".mw", "fail");
  standin::maybe_hang(spec);
  for (int k = 0; k < count; ++k) {
    auto& v = values[k];
    // Only the 1 s average at module scope is served; anything else is NOT_SUPPORTED.
    if (v.fieldId != NVML_FI_DEV_POWER_AVERAGE || v.scopeId != NVML_POWER_SCOPE_MODULE ||
        spec == "fail" || spec.rfind("hang:", 0) == 0) {
      v.nvmlReturn = 3;
      continue;
    }
    v.nvmlReturn = NVML_SUCCESS;
    if (standin::get(c, "type", "uint") == "double") {
      v.valueType = NVML_VALUE_TYPE_DOUBLE;
      v.value.dVal = std::atof(spec.c_str());
    } else {
      v.valueType = NVML_VALUE_TYPE_UNSIGNED_INT;
      v.value.uiVal = static_cast<std::uint32_t>(std::atol(spec.c_str()));
    }
  }
  return NVML_SUCCESS;
}
}
