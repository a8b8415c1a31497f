#pragma once
// Shutdown signals handled on a dedicated waiter rather than in an async handler: block
// SIGINT/SIGTERM in every thread (call before starting any), then wait for one.

#include <signal.h>

#include <chrono>
#include <optional>

namespace cpupower::common {

// SIGINT and SIGTERM: the signals that ask a process of ours to stop. With `relayed`, also
// SIGUSR1, the stop a head node sends through srun: srun relays SIGUSR1 to its tasks, while
// a SIGTERM to srun makes it kill the step (SIGKILL) instead of passing it on.
sigset_t shutdown_set(bool relayed = false);

void block_shutdown_signals(bool relayed = false);

// Waits for a shutdown signal up to `timeout` (forever when nullopt). Returns the signal
// number, or 0 on timeout.
int wait_shutdown_signal(std::optional<std::chrono::milliseconds> timeout = std::nullopt,
                         bool relayed = false);

const char* signal_name(int sig);

// SIGPIPE ignored, for a command whose stdout may be a pipe its reader closes (`cpu-power run
// ... | head`): a write there then fails with EPIPE instead of killing the process. Children
// get SIGPIPE back at its default (launch/process.cpp resets it in every spawn).
void ignore_sigpipe();

// Whether stdout is a pipe or socket whose reader has gone away (poll reports POLLERR on it);
// false for anything else, a full pipe included. Writes no byte.
bool stdout_reader_gone();

// A closed stdout is a lost log, not a reason to stop: when stdout_reader_gone(), says so
// once on stderr, stops every log line and std::cout output from being written there (the
// process's own writes, not its children's: their stdout is left alone) and returns true;
// later calls return true and do nothing. False while stdout is fine.
bool retire_closed_stdout();

}  // namespace cpupower::common
