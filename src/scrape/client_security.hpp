#pragma once
// How the collectors reach an exporter that serves TLS and/or Basic authentication (the
// exporter's --web.config.file, docs/security.md): https with a CA file, a client certificate
// and key, and a user whose password is read from a file, never from the command line, so that
// it shows neither in `ps` nor in any log (libcurl gets it in memory).

#include <curl/curl.h>

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "common/result.hpp"
#include "scrape/curl_api.hpp"

namespace cpupower::scrape {

struct ClientSecurity {
  bool https = false;     // scrape https://; set when any TLS setting is given
  std::string ca_file;    // empty: the system's trust store
  std::string cert_file;  // client certificate (PEM), with key_file
  std::string key_file;
  std::string username;  // empty: no Basic authentication
  std::string password;  // read from password_file

  bool operator==(const ClientSecurity&) const = default;
};

// The settings as given (flags or recipe keys), before any file is read.
struct ClientSecuritySpec {
  std::optional<std::string> ca_file;
  std::optional<std::string> cert_file;
  std::optional<std::string> key_file;
  bool tls = false;  // TLS asked for without any file (the system's trust store)
  std::optional<std::string> username;
  std::optional<std::string> password_file;
};

// A spec's outcome: the security to use, or the setting it was refused for, by its key
// (ca_file, cert_file, key_file, username, password_file; the caller spells it as its user
// knows it, --tls-ca-file or telemetry.cpu_power_exporter.tls_config.ca_file) and what is
// wrong with it (never the password).
struct ResolvedSecurity {
  std::optional<ClientSecurity> security;
  std::string_view refused_key;
  std::string why;
};

// Checks the spec and reads the password file: the files must be readable, cert and key come
// together, a user needs a password file and the other way round.
ResolvedSecurity resolve_client_security(const ClientSecuritySpec& spec);

// The password in a password file: its first line, without the line ending (as Prometheus'
// basic_auth.password_file, which trims surrounding white space; here only the line end goes,
// so a password may begin or end with a blank).
Result<std::string> read_password_file(const std::string& path);

// Sets the TLS and authentication options on a transfer (nothing for a default spec).
void apply_client_security(const CurlApi& curl, CURL* easy, const ClientSecurity& security);

}  // namespace cpupower::scrape
