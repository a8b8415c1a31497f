#pragma once
// <log_dir>/prometheus_sd.json: the run's CPU power exporters as a Prometheus file-based
// service discovery file (file_sd_configs), so that a cluster Prometheus scrapes them while
// the run lasts. One entry per node, so that each target carries its own `node` label:
//
//   [{"targets": ["10.0.0.7:9405"], "labels": {"node": "n1", "job_id": "123", "run_name": "r"}}]
//
// `job_id` is the Slurm job's (absent outside an allocation), `run_name` the recipe's `name`,
// else the log directory's name. Written atomically (temporary file, then rename) as soon as
// the exporters' addresses are known, and rewritten as an empty list `[]` when the session
// ends, so that Prometheus drops the targets instead of scraping stopped exporters
// (docs/operations.md).

#include <optional>
#include <string>
#include <vector>

#include "common/result.hpp"
#include "scrape/endpoint.hpp"

namespace cpupower::launch {

struct SessionPlan;

inline constexpr const char* kPrometheusSdFile = "prometheus_sd.json";

// host:port as a Prometheus target: an IPv6 literal in brackets.
std::string sd_target(const scrape::Endpoint& endpoint);

// The file's text for these endpoints (an empty list for none), ending in a newline.
std::string prometheus_sd_json(const std::vector<scrape::Endpoint>& endpoints,
                               const std::optional<std::string>& job_id,
                               const std::string& run_name);

// The run_name label: the recipe's name, else the log directory's last component.
std::string sd_run_name(const SessionPlan& plan);

// Writes <log_dir>/prometheus_sd.json atomically; an error when it cannot.
Status write_prometheus_sd(const std::string& log_dir, const std::string& text);

}  // namespace cpupower::launch
