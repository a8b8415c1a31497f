#pragma once
// The text NVIDIA dcgm-exporter serves at /metrics, rendered for simulated GPUs. Pure: no
// clock, no I/O, so the exact bytes can be tested (docs/formats.md, "dcgm-exporter
// exposition").
//
// What is reproduced (dcgm-exporter internal/pkg/rendermetrics/render_metrics.go and
// internal/pkg/collector/gpu_collector.go):
//   * per family `# HELP <FIELD> <help>` and `# TYPE <FIELD> <gauge|counter>`, then its
//     samples; no blank lines; families in ascending DCGM field id;
//   * labels in the order gpu, UUID, pci_bus_id, device, modelName, then GPU_I_PROFILE and
//     GPU_I_ID on a MIG instance, Hostname (unless omitted), the DCGM "label" fields
//     (DCGM_FI_DRIVER_VERSION), then the Kubernetes attributes container, namespace, pod;
//     comma-separated, no blanks, values unescaped;
//   * integer fields as %d, floating-point fields as %f (six decimals, never an exponent).

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace cpupower::sim {

// The readings of one GPU for one collection.
struct GpuReadout {
  std::int64_t sm_clock_mhz = 0;       // 100 DCGM_FI_DEV_SM_CLOCK
  std::int64_t mem_clock_mhz = 0;      // 101 DCGM_FI_DEV_MEM_CLOCK
  std::int64_t memory_temp_c = 0;      // 140 DCGM_FI_DEV_MEMORY_TEMP
  std::int64_t gpu_temp_c = 0;         // 150 DCGM_FI_DEV_GPU_TEMP
  double power_w = 0;                  // 155 DCGM_FI_DEV_POWER_USAGE
  std::int64_t energy_mj = 0;          // 156 DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION
  std::int64_t pcie_replay = 0;        // 202 DCGM_FI_DEV_PCIE_REPLAY_COUNTER
  std::int64_t gpu_util_pct = 0;       // 203 DCGM_FI_DEV_GPU_UTIL (not served on MIG instances)
  std::int64_t mem_copy_util_pct = 0;  // 204 DCGM_FI_DEV_MEM_COPY_UTIL
  std::int64_t enc_util_pct = 0;       // 206 DCGM_FI_DEV_ENC_UTIL
  std::int64_t dec_util_pct = 0;       // 207 DCGM_FI_DEV_DEC_UTIL
  std::int64_t fb_free_mib = 0;        // 251 DCGM_FI_DEV_FB_FREE
  std::int64_t fb_used_mib = 0;        // 252 DCGM_FI_DEV_FB_USED
  double gr_engine_active = 0;         // 1001 DCGM_FI_PROF_GR_ENGINE_ACTIVE (0..1)
  double sm_active = 0;                // 1002 DCGM_FI_PROF_SM_ACTIVE (0..1)
  double tensor_active = 0;            // 1004 DCGM_FI_PROF_PIPE_TENSOR_ACTIVE (0..1)
  double dram_active = 0;              // 1005 DCGM_FI_PROF_DRAM_ACTIVE (0..1)
};

// A GPU instance of a GPU in MIG mode.
struct MigInstance {
  std::uint32_t instance_id = 0;  // GPU_I_ID
  std::string profile;            // GPU_I_PROFILE, e.g. "3g.48gb"
};

struct GpuSeries {
  std::uint32_t index = 0;  // gpu, and device="nvidia<index>"
  std::string uuid;         // UUID
  std::string pci_bus_id;   // pci_bus_id, e.g. "00000009:01:00.0"
  std::string model_name;   // modelName
  GpuReadout values;
  // Empty: the whole GPU has one series per field. Otherwise one series per instance (the
  // exporter's default "flex" device mode monitors the instances of a GPU in MIG mode, not
  // the GPU), each with the GPU's device-level values; GPU_UTIL is not served in MIG mode.
  std::vector<MigInstance> mig;
};

struct KubernetesPod {
  std::string container;
  std::string namespace_name;
  std::string pod;
};

// Another GPU exporter's names for what the GPU leg reads (sim-gpu --flavour and the
// --*-metric / --*-label options): with them only these families are served, under these
// names, and the index and identity labels are renamed; the rest of the exposition (HELP,
// TYPE, value formats, the other labels) stays dcgm-exporter's.
struct ExporterNames {
  std::string power = "DCGM_FI_DEV_POWER_USAGE";
  std::string gpu_util = "DCGM_FI_DEV_GPU_UTIL";     // empty: not served
  std::string sm_active = "DCGM_FI_PROF_SM_ACTIVE";  // empty: not served
  std::string temperature = "DCGM_FI_DEV_GPU_TEMP";  // empty: not served
  std::string index_label = "gpu";
  std::string identity_label = "UUID";

  // rocm/device-metrics-exporter's names (an AMD exporter for `kind: custom`):
  // gpu_power_usage, gpu_gfx_activity, gpu_junction_temperature, no SM activity; gpu_id and
  // serial_number.
  static ExporterNames amd();
  bool operator==(const ExporterNames&) const = default;
};

struct ExpositionOptions {
  std::string hostname;        // the Hostname label; empty: no Hostname label (-n)
  std::string driver_version;  // DCGM_FI_DRIVER_VERSION label; empty: none
  bool profiling = false;      // serve the DCGM_FI_PROF_* fields
  // The Kubernetes pod mapping (-k): each GPU's series carry container, namespace, pod.
  // Indexed by position in the GPU list; missing or empty entries add no labels.
  std::vector<KubernetesPod> pods;
  // Set: another exporter's names (ExporterNames). Unset: dcgm-exporter's whole exposition.
  std::optional<ExporterNames> names;
};

// The whole /metrics body for these GPUs, in the order given (the exporter lists GPUs
// ascending). A family with no sample is left out entirely, as dcgm-exporter does.
std::string render_dcgm_exposition(std::span<const GpuSeries> gpus,
                                   const ExpositionOptions& options);

// Deterministic GPU identity for simulated hosts: GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx
// (lower-case hex, as nvidia-smi prints it) from the host name, the index and a generation
// (0 for the GPU's own UUID; a UUID-change fault bumps it).
std::string simulated_gpu_uuid(std::string_view hostname, std::uint32_t index,
                               std::uint32_t generation = 0);

// The PCI bus id of simulated GPU `index`, in DCGM's form (8-hex-digit domain): GH200-like
// domains 0009, 0019, 0029, ... so that GPU n sits in domain 0x0009 + 0x10 * n.
std::string simulated_pci_bus_id(std::uint32_t index);

// Go's %f for a finite double: fixed point, six decimals.
std::string format_go_float(double value);

}  // namespace cpupower::sim
