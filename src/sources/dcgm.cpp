#include "sources/dcgm.hpp"

#include <unistd.h>

#include <cmath>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "common/dynamic_library.hpp"
#include "common/log.hpp"
#include "rails/rails.hpp"
#include "sources/nvidia_abi.hpp"

namespace cpupower::sources {

using namespace nvidia;
using Clock = std::chrono::steady_clock;

namespace {

struct DcgmApi {
  dcgmInit_fn init = nullptr;
  dcgmShutdown_fn shutdown = nullptr;
  dcgmConnect_fn connect = nullptr;
  dcgmConnect_v2_fn connect_v2 = nullptr;  // optional: lets us bound the connect attempt
  dcgmDisconnect_fn disconnect = nullptr;
  dcgmStartEmbedded_fn start_embedded = nullptr;
  dcgmStopEmbedded_fn stop_embedded = nullptr;
  dcgmGetEntityGroupEntities_fn get_entities = nullptr;
  dcgmGroupCreate_fn group_create = nullptr;
  dcgmGroupAddEntity_fn group_add = nullptr;
  dcgmGroupDestroy_fn group_destroy = nullptr;
  dcgmFieldGroupCreate_fn field_group_create = nullptr;
  dcgmFieldGroupDestroy_fn field_group_destroy = nullptr;
  dcgmWatchFields_fn watch = nullptr;
  dcgmUnwatchFields_fn unwatch = nullptr;
  dcgmUpdateAllFields_fn update_all = nullptr;
  dcgmEntitiesGetLatestValues_fn latest = nullptr;
};

std::string rc_text(const char* fn, dcgmReturn_t rc) {
  return std::string(fn) + ": error " + std::to_string(rc);
}

}  // namespace

DcgmValue interpret_dcgm_value(int status, unsigned short field_type, double dbl,
                               std::int64_t i64) {
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
  if (w <= 0) return {std::nullopt, "not positive"};
  return {w, {}};
}

// Everything DCGM hands out, released in reverse order on every path.
class DcgmSession {
 public:
  ~DcgmSession() { close(); }

  bool open(const DcgmOptions& o, std::string* reason) {
    auto log = common::logger("cpu_power_exporter::dcgm");
    std::vector<std::string> names = {"libdcgm.so.4", "libdcgm.so.3", "libdcgm.so"};
    if (!o.library.empty()) names = {o.library};
    std::string err;
    if (!lib_.open(names, &err)) {
      *reason = "DCGM unavailable: libdcgm not found: " + err;
      return false;
    }
    std::string missing;
    api_.init = lib_.symbol<dcgmInit_fn>("dcgmInit", &missing);
    api_.shutdown = lib_.symbol<dcgmShutdown_fn>("dcgmShutdown", &missing);
    api_.connect = lib_.symbol<dcgmConnect_fn>("dcgmConnect", &missing);
    api_.disconnect = lib_.symbol<dcgmDisconnect_fn>("dcgmDisconnect", &missing);
    api_.start_embedded = lib_.symbol<dcgmStartEmbedded_fn>("dcgmStartEmbedded", &missing);
    api_.stop_embedded = lib_.symbol<dcgmStopEmbedded_fn>("dcgmStopEmbedded", &missing);
    api_.get_entities =
        lib_.symbol<dcgmGetEntityGroupEntities_fn>("dcgmGetEntityGroupEntities", &missing);
    api_.group_create = lib_.symbol<dcgmGroupCreate_fn>("dcgmGroupCreate", &missing);
    api_.group_add = lib_.symbol<dcgmGroupAddEntity_fn>("dcgmGroupAddEntity", &missing);
    api_.group_destroy = lib_.symbol<dcgmGroupDestroy_fn>("dcgmGroupDestroy", &missing);
    api_.field_group_create =
        lib_.symbol<dcgmFieldGroupCreate_fn>("dcgmFieldGroupCreate", &missing);
    api_.field_group_destroy =
        lib_.symbol<dcgmFieldGroupDestroy_fn>("dcgmFieldGroupDestroy", &missing);
    api_.watch = lib_.symbol<dcgmWatchFields_fn>("dcgmWatchFields", &missing);
    api_.unwatch = lib_.symbol<dcgmUnwatchFields_fn>("dcgmUnwatchFields", &missing);
    api_.update_all = lib_.symbol<dcgmUpdateAllFields_fn>("dcgmUpdateAllFields", &missing);
    api_.latest =
        lib_.symbol<dcgmEntitiesGetLatestValues_fn>("dcgmEntitiesGetLatestValues", &missing);
    std::string optional_missing;
    api_.connect_v2 = lib_.symbol<dcgmConnect_v2_fn>("dcgmConnect_v2", &optional_missing);
    if (!missing.empty()) {
      *reason = "DCGM unavailable: " + lib_.name() + ": " + missing;
      return false;
    }
    if (const auto rc = api_.init(); rc != DCGM_ST_OK) {
      *reason = "DCGM unavailable: " + rc_text("dcgmInit", rc);
      return false;
    }
    initialised_ = true;
    if (!acquire_handle(o, reason)) return false;
    return add_entities(reason);
  }

  // Watches `fields` on the CPU entity group; false with the library's refusal.
  bool watch(const std::vector<std::uint16_t>& fields, int attempt, std::string* reason) {
    drop_field_group();
    const std::string name = "cpu_power_fields_" + suffix_ + "_" + std::to_string(attempt);
    auto rc = api_.field_group_create(handle_, static_cast<int>(fields.size()), fields.data(),
                                      name.c_str(), &field_group_);
    if (rc != DCGM_ST_OK) {
      *reason = rc_text("dcgmFieldGroupCreate", rc);
      return false;
    }
    has_field_group_ = true;
    rc = api_.watch(handle_, group_, field_group_, 100000, 60.0, 600);
    if (rc != DCGM_ST_OK) {
      *reason = rc_text("dcgmWatchFields", rc);
      drop_field_group();
      return false;
    }
    watching_ = true;
    fields_ = fields;
    api_.update_all(handle_, 1);  // seed the first sample
    return true;
  }

  // One read of every (entity, field), entity-major in watch order; false on a call error.
  bool read(std::vector<DcgmValue>* out, std::string* error) {
    if (auto rc = api_.update_all(handle_, 1); rc != DCGM_ST_OK) {
      *error = rc_text("dcgmUpdateAllFields", rc);
      return false;
    }
    std::vector<dcgmGroupEntityPair_t> pairs;
    for (auto e : entities_) pairs.push_back({DCGM_FE_CPU, e});
    std::vector<dcgmFieldValue_v2> values(pairs.size() * fields_.size());
    for (auto& v : values) v.version = dcgmFieldValue_version2;
    // flags 0: cached watched values (the live flag returns blanks for sysmon fields).
    const auto rc =
        api_.latest(handle_, pairs.data(), static_cast<unsigned>(pairs.size()), fields_.data(),
                    static_cast<unsigned>(fields_.size()), 0, values.data());
    if (rc != DCGM_ST_OK) {
      *error = rc_text("dcgmEntitiesGetLatestValues", rc);
      return false;
    }
    out->assign(pairs.size() * fields_.size(), DcgmValue{std::nullopt, "no sample"});
    for (const auto& v : values) {
      // Trust the ids DCGM stamped over the request order.
      const auto row = row_of(v.entityId, v.fieldId);
      if (!row) continue;
      (*out)[*row] = interpret_dcgm_value(v.status, v.fieldType, v.value.dbl, v.value.i64);
    }
    return true;
  }

  const std::vector<std::uint32_t>& entities() const { return entities_; }
  const std::vector<std::uint16_t>& fields() const { return fields_; }

  void close() {
    if (watching_) api_.unwatch(handle_, group_, field_group_);
    watching_ = false;
    drop_field_group();
    if (has_group_) api_.group_destroy(handle_, group_);
    has_group_ = false;
    if (connected_) api_.disconnect(handle_);
    if (embedded_) api_.stop_embedded(handle_);
    connected_ = embedded_ = false;
    if (initialised_) api_.shutdown();
    initialised_ = false;
  }

 private:
  bool acquire_handle(const DcgmOptions& o, std::string* reason) {
    auto log = common::logger("cpu_power_exporter::dcgm");
    dcgmReturn_t rc;
    if (api_.connect_v2) {
      dcgmConnectV2Params_v2 params{dcgmConnectV2Params_version2, 0,
                                    static_cast<std::uint32_t>(o.connect_timeout.count()), 0};
      rc = api_.connect_v2("127.0.0.1", &params, &handle_);
    } else {
      rc = api_.connect("127.0.0.1", &handle_);
    }
    if (rc == DCGM_ST_OK) {
      connected_ = true;
      log->info("connected to existing DCGM daemon (root-level access)");
      return true;
    }
    log->info("no running DCGM daemon; starting embedded instance reason={}",
              common::quoted(rc_text("dcgmConnect", rc)));
    rc = api_.start_embedded(DCGM_OPERATION_MODE_AUTO, &handle_);
    if (rc != DCGM_ST_OK) {
      *reason = "DCGM unavailable: " + rc_text("dcgmStartEmbedded", rc);
      return false;
    }
    embedded_ = true;
    return true;
  }

  bool add_entities(std::string* reason) {
    std::uint32_t ids[kDcgmMaxCpuEntities];
    int count = kDcgmMaxCpuEntities;
    auto rc = api_.get_entities(handle_, DCGM_FE_CPU, ids, &count, DCGM_GEGE_FLAG_ONLY_SUPPORTED);
    if (rc != DCGM_ST_OK) {
      *reason = "DCGM unavailable: " + rc_text("dcgmGetEntityGroupEntities", rc);
      return false;
    }
    if (count <= 0) {
      *reason = "DCGM unavailable: no supported DCGM CPU entities on this host";
      return false;
    }
    suffix_ = std::to_string(::getpid()) + "_" +
              std::to_string(Clock::now().time_since_epoch().count() % 1000000000);
    const std::string name = "cpu_power_entities_" + suffix_;
    rc = api_.group_create(handle_, DCGM_GROUP_EMPTY, name.c_str(), &group_);
    if (rc != DCGM_ST_OK) {
      *reason = "DCGM unavailable: " + rc_text("dcgmGroupCreate", rc);
      return false;
    }
    has_group_ = true;
    for (int i = 0; i < count && i < kDcgmMaxCpuEntities; ++i) {
      rc = api_.group_add(handle_, group_, DCGM_FE_CPU, ids[i]);
      if (rc != DCGM_ST_OK) {
        *reason = "DCGM unavailable: " + rc_text("dcgmGroupAddEntity", rc);
        return false;
      }
      entities_.push_back(ids[i]);
    }
    return true;
  }

  void drop_field_group() {
    if (has_field_group_) api_.field_group_destroy(handle_, field_group_);
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
  DcgmApi api_;
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

struct DcgmReader::Shared {
  std::unique_ptr<DcgmSession> session;
  std::vector<DcgmRow> rows;
  std::chrono::milliseconds interval;
  SampleTable table;
  std::mutex mutex;
  std::condition_variable wake;
  bool stopping = false;
  bool running = false;

  Shared(std::unique_ptr<DcgmSession> s, std::vector<DcgmRow> r, std::chrono::milliseconds i,
         std::vector<std::string> sensors, std::chrono::milliseconds max_age)
      : session(std::move(s)),
        rows(std::move(r)),
        interval(i),
        table(std::move(sensors), max_age, "cpu_power_exporter::dcgm", "DCGM reading") {}
};

namespace {

void poll_loop(std::shared_ptr<DcgmReader::Shared> sh) {
  auto log = common::logger("cpu_power_exporter::dcgm");
  std::vector<DcgmValue> values;
  std::string last_error;
  while (true) {
    const auto t0 = Clock::now();
    std::string error;
    const bool ok = sh->session->read(&values, &error);
    const auto t1 = Clock::now();
    for (std::size_t i = 0; i < sh->rows.size(); ++i) {
      if (ok) {
        sh->table.record(i, values[i].watts, t0, t1, values[i].problem);
      } else {
        sh->table.record(i, std::nullopt, t0, t1, error);
      }
    }
    if (!ok && error != last_error)
      log->warn("DCGM read failed; skipping sample error={}", common::quoted(error));
    last_error = ok ? std::string() : error;
    std::unique_lock lock(sh->mutex);
    if (sh->wake.wait_until(lock, t0 + sh->interval, [&] { return sh->stopping; })) break;
  }
  sh->session->close();
  std::lock_guard lock(sh->mutex);
  sh->running = false;
  sh->wake.notify_all();
}

}  // namespace

DcgmReader::DcgmReader(std::unique_ptr<DcgmSession> session,
                       std::chrono::milliseconds poll_interval, std::chrono::milliseconds max_age) {
  std::vector<DcgmRow> rows;
  std::vector<std::string> sensors;
  for (auto e : session->entities()) {
    for (auto f : session->fields()) {
      rows.push_back({e, f});
      sensors.push_back("dcgm/cpu" + std::to_string(e) + "/" + std::to_string(f));
    }
  }
  shared_ = std::make_shared<Shared>(std::move(session), std::move(rows), poll_interval,
                                     std::move(sensors), max_age);
}

DcgmReader::~DcgmReader() {
  stop();
}

void DcgmReader::start() {
  {
    std::lock_guard lock(shared_->mutex);
    shared_->running = true;
  }
  shared_->table.start_watchdog(
      std::min<std::chrono::milliseconds>(shared_->interval, std::chrono::milliseconds(250)));
  std::thread(poll_loop, shared_).detach();
}

void DcgmReader::stop(std::chrono::milliseconds grace) {
  {
    std::unique_lock lock(shared_->mutex);
    if (shared_->stopping) return;
    shared_->stopping = true;
    shared_->wake.notify_all();
    shared_->wake.wait_for(lock, grace, [&] { return !shared_->running; });
  }
  shared_->table.stop();
}

const std::vector<DcgmRow>& DcgmReader::rows() const {
  return shared_->rows;
}

std::vector<std::uint16_t> DcgmReader::fields() const {
  return shared_->session->fields();
}

std::vector<ChannelReading> DcgmReader::snapshot(SteadyTime now) const {
  return shared_->table.snapshot(now);
}

DcgmRung try_dcgm(const DcgmOptions& options) {
  auto log = common::logger("cpu_power_exporter::dcgm");
  DcgmRung rung;
  auto session = std::make_unique<DcgmSession>();
  if (!session->open(options, &rung.reason)) return rung;  // the session cleans up

  const std::vector<std::uint16_t> full = {rails::kDcgmCpuPowerField, rails::kDcgmSysioPowerField};
  const std::vector<std::uint16_t> rail_only = {rails::kDcgmCpuPowerField};
  std::string refusal;
  if (!session->watch(full, 0, &refusal)) {
    log->warn(
        "DCGM refused the full CPU power field set; watching the CPU rail only (no SysIO) "
        "fields=[1130] wanted=[1130, 1132] reason={}",
        common::quoted(refusal));
    std::string second;
    if (!session->watch(rail_only, 1, &second)) {
      rung.reason = "cannot watch DCGM CPU power fields: " + second;
      return rung;
    }
  }

  std::vector<DcgmValue> values;
  std::string error;
  if (!session->read(&values, &error)) {
    rung.reason = "DCGM yielded no live data: read error: " + error;
    return rung;
  }
  const auto& fields = session->fields();
  std::size_t live_rail = 0, blank = 0;
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (fields[i % fields.size()] == rails::kDcgmCpuPowerField && values[i].watts) live_rail++;
    if (values[i].problem == "blank") blank++;
  }
  if (live_rail == 0) {
    rung.reason = "DCGM yielded no live data: no CPU entity returned a positive field 1130";
    if (blank == values.size()) {
      rung.reason +=
          " (every value blank: the embedded engine usually lacks hardware access when it runs "
          "without root while a system dcgm-exporter holds the session)";
    }
    return rung;
  }
  std::string entity_list;
  for (auto e : session->entities())
    entity_list += (entity_list.empty() ? "" : ", ") + std::to_string(e);
  log->info(
      "DCGM reader initialised ({}; no socket envelope) cpu_count={} cpu_ids=[{}] fields=[{}]",
      fields.size() == 2 ? "CPU rail + SysIO" : "CPU rail only", session->entities().size(),
      entity_list, fields.size() == 2 ? "1130, 1132" : "1130");
  rung.reader =
      std::make_unique<DcgmReader>(std::move(session), options.poll_interval, options.max_age);
  return rung;
}

}  // namespace cpupower::sources
