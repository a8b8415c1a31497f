#include "launch/node_address.hpp"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>

#include "common/text.hpp"

namespace cpupower::launch {
namespace {

constexpr std::string_view kResolverTag = "cpu-power-node-address";

std::string numeric(const sockaddr* sa) {
  char buf[INET6_ADDRSTRLEN] = {};
  if (sa->sa_family == AF_INET) {
    ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(sa)->sin_addr, buf, sizeof buf);
  } else if (sa->sa_family == AF_INET6) {
    ::inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(sa)->sin6_addr, buf, sizeof buf);
  }
  return buf;
}

bool link_local(const std::string& address) {
  return address.rfind("fe80:", 0) == 0 || address.rfind("169.254.", 0) == 0;
}

}  // namespace

bool is_ip_literal(const std::string& text) {
  unsigned char buf[16];
  return ::inet_pton(AF_INET, text.c_str(), buf) == 1 ||
         ::inet_pton(AF_INET6, text.c_str(), buf) == 1;
}

bool is_loopback_address(const std::string& address) {
  return address.rfind("127.", 0) == 0 || address == "::1";
}

std::vector<InterfaceAddress> local_interface_addresses() {
  std::vector<InterfaceAddress> out;
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return out;
  for (const ifaddrs* i = list; i; i = i->ifa_next) {
    if (!i->ifa_addr || (i->ifa_addr->sa_family != AF_INET && i->ifa_addr->sa_family != AF_INET6)) {
      continue;
    }
    InterfaceAddress a;
    a.interface = i->ifa_name ? i->ifa_name : "";
    a.address = numeric(i->ifa_addr);
    a.ipv6 = i->ifa_addr->sa_family == AF_INET6;
    a.loopback = (i->ifa_flags & IFF_LOOPBACK) != 0 || is_loopback_address(a.address);
    a.link_local = link_local(a.address);
    a.up = (i->ifa_flags & IFF_UP) != 0;
    out.push_back(std::move(a));
  }
  ::freeifaddrs(list);
  return out;
}

std::optional<std::string> route_source_address(const std::string& peer) {
  sockaddr_storage ss{};
  socklen_t len = 0;
  auto* v4 = reinterpret_cast<sockaddr_in*>(&ss);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&ss);
  if (::inet_pton(AF_INET, peer.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(9);  // discard; nothing is sent
    len = sizeof *v4;
  } else if (::inet_pton(AF_INET6, peer.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(9);
    len = sizeof *v6;
  } else {
    return std::nullopt;
  }
  const int fd = ::socket(ss.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return std::nullopt;
  std::optional<std::string> out;
  sockaddr_storage local{};
  socklen_t local_len = sizeof local;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&ss), len) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &local_len) == 0) {
    out = numeric(reinterpret_cast<sockaddr*>(&local));
  }
  ::close(fd);
  return out;
}

Result<std::string> choose_node_address(const std::vector<InterfaceAddress>& addresses,
                                        const std::optional<std::string>& interface,
                                        const std::optional<std::string>& route_source) {
  // Within the candidates: IPv4 before IPv6, and link-local only as a last resort (it needs
  // a zone to be reached at all).
  auto best = [](const std::vector<const InterfaceAddress*>& c) -> std::optional<std::string> {
    for (const bool ipv6 : {false, true}) {
      for (const auto* a : c) {
        if (a->ipv6 == ipv6 && !a->link_local) return a->address;
      }
    }
    return std::nullopt;
  };
  if (interface) {
    std::vector<const InterfaceAddress*> on_interface;
    for (const auto& a : addresses) {
      if (a.interface == *interface && a.up) on_interface.push_back(&a);
    }
    if (auto chosen = best(on_interface)) return *chosen;
    return Error{"interface " + *interface + " has no usable address"};
  }
  if (route_source && !route_source->empty() && !is_loopback_address(*route_source)) {
    return *route_source;
  }
  std::vector<const InterfaceAddress*> routable;
  for (const auto& a : addresses) {
    if (a.up && !a.loopback) routable.push_back(&a);
  }
  if (auto chosen = best(routable)) return *chosen;
  return Error{"no address outside loopback and link-local"};
}

std::string resolver_line(const std::string& node, const std::string& address) {
  return std::string(kResolverTag) + "\t" + node + "\t" + address + "\n";
}

std::map<std::string, std::string> parse_resolver_output(std::string_view text) {
  std::map<std::string, std::string> out;
  for (const auto& line : common::split(text, '\n')) {
    const auto fields = common::split(line, '\t');
    if (fields.size() != 3 || fields[0] != kResolverTag) continue;
    const std::string address(common::trim(fields[2]));
    if (!fields[1].empty() && is_ip_literal(address)) out[fields[1]] = address;
  }
  return out;
}

std::optional<std::string> resolve_name(const std::string& name,
                                        std::chrono::steady_clock::time_point deadline) {
  struct Shared {
    std::mutex mutex;
    std::condition_variable cv;
    bool done = false;
    std::optional<std::string> address;
  };
  auto shared = std::make_shared<Shared>();
  std::thread([shared, name] {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    std::optional<std::string> found;
    if (::getaddrinfo(name.c_str(), nullptr, &hints, &res) == 0) {
      for (const addrinfo* r = res; r; r = r->ai_next) {
        const std::string a = numeric(r->ai_addr);
        if (a.empty()) continue;
        if (!found || (r->ai_family == AF_INET && found->find(':') != std::string::npos)) found = a;
      }
      ::freeaddrinfo(res);
    }
    std::lock_guard lock(shared->mutex);
    shared->address = std::move(found);
    shared->done = true;
    shared->cv.notify_all();
  }).detach();
  std::unique_lock lock(shared->mutex);
  shared->cv.wait_until(lock, deadline, [&] { return shared->done; });
  return shared->done ? shared->address : std::nullopt;
}

}  // namespace cpupower::launch
