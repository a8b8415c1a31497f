#pragma once
// The clock check before the servers start. Row times come from each node's clock (the host
// leg) or from the head node's clock less the exporter's sample ages (the exporter and GPU
// legs), and window bounds from the benchmark client's clock: an offset between them moves
// every window edge. So each node of the session is probed once, with whatever time tool it
// has (timedatectl, chronyc, ntpq, adjtimex, each with a short timeout) and the kernel's own
// ntp_adjtime(2), which every Linux has.
//
// Node side: `cpu-power clock-check` prints each tool's raw output and one parseable result
// line. Head side: one srun step per node group writes each node's output to
// <log_dir>/clock_sync_<node>.out (simulate and local mode: one probe of this host, recorded
// for every node), then <log_dir>/clock_sync.json sums it up (docs/formats.md, Clock check).
// A failed or unsynchronised probe is a warning, never a failed benchmark.

#include <chrono>
#include <ctime>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "artifacts/gpu_manifest.hpp"

namespace cpupower::launch {

struct SessionPlan;

// |offset| above this is warned about and listed in clock_sync_failures: beyond the 50 ms
// over which Grace's firmware averages each power reading, the offset moves window edges by
// more than the readings' own time resolution.
inline constexpr double kClockOffsetBoundS = 0.05;

inline constexpr std::string_view kClockSyncSummaryFile = "clock_sync.json";

enum class ClockSynced { yes, no, unknown };
std::string_view clock_synced_name(ClockSynced s);  // yes | no | unknown

// What one tool said.
struct ClockFinding {
  std::string tool;  // timedatectl | chronyc | ntpq | adjtimex | ntp_adjtime
  ClockSynced synced = ClockSynced::unknown;
  std::optional<double> offset_s;  // local clock minus its time source, when the tool says
  std::string note;                // the line the verdict rests on, or why there is none
};

// The parsers, over a tool's stdout and stderr.
// `timedatectl status` ("System clock synchronized: yes", older "NTP synchronized: yes") or
// `timedatectl show` ("NTPSynchronized=yes").
ClockFinding parse_timedatectl(std::string_view text);
// `chronyc tracking`: "Leap status : Normal" (or an insert/delete second) is synchronised,
// "Not synchronised" is not; "System time : X seconds fast|slow of NTP time" is the offset.
ClockFinding parse_chronyc_tracking(std::string_view text);
// `ntpq -pn`: a peer marked '*' (or 'o', PPS) is the selected one and its offset column (ms)
// the offset; peers but none selected: not synchronised.
ClockFinding parse_ntpq_peers(std::string_view text);
// `adjtimex --print`: the kernel's status word, STA_UNSYNC (0x40) set or not.
ClockFinding parse_adjtimex(std::string_view text);
// ntp_adjtime(2)'s answer: TIME_ERROR (5) or STA_UNSYNC is not synchronised. No offset: the
// kernel holds only error estimates.
ClockFinding kernel_clock_finding(int state, long status, long maxerror_us, long esterror_us);

// The verdict of one node: the first definite finding in the order chronyc, ntpq (the tools
// that also report an offset), timedatectl, adjtimex, ntp_adjtime.
struct ClockProbe {
  ClockSynced synced = ClockSynced::unknown;
  std::optional<double> offset_s;
  std::optional<std::string> tool;
};
ClockProbe clock_verdict(const std::vector<ClockFinding>& findings);

// `cpu-power clock-check`'s whole output on this host: every tool tried (each with
// `tool_timeout`), its exit and raw output, the findings, and last the result line.
struct LocalClockCheck {
  ClockProbe probe;
  std::string output;
};
LocalClockCheck probe_local_clock(const std::string& hostname,
                                  std::chrono::milliseconds tool_timeout);

// The result line ("clock_sync synchronized=yes offset_seconds=1.2e-05 tool=chronyc
// hostname=n1"), and its parse from a node's output (the last such line); nullopt when the
// output has none.
std::string clock_result_line(const std::string& hostname, const ClockProbe& probe);
std::optional<ClockProbe> parse_clock_output(std::string_view text);

// The session's check: probes every node of `plan` (slurm: its clock steps, bounded by
// `step_timeout`; otherwise this host once), writes clock_sync_<node>.out and
// clock_sync.json under the log directory and warns, one line per node, about a node that
// is not synchronised, over kClockOffsetBoundS or not checked. With the check off
// (telemetry.clock_sync_check: false) nothing is probed and every node is "unknown" with no
// tool and no output file. Never throws.
artifacts::ClockSyncCheck check_session_clocks(const SessionPlan& plan,
                                               std::chrono::milliseconds step_timeout);

// The nodes to list in the GPU manifest's clock_sync_failures: not synchronised, over the
// bound, or not checked.
std::vector<std::string> clock_sync_failures(const artifacts::ClockSyncCheck& check);

}  // namespace cpupower::launch
