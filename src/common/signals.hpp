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

}  // namespace cpupower::common
