#include "hostleg/host_collector.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>

#include "artifacts/host_samples.hpp"
#include "artifacts/row_appender.hpp"
#include "common/log.hpp"
#include "common/signals.hpp"
#include "common/text.hpp"
#include "hostleg/markers.hpp"
#include "hostleg/node_metadata.hpp"
#include "hostleg/socket_rows.hpp"

namespace cpupower::hostleg {

namespace {

using Clock = std::chrono::steady_clock;

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

auto log() {
  return common::logger("cpu_power::host_collect");
}

bool write_metadata(const std::string& path, const nlohmann::json& j) {
  const auto written = common::write_file_atomic(path, j.dump(2) + "\n", true);
  if (written) return true;
  log()->warn("cannot write node metadata path={} error={}", common::quoted(path),
              common::quoted(written.error()));
  return false;
}

// Counts the rows whose socket NVML withheld, by reason (their module_w is empty).
void count_withheld(const std::vector<sources::ModuleSocketState>& modules,
                    const std::vector<artifacts::HostSampleRow>& rows, RunOutcome& outcome) {
  for (const auto& row : rows) {
    for (const auto& m : modules) {
      if (m.socket != row.socket_id) continue;
      outcome.module_withheld_stale_rows += m.stale;
      outcome.module_withheld_disagree_rows += m.disagree;
    }
  }
}

}  // namespace

std::string node_name() {
  if (const char* n = std::getenv("SLURMD_NODENAME"); n && *n) return n;
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  std::string name = host;
  return name.substr(0, name.find('.'));
}

int run_host_collect(const HostCollectOptions& o) {
  ::umask(0002);
  const std::string host = o.hostname.empty() ? node_name() : o.hostname;
  if (!is_file_name(host)) {
    // The host names this node's files in the output and ready directories: anything but a
    // plain file name would write outside them.
    log()->error(
        "invalid host name host={}: it names this node's files, so it must not be "
        "empty, '.', '..' or hold a '/'",
        common::quoted(host));
    return kExitNoSource;
  }
  for (const auto* dir : {&o.output_dir, &o.ready_dir}) {
    std::error_code ec;
    std::filesystem::create_directories(*dir, ec);
    if (ec) {
      log()->error("cannot create directory path={} error={}", common::quoted(*dir),
                   common::quoted(ec.message()));
      return kExitNoSource;
    }
  }

  sources::LadderOptions ladder;
  ladder.read_interval =
      std::chrono::milliseconds(std::max<long>(1, std::lround(o.interval_seconds * 1000.0)));
  ladder.max_age = std::chrono::milliseconds(std::lround(o.max_age_s * 1000.0));
  ladder.dcgm.poll_interval = ladder.read_interval;
  ladder.dcgm.utilization = true;
  auto [resolved, nvml] = sources::open_node_sources(o, std::move(ladder));
  if (!resolved.source) {
    log()->error("no CPU power source; writing the error marker error={}",
                 common::quoted(resolved.error));
    if (const auto written = write_error_marker(o.ready_dir, host, resolved.error); !written) {
      log()->error("cannot write the error marker error={}", common::quoted(written.error()));
    }
    return kExitNoSource;
  }

  RunInfo info{host, o.source, o.interval_seconds, unix_now(), nvml != nullptr};
  const std::string metadata_path = o.output_dir + "/" + host + ".metadata.json";
  const std::string csv_path = o.output_dir + "/" + host + ".csv";
  write_metadata(metadata_path, node_metadata(info, resolved));

  auto opened = artifacts::RowAppender::open(csv_path, artifacts::kHostHeader, 0664);
  if (!opened) {
    // errno is still the failed open's or header write's (a successful close keeps it).
    const std::string why = "cannot write " + csv_path + ": " + std::strerror(errno);
    log()->error("{}", why);
    (void)write_error_marker(o.ready_dir, host, why);
    return kExitNoSource;
  }
  auto& rows = **opened;
  log()->info("collecting host={} source={} interval_s={} csv={}", host, resolved.mode,
              o.interval_seconds, common::quoted(csv_path));
  bool ready = false;

  RunOutcome outcome;
  std::uint64_t failing_writes = 0, failing_rows = 0;
  double last_time = -1;
  const auto period = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(o.interval_seconds));
  auto next = Clock::now();
  int sig = 0;
  while (sig == 0) {
    const auto base = resolved.source->snapshot();
    std::optional<sources::Snapshot> module;
    if (nvml) module = nvml->snapshot();
    auto sample = socket_rows(base, resolved.mode, module ? &*module : nullptr, host);
    if (sample.rows.empty()) {
      outcome.read_failure_count++;
    } else if (sample.timestamp_unix != last_time) {  // a new reading, not the last one again
      last_time = sample.timestamp_unix;
      std::string text;
      for (const auto& row : sample.rows) text += artifacts::format_host_row(row);
      rows.append_rows(text, sample.rows.size());
      if (rows.flush()) {
        if (failing_writes > 0) {
          log()->info("writes recovered path={} failed_writes={} rows_lost={}",
                      common::quoted(csv_path), failing_writes, failing_rows);
          failing_writes = failing_rows = 0;
        }
        outcome.sample_row_count += sample.rows.size();
        if (module) count_withheld(module->modules, sample.rows, outcome);
        // Ready once rows are on disk: the head node starts the benchmark on it, and an
        // energy window needs a sample at or before its start.
        if (!ready) {
          const auto written = write_ready_marker(o.ready_dir, host, resolved.mode, unix_now());
          if (!written) {
            log()->warn("cannot write the ready marker error={}", common::quoted(written.error()));
          }
        }
        ready = true;
      } else {
        // Once when writes start failing, once when they recover: never a line per sample.
        if (failing_writes++ == 0) {
          log()->warn("cannot append rows; they are lost until writes succeed path={} error={}",
                      common::quoted(csv_path), common::quoted(std::strerror(rows.last_errno())));
        }
        failing_rows += sample.rows.size();
      }
    }
    // Fixed rate: a late wake-up is not made up with a burst of samples.
    next += period;
    const auto now = Clock::now();
    if (next < now) next = now;
    sig = common::wait_shutdown_signal(std::chrono::ceil<std::chrono::milliseconds>(next - now),
                                       /*relayed=*/true);
  }
  log()->info("received {}, finishing", common::signal_name(sig));
  rows.close();
  outcome.ended_at_unix = unix_now();
  write_metadata(metadata_path, node_metadata(info, resolved, outcome));
  if (nvml) nvml->stop(std::chrono::milliseconds(500));
  resolved.source->stop(std::chrono::milliseconds(500));
  log()->info("stopped rows={} read_failures={} write_errors={} rows_lost={}",
              outcome.sample_row_count, outcome.read_failure_count, rows.write_errors(),
              rows.rows_dropped());
  return outcome.sample_row_count > 0 ? 0 : kExitNoRows;
}

}  // namespace cpupower::hostleg
