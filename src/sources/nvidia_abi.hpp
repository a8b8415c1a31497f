#pragma once
// The few pieces of the DCGM and NVML C ABIs this project uses, declared here because the
// NVIDIA headers are not installable on the build machine. Every hardware fact (struct
// layouts, constants, field ids) lives in this one file, each checked by static_asserts
// against the layouts in NVIDIA's headers (dcgm_structs.h, dcgm_fields.h, nvml.h).
// The stand-in libraries the tests build include this file too.

#include <cstddef>
#include <cstdint>

namespace cpupower::nvidia {

// ---- DCGM ------------------------------------------------------------------------------
using dcgmHandle_t = std::uintptr_t;
using dcgmGpuGrp_t = std::uintptr_t;
using dcgmFieldGrp_t = std::uintptr_t;
using dcgmReturn_t = int;

inline constexpr dcgmReturn_t DCGM_ST_OK = 0;
inline constexpr unsigned DCGM_FE_CPU = 7;  // entity group of Grace CPUs
inline constexpr int DCGM_GROUP_EMPTY = 1;
inline constexpr int DCGM_OPERATION_MODE_AUTO = 1;
inline constexpr unsigned DCGM_GEGE_FLAG_ONLY_SUPPORTED = 1;
inline constexpr int DCGM_MAX_STR_LENGTH = 256;
inline constexpr int DCGM_MAX_BLOB_LENGTH = 4096;
inline constexpr int kDcgmMaxCpuEntities = 64;
inline constexpr unsigned short DCGM_FT_DOUBLE = 'd';
inline constexpr unsigned short DCGM_FT_INT64 = 'i';
// Blank sentinels: any double >= 2^47 and any int64 >= 0x7ffffffffffffff0 is "no value"
// (NOT_FOUND, NOT_SUPPORTED, NOT_PERMISSIONED are blank + 1..3).
inline constexpr double DCGM_FP64_BLANK = 140737488355328.0;
inline constexpr std::int64_t DCGM_INT64_BLANK = 0x7ffffffffffffff0;

struct dcgmGroupEntityPair_t {
  std::uint32_t entityGroupId;
  std::uint32_t entityId;
};
static_assert(sizeof(dcgmGroupEntityPair_t) == 8);

struct dcgmFieldValue_v2 {
  std::uint32_t version;
  std::uint32_t entityGroupId;
  std::uint32_t entityId;
  std::uint16_t fieldId;
  std::uint16_t fieldType;
  std::int32_t status;
  std::uint32_t unused;
  std::int64_t ts;  // microseconds since the epoch
  union {
    std::int64_t i64;
    double dbl;
    char str[DCGM_MAX_STR_LENGTH];
    char blob[DCGM_MAX_BLOB_LENGTH];
  } value;
};
static_assert(sizeof(dcgmFieldValue_v2) == 4128);
static_assert(alignof(dcgmFieldValue_v2) == 8);
static_assert(offsetof(dcgmFieldValue_v2, entityId) == 8);
static_assert(offsetof(dcgmFieldValue_v2, fieldId) == 12);
static_assert(offsetof(dcgmFieldValue_v2, status) == 16);
static_assert(offsetof(dcgmFieldValue_v2, ts) == 24);
static_assert(offsetof(dcgmFieldValue_v2, value) == 32);
// MAKE_DCGM_VERSION(T, v) = sizeof(T) | (v << 24)
inline constexpr std::uint32_t dcgmFieldValue_version2 = sizeof(dcgmFieldValue_v2) | (2u << 24);
static_assert(dcgmFieldValue_version2 == 0x02001020);

struct dcgmConnectV2Params_v2 {
  std::uint32_t version;
  std::uint32_t persistAfterDisconnect;
  std::uint32_t timeoutMs;
  std::uint32_t addressIsUnixSocket;
};
static_assert(sizeof(dcgmConnectV2Params_v2) == 16);
inline constexpr std::uint32_t dcgmConnectV2Params_version2 =
    sizeof(dcgmConnectV2Params_v2) | (2u << 24);

extern "C" {
using dcgmInit_fn = dcgmReturn_t (*)();
using dcgmShutdown_fn = dcgmReturn_t (*)();
using dcgmConnect_fn = dcgmReturn_t (*)(const char* ip, dcgmHandle_t* handle);
using dcgmConnect_v2_fn = dcgmReturn_t (*)(const char* ip, dcgmConnectV2Params_v2* params,
                                           dcgmHandle_t* handle);
using dcgmDisconnect_fn = dcgmReturn_t (*)(dcgmHandle_t);
using dcgmStartEmbedded_fn = dcgmReturn_t (*)(int op_mode, dcgmHandle_t* handle);
using dcgmStopEmbedded_fn = dcgmReturn_t (*)(dcgmHandle_t);
using dcgmGetEntityGroupEntities_fn = dcgmReturn_t (*)(dcgmHandle_t, std::uint32_t group,
                                                       std::uint32_t* ids, int* count,
                                                       std::uint32_t flags);
using dcgmGroupCreate_fn = dcgmReturn_t (*)(dcgmHandle_t, int type, const char* name,
                                            dcgmGpuGrp_t* group);
using dcgmGroupAddEntity_fn = dcgmReturn_t (*)(dcgmHandle_t, dcgmGpuGrp_t, std::uint32_t group,
                                               std::uint32_t id);
using dcgmGroupDestroy_fn = dcgmReturn_t (*)(dcgmHandle_t, dcgmGpuGrp_t);
using dcgmFieldGroupCreate_fn = dcgmReturn_t (*)(dcgmHandle_t, int n, const std::uint16_t* ids,
                                                 const char* name, dcgmFieldGrp_t* fg);
using dcgmFieldGroupDestroy_fn = dcgmReturn_t (*)(dcgmHandle_t, dcgmFieldGrp_t);
using dcgmWatchFields_fn = dcgmReturn_t (*)(dcgmHandle_t, dcgmGpuGrp_t, dcgmFieldGrp_t,
                                            long long update_freq_us, double max_keep_age_s,
                                            int max_keep_samples);
using dcgmUnwatchFields_fn = dcgmReturn_t (*)(dcgmHandle_t, dcgmGpuGrp_t, dcgmFieldGrp_t);
using dcgmUpdateAllFields_fn = dcgmReturn_t (*)(dcgmHandle_t, int wait);
using dcgmEntitiesGetLatestValues_fn = dcgmReturn_t (*)(
    dcgmHandle_t, const dcgmGroupEntityPair_t* entities, unsigned n_entities,
    const std::uint16_t* fields, unsigned n_fields, unsigned flags, dcgmFieldValue_v2* values);
}

// ---- NVML ------------------------------------------------------------------------------
using nvmlReturn_t = unsigned;
struct nvmlDevice_st;
using nvmlDevice_t = nvmlDevice_st*;

inline constexpr nvmlReturn_t NVML_SUCCESS = 0;
inline constexpr unsigned NVML_FI_DEV_POWER_AVERAGE = 185;  // mW, averaged over 1 s
inline constexpr unsigned NVML_POWER_SCOPE_MODULE = 1;      // Grace + GPUs + rest of module
enum nvmlValueType : unsigned {
  NVML_VALUE_TYPE_DOUBLE = 0,
  NVML_VALUE_TYPE_UNSIGNED_INT = 1,
  NVML_VALUE_TYPE_UNSIGNED_LONG = 2,
  NVML_VALUE_TYPE_UNSIGNED_LONG_LONG = 3,
  NVML_VALUE_TYPE_SIGNED_LONG_LONG = 4,
  NVML_VALUE_TYPE_SIGNED_INT = 5,
};

struct nvmlFieldValue_t {
  std::uint32_t fieldId;
  std::uint32_t scopeId;
  std::int64_t timestamp;
  std::int64_t latencyUsec;
  std::uint32_t valueType;
  std::uint32_t nvmlReturn;
  union {
    double dVal;
    std::uint32_t uiVal;
    unsigned long ulVal;
    unsigned long long ullVal;
    long long sllVal;
    std::int32_t siVal;
  } value;
};
static_assert(sizeof(nvmlFieldValue_t) == 40);
static_assert(offsetof(nvmlFieldValue_t, scopeId) == 4);
static_assert(offsetof(nvmlFieldValue_t, valueType) == 24);
static_assert(offsetof(nvmlFieldValue_t, nvmlReturn) == 28);
static_assert(offsetof(nvmlFieldValue_t, value) == 32);

struct nvmlPciInfo_t {
  char busIdLegacy[16];  // "%04X:%02X:%02X.0", e.g. 0009:01:00.0
  std::uint32_t domain;
  std::uint32_t bus;
  std::uint32_t device;
  std::uint32_t pciDeviceId;
  std::uint32_t pciSubSystemId;
  char busId[32];  // "%08X:%02X:%02X.0"
};
static_assert(sizeof(nvmlPciInfo_t) == 68);
static_assert(offsetof(nvmlPciInfo_t, busId) == 36);

extern "C" {
using nvmlInit_v2_fn = nvmlReturn_t (*)();
using nvmlShutdown_fn = nvmlReturn_t (*)();
using nvmlErrorString_fn = const char* (*)(nvmlReturn_t);
using nvmlDeviceGetCount_v2_fn = nvmlReturn_t (*)(unsigned* count);
using nvmlDeviceGetHandleByIndex_v2_fn = nvmlReturn_t (*)(unsigned index, nvmlDevice_t* device);
using nvmlDeviceGetPciInfo_v3_fn = nvmlReturn_t (*)(nvmlDevice_t, nvmlPciInfo_t* pci);
using nvmlDeviceGetFieldValues_fn = nvmlReturn_t (*)(nvmlDevice_t, int count,
                                                     nvmlFieldValue_t* values);
}

}  // namespace cpupower::nvidia
