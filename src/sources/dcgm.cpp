#include "sources/dcgm.hpp"

#include <unistd.h>

#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "artifacts/limits.hpp"
#include "common/dynamic_library.hpp"
#include "common/log.hpp"
#include "expo/writer.hpp"
#include "rails/rails.hpp"
#include "sources/nvidia_abi.hpp"

namespace cpupower::sources {

using namespace nvidia;
using Clock = std::chrono::steady_clock;

namespace {

// The DCGM functions we call, each bound to its symbol as the table is built; `symbols`
// collects the missing ones.
struct DcgmApi {
  common::SymbolBinder& symbols;
  dcgmInit_fn init = symbols("dcgmInit");
  dcgmShutdown_fn shutdown = symbols("dcgmShutdown");
  dcgmConnect_fn connect = symbols("dcgmConnect");
  dcgmDisconnect_fn disconnect = symbols("dcgmDisconnect");
  dcgmStartEmbedded_fn start_embedded = symbols("dcgmStartEmbedded");
  dcgmStopEmbedded_fn stop_embedded = symbols("dcgmStopEmbedded");
  dcgmGetEntityGroupEntities_fn get_entities = symbols("dcgmGetEntityGroupEntities");
  dcgmGroupCreate_fn group_create = symbols("dcgmGroupCreate");
  dcgmGroupAddEntity_fn group_add = symbols("dcgmGroupAddEntity");
  dcgmGroupDestroy_fn group_destroy = symbols("dcgmGroupDestroy");
  dcgmFieldGroupCreate_fn field_group_create = symbols("dcgmFieldGroupCreate");
  dcgmFieldGroupDestroy_fn field_group_destroy = symbols("dcgmFieldGroupDestroy");
  dcgmWatchFields_fn watch = symbols("dcgmWatchFields");
  dcgmUnwatchFields_fn unwatch = symbols("dcgmUnwatchFields");
  dcgmUpdateAllFields_fn update_all = symbols("dcgmUpdateAllFields");
  dcgmEntitiesGetLatestValues_fn latest = symbols("dcgmEntitiesGetLatestValues");
  dcgmConnect_v2_fn connect_v2 = nullptr;  // optional: lets us bound the connect attempt
};

// A DCGM call's outcome: its error names the function and the return code.
Status checked(const char* fn, dcgmReturn_t rc) {
  if (rc == DCGM_ST_OK) return Ok{};
  return Error{std::string(fn) + ": error " + std::to_string(rc)};
}

}  // namespace

DcgmValue interpret_dcgm_value(int status, unsigned short field_type, double dbl, std::int64_t i64,
                               bool allow_zero) {
  if (status != DCGM_ST_OK) return {std::nullopt, "status " + std::to_string(status)};
  double w;
  if (field_type == DCGM_FT_INT64) {
    if (i64 >= DCGM_INT64_BLANK) return {std::nullopt, "blank"};
    w = static_cast<double>(i64);
  } else {
    if (dbl >= DCGM_FP64_BLANK) return {std::nullopt, "blank"};
    w = dbl;
  }
  if (!std::isfinite(w)) return {std::nullopt, "non-finite value"};
  if (w < 0 || (w == 0 && !allow_zero)) return {std::nullopt, "not positive"};
  // Power above the bound the collectors and the report use is an error, never a reading
  // (a value under DCGM's blank threshold can still be far beyond any socket).
  if (!allow_zero && w > artifacts::kMaxSocketWatts) {
    return {std::nullopt, "above the physical bound of " +
                              std::to_string(static_cast<long>(artifacts::kMaxSocketWatts)) + " W"};
  }
  return {w, {}};
}

// Everything DCGM hands out, released in reverse order on every path. Errors are why DCGM is
// unavailable.
class DcgmSession {
 public:
  ~DcgmSession() { close(); }

  Status open(const DcgmOptions& o) {
    std::vector<std::string> names = {"libdcgm.so.4", "libdcgm.so.3", "libdcgm.so"};
    if (!o.library.empty()) names = {o.library};
    if (const Status opened = lib_.open(names); !opened) {
      return Error{"libdcgm not found: " + opened.error()};
    }
    api_.emplace(DcgmApi{symbols_});
    common::SymbolBinder optional_symbols(lib_);  // absent from older DCGM: not an error
    optional_symbols.bind(api_->connect_v2, "dcgmConnect_v2");
    if (const Status bound = symbols_.status(); !bound) {
      return Error{lib_.name() + ": " + bound.error()};
    }
    if (const Status s = checked("dcgmInit", api_->init()); !s) return s;
    initialised_ = true;
    if (const Status s = acquire_handle(o); !s) return s;
    return add_entities();
  }

  // Watches `fields` on the CPU entity group; the error is the library's refusal.
  Status watch(const std::vector<std::uint16_t>& fields, int attempt) {
    drop_field_group();
    const std::string name = "cpu_power_fields_" + suffix_ + "_" + std::to_string(attempt);
    Status s = checked("dcgmFieldGroupCreate",
                       api_->field_group_create(handle_, static_cast<int>(fields.size()),
                                                fields.data(), name.c_str(), &field_group_));
    if (!s) return s;
    has_field_group_ = true;
    s = checked("dcgmWatchFields", api_->watch(handle_, group_, field_group_, 100000, 60.0, 600));
    if (!s) {
      drop_field_group();
      return s;
    }
    watching_ = true;
    fields_ = fields;
    api_->update_all(handle_, 1);  // seed the first sample
    return Ok{};
  }

  // One read of every (entity, field), entity-major in watch order; an error on a call error.
  Result<std::vector<DcgmValue>> read() {
    Status s = checked("dcgmUpdateAllFields", api_->update_all(handle_, 1));
    if (!s) return Error{s.error()};
    std::vector<dcgmGroupEntityPair_t> pairs;
    for (auto e : entities_) pairs.push_back({DCGM_FE_CPU, e});
    std::vector<dcgmFieldValue_v2> values(pairs.size() * fields_.size());
    for (auto& v : values) v.version = dcgmFieldValue_version2;
    // flags 0: cached watched values (the live flag returns blanks for sysmon fields).
    s = checked(
        "dcgmEntitiesGetLatestValues",
        api_->latest(handle_, pairs.data(), static_cast<unsigned>(pairs.size()), fields_.data(),
                     static_cast<unsigned>(fields_.size()), 0, values.data()));
    if (!s) return Error{s.error()};
    std::vector<DcgmValue> out(pairs.size() * fields_.size(), DcgmValue{std::nullopt, "no sample"});
    for (const auto& v : values) {
      // Trust the ids DCGM stamped over the request order.
      const auto row = row_of(v.entityId, v.fieldId);
      if (!row) continue;
      const bool power = rails::dcgm_field_kind(v.fieldId).has_value();
      out[*row] = interpret_dcgm_value(v.status, v.fieldType, v.value.dbl, v.value.i64, !power);
    }
    return out;
  }

  const std::vector<std::uint32_t>& entities() const { return entities_; }
  const std::vector<std::uint16_t>& fields() const { return fields_; }

  void close() {
    if (watching_) api_->unwatch(handle_, group_, field_group_);
    watching_ = false;
    drop_field_group();
    if (has_group_) api_->group_destroy(handle_, group_);
    has_group_ = false;
    if (connected_) api_->disconnect(handle_);
    if (embedded_) api_->stop_embedded(handle_);
    connected_ = embedded_ = false;
    if (initialised_) api_->shutdown();
    initialised_ = false;
  }

 private:
  Status acquire_handle(const DcgmOptions& o) {
    dcgmReturn_t rc;
    if (api_->connect_v2) {
      dcgmConnectV2Params_v2 params{dcgmConnectV2Params_version2, 0,
                                    static_cast<std::uint32_t>(o.connect_timeout.count()), 0};
      rc = api_->connect_v2("127.0.0.1", &params, &handle_);
    } else {
      rc = api_->connect("127.0.0.1", &handle_);
    }
    auto log = common::logger("cpu_power_exporter::dcgm");
    if (rc == DCGM_ST_OK) {
      connected_ = true;
      log->info("connected to existing DCGM daemon (root-level access)");
      return Ok{};
    }
    log->info("no running DCGM daemon; starting embedded instance reason={}",
              common::quoted(checked("dcgmConnect", rc).error()));
    const Status s =
        checked("dcgmStartEmbedded", api_->start_embedded(DCGM_OPERATION_MODE_AUTO, &handle_));
    embedded_ = s.ok();
    return s;
  }

  Status add_entities() {
    std::uint32_t ids[kDcgmMaxCpuEntities];
    int count = kDcgmMaxCpuEntities;
    Status s = checked(
        "dcgmGetEntityGroupEntities",
        api_->get_entities(handle_, DCGM_FE_CPU, ids, &count, DCGM_GEGE_FLAG_ONLY_SUPPORTED));
    if (!s) return s;
    if (count <= 0) return Error{"no supported DCGM CPU entities on this host"};
    suffix_ = std::to_string(::getpid()) + "_" +
              std::to_string(Clock::now().time_since_epoch().count() % 1000000000);
    const std::string name = "cpu_power_entities_" + suffix_;
    s = checked("dcgmGroupCreate",
                api_->group_create(handle_, DCGM_GROUP_EMPTY, name.c_str(), &group_));
    has_group_ = s.ok();
    for (int i = 0; s && i < count && i < kDcgmMaxCpuEntities; ++i) {
      s = checked("dcgmGroupAddEntity", api_->group_add(handle_, group_, DCGM_FE_CPU, ids[i]));
      if (s) entities_.push_back(ids[i]);
    }
    return s;
  }

  void drop_field_group() {
    if (has_field_group_) api_->field_group_destroy(handle_, field_group_);
    has_field_group_ = false;
  }

  std::optional<std::size_t> row_of(std::uint32_t entity, std::uint16_t field) const {
    for (std::size_t e = 0; e < entities_.size(); ++e) {
      if (entities_[e] != entity) continue;
      for (std::size_t f = 0; f < fields_.size(); ++f) {
        if (fields_[f] == field) return e * fields_.size() + f;
      }
    }
    return std::nullopt;
  }

  common::DynamicLibrary lib_;
  common::SymbolBinder symbols_{lib_};
  std::optional<DcgmApi> api_;  // bound once the library is open
  dcgmHandle_t handle_ = 0;
  dcgmGpuGrp_t group_ = 0;
  dcgmFieldGrp_t field_group_ = 0;
  bool initialised_ = false, connected_ = false, embedded_ = false;
  bool has_group_ = false, has_field_group_ = false, watching_ = false;
  std::vector<std::uint32_t> entities_;
  std::vector<std::uint16_t> fields_;
  std::string suffix_;
};

// ---- reader ----------------------------------------------------------------------------

namespace {

// Entity-major, 1130 first per entity (old collectors take the first sample per socket).
std::vector<Sensor> sensors_of(const DcgmSession& session) {
  std::vector<Sensor> out;
  for (const auto entity : session.entities()) {
    for (const auto field : session.fields()) {
      Sensor s;
      const auto e = std::to_string(entity), f = std::to_string(field);
      s.name = "dcgm/cpu" + e + "/" + f;
      const auto kind = rails::dcgm_field_kind(field);
      s.kind = kind.value_or(rails::Kind::other);
      s.power = kind.has_value();
      s.primary = field == rails::kDcgmCpuPowerField;
      s.socket = entity;
      s.field_id = field;
      s.label_text = expo::label_text(expo::kDcgmWatts, {e, f, "dcgm"});
      s.self_label_text = "sensor=\"" + s.name + "\"," + s.label_text;
      out.push_back(std::move(s));
    }
  }
  return out;
}

}  // namespace

DcgmReader::DcgmReader(std::unique_ptr<DcgmSession> session,
                       std::chrono::milliseconds poll_interval, std::chrono::milliseconds max_age)
    : session_(std::move(session)),
      sensors_(std::make_shared<const std::vector<Sensor>>(sensors_of(*session_))),
      table_(std::make_shared<SampleTable>(sensor_names(*sensors_), max_age,
                                           "cpu_power_exporter::dcgm", "DCGM reading")),
      interval_(poll_interval) {}

DcgmReader::~DcgmReader() {
  stop();
}

void DcgmReader::start() {
  table_->start_watchdog(std::chrono::milliseconds(250));
  auto last_error = std::make_shared<std::string>();
  threads_.spawn(interval_, [session = session_, table = table_, last_error] {
    const auto t0 = Clock::now();
    const auto values = session->read();
    const auto t1 = Clock::now();
    for (std::size_t i = 0; i < table->size(); ++i) {
      const auto& v = values ? (*values)[i] : DcgmValue{std::nullopt, values.error()};
      table->record(i, v.watts, t0, t1, v.problem);
    }
    if (!values && values.error() != *last_error) {
      common::logger("cpu_power_exporter::dcgm")
          ->warn("DCGM read failed; skipping sample error={}", common::quoted(values.error()));
    }
    *last_error = values.error();
    return true;
  });
}

void DcgmReader::stop(std::chrono::milliseconds grace) {
  // The session is closed when the poller is gone; a poller stuck in a call keeps it open
  // (closing under it would race) and the process exit releases it.
  if (threads_.stop(grace)) session_->close();
  table_->stop();
}

std::vector<std::uint16_t> DcgmReader::fields() const {
  return session_->fields();
}

std::vector<std::uint32_t> DcgmReader::entities() const {
  return session_->entities();
}

Snapshot DcgmReader::snapshot(SteadyTime now) const {
  return {sensors_, table_->snapshot(now), true, {}};
}

DcgmRung try_dcgm(const DcgmOptions& options) {
  auto log = common::logger("cpu_power_exporter::dcgm");
  auto session = std::make_unique<DcgmSession>();
  if (const Status opened = session->open(options); !opened) {
    return {nullptr, "DCGM unavailable: " + opened.error()};  // the session cleans up
  }

  // Most informative set first: CPU rail + SysIO, then the CPU rail alone when the library
  // refuses SysIO; with utilization, each of those first with fields 1100..1104 added.
  const std::vector<std::uint16_t> full = {rails::kDcgmCpuPowerField, rails::kDcgmSysioPowerField};
  const std::vector<std::uint16_t> rail_only = {rails::kDcgmCpuPowerField};
  std::vector<std::vector<std::uint16_t>> attempts;
  for (const auto& power : {full, rail_only}) {
    if (options.utilization) {
      auto with_util = power;
      with_util.insert(with_util.end(), std::begin(rails::kDcgmCpuUtilFields),
                       std::end(rails::kDcgmCpuUtilFields));
      attempts.push_back(std::move(with_util));
    }
    attempts.push_back(power);
  }
  for (std::size_t attempt = 0;;) {
    const Status watched = session->watch(attempts[attempt], static_cast<int>(attempt));
    if (watched) break;
    const auto& refusal = watched.error();
    if (++attempt == attempts.size()) {
      return {nullptr, "cannot watch DCGM CPU power fields: " + refusal};
    }
    const auto& wanted = attempts[attempt - 1];
    const auto& next = attempts[attempt];
    if (wanted.size() > 2 && next.size() <= 2) {
      log->warn(
          "DCGM refused the CPU utilization fields; collecting power without utilization "
          "fields=[{}] wanted=[{}] reason={}",
          fmt::join(next, ", "), fmt::join(wanted, ", "), common::quoted(refusal));
    } else {
      log->warn(
          "DCGM refused the full CPU power field set; watching the CPU rail only (no SysIO) "
          "fields=[1130] wanted=[1130, 1132] reason={}",
          common::quoted(refusal));
    }
  }

  const auto values = session->read();
  if (!values) return {nullptr, "DCGM yielded no live data: read error: " + values.error()};
  const auto& fields = session->fields();
  std::size_t live_rail = 0, blank = 0;
  for (std::size_t i = 0; i < values->size(); ++i) {
    if (fields[i % fields.size()] == rails::kDcgmCpuPowerField && (*values)[i].watts) live_rail++;
    if ((*values)[i].problem == "blank") blank++;
  }
  if (live_rail == 0) {
    std::string reason = "DCGM yielded no live data: no CPU entity returned a positive field 1130";
    if (blank == values->size()) {
      reason +=
          " (every value blank: the embedded engine usually lacks hardware access when it runs "
          "without root while a system dcgm-exporter holds the session)";
    }
    return {nullptr, reason};
  }
  const bool sysio =
      std::find(fields.begin(), fields.end(), rails::kDcgmSysioPowerField) != fields.end();
  log->info(
      "DCGM reader initialised ({}; no socket envelope) cpu_count={} cpu_ids=[{}] fields=[{}]",
      sysio ? "CPU rail + SysIO" : "CPU rail only", session->entities().size(),
      fmt::join(session->entities(), ", "), fmt::join(fields, ", "));
  return {std::make_unique<DcgmReader>(std::move(session), options.poll_interval, options.max_age),
          {}};
}

}  // namespace cpupower::sources
