#pragma once
// The GPU leg: dcgm-exporter bodies -> one row per GPU per scrape in power/samples.csv
// (GPU schema v3, or v1/v2 when asked), every GPU of a scrape with the same timestamp and
// scrape_seq. The manifest and windows are the session's (they need the benchmark's windows
// and the expected devices); this leg gives it what the scrapes said: each contract reason
// code met and how often, and the devices each node showed first.
//
// Row time: the request midpoint. dcgm-exporter reports no age for its values; a value it
// serves may be up to its own collection interval old (docs/formats.md).

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "artifacts/gpu_samples_out.hpp"
#include "expo/parser.hpp"
#include "scrape/gpu_readings.hpp"
#include "scrape/leg.hpp"

namespace cpupower::scrape {

// No GPU power in a body that parsed: every power sample missing, refused or MIG.
inline constexpr std::string_view kReasonNoGpus = "no_gpus";

// What the GPU leg's scrapes met, by contract reason code.
struct GpuLegSummary {
  std::map<std::string, std::uint64_t> reason_counts;
  std::uint64_t rows = 0;
  // The GPU indices of each host's first scrape that gave rows: the devices a node showed
  // when it became ready, the expected ones when no roles file says otherwise.
  std::map<std::string, std::vector<long long>> first_devices;
};

class GpuLeg final : public Leg {
 public:
  // For `endpoints` endpoints. `summary` receives the counts at finalize (the session reads it
  // after the collector stopped; the leg's own counts may still move if the loop was left
  // behind). `read` names the exporter's families and labels and the GPUs the run uses
  // (default: dcgm-exporter's, every GPU). `samples_schema`: the samples.csv layout, 1, 2 or 3
  // (anything else: 3).
  GpuLeg(std::size_t endpoints, std::shared_ptr<GpuLegSummary> summary, GpuReadOptions read = {},
         int samples_schema = 3);

  std::string_view samples_filename() const override { return artifacts::kGpuSamplesFilename; }
  std::string_view samples_header() const override {
    return *artifacts::gpu_samples_header(samples_schema_);
  }
  std::string_view manifest_filename() const override { return {}; }
  BodyOutcome on_body(const BodyInput& input, std::string& lines) override;
  void on_failure(std::size_t endpoint_index, std::string_view reason) override;
  Status finalize(const CollectorStats& stats, std::optional<double> started_at_unix,
                  double stopped_at_unix, const std::string& manifest_path) override;

 private:
  std::shared_ptr<GpuLegSummary> out_;
  int samples_schema_ = 3;
  std::vector<bool> answered_;  // by endpoint: gave rows at least once
  GpuLegSummary summary_;
  expo::ParseResult parsed_;  // reused by every body: no allocation per scrape
  GpuReadOptions read_;
};

}  // namespace cpupower::scrape
