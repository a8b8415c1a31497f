#pragma once
// What the collector does with the bodies it fetches. The collector owns the schedule, the
// requests and the samples file; a leg owns the meaning: which rows a body becomes, the
// file's header, and what is written at the end. Two legs exist: the CPU leg (socket rows
// from cpu-power-exporter into power/cpu/samples.csv, scrape/cpu_leg.hpp) and the GPU leg
// (device rows from dcgm-exporter into power/samples.csv, scrape/gpu_leg.hpp).
//
// Every call comes from the collector's loop thread, except finalize(), which comes from
// the thread that stops the collector once the loop has finished or been left behind; the
// collector serialises them, so a leg needs no lock of its own.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.hpp"
#include "scrape/readings.hpp"

namespace cpupower::scrape {

struct CollectorStats;

// One response with status 200 and a body within the cap.
struct BodyInput {
  std::size_t endpoint_index = 0;
  std::string_view hostname;
  std::string_view body;
  double midpoint_unix = 0;  // wall clock halfway between request start and response end
  double round_trip_s = 0;
  std::uint64_t scrape_seq = 0;  // the slot's number, shared by every endpoint's same slot
};

struct BodyOutcome {
  std::string_view reason;    // empty: rows appended (or unchanged); else why none, a kReason*
  std::string detail;         // for the log and NodeStats::last_error
  bool unchanged = false;     // the same readings as the rows last written: nothing appended
  std::size_t rows = 0;       // lines appended
  std::size_t refused = 0;    // rows the leg would not write (counted as dropped)
  std::string refused_why;    // the first one's reason
  double timestamp_unix = 0;  // the row time
  Mode mode = Mode::unknown;  // the CPU leg's resolved mode; unknown for the GPU leg
  // The CPU leg: sockets the node should have and this body lacks (degraded), ascending.
  std::vector<std::uint32_t> sockets_missing;
  // The CPU leg: series the body repeated (the first sample of each was used), the first.
  std::size_t duplicate_series = 0;
  std::string first_duplicate;
};

class Leg {
 public:
  virtual ~Leg() = default;

  virtual std::string_view samples_filename() const = 0;   // in CollectorOptions::out_dir
  virtual std::string_view samples_header() const = 0;     // without its line end
  virtual std::string_view manifest_filename() const = 0;  // "" when the leg writes none

  // Turns one body into whole CSV lines appended to `lines` (each ending in "\r\n").
  virtual BodyOutcome on_body(const BodyInput& input, std::string& lines) = 0;

  // A request that produced no body to read: a kReason* code (connect, timeout, ...).
  virtual void on_failure(std::size_t /*endpoint_index*/, std::string_view /*reason*/) {}

  // After the last scrape, with the collector's final counters: writes the leg's manifest
  // at `manifest_path` ("" when manifest_filename() is).
  virtual Status finalize(const CollectorStats& stats, std::optional<double> started_at_unix,
                          double stopped_at_unix, const std::string& manifest_path) = 0;
};

}  // namespace cpupower::scrape
