#include "sources/reader_threads.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <functional>
#include <list>
#include <mutex>
#include <optional>
#include <queue>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

namespace cpupower::sources {

struct ReaderThreads::State {
  std::mutex mutex;
  std::condition_variable wake;
  bool stopping = false;
  int running = 0;
};

ReaderThreads::ReaderThreads() : state_(std::make_shared<State>()) {}

ReaderThreads::~ReaderThreads() {
  stop(std::chrono::milliseconds(0));
}

void ReaderThreads::spawn(std::chrono::milliseconds period, std::function<bool()> cycle) {
  spawn_at(
      [period, cycle = std::move(cycle)]() -> std::optional<std::chrono::steady_clock::time_point> {
        const auto cycle_start = std::chrono::steady_clock::now();
        if (!cycle()) return std::nullopt;
        return cycle_start + period;
      });
}

void ReaderThreads::spawn_at(
    std::function<std::optional<std::chrono::steady_clock::time_point>()> cycle) {
  {
    std::lock_guard lock(state_->mutex);
    if (state_->stopping) return;
    state_->running++;
  }
  std::thread([st = state_, cycle = std::move(cycle)] {
    while (true) {
      const auto next = cycle();
      if (!next) break;
      std::unique_lock lock(st->mutex);
      if (st->wake.wait_until(lock, *next, [&] { return st->stopping; })) break;
    }
    std::lock_guard lock(st->mutex);
    st->running--;
    st->wake.notify_all();
  }).detach();
}

bool ReaderThreads::stop(std::chrono::milliseconds grace) {
  std::unique_lock lock(state_->mutex);
  if (state_->stopping) return state_->running == 0;
  state_->stopping = true;
  state_->wake.notify_all();
  return state_->wake.wait_for(lock, grace, [&] { return state_->running == 0; });
}

std::chrono::steady_clock::time_point look_again(std::chrono::steady_clock::time_point can_change,
                                                 std::chrono::steady_clock::time_point now,
                                                 std::chrono::milliseconds period) {
  if (can_change == std::chrono::steady_clock::time_point::max()) return now + period;
  // Just past it: a value counts as stale once it is older than the bound, not at it.
  return std::max(can_change + std::chrono::milliseconds(1), now + period);
}

int ReaderThreads::running() const {
  std::lock_guard lock(state_->mutex);
  return state_->running;
}

using PoolClock = std::chrono::steady_clock;

// A cycle this long blocked in its read: far beyond a value the kernel hands back at once
// (microseconds), short of a firmware round trip (a Grace ACPI read, some 150 ms).
constexpr auto kSlowCycle = std::chrono::milliseconds(50);

struct ReaderPool::State {
  struct Job {
    std::chrono::milliseconds period;
    std::function<void()> cycle;
    bool observer = false;  // add_observer(): runs first among the jobs due with it
    // Locked: how long its last cycles took, and how many it has finished.
    std::array<PoolClock::duration, 3> took{};
    std::size_t finished = 0;
    // Its reads block (a firmware round trip, not a value the kernel hands back at once):
    // every one of its last three cycles took longer than kSlowCycle.
    bool slow() const {
      return finished >= took.size() &&
             std::all_of(took.begin(), took.end(), [](auto d) { return d > kSlowCycle; });
    }
  };
  // (when, 0 for an observer and 1 for a reader, job): observers first among jobs due together.
  using Due = std::tuple<PoolClock::time_point, int, std::size_t>;
  Due due(PoolClock::time_point when, std::size_t job) const {
    return {when, jobs[job].observer ? 0 : 1, job};
  }

  std::size_t configured = 1;  // the pool's `workers`
  std::size_t most = 1;        // the most free workers the pool keeps: configured, at most jobs
  std::size_t target = 1;      // workers that must be free for the jobs now (not blocked)
  std::chrono::milliseconds stuck_after{1000};
  // The time finished cycles took since the supervisor last sized the pool, each counted up
  // to stuck_after (a longer one was replaced when it passed that).
  PoolClock::duration busy{};
  PoolClock::time_point sized_at{};
  PoolClock::time_point origin{};  // start(): every job's grid is origin + k x its period
  // Grows under the lock (add() after start()); a worker takes its job's address under the
  // lock and runs it without: a deque's push_back keeps the addresses of its elements.
  std::deque<Job> jobs;

  mutable std::mutex mutex;
  std::condition_variable wake;       // workers: a job may be due, or stopping
  std::condition_variable supervise;  // the supervisor: stopping
  std::condition_variable exited;     // stop(): a thread left
  bool started = false;
  bool stopping = false;
  std::size_t running = 0;
  std::size_t sleeps = 0;  // waits a worker began for a job's time
  std::size_t looks = 0;   // the supervisor's passes
  std::priority_queue<Due, std::vector<Due>, std::greater<>> queue;  // jobs not in a cycle
  // One entry per worker: when its current cycle started; nullopt between cycles.
  std::list<std::optional<PoolClock::time_point>> workers;

  // Workers not blocked: between cycles, or in one for less than stuck_after. Locked.
  std::size_t free_workers(PoolClock::time_point now) const {
    std::size_t n = 0;
    for (const auto& since : workers) {
      if (!since || now - *since < stuck_after) ++n;
    }
    return n;
  }
};

namespace {

// The first time of origin + k x period after `after`.
PoolClock::time_point next_on_grid(PoolClock::time_point origin, std::chrono::milliseconds period,
                                   PoolClock::time_point after) {
  if (after < origin || period <= std::chrono::milliseconds::zero()) return after + period;
  return origin + ((after - origin) / period + 1) * period;
}

void pool_worker(std::shared_ptr<ReaderPool::State> st,
                 std::list<std::optional<PoolClock::time_point>>::iterator slot) {
  std::unique_lock lock(st->mutex);
  while (!st->stopping) {
    // More free workers than the jobs need now (the pool shrank): this one leaves.
    if (st->free_workers(PoolClock::now()) > st->target) break;
    if (st->queue.empty()) {
      st->wake.wait(lock);
      continue;
    }
    const auto [due, rank, job] = st->queue.top();
    // A job due within a tenth of its period runs now, beside the one that woke this worker:
    // jobs whose times have drifted apart would otherwise wake it once each.
    if (PoolClock::now() + st->jobs[job].period / 10 < due) {
      st->sleeps++;
      st->wake.wait_until(lock, due);
      continue;
    }
    st->queue.pop();
    const auto start = PoolClock::now();
    *slot = start;
    const auto& cycle = st->jobs[job].cycle;
    lock.unlock();
    cycle();
    lock.lock();
    *slot = std::nullopt;
    const auto now = PoolClock::now();
    st->busy += std::min<PoolClock::duration>(now - start, st->stuck_after);
    auto& done = st->jobs[job];
    done.took[done.finished++ % done.took.size()] = now - start;
    // The next cycle at the job's next grid time at least half a period after this one
    // started, so that jobs started together stay together and one wake-up serves them all.
    // A cycle that started late (a stalled machine, a worker held by another job) skips the
    // grid times it missed instead of starting a grid of its own at its end, and never has
    // the next follow it by less than half a period (a counter's difference over a sliver of
    // time is mostly the meter's own update jitter). One that overran its period starts the
    // next at once, and the one after is back on the grid. An observer takes no counter's
    // difference: its next cycle is the grid time after the one it was due at, so that a
    // sample held up by slow reads takes every cycle's values, not every other one's.
    const auto period = done.period;
    const auto on_grid =
        next_on_grid(st->origin, period, done.observer ? due : std::max(due, start + period / 2));
    st->queue.push(st->due(std::max(on_grid, now), job));
    st->wake.notify_one();
    // Back from a long cycle into a pool that replaced it: one worker too many.
    if (st->free_workers(now) > st->target) break;
  }
  st->workers.erase(slot);
  st->running--;
  st->exited.notify_all();
}

// Locked: a worker more, counted as free.
void spawn_worker(const std::shared_ptr<ReaderPool::State>& st) {
  const auto slot = st->workers.emplace(st->workers.end());
  st->running++;
  std::thread(pool_worker, st, slot).detach();
}

// Locked: how many free workers the jobs need now. Twice as many as before (up to `most`)
// while a job waits longer than a tick for a worker, which finds its level within a few ticks
// when reads turn slow or hang; otherwise one and a half times the workers the finished
// cycles kept busy since the last tick (at least one), so fast reads share one thread and
// wake it once a job instead of waking every idle worker at each job's time. And at least one
// worker per slow job: jobs due together then read side by side, and the values of one grid
// time describe one instant (a node's sockets share one row time downstream), not reads
// spread over most of a slow period one after another. With slow jobs, one more for the
// observers: a worker free at their grid time, so a sample copies one finished cycle at its
// time instead of waiting for the first read to end and copying a cycle half finished.
std::size_t pool_size(ReaderPool::State& st, PoolClock::time_point now, PoolClock::duration tick) {
  const bool waiting = !st.queue.empty() && now - std::get<0>(st.queue.top()) > tick;
  const double elapsed = std::chrono::duration<double>(now - st.sized_at).count();
  const double busy = std::chrono::duration<double>(st.busy).count();
  st.busy = {};
  st.sized_at = now;
  if (waiting) return std::min(st.most, 2 * st.target);
  const auto wanted = static_cast<std::size_t>(std::ceil(1.5 * busy / std::max(elapsed, 1e-3)));
  const auto slow = static_cast<std::size_t>(
      std::count_if(st.jobs.begin(), st.jobs.end(), [](const auto& j) { return j.slow(); }));
  const bool observers =
      std::any_of(st.jobs.begin(), st.jobs.end(), [](const auto& j) { return j.observer; });
  const std::size_t needed = slow + (slow > 0 && observers ? 1 : 0);
  return std::clamp<std::size_t>(std::max(wanted, needed), 1, st.most);
}

// Locked: when the supervisor must look next. A cycle can count as stuck no sooner than
// stuck_after after it starts, and none starts before the next job is due, so it sleeps until
// the earliest of those (a worker starting a cycle need not wake it); while a job waits for a
// worker, a tick from now, to grow the pool. Never sooner than a tick from now: no more often
// than it once looked every tick.
PoolClock::time_point next_look(const ReaderPool::State& st, PoolClock::time_point now,
                                PoolClock::duration tick) {
  if (!st.queue.empty() && now - std::get<0>(st.queue.top()) > tick) return now + tick;
  auto next =
      (st.queue.empty() ? now : std::max(std::get<0>(st.queue.top()), now)) + st.stuck_after;
  for (const auto& since : st.workers) {
    if (since && *since + st.stuck_after > now) next = std::min(next, *since + st.stuck_after);
  }
  return std::max(next, now + tick);
}

void pool_supervisor(std::shared_ptr<ReaderPool::State> st) {
  std::unique_lock lock(st->mutex);
  const auto tick =
      std::max<PoolClock::duration>(st->stuck_after / 2, std::chrono::milliseconds(10));
  auto next = PoolClock::now() + tick;
  while (!st->supervise.wait_until(lock, next, [&] { return st->stopping; })) {
    const auto now = PoolClock::now();
    st->looks++;
    st->target = pool_size(*st, now, tick);
    for (auto free = st->free_workers(now); free < st->target; ++free) spawn_worker(st);
    next = next_look(*st, now, tick);
  }
  st->running--;
  st->exited.notify_all();
}

}  // namespace

ReaderPool::ReaderPool(std::size_t workers, std::chrono::milliseconds stuck_after)
    : state_(std::make_shared<State>()) {
  state_->configured = std::max<std::size_t>(workers, 1);
  state_->most = state_->configured;
  state_->stuck_after = stuck_after;
}

ReaderPool::~ReaderPool() {
  stop(std::chrono::milliseconds(0));
}

void ReaderPool::add(std::chrono::milliseconds period, std::function<void()> cycle) {
  add_job(period, std::move(cycle), false);
}

void ReaderPool::add_observer(std::chrono::milliseconds period, std::function<void()> cycle) {
  add_job(period, std::move(cycle), true);
}

void ReaderPool::add_job(std::chrono::milliseconds period, std::function<void()> cycle,
                         bool observer) {
  std::lock_guard lock(state_->mutex);
  if (state_->stopping) return;
  state_->jobs.push_back({period, std::move(cycle), observer});
  if (!state_->started) return;
  state_->most = std::min(state_->configured, state_->jobs.size());
  // Running: on the pool's grid, so that it wakes with the jobs of its period (readers run
  // in the order they were added, observers before them).
  state_->queue.push(
      state_->due(next_on_grid(state_->origin, period, PoolClock::now()), state_->jobs.size() - 1));
  state_->wake.notify_one();
}

void ReaderPool::start() {
  std::lock_guard lock(state_->mutex);
  if (state_->started || state_->stopping) return;
  state_->started = true;
  const auto now = PoolClock::now();
  for (std::size_t i = 0; i < state_->jobs.size(); ++i) state_->queue.push(state_->due(now, i));
  // As many workers as jobs (up to `most`) for the first cycles, whose reads may all be slow;
  // the supervisor sizes the pool from then on.
  state_->most = std::min(state_->most, std::max<std::size_t>(state_->jobs.size(), 1));
  state_->target = state_->most;
  state_->sized_at = now;
  state_->origin = now;
  for (std::size_t i = 0; i < state_->target; ++i) spawn_worker(state_);
  state_->running++;
  std::thread(pool_supervisor, state_).detach();
}

bool ReaderPool::stop(std::chrono::milliseconds grace) {
  std::unique_lock lock(state_->mutex);
  if (state_->stopping) return state_->running == 0;
  state_->stopping = true;
  state_->wake.notify_all();
  state_->supervise.notify_all();
  return state_->exited.wait_for(lock, grace, [&] { return state_->running == 0; });
}

std::size_t ReaderPool::sleeps() const {
  std::lock_guard lock(state_->mutex);
  return state_->sleeps;
}

std::size_t ReaderPool::supervisor_passes() const {
  std::lock_guard lock(state_->mutex);
  return state_->looks;
}

std::size_t ReaderPool::threads() const {
  std::lock_guard lock(state_->mutex);
  return state_->running;
}

}  // namespace cpupower::sources
