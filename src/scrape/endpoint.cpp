#include "scrape/endpoint.hpp"

#include <algorithm>

#include "common/text.hpp"

namespace cpupower::scrape {
namespace {

bool has_blank(std::string_view s) {
  return std::any_of(s.begin(), s.end(), [](char c) {
    return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f';
  });
}

std::optional<Endpoint> fail(std::string* error, std::string message) {
  if (error) *error = std::move(message);
  return std::nullopt;
}

}  // namespace

std::string endpoint_url(const Endpoint& endpoint, bool https) {
  std::string host = endpoint.address;
  if (host.find(':') != std::string::npos) {
    // An IPv6 literal; in a URL its zone separator must itself be percent-encoded (RFC 6874).
    std::string escaped;
    for (char c : host) escaped += c == '%' ? std::string("%25") : std::string(1, c);
    host = "[" + escaped + "]";
  }
  return (https ? "https://" : "http://") + host + ":" + std::to_string(endpoint.port) + "/metrics";
}

std::optional<Endpoint> parse_endpoint(std::string_view spec, std::string* error) {
  const std::string quoted = "'" + std::string(spec) + "'";
  const auto eq = spec.find('=');
  if (eq == std::string_view::npos) {
    return fail(error, "expected HOST=ADDR:PORT, got " + quoted);
  }
  Endpoint out;
  out.hostname = std::string(spec.substr(0, eq));
  if (out.hostname.empty() || has_blank(out.hostname)) {
    return fail(error, "empty or blank hostname in " + quoted + " (expected HOST=ADDR:PORT)");
  }
  std::string_view rest = spec.substr(eq + 1);
  std::string_view port_text;
  if (rest.starts_with('[')) {
    const auto close = rest.find(']');
    if (close == std::string_view::npos) {
      return fail(error, "unterminated '[' in the address of " + quoted);
    }
    out.address = std::string(rest.substr(1, close - 1));
    if (out.address.find(':') == std::string::npos) {
      return fail(error, "brackets hold an IPv6 address, got '[" + out.address + "]' in " + quoted);
    }
    const auto after = rest.substr(close + 1);
    if (!after.starts_with(':')) return fail(error, "expected ':PORT' after ']' in " + quoted);
    port_text = after.substr(1);
  } else {
    const auto colon = rest.rfind(':');
    if (colon == std::string_view::npos) {
      return fail(error, "expected HOST=ADDR:PORT, no port in " + quoted);
    }
    out.address = std::string(rest.substr(0, colon));
    if (out.address.find(':') != std::string::npos) {
      return fail(error, "an IPv6 address needs brackets, e.g. HOST=[fd00::7]:9405, got " + quoted);
    }
    port_text = rest.substr(colon + 1);
  }
  if (out.address.empty() || has_blank(out.address)) {
    return fail(error, "empty or blank address in " + quoted);
  }
  const auto port = common::parse_u64(port_text);
  if (!port || *port == 0 || *port > 65535) {
    return fail(error, "port must be 1-65535, got '" + std::string(port_text) + "' in " + quoted);
  }
  out.port = static_cast<std::uint16_t>(*port);
  return out;
}

std::optional<std::vector<Endpoint>> parse_endpoints_text(std::string_view text,
                                                          std::string* error) {
  std::vector<Endpoint> out;
  std::size_t line_no = 0;
  for (const auto& raw : common::split(text, '\n')) {
    ++line_no;
    std::string_view line = raw;
    if (const auto hash = line.find('#'); hash != std::string_view::npos) {
      line = line.substr(0, hash);
    }
    line = common::trim(line);
    if (line.empty()) continue;
    std::string why;
    auto endpoint = parse_endpoint(line, &why);
    if (!endpoint) {
      if (error) *error = "line " + std::to_string(line_no) + ": " + why;
      return std::nullopt;
    }
    out.push_back(std::move(*endpoint));
  }
  return out;
}

}  // namespace cpupower::scrape
