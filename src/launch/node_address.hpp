#pragma once
// Where the collector reaches a node's exporter. Preferred: the node's own answer, from a
// tiny resolver srun starts there (`cpu-power node-address`): the address of
// runtime.network_interface when the recipe names one, else the source address of the
// node's route back to the launching host (the address the head node can reach it at).
// Fallback: name resolution on the head node. Both run under the startup deadline.

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.hpp"

namespace cpupower::launch {

struct InterfaceAddress {
  std::string interface;
  std::string address;  // numeric, no brackets, no zone
  bool ipv6 = false;
  bool loopback = false;
  bool link_local = false;
  bool up = true;
};

// The machine's interface addresses (getifaddrs), in the kernel's order.
std::vector<InterfaceAddress> local_interface_addresses();

// The local address the kernel would send from to reach `peer` (a UDP connect: no packet
// leaves). nullopt when `peer` is not a numeric address or there is no route.
std::optional<std::string> route_source_address(const std::string& peer);

// The rule described above, over given facts. `route_source` is route_source_address()
// toward the launching host, when known. An error when nothing fits.
Result<std::string> choose_node_address(const std::vector<InterfaceAddress>& addresses,
                                        const std::optional<std::string>& interface,
                                        const std::optional<std::string>& route_source);

// One line of resolver output, and the parse of all of them: node -> address. Lines that
// are not resolver lines (anything else a node prints) are ignored.
std::string resolver_line(const std::string& node, const std::string& address);
std::map<std::string, std::string> parse_resolver_output(std::string_view text);

// getaddrinfo on a detached thread, abandoned at `deadline` (a hung DNS server costs
// nothing but that thread). IPv4 preferred.
std::optional<std::string> resolve_name(const std::string& name,
                                        std::chrono::steady_clock::time_point deadline);

bool is_loopback_address(const std::string& address);
bool is_ip_literal(const std::string& text);

}  // namespace cpupower::launch
