#include "scrape/gpu_leg.hpp"

#include <utility>

#include <fmt/ranges.h>

#include "artifacts/gpu_reasons.hpp"
#include "scrape/collector.hpp"

namespace cpupower::scrape {

namespace reason = artifacts::gpu_reason;

GpuLeg::GpuLeg(std::size_t endpoints, std::shared_ptr<GpuLegSummary> summary, GpuReadOptions read,
               int samples_schema)
    : out_(std::move(summary)),
      samples_schema_(artifacts::gpu_samples_header(samples_schema)
                          ? samples_schema
                          : artifacts::kGpuSamplesSchemaVersion),
      answered_(endpoints),
      read_(std::move(read)) {}

void GpuLeg::on_failure(std::size_t endpoint_index, std::string_view collector_reason) {
  // A body the GPU leg refused was noted in on_body already, with its own codes.
  if (collector_reason == kReasonNoGpus) return;
  // Before an endpoint's first rows it is still coming up (a dcgm-exporter takes seconds to
  // answer): that is readiness, which the session judges at its startup deadline
  // (exporter_startup_timeout), not a failure of the run's endpoint.
  if (endpoint_index >= answered_.size() || !answered_[endpoint_index]) return;
  // Refused connections, HTTP statuses, oversized bodies, names that stopped resolving: the
  // contract's vocabulary has one code for a request that got no usable answer. (A node whose
  // address cannot be found at launch is the session's endpoint_resolution_failed.)
  const auto code = collector_reason == kReasonTimeout     ? reason::kEndpointTimeout
                    : collector_reason == kReasonMalformed ? reason::kEndpointParseError
                                                           : reason::kEndpointHttpError;
  ++summary_.reason_counts[std::string(code)];
}

BodyOutcome GpuLeg::on_body(const BodyInput& input, std::string& lines) {
  BodyOutcome out;
  const GpuScrape scrape = gpu_readings_from_body(input.body, parsed_, read_);
  if (scrape.error) {
    out.reason = kReasonMalformed;
    out.detail = *scrape.error;
    return out;
  }
  for (const auto& code : scrape.reasons) ++summary_.reason_counts[code];
  out.timestamp_unix = input.midpoint_unix;
  if (scrape.gpus.empty()) {
    out.reason = kReasonNoGpus;
    out.detail = fmt::format("no usable GPU power in the body{}{}",
                             scrape.reasons.empty() ? "" : ": ", fmt::join(scrape.reasons, ", "));
    return out;
  }
  artifacts::GpuSampleOut row;
  row.timestamp_unix = input.midpoint_unix;
  row.scrape_seq = input.scrape_seq;
  row.hostname = std::string(input.hostname);
  for (const auto& gpu : scrape.gpus) {
    row.gpu_index = gpu.gpu_index;
    row.gpu_uuid = gpu.uuid;
    row.power_w = gpu.power_w;
    row.gpu_util_pct = gpu.gpu_util_pct;
    row.sm_active = gpu.sm_active;
    row.temperature_c = gpu.temperature_c;
    if (!artifacts::gpu_sample_writable(row)) {
      if (out.refused++ == 0) {
        out.refused_why = "refused GPU row for host '" + row.hostname + "' gpu " +
                          std::to_string(row.gpu_index) + ": not a row the contract accepts";
      }
      continue;
    }
    artifacts::append_gpu_row(lines, row, samples_schema_);
    ++out.rows;
  }
  summary_.rows += out.rows;
  // An endpoint that answered before has its first devices recorded: no lookup by hostname
  // (among a thousand) on every scrape.
  const bool known = input.endpoint_index < answered_.size() && answered_[input.endpoint_index];
  if (input.endpoint_index < answered_.size()) answered_[input.endpoint_index] = true;
  if (!known) {
    auto& first = summary_.first_devices[row.hostname];
    if (first.empty()) {
      for (const auto& gpu : scrape.gpus) first.push_back(gpu.gpu_index);
    }
  }
  return out;
}

Status GpuLeg::finalize(const CollectorStats&, std::optional<double>, double, const std::string&) {
  if (out_) *out_ = summary_;
  return Ok{};
}

}  // namespace cpupower::scrape
