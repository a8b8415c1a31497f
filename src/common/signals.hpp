#pragma once
// Shutdown signals handled on a dedicated waiter rather than in an async handler: block
// SIGINT/SIGTERM in every thread (call before starting any), then wait for one.

#include <signal.h>

#include <chrono>
#include <optional>

namespace cpupower::common {

// SIGINT and SIGTERM: the signals that ask a process of ours to stop.
sigset_t shutdown_set();

void block_shutdown_signals();

// Waits for SIGINT or SIGTERM up to `timeout` (forever when nullopt). Returns the signal
// number, or 0 on timeout.
int wait_shutdown_signal(std::optional<std::chrono::milliseconds> timeout = std::nullopt);

const char* signal_name(int sig);

}  // namespace cpupower::common
