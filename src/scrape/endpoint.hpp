#pragma once
// A worker node's exporter as the head-node collector sees it: the hostname its rows carry
// and the address and port it is scraped at.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cpupower::scrape {

struct Endpoint {
  std::string hostname;  // written to samples.csv and keyed in cpu_manifest.json
  std::string address;   // IPv4 or IPv6 literal (no brackets) or a DNS name
  std::uint16_t port = 0;

  bool operator==(const Endpoint&) const = default;
};

// http://10.0.0.7:9405/metrics, http://[fd00::7]:9405/metrics (a zone id is %25-escaped);
// https:// with `https`.
std::string endpoint_url(const Endpoint& endpoint, bool https = false);

// Parses HOST=ADDR:PORT, where ADDR may be a bracketed IPv6 literal ([fd00::7]). nullopt
// with `error` saying what is wrong, quoting the text.
std::optional<Endpoint> parse_endpoint(std::string_view spec, std::string* error);

// Parses an endpoints file's text: one HOST=ADDR:PORT per line; blank lines and everything
// after a '#' are ignored. nullopt with `error` naming the 1-based line on the first bad one.
std::optional<std::vector<Endpoint>> parse_endpoints_text(std::string_view text,
                                                          std::string* error);

}  // namespace cpupower::scrape
