#include "sim/gpu_exposition.hpp"

#include <array>
#include <cmath>
#include <cstdio>

namespace cpupower::sim {
namespace {

using R = GpuReadout;
using N = ExporterNames;

// One field dcgm-exporter can serve: its DCGM field id, name (the metric name), Prometheus
// type and HELP text as etc/default-counters.csv and etc/dcp-metrics-included.csv give them,
// and the reading it prints.
struct DcgmField {
  std::uint16_t id = 0;
  std::string_view name;
  std::string_view type;  // "gauge" or "counter"
  std::string_view help;
  std::int64_t R::*integer = nullptr;  // DCGM_FT_INT64 (%d), or
  double R::*real = nullptr;           // DCGM_FT_DOUBLE (%f)
  bool profiling = false;              // DCGM_FI_PROF_*: served only with profiling on
  // The family's name among another exporter's names; null: not served with them.
  std::string N::*renamed = nullptr;
};

// Every field the simulator serves. Ascending field id: the order dcgm-exporter's template
// visits its map keyed by counter (Go's text/template sorts map keys; the counter struct's
// first member is the field id).
constexpr std::array kFields = {
    DcgmField{100, "DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz).",
              &R::sm_clock_mhz},
    DcgmField{101, "DCGM_FI_DEV_MEM_CLOCK", "gauge", "Memory clock frequency (in MHz).",
              &R::mem_clock_mhz},
    DcgmField{140, "DCGM_FI_DEV_MEMORY_TEMP", "gauge", "Memory temperature (in C).",
              &R::memory_temp_c},
    DcgmField{150, "DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C).", &R::gpu_temp_c,
              nullptr, false, &N::temperature},
    DcgmField{155, "DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W).", nullptr, &R::power_w,
              false, &N::power},
    DcgmField{156, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter",
              "Total energy consumption since boot (in mJ).", &R::energy_mj},
    DcgmField{202, "DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "counter", "Total number of PCIe retries.",
              &R::pcie_replay},
    DcgmField{203, "DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %).", &R::gpu_util_pct,
              nullptr, false, &N::gpu_util},
    DcgmField{204, "DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "Memory utilization (in %).",
              &R::mem_copy_util_pct},
    DcgmField{206, "DCGM_FI_DEV_ENC_UTIL", "gauge", "Encoder utilization (in %).",
              &R::enc_util_pct},
    DcgmField{207, "DCGM_FI_DEV_DEC_UTIL", "gauge", "Decoder utilization (in %).",
              &R::dec_util_pct},
    DcgmField{251, "DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB).",
              &R::fb_free_mib},
    DcgmField{252, "DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB).",
              &R::fb_used_mib},
    DcgmField{1001, "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gauge",
              "Ratio of time the graphics engine is active.", nullptr, &R::gr_engine_active, true},
    DcgmField{1002, "DCGM_FI_PROF_SM_ACTIVE", "gauge",
              "The ratio of cycles an SM has at least 1 warp assigned.", nullptr, &R::sm_active,
              true, &N::sm_active},
    DcgmField{1004, "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "gauge",
              "Ratio of cycles the tensor (HMMA) pipe is active.", nullptr, &R::tensor_active,
              true},
    DcgmField{1005, "DCGM_FI_PROF_DRAM_ACTIVE", "gauge",
              "Ratio of cycles the device memory interface is active sending or receiving data.",
              nullptr, &R::dram_active, true},
};

constexpr std::uint16_t kGpuUtilField = 203;

void append_label(std::string& out, std::string_view name, std::string_view value) {
  if (out.back() != '{') out += ',';
  out += name;
  out += "=\"";
  out += value;
  out += '"';
}

// One sample line. Its label set: the template's fixed part, MIG, Hostname, the label fields
// (a Go map: sorted by name), then the attributes (also a map: container, namespace, pod).
void append_sample(std::string& out, std::string_view name, const GpuSeries& gpu,
                   const MigInstance* instance, const ExpositionOptions& options,
                   const KubernetesPod* pod, const std::string& value) {
  out += name;
  out += '{';
  append_label(out, options.names ? std::string_view(options.names->index_label) : "gpu",
               std::to_string(gpu.index));
  append_label(out, options.names ? std::string_view(options.names->identity_label) : "UUID",
               gpu.uuid);
  append_label(out, "pci_bus_id", gpu.pci_bus_id);
  append_label(out, "device", "nvidia" + std::to_string(gpu.index));
  append_label(out, "modelName", gpu.model_name);
  if (instance) {
    append_label(out, "GPU_I_PROFILE", instance->profile);
    append_label(out, "GPU_I_ID", std::to_string(instance->instance_id));
  }
  if (!options.hostname.empty()) append_label(out, "Hostname", options.hostname);
  if (!options.driver_version.empty()) {
    append_label(out, "DCGM_FI_DRIVER_VERSION", options.driver_version);
  }
  if (pod) {
    append_label(out, "container", pod->container);
    append_label(out, "namespace", pod->namespace_name);
    append_label(out, "pod", pod->pod);
  }
  out += "} " + value + '\n';
}

// FNV-1a 64-bit over the bytes, then a splitmix64 finaliser so that near inputs spread.
std::uint64_t hash64(std::string_view text, std::uint64_t seed) {
  std::uint64_t h = 0xcbf29ce484222325ULL ^ seed;
  for (const unsigned char c : text) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  h += 0x9e3779b97f4a7c15ULL;
  h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ULL;
  h = (h ^ (h >> 27)) * 0x94d049bb133111ebULL;
  return h ^ (h >> 31);
}

}  // namespace

ExporterNames ExporterNames::amd() {
  ExporterNames n;
  n.power = "gpu_power_usage";
  n.gpu_util = "gpu_gfx_activity";
  n.sm_active.clear();
  n.temperature = "gpu_junction_temperature";
  n.index_label = "gpu_id";
  n.identity_label = "serial_number";
  return n;
}

std::string format_go_float(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  // %f of the largest double is 309 digits before the point.
  char buf[400];
  const int n = std::snprintf(buf, sizeof buf, "%.6f", value);
  return std::string(buf, n > 0 ? static_cast<std::size_t>(n) : 0);
}

std::string render_dcgm_exposition(std::span<const GpuSeries> gpus,
                                   const ExpositionOptions& options) {
  std::string out;
  out.reserve(gpus.size() * 3000 + 2000);
  for (const auto& field : kFields) {
    // Renamed: the four families the GPU leg reads, whatever --profiling says.
    std::string_view name = field.name;
    if (options.names) name = field.renamed ? (*options.names).*field.renamed : std::string_view();
    if (name.empty()) continue;
    if (field.profiling && !options.profiling && !options.names) continue;
    std::string samples;
    for (std::size_t g = 0; g < gpus.size(); ++g) {
      const auto& gpu = gpus[g];
      const KubernetesPod* pod = nullptr;
      if (g < options.pods.size() && !options.pods[g].pod.empty()) pod = &options.pods[g];
      // The value as the exporter prints it.
      const std::string value = field.integer ? std::to_string(gpu.values.*field.integer)
                                              : format_go_float(gpu.values.*field.real);
      if (gpu.mig.empty()) append_sample(samples, name, gpu, nullptr, options, pod, value);
      if (field.id == kGpuUtilField) continue;  // a blank in MIG mode: no sample
      for (const auto& instance : gpu.mig) {
        append_sample(samples, name, gpu, &instance, options, pod, value);
      }
    }
    if (samples.empty()) continue;
    const std::string family(name);
    out += "# HELP " + family + ' ' + std::string(field.help) + "\n# TYPE " + family + ' ' +
           std::string(field.type) + '\n' + samples;
  }
  return out;
}

std::string simulated_gpu_uuid(std::string_view hostname, std::uint32_t index,
                               std::uint32_t generation) {
  const std::string key =
      std::string(hostname) + '\0' + std::to_string(index) + '\0' + std::to_string(generation);
  const std::uint64_t hi = hash64(key, 0x5349'4d2d'4750'5531ULL);  // "SIM-GPU1"
  const std::uint64_t lo = hash64(key, 0x5349'4d2d'4750'5532ULL);  // "SIM-GPU2"
  char buf[48];
  std::snprintf(buf, sizeof buf, "GPU-%08x-%04x-%04x-%04x-%012llx", static_cast<unsigned>(hi >> 32),
                static_cast<unsigned>((hi >> 16) & 0xffff), static_cast<unsigned>(hi & 0xffff),
                static_cast<unsigned>(lo >> 48),
                static_cast<unsigned long long>(lo & 0xffffffffffffULL));
  return buf;
}

std::string simulated_pci_bus_id(std::uint32_t index) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%08X:01:00.0", 0x0009u + 0x10u * index);
  return buf;
}

}  // namespace cpupower::sim
