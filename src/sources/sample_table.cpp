#include "sources/sample_table.hpp"

#include <algorithm>
#include <condition_variable>
#include <mutex>

#include "common/log.hpp"
#include "sources/energy_counter.hpp"

namespace cpupower::sources {

using Clock = std::chrono::steady_clock;

namespace {
struct Row {
  std::optional<double> watts;
  SteadyTime read_at{};
  double read_at_unix = 0;     // the same instant on the wall clock, fixed when recorded
  double centre_offset_s = 0;  // half the window the value averaged
  SteadyTime last_start{};
  bool completed_any = false;
  std::optional<double> read_duration_s;
  std::uint64_t reads_total = 0;
  std::uint64_t read_errors_total = 0;
  std::string last_problem;
  bool stale_logged = false;
  EnergyCounter energy;
};
}  // namespace

struct SampleTable::State {
  std::vector<std::string> sensors;
  std::chrono::milliseconds max_age;
  std::string log_target;
  std::string what;
  SteadyTime started_at = Clock::now();

  mutable std::mutex mutex;
  mutable std::condition_variable changed;
  std::vector<Row> rows;
  std::uint64_t watchdog_passes = 0;

  // Withheld: the last good value is too old, or there never was one. A sensor that has not
  // produced a value is not fresh, from the start (cpu_power_exporter_stale 1).
  bool is_stale(const Row& r, SteadyTime now) const {
    return !r.watts || now - r.read_at > max_age;
  }
  // What the watchdog warns about: a value too old, or none although one was due by now (the
  // first --max-age-s after start is the first read's grace, so start-up logs no WARN).
  bool is_overdue(const Row& r, SteadyTime now) const {
    if (r.watts) return now - r.read_at > max_age;
    return now - started_at > max_age;
  }
};

namespace {

double seconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// One watchdog pass: WARN once when a row goes stale, INFO when it is fresh again. Returns
// when the next pass is due: a period from now while a row is stale (to see it fresh again),
// else when the first row can go stale (its value's time, or the start, plus max_age), and
// never sooner than a period from now. Rows that keep being read push that time out, so a
// healthy source wakes the watchdog about once per max_age instead of once a period.
std::optional<SteadyTime> check_staleness(SampleTable::State& st,
                                          std::chrono::milliseconds period) {
  auto log = common::logger(st.log_target);
  std::lock_guard lock(st.mutex);
  st.watchdog_passes++;
  const auto now = Clock::now();
  for (std::size_t i = 0; i < st.rows.size(); ++i) {
    auto& r = st.rows[i];
    const bool stale = st.is_overdue(r, now);
    // A channel whose last completed read succeeded went stale because no read has completed
    // since: say that, not the empty problem of that good read.
    const std::string problem = !r.completed_any ? "read still in progress"
                                : !r.last_problem.empty()
                                    ? r.last_problem
                                    : "no read completed since the last good one";
    if (stale && !r.stale_logged) {
      r.stale_logged = true;
      if (r.watts) {
        log->warn(
            "{} is stale; withholding it sensor={} age_s={:.3f} max_age_s={:.3f} last_problem={}",
            st.what, st.sensors[i], seconds(now - r.read_at), seconds(st.max_age),
            common::quoted(problem));
      } else {
        log->warn("no {} yet; withholding the sensor sensor={} waited_s={:.3f} last_problem={}",
                  st.what, st.sensors[i], seconds(now - st.started_at), common::quoted(problem));
      }
    } else if (!stale && r.stale_logged) {
      r.stale_logged = false;
      log->info("{} fresh again; publishing it sensor={}", st.what, st.sensors[i]);
    }
  }
  auto next = SteadyTime::max();
  for (const auto& r : st.rows) {
    if (r.stale_logged) return now + period;
    next = std::min(next, (r.watts ? r.read_at : st.started_at) + st.max_age);
  }
  return look_again(next, now, period);
}

}  // namespace

SampleTable::SampleTable(std::vector<std::string> sensors, std::chrono::milliseconds max_age,
                         std::string log_target, std::string what)
    : state_(std::make_shared<State>()) {
  state_->rows.resize(sensors.size());
  state_->sensors = std::move(sensors);
  state_->max_age = max_age;
  state_->log_target = std::move(log_target);
  state_->what = std::move(what);
}

SampleTable::~SampleTable() {
  stop();
}

void SampleTable::start_watchdog(std::chrono::milliseconds period) {
  {
    std::lock_guard lock(state_->mutex);
    state_->started_at = Clock::now();
  }
  watchdog_.spawn_at([st = state_, period] { return check_staleness(*st, period); });
}

std::uint64_t SampleTable::watchdog_passes() const {
  std::lock_guard lock(state_->mutex);
  return state_->watchdog_passes;
}

void SampleTable::stop() {
  watchdog_.stop(std::chrono::seconds(1));
}

void SampleTable::record(std::size_t i, std::optional<double> watts, SteadyTime t0, SteadyTime t1,
                         const std::string& problem, std::optional<double> window_s) {
  std::lock_guard lock(state_->mutex);
  auto& r = state_->rows[i];
  r.reads_total++;
  r.completed_any = true;
  r.last_start = t0;
  r.read_duration_s = seconds(t1 - t0);
  if (watts) {
    r.watts = watts;
    r.read_at = t0 + (t1 - t0) / 2;
    // Once, here: converting at each snapshot would give the same reading a slightly
    // different wall time every time, and a sink could not tell it was not new.
    r.read_at_unix = unix_now() - seconds(Clock::now() - r.read_at);
    r.centre_offset_s = window_s && *window_s > 0 ? *window_s / 2 : 0.0;
    r.energy.add(*watts,
                 r.read_at - std::chrono::duration_cast<Clock::duration>(
                                 std::chrono::duration<double>(r.centre_offset_s)),
                 window_s, seconds(state_->max_age));
  } else {
    r.read_errors_total++;
  }
  r.last_problem = problem;
  state_->changed.notify_all();
}

std::size_t SampleTable::size() const {
  return state_->rows.size();
}

std::vector<ChannelReading> SampleTable::snapshot(SteadyTime now) const {
  std::lock_guard lock(state_->mutex);
  std::vector<ChannelReading> out(state_->rows.size());
  for (std::size_t i = 0; i < out.size(); ++i) {
    const auto& r = state_->rows[i];
    auto& o = out[i];
    o.reads_total = r.reads_total;
    o.read_errors_total = r.read_errors_total;
    o.read_duration_s = r.read_duration_s;
    o.stale = state_->is_stale(r, now);
    o.energy_j = r.energy.joules;
    o.covered_s = r.energy.covered_s;
    o.bridged_s = r.energy.bridged_s;
    if (r.watts) {
      o.age_s = std::max(0.0, seconds(now - r.read_at));
      o.read_at_unix = r.read_at_unix;
      o.centre_offset_s = r.centre_offset_s;
      if (!o.stale) {
        o.watts = r.watts;
        o.fresh_for_s = std::max(0.0, seconds(state_->max_age - (now - r.read_at)));
      }
    }
  }
  return out;
}

std::size_t SampleTable::wait_live(const std::vector<std::size_t>& rows, SteadyTime since,
                                   SteadyTime deadline) const {
  std::unique_lock lock(state_->mutex);
  state_->changed.wait_until(lock, deadline, [&] {
    return std::all_of(rows.begin(), rows.end(), [&](std::size_t i) {
      const auto& r = state_->rows[i];
      return r.completed_any && r.last_start >= since;
    });
  });
  std::size_t live = 0;
  for (auto i : rows) {
    const auto& r = state_->rows[i];
    if (r.watts && r.read_at >= since) live++;
  }
  return live;
}

}  // namespace cpupower::sources
