#pragma once
// An exporter is ready when its /health answers 200. Every endpoint is polled at once
// (libcurl multi), each retried every 100 ms, until all are ready, the deadline passes or
// `give_up` says so. Readiness only informs the log: the benchmark starts either way.

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "scrape/client_security.hpp"
#include "scrape/endpoint.hpp"

namespace cpupower::launch {

// http://<address>:<port>/health (https:// with `https`), the address bracketed when IPv6.
std::string health_url(const scrape::Endpoint& endpoint, bool https = false);

// Per endpoint: seconds from the call until it answered, or nullopt when it never did.
// `security`: TLS and Basic authentication, as the collector scrapes (an exporter with a web
// config protects /health too).
std::vector<std::optional<double>> wait_until_ready(const std::vector<scrape::Endpoint>& endpoints,
                                                    std::chrono::steady_clock::time_point deadline,
                                                    const std::function<bool()>& give_up,
                                                    const scrape::ClientSecurity& security = {});

}  // namespace cpupower::launch
