#pragma once
// The thread scaffolding every reader shares: detached threads that each run one cycle at a
// fixed rate measured from the start of the cycle (a slow cycle stretches its own period,
// with no extra sleep), a stop flag that wakes them, and a bounded wait for them to exit.
// Threads are detached and own what their cycle captures, so a thread blocked for good in a
// firmware read or a library call cannot hold up shutdown.

#include <chrono>
#include <functional>
#include <memory>
#include <optional>

namespace cpupower::sources {

class ReaderThreads {
 public:
  ReaderThreads();
  ~ReaderThreads();  // stop(0): never waits
  ReaderThreads(const ReaderThreads&) = delete;
  ReaderThreads& operator=(const ReaderThreads&) = delete;

  // Runs `cycle` on a new thread every `period` until stop(), or until `cycle` returns false.
  void spawn(std::chrono::milliseconds period, std::function<bool()> cycle);

  // Runs `cycle` on a new thread, and again at the time it returns, until stop() or until it
  // returns nullopt.
  void spawn_at(std::function<std::optional<std::chrono::steady_clock::time_point>()> cycle);

  // Sets the stop flag, wakes every thread and waits up to `grace` for them to exit.
  // Returns true when all did. Only the first call waits.
  bool stop(std::chrono::milliseconds grace);

  // Threads running now (for tests and diagnostics).
  int running() const;

  struct State;

 private:
  std::shared_ptr<State> state_;
};

// For a watch that sleeps until its state can next change (a value going stale): just past
// `can_change`, and never sooner than `period` from `now`; `period` from now when nothing can
// change (`can_change` is the time_point's max).
std::chrono::steady_clock::time_point look_again(std::chrono::steady_clock::time_point can_change,
                                                 std::chrono::steady_clock::time_point now,
                                                 std::chrono::milliseconds period);

// Many jobs of one kind on a bounded number of threads (the ACPI reader: one job per hwmon
// device, thousands on some machines). Each job runs one cycle at a time, at a fixed rate on
// its own grid (due, due + period, ...), so jobs started together stay together and one
// wake-up serves them all; a job due within a tenth of its period runs with the one that
// woke the worker. A late job runs as soon as a worker is free, with no extra sleep, and a
// cycle that overran its period starts the next at once. A cycle that blocks (a hung firmware read)
// holds its worker and only its own job: once a worker has been in one cycle for longer than
// `stuck_after`, a supervisor starts another, so that enough threads are always there for the other
// jobs. The supervisor looks when a cycle could first count as stuck (the next job's due time
// plus stuck_after, or a running cycle's start plus stuck_after), at most every stuck_after / 2,
// and every stuck_after / 2 while a job waits for a worker. How many workers are enough it
// decides at each look from the time the cycles took: reads whose values come back at once share
// one worker, so an idle node is not woken by a thread per job; slow ones get up to `workers`,
// doubling each tick while a job waits for one, and at least one worker per job whose reads
// block (each of its last three cycles longer than 50 ms), so that jobs due together read side
// by side and their values describe one instant. A worker that finds the pool with more free
// workers than that leaves. Threads: 1 to `workers`, one supervisor, and one per cycle blocked for
// longer than `stuck_after`.
class ReaderPool {
 public:
  ReaderPool(std::size_t workers, std::chrono::milliseconds stuck_after);
  ~ReaderPool();  // stop(0): never waits
  ReaderPool(const ReaderPool&) = delete;
  ReaderPool& operator=(const ReaderPool&) = delete;

  // Adds a job, due at once and then every `period`. Added after start(), it is first due at
  // the pool's next grid time of its period: with jobs of the same period it shares their
  // wake-up and runs after them (jobs due together run in the order they were added).
  void add(std::chrono::milliseconds period, std::function<void()> cycle);
  // Adds a job that takes what the other jobs read (the host collector's sample), on the pool's
  // grid of its period. It runs before the jobs due with it, so it sees the values their last
  // cycle finished, never a cycle half done (slow reads still in flight), and its wake-up is
  // theirs. It keeps to its grid: a late cycle is followed by the next grid time after the one
  // it was due at (at once if that has passed), not half a period later, since it takes no
  // counter's difference; a sample that skipped grid times would drop every other reading.
  void add_observer(std::chrono::milliseconds period, std::function<void()> cycle);
  void start();

  // Sets the stop flag, wakes every thread and waits up to `grace` for them to exit (a cycle
  // in progress finishes first). Returns true when all did. Only the first call waits.
  bool stop(std::chrono::milliseconds grace);

  // Threads running now (workers, blocked ones included, and the supervisor).
  std::size_t threads() const;
  // How many times a worker went to sleep until a job's time (for tests and diagnostics).
  std::size_t sleeps() const;
  // How many times the supervisor looked at the pool (for tests and diagnostics).
  std::size_t supervisor_passes() const;

  struct State;

 private:
  void add_job(std::chrono::milliseconds period, std::function<void()> cycle, bool observer);
  std::shared_ptr<State> state_;
};

}  // namespace cpupower::sources
