// A stand-in libdcgm exporting the C symbols the exporter uses, driven by the control file
// in $FAKE_DCGM_CONTROL:
//   init=ok|fail  connect=ok|fail  embedded=ok|fail  connect_v2=absent (drop that symbol)
//   entities=0,1            CPU entity ids (empty: none)
//   refuse=1132,1100        field ids whose watch is refused (comma-separated)
//   value.<entity>.<field>=<W> | blank | int:<n> | status:<rc>
//   update=ok|fail|hang:MS  latest=ok|fail|hang:MS
//   calls=<path>            append each call's name there

#include <cstring>
#include <sstream>
#include <vector>

#include "control.hpp"
#include "sources/nvidia_abi.hpp"

using namespace cpupower::nvidia;

namespace {
auto kv() {
  return standin::control("FAKE_DCGM_CONTROL");
}
std::vector<std::uint16_t> g_fields;

std::vector<unsigned> entities(const std::map<std::string, std::string>& c) {
  std::vector<unsigned> out;
  std::stringstream ss(standin::get(c, "entities", "0,1"));
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (!item.empty()) out.push_back(static_cast<unsigned>(std::stoul(item)));
  }
  return out;
}
}  // namespace

extern "C" {
dcgmReturn_t dcgmInit() {
  auto c = kv();
  standin::note_call(c, "dcgmInit");
  return standin::get(c, "init", "ok") == "ok" ? DCGM_ST_OK : -3;
}
dcgmReturn_t dcgmShutdown() {
  standin::note_call(kv(), "dcgmShutdown");
  return DCGM_ST_OK;
}
dcgmReturn_t dcgmConnect(const char*, dcgmHandle_t* h) {
  auto c = kv();
  standin::note_call(c, "dcgmConnect");
  *h = 7;
  return standin::get(c, "connect", "fail") == "ok" ? DCGM_ST_OK : -2;
}
dcgmReturn_t dcgmConnect_v2(const char* ip, dcgmConnectV2Params_v2* p, dcgmHandle_t* h) {
  auto c = kv();
  standin::note_call(c, "dcgmConnect_v2");
  if (p->version != dcgmConnectV2Params_version2 || p->timeoutMs == 0) return -1;
  *h = 7;
  (void)ip;
  return standin::get(c, "connect", "fail") == "ok" ? DCGM_ST_OK : -2;
}
dcgmReturn_t dcgmDisconnect(dcgmHandle_t) {
  standin::note_call(kv(), "dcgmDisconnect");
  return DCGM_ST_OK;
}
dcgmReturn_t dcgmStartEmbedded(int, dcgmHandle_t* h) {
  auto c = kv();
  standin::note_call(c, "dcgmStartEmbedded");
  *h = 8;
  return standin::get(c, "embedded", "ok") == "ok" ? DCGM_ST_OK : -3;
}
dcgmReturn_t dcgmStopEmbedded(dcgmHandle_t) {
  standin::note_call(kv(), "dcgmStopEmbedded");
  return DCGM_ST_OK;
}
dcgmReturn_t dcgmGetEntityGroupEntities(dcgmHandle_t, std::uint32_t group, std::uint32_t* ids,
                                        int* count, std::uint32_t flags) {
  auto c = kv();
  standin::note_call(c, "dcgmGetEntityGroupEntities");
  if (group != DCGM_FE_CPU || flags != DCGM_GEGE_FLAG_ONLY_SUPPORTED) return -1;
  const auto e = entities(c);
  int n = 0;
  for (auto id : e) {
    if (n < *count) ids[n++] = id;
  }
  *count = n;
  return DCGM_ST_OK;
}
dcgmReturn_t dcgmGroupCreate(dcgmHandle_t, int type, const char*, dcgmGpuGrp_t* g) {
  standin::note_call(kv(), "dcgmGroupCreate");
  *g = 11;
  return type == DCGM_GROUP_EMPTY ? DCGM_ST_OK : -1;
}
dcgmReturn_t dcgmGroupAddEntity(dcgmHandle_t, dcgmGpuGrp_t, std::uint32_t group, std::uint32_t) {
  return group == DCGM_FE_CPU ? DCGM_ST_OK : -1;
}
dcgmReturn_t dcgmGroupDestroy(dcgmHandle_t, dcgmGpuGrp_t) {
  standin::note_call(kv(), "dcgmGroupDestroy");
  return DCGM_ST_OK;
}
dcgmReturn_t dcgmFieldGroupCreate(dcgmHandle_t, int n, const std::uint16_t* ids, const char*,
                                  dcgmFieldGrp_t* fg) {
  standin::note_call(kv(), "dcgmFieldGroupCreate");
  g_fields.assign(ids, ids + n);
  *fg = 12;
  return DCGM_ST_OK;
}
dcgmReturn_t dcgmFieldGroupDestroy(dcgmHandle_t, dcgmFieldGrp_t) {
  standin::note_call(kv(), "dcgmFieldGroupDestroy");
  return DCGM_ST_OK;
}
dcgmReturn_t dcgmWatchFields(dcgmHandle_t, dcgmGpuGrp_t, dcgmFieldGrp_t, long long freq_us, double,
                             int) {
  auto c = kv();
  standin::note_call(c, "dcgmWatchFields");
  const auto refuse = "," + standin::get(c, "refuse") + ",";
  for (auto f : g_fields) {
    if (refuse.find("," + std::to_string(f) + ",") != std::string::npos)
      return -6;  // NOT_SUPPORTED
  }
  return freq_us > 0 ? DCGM_ST_OK : -1;
}
dcgmReturn_t dcgmUnwatchFields(dcgmHandle_t, dcgmGpuGrp_t, dcgmFieldGrp_t) {
  standin::note_call(kv(), "dcgmUnwatchFields");
  return DCGM_ST_OK;
}
dcgmReturn_t dcgmUpdateAllFields(dcgmHandle_t, int) {
  auto c = kv();
  const auto v = standin::get(c, "update", "ok");
  standin::maybe_hang(v);
  return v == "fail" ? -3 : DCGM_ST_OK;
}
dcgmReturn_t dcgmEntitiesGetLatestValues(dcgmHandle_t, const dcgmGroupEntityPair_t* e, unsigned ne,
                                         const std::uint16_t* f, unsigned nf, unsigned flags,
                                         dcgmFieldValue_v2* out) {
  auto c = kv();
  const auto mode = standin::get(c, "latest", "ok");
  standin::maybe_hang(mode);
  if (mode == "fail") return -3;
  if (flags != 0) return -32;
  for (unsigned i = 0; i < ne; ++i) {
    for (unsigned j = 0; j < nf; ++j) {
      auto& v = out[i * nf + j];
      if (v.version != dcgmFieldValue_version2) return -1;
      v.entityGroupId = e[i].entityGroupId;
      v.entityId = e[i].entityId;
      v.fieldId = f[j];
      v.fieldType = DCGM_FT_DOUBLE;
      v.status = DCGM_ST_OK;
      const auto spec = standin::get(
          c, "value." + std::to_string(e[i].entityId) + "." + std::to_string(f[j]), "blank");
      if (spec == "blank") {
        v.value.dbl = DCGM_FP64_BLANK + 2;  // NOT_SUPPORTED blank
      } else if (spec.rfind("status:", 0) == 0) {
        v.status = std::atoi(spec.c_str() + 7);
      } else if (spec.rfind("int:", 0) == 0) {
        v.fieldType = DCGM_FT_INT64;
        v.value.i64 = std::atoll(spec.c_str() + 4);
      } else {
        v.value.dbl = std::atof(spec.c_str());
      }
    }
  }
  return DCGM_ST_OK;
}
}
