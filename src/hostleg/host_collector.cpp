#include "hostleg/host_collector.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <utility>
#include <vector>

#include "artifacts/host_samples.hpp"
#include "artifacts/row_appender.hpp"
#include "common/log.hpp"
#include "common/signals.hpp"
#include "common/text.hpp"
#include "hostleg/markers.hpp"
#include "hostleg/node_metadata.hpp"
#include "hostleg/sampler.hpp"

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

// A write a second at most: rows reach the file within it.
constexpr auto kFlushPeriod = std::chrono::seconds(1);

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
  // Named members, not a structured binding: the lambdas below capture them, which clang
  // before 16 refuses for bindings.
  auto node = sources::open_node_sources(o, std::move(ladder));
  auto& resolved = node.base;
  auto& nvml = node.nvml;
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

  // The sample: on the readers' own cycle where the source has one (the ACPI pool: one
  // wake-up a cycle serves the read and the row), else on this thread's loop at the interval.
  auto sampler = std::make_shared<Sampler>(*resolved.source, nvml.get(), resolved.mode, host,
                                           o.interval_seconds);
  const bool on_read_cycle = resolved.source->run_on_read_cycle([sampler] { sampler->take(); });
  const auto period = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(o.interval_seconds));
  // Rows go to the file in one write a flush period (and on the way out), not one a sample:
  // a SIGKILL loses at most that much, and a shared file system sees a write a second.
  const auto flush_period = std::max<Clock::duration>(period, kFlushPeriod);

  RunOutcome outcome;
  std::uint64_t failing_writes = 0, failing_rows = 0, dropped_samples = 0, half_cycles = 0;
  auto write_pending = [&] {
    auto batch = sampler->rows();
    outcome.read_failure_count += batch.read_failures;
    half_cycles += batch.half_cycles;
    if (batch.dropped_samples > 0) {
      dropped_samples += batch.dropped_samples;
      log()->warn("the writer fell {} samples behind; samples dropped={} (total {})",
                  kMaxPendingSamples, batch.dropped_samples, dropped_samples);
    }
    if (batch.rows == 0) return;
    rows.append_rows(batch.text, batch.rows);
    if (rows.flush()) {
      if (failing_writes > 0) {
        log()->info("writes recovered path={} failed_writes={} rows_lost={}",
                    common::quoted(csv_path), failing_writes, failing_rows);
        failing_writes = failing_rows = 0;
      }
      outcome.sample_row_count += batch.rows;
      outcome.module_withheld_stale_rows += batch.withheld_stale;
      outcome.module_withheld_disagree_rows += batch.withheld_disagree;
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
      // Once when writes start failing, once when they recover: never a line per write.
      if (failing_writes++ == 0) {
        log()->warn("cannot append rows; they are lost until writes succeed path={} error={}",
                    common::quoted(csv_path), common::quoted(std::strerror(rows.last_errno())));
      }
      failing_rows += batch.rows;
    }
  };

  auto next_sample = Clock::now();
  auto next_flush = next_sample;
  int sig = 0;
  while (sig == 0) {
    auto now = Clock::now();
    if (!on_read_cycle && now >= next_sample) {
      sampler->take();
      // Fixed rate: a late wake-up is not made up with a burst of samples.
      next_sample += period;
      if (next_sample < now) next_sample = now;
    }
    // Until the first rows are on disk, at every interval: the ready marker waits on them.
    if (!ready || now >= next_flush) {
      write_pending();
      next_flush = now + flush_period;
    }
    auto wake = ready ? next_flush : now + period;
    if (!on_read_cycle) wake = std::min(wake, next_sample);
    now = Clock::now();
    sig = common::wait_shutdown_signal(
        std::chrono::ceil<std::chrono::milliseconds>(std::max(wake - now, Clock::duration{})),
        /*relayed=*/true);
  }
  log()->info("received {}, finishing", common::signal_name(sig));
  // The readers first, the sample job with them: then the last rows are all there is.
  if (nvml) nvml->stop(std::chrono::milliseconds(500));
  resolved.source->stop(std::chrono::milliseconds(500));
  write_pending();
  rows.close();
  outcome.ended_at_unix = unix_now();
  write_metadata(metadata_path, node_metadata(info, resolved, outcome));
  log()->info(
      "stopped rows={} read_failures={} write_errors={} rows_lost={} samples_dropped={} "
      "half_cycles_passed={}",
      outcome.sample_row_count, outcome.read_failure_count, rows.write_errors(),
      rows.rows_dropped(), dropped_samples, half_cycles);
  return outcome.sample_row_count > 0 ? 0 : kExitNoRows;
}

}  // namespace cpupower::hostleg
