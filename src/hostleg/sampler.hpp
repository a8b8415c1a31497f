#pragma once
// cpu-power host-collect's samples between the thread that takes them and the one that writes
// them: a sample is a copy of the sources' latest readings, taken on a reader's thread (or the
// collector's own loop); the rows are built and formatted a batch at a time on the main thread,
// where a batch of ten costs about what one sample formatted on its own wake-up did.

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "sources/nvml.hpp"
#include "sources/source.hpp"

namespace cpupower::hostleg {

// At most this many samples wait for the writer (five minutes at 10 Hz): a writer blocked
// for longer (a hung file system) loses the newest, counted, instead of growing without end.
inline constexpr std::size_t kMaxPendingSamples = 3000;

class Sampler {
 public:
  // `nvml` (may be null) adds module power to the CPU sockets' rows; `mode` and `host` are
  // the rows' source and host columns.
  // `interval_s` is the sampling interval: a sample whose sockets were read more than half
  // of it apart is a cycle half finished (rows()).
  Sampler(const sources::Source& source, const sources::NvmlModuleReader* nvml, std::string mode,
          std::string host, double interval_s);

  // Takes a sample: the sources' latest readings. Any thread.
  void take();

  struct Batch {
    std::string text;  // formatted rows, each with its line end
    std::uint64_t rows = 0;
    std::uint64_t read_failures = 0;      // samples with no socket's power
    std::uint64_t dropped_samples = 0;    // samples lost while the writer was held up
    std::uint64_t withheld_stale = 0;     // rows whose socket NVML withheld as stale
    std::uint64_t withheld_disagree = 0;  // ... as its GPUs disagreeing
    std::uint64_t half_cycles = 0;        // samples passed over as a cycle half finished
  };

  // The rows of the samples taken since the last call, in the order taken: one per socket of
  // each sample that is a new reading (not the last one again). A sample whose sockets were
  // read more than half an interval apart caught a cycle half finished (one socket's new
  // value beside another's old one; a node's rows share one time, which would then be
  // neither's): it is passed over for the next, which holds the cycle whole and every value
  // it had. Only one in a row: sockets read apart at every cycle still give rows. One thread
  // only.
  Batch rows();

 private:
  struct Taken {
    sources::Snapshot base;
    std::optional<sources::Snapshot> module;
  };
  const sources::Source& source_;
  const sources::NvmlModuleReader* nvml_;
  const std::string mode_;
  const std::string host_;
  const double interval_s_;
  std::mutex mutex_;
  std::vector<Taken> taken_;   // guarded
  std::uint64_t dropped_ = 0;  // guarded
  double last_time_ = -1;      // rows()' thread only
  bool passed_last_ = false;   // rows()' thread only: the last new sample was a half cycle
  double passed_time_ = -1;    // rows()' thread only: its time (seen again, it is no news)
};

}  // namespace cpupower::hostleg
